"""Theorem 2 of paper 004: an explicit sequence encoder for noisy look-up tables, and its KL bound.

Dana, Pydi & Chevaleyre (2025), "Memorization in Attention-only Transformers", §4.2 and App. A.3.
Everything is numpy float64.

The construction. Take an unembedding W in R^{N x d} whose rows are nearly orthogonal,
|W_j^T W_k| <= C (j != k) and |‖W_j‖² − 1| <= C, i.e. ‖W W^T − I_N‖_max <= C (the paper
writes I_d, and gets C = sqrt(32 log(N+1)/d) from Johnson–Lindenstrauss). For a sequence t with
"true" next token g = g(t) and conditional π_t, let f(t) = λ_t W W_g, with λ_t >= 0 solving

    H(π_t) = log Σ_j exp(λ (W_j − W_g)^T W_g)                                  (corrected sign)

The right side is log N at λ = 0 and decreases to 0 as λ → ∞ (every (W_j − W_g)^T W_g < 0 for
j != g when C < 1/2), so the root exists for every H in [0, log N]. Then

    KL(π_t ‖ softmax f(t)) = −H + log Σ_j e^{f_j − f_g} + Σ_k π_t(k)(f_g − f_k)
                           = λ_t Σ_k π_t(k)(W_g − W_k)^T W_g                     (exact)

and, since (W_j − W_g)^T W_g <= −(1 − 2C), λ_t <= log((N−1)/(e^{H} − 1)) / (1 − 2C), so

    KL_t <= (1 − π_t(g)) (1 + 2C + C d_TV(π̃_t, π_unif)) / (1 − 2C) · log((N−1)/(e^{H(π_t)} − 1))

(π̃_t: π_t on the tokens != g, renormalised; π_unif: uniform on those N − 1 tokens). The paper's
simplified bound replaces the expectation of the product by
E[1 − π(g)] · log((N−1)/(e^{E[H]} − 1)) · (1 + 4C)/(1 − 2C).

Sign corrections to the printed text (erratum 2 on the errata page): the λ equation is printed with −H(π_t)
on the left (no solution: the right side is >= 0 for every real λ); the bound's e^{−H} − 1 must be
e^{H} − 1 (e^{−H} − 1 < 0, a negative log argument); the uniform case is H = +log N, not −log N;
App. A.3's decomposition has E[H] where −E[H] belongs and drops an exp in f/Σe^f; and
‖WW^T − I‖ is an N x N identity. `printed_sign_check` shows the first two numerically.
"""

from __future__ import annotations

import math

import numpy as np

# ----------------------------------------------------------------------------- the unembedding


def near_orthogonal_unembedding(N: int, d: int, seed: int = 0) -> np.ndarray:
    """W in R^{N x d}: iid Gaussian rows, normalised to unit length (so diag(W W^T) = 1 exactly)."""
    if N < 2 or d < 1:
        raise ValueError(f"near_orthogonal_unembedding needs N >= 2 and d >= 1; got N={N}, d={d}")
    rng = np.random.default_rng([N, d, seed, 2])
    W = rng.standard_normal((N, d))
    return W / np.linalg.norm(W, axis=1, keepdims=True)


def coherence(W: np.ndarray, block: int = 1024) -> float:
    """Empirical C: max |W W^T − I_N| over all entries (diagonal included; 0 there for unit rows)."""
    W = np.asarray(W, dtype=np.float64)
    worst = 0.0
    for i in range(0, W.shape[0], block):  # blocks keep N = 5000 at 40 MB, not 200 MB
        G = W[i:i + block] @ W.T
        G[np.arange(G.shape[0]), np.arange(i, i + G.shape[0])] -= 1.0
        worst = max(worst, float(np.abs(G).max()))
    return worst


def c_jl(N: int, d: int) -> float:
    """The theorem's Johnson–Lindenstrauss constant C = sqrt(32 log(N+1) / d); < 1/2 iff d > 128 log(N+1)."""
    return math.sqrt(32 * math.log(N + 1) / d)


# ----------------------------------------------------------------------------- noisy look-up tables


def noisy_lookup(N: int, eta, alpha: float = 1.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Conditionals π_t = (1 − η_t) δ_{g(t)} + η_t q_t, one per entry of `eta`.

    g(t) uniform on [N]; q_t ~ Dirichlet(alpha) on the N − 1 tokens != g(t). Returns g [n] and
    π [n, N]; π_t(g) is set to 1 − η_t exactly (the other entries sum to η_t).
    """
    eta = np.atleast_1d(np.asarray(eta, dtype=np.float64))
    if np.any(eta < 0) or np.any(eta > 1):
        raise ValueError(f"eta must lie in [0, 1]; got min {eta.min()}, max {eta.max()}")
    if alpha <= 0:
        raise ValueError(f"alpha={alpha} (Dirichlet concentration) must be > 0")
    n = eta.size
    rng = np.random.default_rng([N, n, seed, 3])
    g = rng.integers(0, N, size=n)
    q = rng.gamma(alpha, size=(n, N - 1))
    q /= q.sum(1, keepdims=True)
    pi = np.empty((n, N))
    others = np.ones((n, N), dtype=bool)
    others[np.arange(n), g] = False
    pi[others] = (eta[:, None] * q).ravel()
    pi[np.arange(n), g] = 1.0 - eta
    return g, pi


def entropy(pi: np.ndarray) -> np.ndarray:
    """H(π_t) in nats, per row (0 log 0 = 0)."""
    pi = np.asarray(pi, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(pi > 0, -pi * np.log(pi), 0.0)
    return terms.sum(-1)


def _off_mass(pi: np.ndarray, g: np.ndarray) -> np.ndarray:
    """1 − π_t(g), as the sum of the other entries (no cancellation for tiny η)."""
    mask = np.ones_like(pi, dtype=bool)
    mask[np.arange(len(g)), g] = False
    return np.where(mask, pi, 0.0).sum(-1)


# ----------------------------------------------------------------------------- λ and the exact KL


def gaps(W: np.ndarray, g: np.ndarray) -> np.ndarray:
    """a_t[j] = (W_j − W_g)^T W_g, [n, N]; a_t[g] = 0 exactly."""
    Wg = W[g]
    a = Wg @ W.T - np.einsum("nd,nd->n", Wg, Wg)[:, None]
    a[np.arange(len(g)), g] = 0.0
    return a


def log_partition(lam: np.ndarray, a: np.ndarray) -> np.ndarray:
    """F(λ) = log Σ_j exp(λ a_j), with a_g = 0 kept out of the sum: log1p(Σ_{j != g} e^{λ a_j})."""
    lam = np.asarray(lam, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # λ = inf rows are overwritten below
        z = lam[:, None] * a
    zmax = np.maximum(z.max(-1), 0.0)  # the j = g term is e^0
    with np.errstate(invalid="ignore"):
        s = np.exp(z - zmax[:, None]).sum(-1) - np.exp(-zmax)  # Σ_{j != g}, rescaled
    small = zmax == 0
    out = np.where(small, np.log1p(np.where(small, s, 0.0)), zmax + np.log(np.exp(-zmax) + s))
    return np.where(np.isinf(lam), 0.0, out)


def solve_lambda(W: np.ndarray, g: np.ndarray, H: np.ndarray, iters: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """λ_t >= 0 with log Σ_j exp(λ (W_j − W_g)^T W_g) = H(π_t), by bisection (vectorised over t).

    H = log N gives λ = 0; H = 0 gives λ = +inf. Returns (λ, |F(λ) − H|). Raises if some
    (W_j − W_g)^T W_g >= 0 for j != g (then F does not decrease to 0: C >= 1/2 can allow it).
    """
    a = gaps(W, np.asarray(g))
    N = W.shape[0]
    H = np.asarray(H, dtype=np.float64)
    if np.any(H < -1e-12) or np.any(H > math.log(N) + 1e-12):
        raise ValueError(f"entropies must lie in [0, log N = {math.log(N):.6g}]; got [{H.min()}, {H.max()}]")
    off = np.ones_like(a, dtype=bool)
    off[np.arange(len(a)), g] = False
    if np.any(a[off] >= 0):
        raise ValueError("some (W_j - W_g)^T W_g >= 0 for j != g: log-partition does not decrease to 0")
    H = np.clip(H, 0.0, math.log(N))
    lo = np.zeros_like(H)
    hi = np.ones_like(H)
    live = H > 0
    for _ in range(2000):  # grow the bracket until F(hi) < H
        grow = live & (log_partition(hi, a) >= H)
        if not grow.any():
            break
        hi[grow] *= 2.0
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        above = log_partition(mid, a) > H  # F decreasing: root to the right
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
        if np.all(hi - lo <= 4 * np.finfo(float).eps * np.maximum(hi, 1e-300)):
            break
    lam = 0.5 * (lo + hi)
    lam[H >= math.log(N)] = 0.0
    lam[~live] = np.inf
    return lam, np.abs(log_partition(lam, a) - H)


def construction_kl(W: np.ndarray, g: np.ndarray, pi: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Exact KL of the construction: λ_t Σ_k π_t(k)(W_g − W_k)^T W_g (0 when π_t = δ_g and λ = inf)."""
    s = -(pi * gaps(W, g)).sum(-1)
    with np.errstate(invalid="ignore"):
        return np.where(s == 0, 0.0, lam * s)


def direct_kl(W: np.ndarray, g: np.ndarray, pi: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """KL(π_t ‖ softmax(λ_t W W_g)) evaluated directly (finite λ): the check of `construction_kl`."""
    logits = lam[:, None] * (W[g] @ W.T)
    logp = logits - logits.max(-1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(pi > 0, pi * (np.log(pi) - logp), 0.0)
    return terms.sum(-1)


# ----------------------------------------------------------------------------- the bounds


def _check_C(C: float) -> None:
    if not 0 <= C < 0.5:
        raise ValueError(f"C={C} must satisfy 0 <= C < 1/2 (the bound divides by 1 - 2C); "
                         "with C_JL this needs d > 128 log(N+1)")


def tv_to_uniform(pi: np.ndarray, g: np.ndarray) -> np.ndarray:
    """d_TV(π̃_t, π_unif): π_t on the tokens != g renormalised, against uniform on those N − 1 tokens."""
    n, N = pi.shape
    off = _off_mass(pi, g)
    mask = np.ones_like(pi, dtype=bool)
    mask[np.arange(n), g] = False
    with np.errstate(invalid="ignore", divide="ignore"):
        tilde = np.where(mask, pi, 0.0) / off[:, None]
    tv = 0.5 * np.where(mask, np.abs(tilde - 1.0 / (N - 1)), 0.0).sum(-1)
    return np.where(off > 0, tv, 0.0)


def _log_term(H: np.ndarray, N: int) -> np.ndarray:
    """log((N − 1)/(e^{H} − 1)), clipped at 0 where H rounds above log N (the uniform case)."""
    H = np.asarray(H, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.maximum(np.log(N - 1) - np.log(np.expm1(H)), 0.0)


def lambda_bound(H: np.ndarray, N: int, C: float) -> np.ndarray:
    """λ_t <= log((N − 1)/(e^{H} − 1)) / (1 − 2C) (App. A.3, corrected sign)."""
    _check_C(C)
    return _log_term(H, N) / (1 - 2 * C)


def per_sequence_bound(pi: np.ndarray, g: np.ndarray, C: float) -> np.ndarray:
    """Theorem 2 (corrected), per sequence: (1 − π(g)) (1 + 2C + C d_TV)/(1 − 2C) · log((N−1)/(e^H − 1))."""
    _check_C(C)
    N = pi.shape[1]
    off = _off_mass(pi, g)
    factor = (1 + 2 * C + C * tv_to_uniform(pi, g)) / (1 - 2 * C)
    L = _log_term(entropy(pi), N)
    with np.errstate(invalid="ignore"):
        return np.where(off > 0, off * factor * L, 0.0)  # η = 0: the 0 · inf limit is 0


def simplified_bound(pi: np.ndarray, g: np.ndarray, C: float, weights: np.ndarray | None = None) -> float:
    """The paper's simplified bound: E[1 − π(g)] · log((N−1)/(e^{E[H]} − 1)) · (1 + 4C)/(1 − 2C).

    Not implied by the per-sequence bound in general: h -> log((N−1)/(e^h − 1)) is convex, so
    Jensen's inequality goes the other way (see `two_level_q_example`).
    """
    _check_C(C)
    w = np.full(len(g), 1 / len(g)) if weights is None else np.asarray(weights, float) / np.sum(weights)
    off = float(w @ _off_mass(pi, g))
    if off == 0:
        return 0.0
    return off * float(_log_term(w @ entropy(pi), pi.shape[1])) * (1 + 4 * C) / (1 - 2 * C)


# ----------------------------------------------------------------------------- erratum 2, numerically


def printed_sign_check(W: np.ndarray, g: np.ndarray, pi: np.ndarray,
                       lam_grid: np.ndarray | None = None) -> dict:
    """The printed forms: −H(π_t) = log Σ_j exp(λ a_j) and log((N−1)/(e^{−H} − 1)).

    Returns the least value of the right side over a wide λ grid (negative λ included), the
    largest target −H (both per the sequences given), and the printed log argument
    (N−1)/(e^{−H} − 1), which is negative for every H > 0.
    """
    lam_grid = np.linspace(-50, 500, 2201) if lam_grid is None else np.asarray(lam_grid, float)
    a = gaps(W, g)
    H = entropy(pi)
    F = np.stack([log_partition(np.full(len(g), l), a) for l in lam_grid])  # [grid, n]
    arg = (W.shape[0] - 1) / np.expm1(-H)
    return {"min_rhs": float(F.min()), "max_printed_target": float((-H).max()),
            "printed_has_solution": bool(np.any(F.min(0) <= -H)),
            "max_printed_log_argument": float(arg[H > 0].max()) if np.any(H > 0) else float("nan"),
            "corrected_log_argument_min": float(((W.shape[0] - 1) / np.expm1(H[H > 0])).min())}


def two_level_q_example(N: int = 10, d: int = 4000, eta: float = 0.5, n: int = 200, seed: int = 0) -> dict:
    """Fixed η, but half the sequences put all their noise on one token (q one-hot) and half spread
    it uniformly: the entropies differ a lot, and since h -> log((N−1)/(e^h − 1)) is convex, the
    simplified bound (evaluated at the mean entropy) drops below the mean of the per-sequence
    bounds. It is not a consequence of them; it still stays above the exact mean KL here."""
    W = near_orthogonal_unembedding(N, d, seed)
    C = coherence(W)
    g, pi = noisy_lookup(N, np.full(n, eta), seed=seed)
    rows = np.arange(n)
    others = np.ones_like(pi, dtype=bool)
    others[rows, g] = False
    first_other = np.where(g == 0, 1, 0)
    pi[others] = 0.0
    pi[rows[: n // 2], first_other[: n // 2]] = eta  # one-hot noise
    spread = others.copy()
    spread[: n // 2] = False
    pi[spread] = eta / (N - 1)  # uniform noise
    lam, _ = solve_lambda(W, g, entropy(pi))
    kl = construction_kl(W, g, pi, lam)
    bound = per_sequence_bound(pi, g, C)
    return {"N": N, "d": d, "eta": eta, "C": C, "mean_kl": float(kl.mean()), "mean_bound": float(bound.mean()),
            "simplified": simplified_bound(pi, g, C), "per_sequence_holds": bool(np.all(kl <= bound))}
