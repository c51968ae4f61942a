"""Closed-form bounds and resource counts of the paper.

* Theorem 5.1 / Lemmas B.1–B.2: nodes, layers and heads that simulate MPC and PCOC.
* Theorem 6.1 (App. C): the norm-based covering-number complexity of positional Transformers,
  and the extra factor of self-attention; Lemmas C.6 and C.8.
* App. E: the probability p_in that an "out-of-distribution" test list lies in the training
  domain (Eqs. 23–29), with the n = 2 case corrected, and its Monte Carlo estimate.
* App. G: the probabilities behind the discrepancy lower bound for Mansour et al. (2009).
"""

from __future__ import annotations

import math

import numpy as np

# ---------------------------------------------------------------- Theorem 5.1, Lemmas B.1–B.2


def ceil_log2(N: int) -> int:
    return max(0, math.ceil(math.log2(N))) if N > 1 else 0


def lemma_b1(R: int, N: int, s: int) -> dict:
    """MPC (R rounds, N machines, memory s) → PCOC: 2R⌈log N⌉ rounds, N machines, memory 2s."""
    return {"rounds": 2 * R * ceil_log2(N), "machines": N, "memory": 2 * s}


def lemma_b2(R: int, N: int, s: int) -> dict:
    """PCOC (R rounds, N machines, memory s) → positional Transformer: N + 1 nodes, R layers, s heads."""
    return {"nodes": N + 1, "layers": R, "heads": s}


def theorem_5_1(R: int, N: int, s: int) -> dict:
    """MPC → positional Transformer: N + 1 nodes, 2R⌈log N⌉ layers, 2s heads."""
    return {"nodes": N + 1, "layers": 2 * R * ceil_log2(N), "heads": 2 * s}


def compose_b1_b2(R: int, N: int, s: int) -> dict:
    """Lemma B.2 applied to the PCOC of Lemma B.1 (what Theorem 5.1 must equal)."""
    p = lemma_b1(R, N, s)
    return lemma_b2(p["rounds"], p["machines"], p["memory"])


def remark_5_2(N: int, L: int, c_nodes: float = 1.0, c_layers: float = 1.0) -> dict:
    """Remark 5.2's orders: a standard Transformer (N nodes, L layers) is simulated by a positional
    one with O(N²) nodes and O(L log N) layers (constants unknown: set to c_nodes, c_layers)."""
    return {"nodes": c_nodes * N ** 2, "layers": c_layers * L * max(1.0, math.log2(N))}


# ---------------------------------------------------------------- Theorem 6.1 (App. C)


def output_norm_growth(l: int, L_sigma: float, B2: float, H: int) -> float:
    """B^{(ℓ)} = L_σ^ℓ B_2^{2ℓ} (1 + H B_2²)^{ℓ/2}: ‖F^{(ℓ)}(X)^T‖_{2,∞} ≤ B^{(ℓ)} ‖X^T‖_{2,∞}."""
    return L_sigma ** l * B2 ** (2 * l) * (1 + H * B2 ** 2) ** (l / 2)


def log_cover_complexity(L: int, H: int, L_sigma: float, B2: float, B21: float, Bw: float = None,
                         BX: float = 1.0, BP: float = 1.0, d: int = 64, m: int = 1000, n: int = 8) -> float:
    """C_F of Eq. (20) with all constants 1: log N_∞(F; ε) ≲ C_F / ε², where
    C_F = L_σ^{2L} B_2^{3L} B^{(L)2} H² B_w² B_{2,1}² B_X² B_P⁴ log(H(d + d_P) m n) (d_P = d here)."""
    Bw = B2 if Bw is None else Bw
    BL = output_norm_growth(L, L_sigma, B2, H)
    return (L_sigma ** (2 * L) * B2 ** (3 * L) * BL ** 2 * H ** 2 * Bw ** 2 * B21 ** 2 * BX ** 2 * BP ** 4
            * math.log(H * 2 * d * m * n))


def generalization_gap(C_F: float, m: int, delta: float = 0.05) -> float:
    """Lemma C.5 without constants or log factors: sqrt(C_F/m) + sqrt(log(1/δ)/m)."""
    return math.sqrt(C_F / m) + math.sqrt(math.log(1 / delta) / m)


def self_attention_factor(B_QK: float, L: int, exponent: float = 1.0) -> float:
    """The extra factor B_QK^{O(L)} of a self-attention bound (§6; taken as B_QK^{exponent·L})."""
    return B_QK ** (exponent * L)


def norm_21(W: np.ndarray) -> float:
    """‖W‖_{2,1} = Σ_j ‖W_{:,j}‖₂ (App. C.1.1: 2-norm over columns, 1-norm over the rest)."""
    return float(np.linalg.norm(W, axis=0).sum())


def spectral(W: np.ndarray) -> float:
    return float(np.linalg.norm(W, 2))


def lemma_c6_ratio(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """‖softmax(x) − softmax(y)‖₁ / ‖x − y‖_∞ per row (Lemma C.6: ≤ 2)."""
    from .reference import softmax

    return np.abs(softmax(x) - softmax(y)).sum(-1) / np.abs(x - y).max(-1)


def lemma_c8(a: np.ndarray, b: np.ndarray, eps: float) -> tuple[float, np.ndarray]:
    """min Σ a_i/ε_i² subject to Σ b_i ε_i = ε: the value ν³/ε² with ν = Σ a_i^{1/3} b_i^{2/3},
    attained at ε_i = ε (a_i/b_i)^{1/3}/ν (the paper prints a_1 for a_i)."""
    nu = float(np.sum(a ** (1 / 3) * b ** (2 / 3)))
    return nu ** 3 / eps ** 2, eps * (a / b) ** (1 / 3) / nu


# ---------------------------------------------------------------- App. E


def p_event_a(c: float) -> float:
    """P(exactly one of γ_l, γ_u in [−1, 1] | not both) (Eq. 23)."""
    return 2 * (c - 1) / (c ** 2 - 1)


def p_event_b(c: float) -> float:
    """P(neither in [−1, 1] | not both) (Eq. 23)."""
    return (c - 1) ** 2 / (c ** 2 - 1)


def p_a_in_bound(n: int, c: float) -> float:
    """Eq. (24): p_{A,in} ≤ (3(1 − c^{−(n−1)}) + 1) / (4(n−1)(c−1))."""
    return (3 * (1 - c ** -(n - 1)) + 1) / (4 * (n - 1) * (c - 1))


def p_b2_in(n: int, c: float, printed: bool = False) -> float:
    """Eq. (26): p_{B.2,in}, exact. n = 2: 4(2 ln(c+1) − ln c − 2 ln 2)/(c−1)²; the paper prints it
    without the factor 2^n = 4 (printed=True)."""
    if n == 2:
        val = (2 * math.log(c + 1) - math.log(c) - 2 * math.log(2)) / (c - 1) ** 2
        return val if printed else 4 * val
    return (4 - 8 * (2 / (1 + c)) ** (n - 2) + 4 * c ** -(n - 2)) / ((c - 1) ** 2 * (n - 1) * (n - 2))


def p_in_bound(n: int, c: float, printed: bool = False) -> float:
    """Eqs. (27)/(28): P(A) p_{A,in} bound + P(B) · ½ · p_{B.2,in}; c = 1 gives 1 (no OOD data).
    printed=True: the paper's n = 2 formula (Eq. 28, first form)."""
    if c <= 1:
        return 1.0
    return p_event_a(c) * p_a_in_bound(n, c) + p_event_b(c) * 0.5 * p_b2_in(n, c, printed)


def p_in_eq28_loose(c: float) -> float:
    """Eq. (28), second form: (3(1 − 1/c) + 9/8) / (2(c² − 1)) (needs 2 ln(c+1) − ln c − 2 ln 2 ≤ 1/8)."""
    return (3 * (1 - 1 / c) + 9 / 8) / (2 * (c ** 2 - 1))


def p_in_eq27_simple(n: int, c: float) -> float:
    """Eq. (27), last form: 2/((c²−1)(n−1)) + 2/((n−1)(n−2)(c²−1))."""
    return 2 / ((c ** 2 - 1) * (n - 1)) + 2 / ((n - 1) * (n - 2) * (c ** 2 - 1))


def p_in_monte_carlo(n: int, c: float, samples: int, rng: np.random.Generator, chunk: int = 200_000) -> float:
    """Fraction of test lists (§7 sampling with the rejection step, rescaled to train [−1, 1] and
    test [−c, c]) that lie entirely in [−1, 1]."""
    hits = total = 0
    while total < samples:
        g = rng.uniform(-c, c, size=(chunk, 2))
        g = np.sort(g[~np.all(np.abs(g) <= 1, axis=1)], axis=1)[: samples - total]
        x = g[:, :1] + (g[:, 1:] - g[:, :1]) * rng.uniform(size=(len(g), n))
        hits += int(np.all(np.abs(x) <= 1, axis=1).sum())
        total += len(g)
    return hits / total


def chernoff(N: int, eps: float) -> float:
    """Eq. (29): P(N_in ≥ N(p_in + ε)) ≤ exp(−2Nε²); returns 1 − exp(−2Nε²)."""
    return 1 - math.exp(-2 * N * eps ** 2)


# ---------------------------------------------------------------- App. G


def p_extremes_present(n: int, L: int) -> float:
    """Lower bound on P(an array of n uniform integers in 0..L contains both 0 and L): 1 − 2(L/(L+1))^n."""
    return 1 - 2 * (L / (L + 1)) ** n


def p_extremes_exact(n: int, L: int) -> float:
    """The exact probability (inclusion–exclusion): 1 − 2(L/(L+1))^n + ((L−1)/(L+1))^n."""
    return 1 - 2 * (L / (L + 1)) ** n + ((L - 1) / (L + 1)) ** n


def p_all_samples(n: int, L: int, m: int, exact: bool = False) -> float:
    """P(all m samples contain both extremes) ≥ (1 − 2(L/(L+1))^n)^m (App. G)."""
    p = p_extremes_exact(n, L) if exact else p_extremes_present(n, L)
    return max(p, 0.0) ** m


def discrepancy_lower_bound(rng: np.random.Generator, n: int, L: int, z: int, m: int) -> float:
    """|mean_test(max − min) − mean_train(max − min)| on m train arrays (0..L) and m test arrays
    (0..L+z): the h = min, h' = max lower bound on the empirical discrepancy."""
    tr = rng.integers(0, L + 1, size=(m, n))
    te = rng.integers(0, L + z + 1, size=(m, n))
    return float(abs((te.max(1) - te.min(1)).mean() - (tr.max(1) - tr.min(1)).mean()))
