"""Mutual coherence, the Welch bound and the d < T bounds of paper 002 (§5.2, App. B.1–B.2).

Behrens, Biggio & Zdeborová, "Understanding Counting in Small Transformers".

    coherence      M = max_{i != j} |<v_i, v_j>|                        (eqs. 7, 38; unit rows)
    Welch          M >= W(T, d) = sqrt((T - d) / (d (T - 1)))            (eqs. 8, 39; T > d)
    margin (37)    gamma_upper(k) < gamma_lower(k + 1) for every count k

    model (p)            construction   condition on M        minimal d (Welch)                      eq.
    lin, lin+sftm (T)    App. B.2.1     M < 1 / (2L - 3)      ceil(T c^2 / (T - 1 + c^2)),  c = 2L-3  50
    dot, bos (1)         App. B.2.2     M < 1 / (2L - 3)      the same + 1 (counter coordinate)       62
    dot, bos (T)         App. B.2.3     M < (2L - 3)^(-1/2)   ceil(T c / (T - 1 + c))                 72
    bos+sftm (1),        App. B.3       (binary codes)        ceil(log2(T + 1)) + 2                   93
    dot+sftm (T)

Every d-bound is "the smallest d whose Welch bound is below the coherence threshold"; the
closed forms equal that when the ratio is not an integer (checked in the tests). The bounds are
what the constructions need *if* a frame at the Welch bound exists; an optimised frame has a
larger coherence, and the bounds are sufficient, not necessary.

Constructions (float64 numpy forwards of the App. B.2 weights, no other module needed):
    lin p=T   x' = x + (1/L) sum_m x_m;        z_t = <x', e_t> - 1;          gamma = sum_t ReLU(z_t)
    dot p=T   x' = x + sum_m (<x, x_m>/L) x_m; z_t = <x', e_t> - 1;          gamma = sum_t ReLU(z_t)
    dot p=1   e_t = [v_t; alpha], e_cnt = [0; 1/alpha]; x' = x + sum_m <x, x_m> x_m; gamma = ReLU(<x', e_cnt>)
and the App. A.4 / Fig. 8 readout: logits_k = k gamma + b_k with lines k and k + 1 crossing at
the boundary beta_k, so argmax = 1 + #{k : gamma > beta_k}. Boundaries either from the paper's
gamma ranges at the frame's coherence ("paper", eqs. 43-44, 57-58, 69-70: midpoint of
[gamma_upper(k), gamma_lower(k + 1)]) or from the exact ranges ("calibrated").

Exact ranges: gamma at a position with token t and count k is c(k) + sum over the L - k other
positions of a term that depends only on (t, x_m). Its extremes over all sequences are reached
by two-token sequences t^k s^(L-k), so `two_token_sequences` is an exhaustive test of the
ranges (up to inactive hidden units, which the bounds keep <= 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

MODELS = ("lin", "dot_p1", "dot_pT", "softmax_binary")
MODEL_LABELS = {
    "lin": "lin, lin+sftm (p = T), eq. 50",
    "dot_p1": "dot, bos (p = 1), eq. 62",
    "dot_pT": "dot, bos (p = T), eq. 72",
    "softmax_binary": "bos+sftm (p = 1), dot+sftm (p = T), eq. 93",
}
# (T, L) pairs of the paper's sweeps: Fig. 1 (32, 10), Fig. 13 (64, 10), Fig. 14 (32, 15); the
# CI-scale pairs of the other chapters (16, 8), (8, 6); and (64, 15) named in §5.
PAPER_PAIRS = ((32, 10), (64, 10), (32, 15), (64, 15), (16, 8), (8, 6))
# §5.2: "for T = 32, L = 10 we obtain in order of the above list d >= 29, 30, 12";
# App. B.3.1 text: "for L = 10, T = 32 ... d = 7" (eq. 93 gives 8; see the errata page).
PAPER_QUOTED = {(32, 10): {"lin": 29, "dot_p1": 30, "dot_pT": 12, "softmax_binary": 7}}


# ----------------------------------------------------------------------------- coherence, Welch


def welch(T: int, d, exact_zero: bool = True):
    """W(T, d) = sqrt((T - d) / (d (T - 1))) for d <= T (eq. 8); 0 for d >= T (orthogonal)."""
    if T < 2:
        raise ValueError(f"T={T} must be >= 2")
    d = np.asarray(d, dtype=np.float64)
    if np.any(d < 1):
        raise ValueError(f"d={d.tolist()} must be >= 1")
    value = np.sqrt(np.clip((T - d) / (d * (T - 1)), 0.0, None))
    return float(value) if value.ndim == 0 else value


def mutual_coherence(E) -> float:
    """max_{i != j} |<e_i, e_j>| of the rows of E, normalised to unit norm (eq. 7)."""
    E = np.asarray(E, dtype=np.float64)
    if E.ndim != 2 or E.shape[0] < 2:
        raise ValueError(f"E must be a (T >= 2, d) matrix, got shape {E.shape}")
    norms = np.linalg.norm(E, axis=1)
    if np.any(norms == 0):
        raise ValueError("E has a zero row; coherence needs nonzero vectors")
    U = E / norms[:, None]
    G = np.abs(U @ U.T)
    np.fill_diagonal(G, 0.0)
    return float(G.max())


def welch_attainable_real(T: int, d: int) -> bool:
    """Necessary condition for a real equiangular tight frame (equality in Welch): T <= d(d+1)/2
    (and, by Naimark complement, T <= (T-d)(T-d+1)/2 for d < T - 1). The paper writes "T < d^2",
    the complex condition (§5.2, App. B.2; Strohmer & Heath's condition for complex frames)."""
    if d >= T:
        return True
    ok = T <= d * (d + 1) // 2
    if d < T - 1:
        ok = ok and T <= (T - d) * (T - d + 1) // 2
    return bool(ok)


# ----------------------------------------------------------------------------- thresholds and bounds


def coherence_threshold(model: str, L: int) -> float:
    """The largest coherence the construction tolerates (strict): eqs. 49, 60 (alpha -> 0), 71."""
    if L < 2:
        raise ValueError(f"L={L} must be >= 2")
    c = 2 * L - 3
    if model in ("lin", "dot_p1"):
        return 1.0 / c
    if model == "dot_pT":
        return 1.0 / math.sqrt(c)
    raise ValueError(f"model={model!r} has no coherence threshold; choose lin, dot_p1 or dot_pT")


def coherence_threshold_one_sided(L: int) -> float:
    """dot p = T (B.2.3) with the squared overlaps kept >= 0: gamma(k) in [k/L, (k + M^2 (L-k))/L],
    so separation needs M^2 (L - 1) < 1, i.e. M < 1/sqrt(L - 1) [this book; eq. 69 uses -M^2]."""
    if L < 2:
        raise ValueError(f"L={L} must be >= 2")
    return 1.0 / math.sqrt(L - 1)


def min_d_formula(model: str, T: int, L: int) -> int:
    """The paper's closed forms (eqs. 50, 62, 72, 93)."""
    if T < 2 or L < 2:
        raise ValueError(f"T={T} and L={L} must be >= 2")
    c = 2 * L - 3
    if model == "lin":
        return math.ceil(T * c * c / (T - 1 + c * c))
    if model == "dot_p1":
        return math.ceil(T * c * c / (T - 1 + c * c)) + 1
    if model == "dot_pT":
        return math.ceil(T * c / (T - 1 + c))
    if model == "softmax_binary":
        return math.ceil(math.log2(T + 1)) + 2
    raise ValueError(f"model={model!r} must be one of {MODELS}")


def min_d_strict(model: str, T: int, L: int) -> int:
    """The bound with the strict inequality of eqs. 49 / 71 kept: floor(x) + 1 (capped at T, plus
    the counter coordinate for dot_p1). Equals eqs. 50 / 62 / 72 unless x is an integer, where the
    printed ceil(x) gives W(T, d) equal to the threshold, i.e. zero margin in eq. 37."""
    c = 2 * L - 3
    q = {"lin": c * c, "dot_p1": c * c, "dot_pT": c}.get(model)
    if q is None:
        raise ValueError(f"model={model!r} must be lin, dot_p1 or dot_pT")
    x = T * q / (T - 1 + q)
    return min(math.floor(x) + 1, T) + (model == "dot_p1")


def min_d_welch(T: int, threshold: float, extra: int = 0) -> int:
    """Smallest d with W(T, d) < threshold (strict, as eqs. 49 / 71 are strict), plus `extra`
    coordinates (1 for the counter direction of B.2.2)."""
    for d in range(1, T + 1):
        if welch(T, d) < threshold * (1 - 1e-12):  # strict, robust to float ties (x an integer)
            return d + extra
    return T + extra


def min_d_table(pairs=PAPER_PAIRS) -> list[dict]:
    """One row per (T, L): each model's minimal d (closed form and Welch search), the quoted
    value where the paper gives one, and the one-sided dot p = T bound of this book."""
    rows = []
    for T, L in pairs:
        row = {"T": T, "L": L}
        for m in MODELS:
            row[m] = min_d_formula(m, T, L)
        row["lin_welch"] = min_d_welch(T, coherence_threshold("lin", L))
        row["dot_p1_welch"] = min_d_welch(T, coherence_threshold("dot_p1", L), extra=1)
        row["dot_pT_welch"] = min_d_welch(T, coherence_threshold("dot_pT", L))
        row["integer_edge"] = [m for m in ("lin", "dot_p1", "dot_pT") if min_d_strict(m, T, L) != row[m]]
        row["dot_pT_one_sided"] = min_d_welch(T, coherence_threshold_one_sided(L))
        row["paper"] = PAPER_QUOTED.get((T, L))
        rows.append(row)
    return rows


# ----------------------------------------------------------------------------- frames


def simplex_frame(d: int) -> np.ndarray:
    """d + 1 unit vectors in R^d with all overlaps -1/d (regular simplex; attains W(d+1, d) = 1/d)."""
    if d < 1:
        raise ValueError(f"d={d} must be >= 1")
    P = np.eye(d + 1) - 1.0 / (d + 1)  # centred basis, rank d
    # orthonormal basis of the sum-zero subspace
    Q, _ = np.linalg.qr(P[:, :d])
    V = P @ Q  # (d+1, d)
    return V / np.linalg.norm(V, axis=1, keepdims=True)


def frame_seed(seed: int, T: int, d: int, restart: int) -> int:
    """Seed of one restart, from (seed, T, d, restart) only (never from its position in a batch)."""
    return (seed * 1_000_003 + T * 10_007 + d * 101 + restart) % (2 ** 63)


@dataclass
class FrameResult:
    frame: np.ndarray  # (T, d), unit rows: the best restart
    coherence: float  # its mutual coherence
    coherences: list  # every restart's final coherence
    welch: float


def optimise_frame(T: int, d: int, steps: int = 1000, restarts: int = 4, seed: int = 0,
                   lr: float = 0.02, beta: tuple[float, float] = (20.0, 2000.0)) -> FrameResult:
    """Minimise the coherence of T unit vectors in R^d (d < T) with Adam on a smooth surrogate,
    the log-sum-exp of beta * <u_i, u_j>^2 over i < j with beta annealed geometrically; restarts
    run as one batch (independent: the loss is a sum over restarts). Float64, deterministic."""
    if not 1 <= d:
        raise ValueError(f"d={d} must be >= 1")
    if d >= T:  # orthonormal frame, coherence 0
        E = np.eye(d)[:T]
        return FrameResult(E, 0.0, [0.0] * restarts, 0.0)
    if steps < 1 or restarts < 1:
        raise ValueError(f"steps={steps} and restarts={restarts} must be >= 1")
    X0 = []
    for r in range(restarts):
        g = torch.Generator().manual_seed(frame_seed(seed, T, d, r))
        X0.append(torch.randn(T, d, generator=g, dtype=torch.float64))
    X = torch.stack(X0).requires_grad_(True)
    opt = torch.optim.Adam([X], lr=lr)
    iu = torch.triu_indices(T, T, 1)
    b0, b1 = beta
    for step in range(steps):
        frac = step / max(steps - 1, 1)
        b = b0 * (b1 / b0) ** frac
        U = X / X.norm(dim=-1, keepdim=True)
        G2 = (U @ U.transpose(1, 2))[:, iu[0], iu[1]] ** 2
        loss = (torch.logsumexp(b * G2, dim=-1) / b).sum()
        opt.zero_grad()
        loss.backward()
        for group in opt.param_groups:
            group["lr"] = lr * (1 - 0.9 * frac)
        opt.step()
    U = (X / X.norm(dim=-1, keepdim=True)).detach().numpy()
    coh = [mutual_coherence(u) for u in U]
    best = int(np.argmin(coh))
    return FrameResult(U[best], coh[best], coh, welch(T, d))


# ----------------------------------------------------------------------------- sequences


def hist(X: np.ndarray) -> np.ndarray:
    """y_l = #{m : x_m = x_l} (the histogram task)."""
    X = np.asarray(X)
    return (X[..., :, None] == X[..., None, :]).sum(-1)


def sample_sequences(T: int, L: int, n: int, seed: int = 0) -> np.ndarray:
    """The authors' sampler (their memory_exp.py, HistogramDatasetSampleBackward.random_sequence;
    App. C describes it with an off-by-one): a random integer partition of L (first
    part uniform in 1..n-1, recursively), trailing parts merged beyond T parts, distinct uniform
    tokens per part, shuffled. Never a single token, so count L never occurs."""
    if T < 2 or L < 2 or n < 1:
        raise ValueError(f"T={T}, L={L} must be >= 2 and n={n} >= 1")
    rng = np.random.default_rng(seed)
    out = np.empty((n, L), dtype=np.int64)
    for i in range(n):
        parts, rest = [], L
        while rest > 0:
            k = 1 if rest == 1 else int(rng.integers(1, rest))
            parts.append(k)
            rest -= k
        if len(parts) > T:
            parts = parts[:T - 1] + [sum(parts[T - 1:])]
        tokens = rng.choice(T, size=len(parts), replace=False)
        seq = np.repeat(tokens, parts)
        out[i] = rng.permutation(seq)
    return out


def two_token_sequences(T: int, L: int) -> np.ndarray:
    """Every t^k s^(L-k), t != s, 1 <= k <= L-1: the sequences at which gamma reaches its extremes."""
    t, s = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
    mask = t != s
    t, s = t[mask], s[mask]
    seqs = []
    for k in range(1, L):
        seqs.append(np.concatenate([np.repeat(t[:, None], k, 1), np.repeat(s[:, None], L - k, 1)], 1))
    return np.concatenate(seqs, 0)


# ----------------------------------------------------------------------------- constructions (B.2)


@dataclass(frozen=True)
class Construction:
    """One App. B.2 construction built from a frame: `gamma(X)` is the pre-readout scalar, and
    `ranges(M, L)` the paper's [gamma_lower(k), gamma_upper(k)] at coherence M."""

    model: str
    E: np.ndarray  # (T, d) token embeddings
    L: int
    alpha: float = 0.0

    @property
    def d(self) -> int:
        return self.E.shape[1]

    def hidden(self, X: np.ndarray) -> np.ndarray:
        """Pre-activation hidden units z (n, L, p)."""
        L = X.shape[-1]
        emb = self.E[X]  # (n, L, d)
        if self.model == "lin":
            mixed = emb + emb.mean(axis=-2, keepdims=True)  # A = (1/L) 1 1^T
            return mixed @ self.E.T - 1.0
        scores = emb @ emb.transpose(0, 2, 1)  # Q = K = d^(1/4) I: raw inner products
        if self.model == "dot_pT":
            mixed = emb + (scores / L) @ emb  # Q = (1/L) d^(1/4) I
            return mixed @ self.E.T - 1.0
        if self.model == "dot_p1":
            mixed = emb + scores @ emb
            e_cnt = np.zeros(self.d)
            e_cnt[-1] = 1.0 / self.alpha
            return (mixed @ e_cnt)[..., None]  # b_1 = 0
        raise ValueError(f"model={self.model!r} must be lin, dot_p1 or dot_pT")

    def gamma(self, X: np.ndarray) -> np.ndarray:
        return np.maximum(self.hidden(np.asarray(X)), 0.0).sum(-1)

    def paper_ranges(self, M: float) -> tuple[np.ndarray, np.ndarray]:
        """[gamma_lower(k), gamma_upper(k)] for k = 1..L (eqs. 43-44, 57-58, 69-70)."""
        L, k = self.L, np.arange(1, self.L + 1, dtype=np.float64)
        if self.model == "lin":
            lo, up = (k - M * (L - k)) / L, (k + M * (L - k)) / L
        elif self.model == "dot_pT":
            lo, up = (k - M * M * (L - k)) / L, (k + M * M * (L - k)) / L
        else:
            a2 = self.alpha ** 2
            lo = k * (1 + a2) - (L - k) * (M + a2) + 1
            up = k * (1 + a2) + (L - k) * (M + a2) + 1
        return lo, up


def frame_construction(model: str, V: np.ndarray, L: int, alpha: float = 0.01) -> Construction:
    """The construction of `model` from the unit frame V (T, d'): embeddings V itself (lin,
    dot_pT), or [V, alpha] in d' + 1 dimensions (dot_p1, eq. 51)."""
    V = np.asarray(V, dtype=np.float64)
    if model == "dot_p1":
        if alpha <= 0 or (L > 2 and alpha >= math.sqrt(1 / (2 * L - 4))):
            raise ValueError(f"alpha={alpha} must satisfy 0 < alpha < sqrt(1/(2L-4)) (eq. 59)")
        return Construction(model, np.concatenate([V, np.full((V.shape[0], 1), alpha)], 1), L, alpha)
    return Construction(model, V, L)


def readout_logits(gamma: np.ndarray, boundaries: np.ndarray) -> np.ndarray:
    """App. A.4 / Fig. 8 readout: L + 1 logits, class 0 unused; lines of slope k meeting the line
    of slope k + 1 at boundaries[k - 1] (increasing)."""
    beta = np.asarray(boundaries, dtype=np.float64)
    if np.any(np.diff(beta) <= 0):
        raise ValueError(f"boundaries {beta.tolist()} must increase strictly")
    L = len(beta) + 1
    slopes = np.arange(1, L + 1, dtype=np.float64)
    intercepts = -np.concatenate([[0.0], np.cumsum(beta)])
    logits = gamma[..., None] * slopes + intercepts
    return np.concatenate([np.full(gamma.shape + (1,), -1e30), logits], -1)


def paper_boundaries(c: Construction, M: float) -> np.ndarray:
    lo, up = c.paper_ranges(M)
    return (up[:-1] + lo[1:]) / 2


def exact_ranges(c: Construction, T: int, gamma2: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """min / max of gamma per count k = 1..L-1 over all two-token sequences (exhaustive extremes);
    gamma2: gamma of `two_token_sequences(T, L)` if already computed."""
    X = two_token_sequences(T, c.L)
    g, y = (c.gamma(X) if gamma2 is None else gamma2), hist(X)
    lo = np.array([g[y == k].min() for k in range(1, c.L)])
    up = np.array([g[y == k].max() for k in range(1, c.L)])
    return lo, up


def calibrated_boundaries(c: Construction, T: int, gamma2: np.ndarray | None = None) -> np.ndarray:
    """Midpoints of [max gamma(k), min gamma(k+1)] (of the interval centres where ranges overlap,
    so the boundaries still increase); the boundary after L-1 is put one step above."""
    lo, up = exact_ranges(c, T, gamma2)
    beta = np.where(up[:-1] < lo[1:], (up[:-1] + lo[1:]) / 2, (lo[:-1] + up[:-1] + lo[1:] + up[1:]) / 4)
    step = (beta[-1] - beta[-2]) if len(beta) > 1 else 1.0
    return np.concatenate([beta, [up[-1] + abs(step)]])


def accuracy(c: Construction, X: np.ndarray, boundaries: np.ndarray, gamma: np.ndarray | None = None) -> float:
    pred = readout_logits(c.gamma(X) if gamma is None else gamma, boundaries).argmax(-1)
    return float((pred == hist(X)).mean())


def evaluate(model: str, V: np.ndarray, L: int, X_sample: np.ndarray, alpha: float = 0.01) -> dict:
    """Build `model` from frame V; accuracies (paper / calibrated readouts) on the sampler and on
    all two-token sequences; the exact margin min_k [min gamma(k+1) - max gamma(k)]; the number
    of positions with a wrongly active hidden unit (inventory models)."""
    T = V.shape[0]
    c = frame_construction(model, V, L, alpha)
    M = mutual_coherence(V)
    X2 = two_token_sequences(T, L)
    g2, gs = c.gamma(X2), c.gamma(X_sample)
    lo, up = exact_ranges(c, T, g2)
    b_paper, b_cal = paper_boundaries(c, M), calibrated_boundaries(c, T, g2)
    out = {"model": model, "d": c.d, "coherence": M, "margin": float((lo[1:] - up[:-1]).min())}
    for name, b in (("paper", b_paper), ("calibrated", b_cal)):
        out[f"acc_{name}_sample"] = accuracy(c, X_sample, b, gs)
        out[f"acc_{name}_two_token"] = accuracy(c, X2, b, g2)
    if model != "dot_p1":
        Z = c.hidden(X_sample)
        wrong = (Z > 0) & (np.arange(T) != X_sample[..., None])
        out["wrong_active"] = int(wrong.any(-1).sum())
    plo, pup = c.paper_ranges(M)
    out["inside_paper_ranges"] = bool(np.all(lo >= plo[:-1] - 1e-12) and np.all(up <= pup[:-1] + 1e-12))
    return out


def theory_bounds(variant: str, T: int, L: int) -> dict[str, float | tuple[float, int]]:
    """The §5.2 sufficient bounds on d that concern a counting `variant` (the phase diagrams' red
    lines, `plots.phase_heatmap`'s d_bounds): a bound proven for p = T applies from p = T on, as
    (d, T); one for p = 1 across the whole width, as d."""
    if variant in ("lin", "lin+sftm"):
        return {"eq. 50 (p = T)": (min_d_formula("lin", T, L), T)}
    if variant in ("dot", "bos"):
        return {"eq. 62 (p = 1)": min_d_formula("dot_p1", T, L),
                "eq. 72 (p = T)": (min_d_formula("dot_pT", T, L), T)}
    if variant == "bos+sftm":
        return {"eq. 93 (p = 1)": min_d_formula("softmax_binary", T, L)}
    return {"eq. 93 (p = T)": (min_d_formula("softmax_binary", T, L), T)}  # dot+sftm (B.3.2, sketched)
