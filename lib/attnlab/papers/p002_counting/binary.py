"""App. B.3.1 of paper 002 (§5.2): the bos+sftm construction (p = 1) with binary token codes and
an inverse temperature κ, in float64 through `reference.forward` (float32 via `gamma_float32`).

    codes      v_t = bin(t) / ||bin(t)||, t = 1 .. T, in d' = ceil(log2(T + 1)) dims (eq. 76 divides
               by <bin(t), bin(t)>; the norms of eq. 77 and the overlap bound of eq. 78 need the
               norm, see the errata page); bin(0) is left to BOS
    circle     v_t = [sqrt(t/T), sqrt((T-t)/T)], d' = 2 (the remark after eq. 93)
    eps        1 - max_{t != s} <v_t, v_s>; the paper's bound for codes: 1 - sqrt(1 - 1/d') (eq. 78)
    "d'+2"     e_t = [v_t; α; 0], e_BOS = [0; 1/α; 1], W1 = [0 .. 0, 1], b1 = 0   (eqs. 77-82, d = d' + 2)
    "d'+1"     e_t = [v_t; α],    e_BOS = [0; 1/α],    W1 = e_last/(1/α - α), b1 = -2α/(1/α - α)
               (drops the last axis and reads the α axis: <x̄'_l, e_last> = 2α + a_BOS(1/α - α))
    scores     K = d^{1/4} I, Q = κ d^{1/4} I: κ<e, e'>; <e_t, e_BOS> = 1, <e_t, e_t> = 1 + α²
    gamma      the softmax weight on BOS, for both variants (eqs. 80-82), decreasing in the count k

Ranges over all sequences at count k when every overlap lies in [0, 1 - ε] (eqs. 83-84):
    γ_lo(k) = e^κ / (e^κ + k e^{κ(1+α²)} + (L-k) e^{κ(1+α²-ε)})
    γ_up(k) = e^κ / (e^κ + k e^{κ(1+α²)} + (L-k) e^{κα²})
Separation γ_up(k+1) < γ_lo(k) holds for all k iff it holds at k = 1, i.e. κ > κ*, the
non-trivial root of (L-1) u^{1-ε} - u - (L-2) = 0, u = e^κ (eq. 92; solved in log space).
The two-token sequences t s^(L-1) (s the nearest code) and t² s'^(L-2) (s' orthogonal) reach
γ_lo(1) and γ_up(2) exactly, so for κ < κ* no token-independent readout is exact: the
threshold is sharp for the codes' actual ε.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .constructions import Readout, readout
from .reference import CountingWeights, forward
from .tasks import hist

VARIANTS = ("d'+2", "d'+1")


# ----------------------------------------------------------------------------- token frames


def code_dim(T: int) -> int:
    """d' = ceil(log2(T + 1)) (eq. 76): tokens 1 .. T need non-zero binary codes."""
    if T < 2:
        raise ValueError(f"T={T} must be >= 2")
    return math.ceil(math.log2(T + 1))


def binary_codes(T: int) -> np.ndarray:
    """Unit-norm binary codes of t = 1 .. T [T, d'] (row t-1 is token index t-1 of the task)."""
    dp = code_dim(T)
    bits = (np.arange(1, T + 1)[:, None] >> np.arange(dp)[None, :]) & 1
    v = bits.astype(np.float64)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def circle_frame(T: int) -> np.ndarray:
    """The d' = 2 frame v_t = [sqrt(t/T), sqrt((T-t)/T)], t = 1 .. T [T, 2]."""
    t = np.arange(1, T + 1, dtype=np.float64)
    return np.stack([np.sqrt(t / T), np.sqrt((T - t) / T)], 1)


def frame(kind: str, T: int) -> np.ndarray:
    if kind == "binary":
        return binary_codes(T)
    if kind == "circle":
        return circle_frame(T)
    raise ValueError(f"frame {kind!r}: choose binary or circle")


def _extremes(V: np.ndarray) -> tuple[float, float, np.ndarray]:
    """(max, min) of <v_t, v_s> over t != s, and the pairs [m, 2] at the max. Planar frames use
    the angles (adjacent angles overlap most), so large T needs no T x T Gram matrix."""
    if V.shape[1] == 2:
        th = np.arctan2(V[:, 1], V[:, 0])
        o = np.argsort(th)
        adj = (V[o[1:]] * V[o[:-1]]).sum(1)
        hi = adj.max()
        at = np.flatnonzero(adj >= hi - 1e-15)
        pairs = np.concatenate([np.stack([o[at], o[at + 1]], 1), np.stack([o[at + 1], o[at]], 1)])
        return float(hi), float(V[o[0]] @ V[o[-1]]), pairs
    G = V @ V.T
    np.fill_diagonal(G, -np.inf)
    hi = G.max()
    np.fill_diagonal(G, np.inf)
    lo = G.min()
    np.fill_diagonal(G, -np.inf)
    return float(hi), float(lo), np.argwhere(G >= hi - 1e-15)


def epsilon(V: np.ndarray) -> float:
    """1 - max_{t != s} <v_t, v_s> of unit rows (the ε of eq. 74 the frame actually has)."""
    return 1.0 - _extremes(V)[0]


def min_overlap(V: np.ndarray) -> float:
    return _extremes(V)[1]


def paper_epsilon(T: int) -> float:
    """The paper's ε for the codes: 1 - sqrt((d'-1)/d') (eq. 78)."""
    dp = code_dim(T)
    return 1.0 - math.sqrt((dp - 1) / dp)


def circle_epsilon_approx(T: int) -> float:
    """ε ≈ 1/(2T²) of the d' = 2 frame (largest overlap: adjacent middle tokens, ≈ sqrt(T² - 1)/T)."""
    return 1.0 / (2 * T * T)


def model_dim(T: int, variant: str = "d'+2", kind: str = "binary") -> int:
    """d of the full construction: d' + 2 (eq. 93) or d' + 1."""
    dp = code_dim(T) if kind == "binary" else 2
    return dp + (2 if variant == "d'+2" else 1)


# ----------------------------------------------------------------------------- threshold


def _f92(kappa: float, eps: float, L: int) -> float:
    """Eq. 92 divided by u = e^κ: (L-1) e^{-κε} - 1 - (L-2) e^{-κ} (> 0: ranges of k = 1, 2 overlap)."""
    return (L - 1) * math.exp(-kappa * eps) - 1.0 - (L - 2) * math.exp(-kappa)


def kappa_threshold(eps: float, L: int, tol: float = 1e-12) -> float:
    """κ*: the non-trivial root of eq. 92 (bisection in log space). Needs 0 < ε < (L-2)/(L-1)."""
    if L < 3 or not 0 < eps < (L - 2) / (L - 1):
        raise ValueError(f"need L >= 3 and 0 < eps < (L-2)/(L-1); got L={L}, eps={eps}")
    lo = 1e-9
    while _f92(lo, eps, L) <= 0:  # just right of the trivial root κ = 0, f > 0
        lo /= 2
    hi = max(1.0, 2 * math.log(L - 1) / eps)
    while _f92(hi, eps, L) > 0:
        hi *= 2
    while hi - lo > tol * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _f92(mid, eps, L) > 0 else (lo, mid)
    return 0.5 * (lo + hi)


def gamma_ranges(kappa: float, eps: float, L: int, alpha: float, lo_overlap: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(γ_lo(k), γ_up(k)) for k = 1 .. L (eqs. 83-84; overlaps in [lo_overlap, 1 - ε]), computed
    stably as 1 / (1 + k e^{κα²} + (L-k) e^{κ(c + α² - 1)})."""
    k = np.arange(1, L + 1, dtype=np.float64)
    a2 = alpha * alpha
    lo = 1.0 / (1.0 + k * np.exp(kappa * a2) + (L - k) * np.exp(kappa * (a2 - eps)))
    up = 1.0 / (1.0 + k * np.exp(kappa * a2) + (L - k) * np.exp(kappa * (lo_overlap + a2 - 1.0)))
    return lo, up


def separation(kappa: float, eps: float, L: int, alpha: float) -> float:
    """min_k [γ_lo(k) - γ_up(k+1)] (eq. 85; dist of eq. 86 is the k = 1 term). > 0: exact."""
    lo, up = gamma_ranges(kappa, eps, L, alpha)
    return float((lo[:-1] - up[1:]).min())


def range_readout(kappa: float, eps: float, L: int, alpha: float) -> Readout:
    """App. A.4 readout with the boundary between k+1 and k in the middle of the gap
    [γ_up(k+1), γ_lo(k)] (our choice: App. A.4 places boundaries between the values of consecutive
    counts; with ranges of unequal width, the midpoint of the range centres can fall inside a range
    although the ranges are separated); where the ranges overlap (κ < κ*), the midpoint of the range
    centres."""
    lo, up = gamma_ranges(kappa, eps, L, alpha)
    centre = (lo + up) / 2
    gap_mid = (up[1:] + lo[:-1]) / 2
    ctr_mid = (centre[1:] + centre[:-1]) / 2
    beta_desc = np.where(up[1:] < lo[:-1], gap_mid, ctr_mid)  # boundary between k+1 and k, k = 1 .. L-1
    return readout(centre, boundaries=beta_desc[::-1])


# ----------------------------------------------------------------------------- the construction


@dataclass(frozen=True)
class BinaryConstruction:
    weights: CountingWeights
    V: np.ndarray  # [T, d'] unit token frame
    kappa: float
    alpha: float
    variant: str
    kind: str
    eps: float  # the frame's actual ε
    readout: Readout


def build(T: int, L: int, kappa: float, alpha: float = 0.01, variant: str = "d'+2", kind: str = "binary",
          eps_readout: float | None = None) -> BinaryConstruction:
    """The B.3.1 construction as bos+sftm weights (p = 1). The readout is placed from the ranges
    at ε = eps_readout (default: the frame's actual ε)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r}: choose one of {VARIANTS}")
    if not (kappa > 0 and 0 < alpha < 1):
        raise ValueError(f"need kappa > 0 and 0 < alpha < 1; got {kappa}, {alpha}")
    V = frame(kind, T)
    dp = V.shape[1]
    d = dp + (2 if variant == "d'+2" else 1)
    emb = np.zeros((T + 1, d))
    emb[:T, :dp] = V
    emb[:T, dp] = alpha
    emb[T, dp] = 1.0 / alpha
    W1 = np.zeros((d, 1))
    if variant == "d'+2":
        emb[T, dp + 1] = 1.0
        W1[dp + 1, 0] = 1.0
        b1 = np.zeros(1)
    else:
        s = 1.0 / alpha - alpha
        W1[dp, 0] = 1.0 / s
        b1 = np.array([-2.0 * alpha / s])
    eps = epsilon(V)
    r = range_readout(kappa, eps if eps_readout is None else eps_readout, L, alpha)
    qk = d ** 0.25 * np.eye(d)
    w = CountingWeights("bos+sftm", emb, W1, b1, r.w[None, :].copy(), r.b.copy(), W_Q=kappa * qk, W_K=qk)
    return BinaryConstruction(w, V, float(kappa), float(alpha), variant, kind, eps, r)


def attention_on_bos(c: BinaryConstruction, x: np.ndarray) -> np.ndarray:
    """Softmax weight of BOS for each position [n, L] (what γ should equal)."""
    return forward(c.weights, x)["mixing"][:, :, 0]


def check(c: BinaryConstruction, x: np.ndarray) -> dict:
    """Accuracy on x [n, L], the range of γ per count, γ vs the BOS weight, and the ranges check."""
    out = forward(c.weights, x)
    y = hist(x)
    g = out["gamma"]
    L = x.shape[1]
    lo, up = gamma_ranges(c.kappa, c.eps, L, c.alpha, min(0.0, min_overlap(c.V)))
    ks = np.unique(y)
    obs_lo = np.array([g[y == k].min() for k in ks])
    obs_up = np.array([g[y == k].max() for k in ks])
    tol = 1e-12
    return {"n": int(x.shape[0]), "accuracy": float((out["prediction"] == y).mean()),
            "gamma_minus_bos_weight": float(np.abs(g - out["mixing"][:, :, 0]).max()),
            "counts": ks.tolist(), "gamma_lo": obs_lo.tolist(), "gamma_up": obs_up.tolist(),
            "inside_ranges": bool(np.all(obs_lo >= lo[ks - 1] * (1 - 1e-9) - tol)
                                  and np.all(obs_up <= up[ks - 1] * (1 + 1e-9) + tol)),
            "separated": bool(np.all(obs_lo[:-1] > obs_up[1:])) if len(ks) > 1 else True}


def gamma_float32(c: BinaryConstruction, x: np.ndarray) -> np.ndarray:
    """γ = attention on BOS computed in float32 (embeddings, Q, K, scores, softmax), as a
    float32 accelerator would; the readout is then applied in float64."""
    w = c.weights
    n, L = x.shape
    xx = np.concatenate([np.full((n, 1), w.T), x], 1)
    e = w.emb.astype(np.float32)[xx]
    q = e @ w.W_Q.astype(np.float32)
    k = e @ w.W_K.astype(np.float32)
    s = (q @ np.swapaxes(k, 1, 2)) / np.float32(math.sqrt(w.d))
    s = s - s.max(-1, keepdims=True)
    a = np.exp(s)
    a = a / a.sum(-1, keepdims=True)
    mixed = e + a @ e
    z = mixed[:, 1:] @ w.W1.astype(np.float32) + w.b1.astype(np.float32)
    return np.maximum(z, 0).sum(-1).astype(np.float64)


def accuracy_float32(c: BinaryConstruction, x: np.ndarray) -> float:
    return float((c.readout.classify(gamma_float32(c, x)) == hist(x)).mean())


def nearest_pair_sequences(V: np.ndarray, L: int) -> np.ndarray:
    """Two-token sequences t^k s^(L-k), k = 1 .. L-1, over the pairs (t, s) at the frame's largest
    overlap (both orders): the sequences of γ_lo. Cheap stand-in for all pairs at large T."""
    ts = _extremes(V)[2]
    k = np.arange(1, L)
    first = np.arange(L)[None, :] < k[:, None]
    x = np.where(first[None], ts[:, 0, None, None], ts[:, 1, None, None])
    return x.reshape(-1, L)
