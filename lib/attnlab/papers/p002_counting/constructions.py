"""The d = T constructions of paper 002, App. A, and the readout of App. A.4 (Fig. 8), in float64.

Every construction is a `CountingWeights` for `reference.forward`, built from an orthonormal set
Ẽ = (ẽ_1 .. ẽ_T) in R^d (d >= T; the first T axes, or a random rotation of them), and comes with
the closed form of its hidden scalar gamma(k) (eq. 12: the sum of the ReLU activations), where
k = hist_x(l). The readout maps gamma(k) to class k with one linear layer (App. A.4).

    variant   p  mechanism  weights (Q = K = d^{1/4} I, so the scores are inner products)     gamma(k)
    dot       1  relation   e_t = ẽ_t + ẽ_cnt, ẽ_cnt = Σ ẽ_t; W1 = ẽ_cnt/(T+1),               k
                            b1 = -(1 + L(T+2))                                (A.2.1, eqs. 14-23)
    bos       1  relation   e_t = ẽ_t, e_BOS = ẽ_cnt; W1 = e_BOS, b1 = -(T+1)    (§5.1, A.2.3)   k
    bos+sftm  1  relation   e_t = ẽ_t, e_BOS = ẽ_cnt; W1 = e_BOS, b1 = -1      (A.2.2, eq. 27)  a(T-1)+1,
                                                                    a = e/((k+1)e + L-k)
    lin       T  inventory  e_t = ẽ_t, A = 𝟙𝟙ᵀ/L; W1 = Ẽ, b1 = -1                 (A.3.1)     k/L
              (main text: A = a(I + 𝟙𝟙ᵀ), a = 1/(L+1), b1 = -(1+a), gamma = a k)
    lin+sftm  T  inventory  as lin with A = softmax(0) = 𝟙𝟙ᵀ/L (main: softmax(log 2 · I))   (A.3.2)
    dot+sftm  T  inventory  e_t = ẽ_t; W1 = Ẽ, b1 = -1               (A.3.3, eqs. 33-36)  ke/(ke+L-k)

For p = T every hidden unit gets the same outgoing row, so the logits are gamma·w + b either way.
The bos construction is the main text's (§5.1: ⟨x̄'_l, e_BOS⟩ = T + hist + 1) with the bias
chosen so that gamma = hist exactly; App. A.2.3 gives no numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .reference import VARIANTS, CountingWeights, forward, softmax
from .tasks import hist

E = np.e
CLASS0_LOGIT = -1e6  # the unused class 0 (labels are 1 .. L)


# ----------------------------------------------------------------------------- readout (App. A.4)


@dataclass(frozen=True)
class Readout:
    """One linear layer from a scalar gamma to C = L + 1 logits: logits = gamma w + b."""

    w: np.ndarray  # [C]
    b: np.ndarray  # [C]
    boundaries: np.ndarray  # [L - 1] decision boundaries, in increasing gamma

    def logits(self, gamma: np.ndarray) -> np.ndarray:
        return np.asarray(gamma)[..., None] * self.w + self.b

    def classify(self, gamma: np.ndarray) -> np.ndarray:
        return self.logits(gamma).argmax(-1)


def paper_slopes(L: int) -> np.ndarray:
    """The slopes of eq. 15: -1 + j/(L+1) for j = 1 .. L (increasing)."""
    return -1.0 + np.arange(1, L + 1) / (L + 1)


def readout(gammas: np.ndarray, boundaries: np.ndarray | None = None) -> Readout:
    """The App. A.4 readout for hidden values gammas[k-1] = gamma(k), k = 1 .. L, strictly monotone.

    Classes sorted by gamma get the increasing slopes of eq. 15; the lines of neighbours meet at
    the boundaries (default: midpoints of consecutive gamma values), so class k wins exactly on
    its interval. A decreasing gamma(k) (bos+sftm) is handled by the sort."""
    g = np.asarray(gammas, dtype=np.float64)
    L = len(g)
    order = np.argsort(g)
    gs = g[order]
    if L > 1 and not np.all(np.diff(gs) > 0):
        raise ValueError(f"readout needs distinct gamma values; got {g}")
    beta = (gs[:-1] + gs[1:]) / 2 if boundaries is None else np.asarray(boundaries, dtype=np.float64)
    if len(beta) != L - 1 or not np.all((beta > gs[:-1]) & (beta < gs[1:])):
        raise ValueError(f"boundaries {beta} must separate the sorted gamma values {gs}")
    s = paper_slopes(L)
    b = np.zeros(L)
    for j in range(1, L):
        b[j] = b[j - 1] + (s[j - 1] - s[j]) * beta[j - 1]  # lines j-1 and j meet at beta[j-1]
    w_out, b_out = np.zeros(L + 1), np.full(L + 1, CLASS0_LOGIT)
    w_out[1 + order], b_out[1 + order] = s, b
    return Readout(w_out, b_out, beta)


def paper_dot_readout(L: int) -> Readout:
    """Eqs. 15-16 literally: (W2)_1 = -1 + 1/(L+1), (b2)_1 = 0, and for l = 2 .. L
    (W2)_l = -1 + l/(L+1), (b2)_l = ((W2)_{l-1} - (W2)_l)(l - 0.5) + (b2)_{l-1};
    boundaries at gamma = l - 0.5 (gamma = hist in the dot construction)."""
    w, b = np.zeros(L + 1), np.full(L + 1, CLASS0_LOGIT)
    b[1] = 0.0
    for l in range(1, L + 1):
        w[l] = -1 + l / (L + 1)
    for l in range(2, L + 1):
        b[l] = (w[l - 1] - w[l]) * (l - 0.5) + b[l - 1]
    return Readout(w, b, np.arange(2, L + 1) - 0.5)


def readout_margin(r: Readout, gammas: np.ndarray) -> float:
    """Least logit gap between class k and its best rival at gamma(k), over k (> 0: all correct)."""
    lg = r.logits(np.asarray(gammas))
    k = np.arange(1, len(gammas) + 1)
    right = lg[k - 1, k]
    lg[k - 1, k] = -np.inf
    return float((right - lg.max(-1)).min())


# ----------------------------------------------------------------------------- closed forms of gamma


def gamma_closed_form(variant: str, T: int, L: int, k: np.ndarray, lin_version: str = "appendix") -> np.ndarray:
    """gamma(k) of each construction (table in the module doc)."""
    k = np.asarray(k, dtype=np.float64)
    if variant in ("dot", "bos"):
        return k
    if variant == "bos+sftm":
        a = E / ((k + 1) * E + L - k)
        return a * (T - 1) + 1
    if variant in ("lin", "lin+sftm"):
        return k / L if lin_version == "appendix" else k / (L + 1)
    if variant == "dot+sftm":
        return k * E / (k * E + L - k)
    raise ValueError(f"variant {variant!r}: choose one of {', '.join(VARIANTS)}")


def dot_sftm_count(gamma: np.ndarray, L: int) -> np.ndarray:
    """Eq. 36: k = L gamma / (-e gamma + gamma + e), the inverse of gamma = ke/(ke + L - k)."""
    gamma = np.asarray(gamma, dtype=np.float64)
    return L * gamma / (-E * gamma + gamma + E)


# ----------------------------------------------------------------------------- the constructions


@dataclass(frozen=True)
class Construction:
    variant: str
    weights: CountingWeights
    gammas: np.ndarray  # gamma(k), k = 1 .. L (closed form)
    readout: Readout
    basis: np.ndarray  # Ẽ [d, T]: the orthonormal token directions
    mechanism: str  # relation | inventory
    source: str  # where in the paper


def orthonormal_set(T: int, d: int, rotation_seed: int | None = None) -> np.ndarray:
    """T orthonormal columns in R^d (d >= T): the first T axes, or a seeded random rotation of them."""
    if d < T:
        raise ValueError(f"the d = T constructions need d >= T; got d={d}, T={T}")
    basis = np.eye(d)[:, :T]
    if rotation_seed is not None:
        q, r = np.linalg.qr(np.random.default_rng(rotation_seed).standard_normal((d, d)))
        basis = (q * np.sign(np.diag(r))) @ basis
    return basis


def build(variant: str, T: int, L: int, d: int | None = None, rotation_seed: int | None = None,
          lin_version: str = "appendix", paper_readout: bool = True) -> Construction:
    """The App. A construction of `variant` at alphabet T, length L, width d (default T).

    paper_readout: for dot and bos (gamma = hist) use eqs. 15-16 literally; otherwise the
    generic App. A.4 readout on the closed-form gamma(k). lin_version: 'appendix' (A.3.1) or
    'main' (§5.1)."""
    d = T if d is None else d
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r}: choose one of {', '.join(VARIANTS)}")
    if lin_version not in ("appendix", "main"):
        raise ValueError(f"lin_version {lin_version!r}: choose appendix or main")
    Et = orthonormal_set(T, d, rotation_seed)  # [d, T]
    cnt = Et.sum(1)  # ẽ_cnt
    k = np.arange(1, L + 1)
    gammas = gamma_closed_form(variant, T, L, k, lin_version)
    qk = d ** 0.25 * np.eye(d)
    kw: dict = {}
    if variant == "dot":
        emb = Et.T + cnt[None, :]
        W1, b1 = (cnt / (T + 1))[:, None], np.array([-(1.0 + L * (T + 2))])
        kw = dict(W_Q=qk, W_K=qk)
        mech, src = "relation", "App. A.2.1, eqs. 14-23"
    elif variant in ("bos", "bos+sftm"):
        emb = np.vstack([Et.T, cnt[None, :]])  # BOS is token index T
        W1 = cnt[:, None]
        b1 = np.array([-(T + 1.0)]) if variant == "bos" else np.array([-1.0])
        kw = dict(W_Q=qk, W_K=qk)
        mech, src = "relation", ("§5.1, App. A.2.3" if variant == "bos" else "App. A.2.2, eqs. 24-27")
    elif variant in ("lin", "lin+sftm"):
        emb, W1 = Et.T, Et
        if lin_version == "appendix":
            A = np.full((L, L), 1.0 / L) if variant == "lin" else np.zeros((L, L))
            b1 = -np.ones(T)
        else:
            a = 1.0 / (L + 1)
            A = a * (np.eye(L) + np.ones((L, L))) if variant == "lin" else np.log(2.0) * np.eye(L)
            b1 = -(1.0 + a) * np.ones(T)
        kw = dict(A=A)
        mech, src = "inventory", ("App. A.3.1, eqs. 28-31" if variant == "lin" else "App. A.3.2")
        if lin_version == "main":
            src = "§5.1 (main-text variant)"
    else:  # dot+sftm
        emb, W1, b1 = Et.T, Et, -np.ones(T)
        kw = dict(W_Q=qk, W_K=qk)
        mech, src = "inventory", "App. A.3.3, eqs. 32-36"
    r = paper_dot_readout(L) if (variant in ("dot", "bos") and paper_readout) else readout(gammas)
    p = W1.shape[1]
    W2 = np.tile(r.w[None, :], (p, 1))  # every hidden unit: the same outgoing row (one is active)
    w = CountingWeights(variant, emb, W1, b1, W2, r.b.copy(), **kw)
    return Construction(variant, w, gammas, r, Et, mech, src)


# ----------------------------------------------------------------------------- checks


def check(c: Construction, x: np.ndarray) -> dict:
    """Run the construction on sequences x [n, L]: accuracy and the exact internal values."""
    out = forward(c.weights, x)
    y = hist(x)
    expected = c.gammas[y - 1]
    active = (out["z"] > 0).sum(-1)
    rep = {"n": int(x.shape[0]), "accuracy": float((out["prediction"] == y).mean()),
           "max_gamma_error": float(np.abs(out["gamma"] - expected).max()),
           "max_active_units": int(active.max()), "min_active_units": int(active.min()),
           "counts_seen": sorted(np.unique(y).tolist()),
           "gamma_range_by_k": {str(int(k)): [float(out["gamma"][y == k].min()), float(out["gamma"][y == k].max())]
                                for k in np.unique(y)}}
    if c.variant == "dot+sftm":
        rep["max_count_inversion_error"] = float(np.abs(dot_sftm_count(out["gamma"], x.shape[1]) - y).max())
    return rep


def embedding_gram_values(c: Construction) -> list[float]:
    """The distinct inner products ⟨e_t, e_s⟩ of the token embeddings (rounded to 1e-9)."""
    emb = c.weights.emb[: c.weights.T]
    return sorted(set(np.round(emb @ emb.T, 9).ravel().tolist()))


def softmax_counter_direction(T: int, L: int, x: np.ndarray, d: int | None = None) -> dict:
    """§5.1: why dot+sftm cannot count with a shared direction. Take the dot construction (A.2.1:
    e_t = ẽ_t + ẽ_cnt) but normalise the scores with a softmax. The counter read-out
    ⟨ẽ_cnt, (𝐀x̄)_l⟩ = Σ_m a_lm ⟨ẽ_cnt, e_{x_m}⟩ = (T+1) Σ_m a_lm = T+1 for every sequence, so it
    carries no count; without the softmax it is (T+1)(L(T+2) + k)."""
    c = build("dot", T, L, d)
    w = c.weights
    cnt = c.basis.sum(1)
    xb = w.emb[x]
    scores = (xb @ w.W_Q) @ np.swapaxes(xb @ w.W_K, 1, 2) / np.sqrt(w.d)
    y = hist(x)
    with_sm = softmax(scores) @ xb @ cnt
    without = scores @ xb @ cnt
    sm_weights = CountingWeights("dot+sftm", w.emb, w.W1, w.b1, w.W2, w.b2, W_Q=w.W_Q, W_K=w.W_K)
    acc_sm = float((forward(sm_weights, x)["prediction"] == y).mean())
    return {"softmax_values_min": float(with_sm.min()), "softmax_values_max": float(with_sm.max()),
            "softmax_spread": float(with_sm.max() - with_sm.min()), "expected": float(T + 1),
            "no_softmax_error": float(np.abs(without - (T + 1) * (L * (T + 2) + y)).max()),
            "accuracy_with_softmax": acc_sm, "accuracy_without": float((forward(w, x)["prediction"] == y).mean())}
