"""Closed-form bounds of the paper, evaluated exactly (no fitted constants unless named).

Theorem B.1 (Chernoff constants of Construction I), the Hoeffding sufficient d_k for Rademacher
signatures, Eqs. (1)-(2) and (19)-(22) (budgets within the template), Lemma 8.2, Theorem 9.2 /
the bit-budget bound (log-binomial), Lemma 9.3 (Lipschitz constants), Lemma B.8 (head count) and
App. C (FLOPs and parameters).
"""

from __future__ import annotations

import math

import numpy as np

# --- Construction I -------------------------------------------------------------------------


def hoeffding_dk(m: int, delta: float = 0.1) -> int:
    """Smallest d_k with m(m-1) exp(-d_k/8) <= delta. Our derivation of an explicit constant for §4's
    Construction I (the paper invokes Bernstein and a union bound, with no constant): <w_a, w_b> is a
    sum of d_k independent +-1 products, so Hoeffding gives P(<w_a, w_b> >= d_k/2) <= exp(-(d_k/2)^2 /
    (2 d_k)) = exp(-d_k/8); a union bound over the m(m-1) non-edges."""
    return math.ceil(8 * math.log(m * (m - 1) / delta))


def hoeffding_failure(m: int, d_k: int) -> float:
    """The union bound m(m-1) exp(-d_k/8) on P(some non-edge reaches d_k/2), Rademacher."""
    return m * (m - 1) * math.exp(-d_k / 8)


def chernoff_constants(p: float) -> tuple[float, float]:
    """(c1, c2) of Theorem B.1: P[S_true <= tau] <= exp(-c1 d_k), P[S_false >= tau] <= exp(-c2 d_k)."""
    return p * (1 - p) ** 2 / 8, p * (1 - p) ** 2 / (2 * (1 + 3 * p))


def chernoff_tail_true(d_k: int, p: float) -> float:
    """exp(-mu1 delta1^2 / 2) with mu1 = p d_k, delta1 = 1 - tau/mu1 (Theorem B.1, lower tail)."""
    mu1, tau = p * d_k, (p + p * p) / 2 * d_k
    return math.exp(-mu1 * (1 - tau / mu1) ** 2 / 2)


def chernoff_tail_false(d_k: int, p: float) -> float:
    """exp(-mu2 delta2^2 / (2 + delta2)) with mu2 = p^2 d_k, delta2 = tau/mu2 - 1 (upper tail)."""
    mu2, tau = p * p * d_k, (p + p * p) / 2 * d_k
    d2 = tau / mu2 - 1
    return math.exp(-mu2 * d2 * d2 / (2 + d2))


def theorem_b1_failure(m: int, d_k: int, p: float) -> float:
    """The union bound m e^{-c1 d_k} + m^2 e^{-c2 d_k} of Theorem B.1 (can exceed 1: vacuous)."""
    c1, c2 = chernoff_constants(p)
    return m * math.exp(-c1 * d_k) + m * m * math.exp(-c2 * d_k)


def theorem_b1_C(p: float) -> dict:
    """The constant C (d_k = C ln m) of Theorem B.1: the paper's C > max{3/c1, 2/c2}, and the
    smallest C with m e^{-c1 C ln m} + m^2 e^{-c2 C ln m} <= 2 m^{-3} for all m, max{4/c1, 5/c2}."""
    c1, c2 = chernoff_constants(p)
    return {"paper": max(3 / c1, 2 / c2), "needed": max(4 / c1, 5 / c2)}


def binom_tail_ge(n: int, q: float, k: float) -> float:
    """P(Bin(n, q) >= k), exact (log-space sum)."""
    lo = max(0, math.ceil(k))
    if lo > n:
        return 0.0
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(q)
             + (n - i) * math.log1p(-q) for i in range(lo, n + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


# --- Eqs. (1)-(2), (19)-(22): budgets within the de-embedding template ----------------------------


def n3_scale(B: int, d_model: int, d_k: int, m: int | None = None) -> float:
    """Eq. (1) without its log: N3(B) ~ (B/d) sqrt(d_k) (the sqrt(log m) is the union bound over
    all pairs). The per-pair standard deviation (B/d) sqrt(d_k) is our derivation from the proof of
    Theorem B.2 (App. B.2): N3 = sum_r X_r Y_r over the d_k columns, X_r and Y_r of scale
    ||delta_i,V_k|| and ||delta_j,T_k||, whose squares have mean ~ B/d (proof of Cor. B.6, App. B.3);
    a sum of d_k such products has standard deviation ~ (B/d) sqrt(d_k). With m: times sqrt(ln m)."""
    return B / d_model * math.sqrt(d_k) * (math.sqrt(math.log(m)) if m else 1.0)


def dk_required(B: int, d_model: int, m: int, c2: float = 1.0) -> float:
    """Eq. (2): d_k >= c2 (B/d)^2 log m."""
    return c2 * (B / d_model) ** 2 * math.log(m)


def budget_single(m: int, d_model: int, c2: float = 1.0) -> float:
    """§5: one head serves B = m: D_K = d_k = c2 (m/d)^2 log m."""
    return dk_required(m, d_model, m, c2)


def budget_multi(m: int, d_model: int, c3: float = 1.0) -> float:
    """§5: h = m/d heads of d_k = c3 log m: D_K = c3 (m/d) log m."""
    return m / d_model * c3 * math.log(m)


def softmax_budget_single(m: int, d_model: int, c1: float = 1.0, c2: float = 1.0) -> float:
    """Eq. (20): (m/d)^2 log m + (log m)^2, constants c2, c1."""
    return c2 * (m / d_model) ** 2 * math.log(m) + c1 * math.log(m) ** 2


def softmax_budget_multi(m: int, d_model: int, c1: float = 1.0) -> float:
    """Eq. (21): (m/d) (log m)^2."""
    return c1 * m / d_model * math.log(m) ** 2


# --- §8: softmax -----------------------------------------------------------------------------


def lemma82_bound(a: float, b: float, ell: int) -> float:
    """Lemma 8.2: if z* >= a and z_t <= b for the other ell - 1 items, softmax(z)* >= this."""
    return 1.0 / (1.0 + (ell - 1) * math.exp(-(a - b)))


def owner_mass_bound(d_k: int, ell: int) -> float:
    """Eq. (9): owner-head mass >= 1/(1 + (ell-1) e^{-sqrt(d_k)/2}) given the raw separation (7)."""
    return lemma82_bound(0.75 * math.sqrt(d_k), 0.25 * math.sqrt(d_k), ell)


def background_mean(h: int, ell: int) -> float:
    """Eq. (14): mean non-owner mass (h - 1)/ell."""
    return (h - 1) / ell


# --- §9: lower bounds -------------------------------------------------------------------------


def log2_binom(n: int, k: int) -> float:
    """log2 C(n, k), exact up to float rounding (lgamma)."""
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)) / math.log(2)


def bit_budget_dk(m: int, m_edges: int, d_model: int, b: int) -> float:
    """The warm-up bound of §9 with its O(1) made exact: 2^{b(2 d D_K + 1)} >= C(m(m-1), m')
    gives D_K >= (log2 C(m(m-1), m') / b - 1) / (2 d)."""
    return (log2_binom(m * (m - 1), m_edges) / b - 1) / (2 * d_model)


def asymptotic_shape(m: int, m_edges: int, d_model: int) -> float:
    """(m'/d) log2(m^2/m'), the shape of Eq. (24)."""
    return m_edges / d_model * math.log2(m * m / m_edges)


def covering_dk(m: int, m_edges: int, d_model: int, gamma: float, C: float = 3.0) -> float:
    """Theorem 9.2 with the covering number (C/eps)^{2 d D_K + 1}, eps = gamma/4: D_K >=
    (log C(N, m') / log(4C/gamma) - 1) / (2 d) (C = 3: the volumetric constant of a unit ball)."""
    return (log2_binom(m * (m - 1), m_edges) / math.log2(4 * C / gamma) - 1) / (2 * d_model)


def decision(U: np.ndarray, V: np.ndarray, tau: float, xu: np.ndarray, xv: np.ndarray, h: int,
             agg: str = "max") -> float:
    """S(u, v) - tau of §9 for concatenated U, V (d x D_K) split into h equal heads; agg: max or sum."""
    s = (xu @ U).reshape(h, -1) * (xv @ V).reshape(h, -1)
    per_head = s.sum(axis=1)
    return float((per_head.max() if agg == "max" else per_head.sum()) - tau)


# --- Lemma B.8 and App. C ---------------------------------------------------------------------


def heads_general(m_edges: int, d_model: int, delta: int) -> int:
    """Lemma B.8: H = ceil(m'/d) + Delta."""
    return math.ceil(m_edges / d_model) + delta


def skew_ok(m: int, m_edges: int, d_model: int, delta: int) -> bool:
    """Condition (33): Delta / d_avg <= m/d, i.e. Delta <= m'/d."""
    return delta * d_model <= m_edges


def footprint(ell: int, d_model: int, h: int, d_k: int) -> dict:
    """App. C, exact multiply-accumulate counts of the QK channel: forming Q and K (2 ell d D_K),
    all per-head score matrices (h ell^2 d_k = ell^2 D_K), and the parameters 2 d D_K."""
    D_K = h * d_k
    return {"h": h, "d_k": d_k, "D_K": D_K, "qk_macs": 2 * ell * d_model * D_K,
            "score_macs": h * ell * ell * d_k, "params": 2 * d_model * D_K}


def construction_macs(m: int, d_model: int, d_k: int, h: int, dense: bool = True) -> int:
    """App. C: building W^(k) = X^T W'^(k). Dense: 2 h d m d_k MACs; in the right order with the
    zero rows of W' skipped (each row of W' is non-zero in one head): 2 m d d_k."""
    return 2 * (h if dense else 1) * d_model * m * d_k
