"""Closed-form bounds of paper 003: Theorem 4.1 (and its Fig. 1 special case), the constant of
Lemma B.1, and Theorem E.1 / Corollary E.1 for Volterra (n-th order) targets.

Conventions (the paper's indices are loose; see the errata page):
* `rho_norms[k - 1]` is ||rho_k||_2 for lags k = 1, 2, ...; rho_0 (the current token) is not
  part of the bound (the groups cover lags m = 1..M; the residual path would carry rho_0).
* `groups` is a sequence of (H_m, d_m): group m (1-based) has H_m heads of dimension d_m and
  extracts lag m.
* The truncation term sums ||rho_k|| B over the lags k > M given in `rho_norms`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from . import paper


def attention_term(m: int, H_m: float, const: float = paper.ATTN_CONST, rate: float = paper.ATTN_RATE) -> float:
    """Lemma B.1's l1 error bound for group m with H_m heads: 1.3 e^{0.02 m} / H_m."""
    if H_m <= 0:
        raise ValueError(f"H_m={H_m} must be > 0")
    return const * math.exp(rate * m) / H_m


def compression_term(d_m: float, d: int) -> float:
    """1{d_m <= d} sqrt(1 - d_m / d): the random-projection loss of Lemma B.2 (0 when d_m >= d)."""
    if d_m <= 0 or d <= 0:
        raise ValueError(f"d_m={d_m} and d={d} must be > 0")
    return math.sqrt(1.0 - d_m / d) if d_m <= d else 0.0


def eps_delta(M: int, L: int, delta: float, min_dm: int) -> float:
    """The concentration term sqrt(2 log(2 M L / delta) / min_m d_m) of Theorem 4.1."""
    if not 0 < delta < 1:
        raise ValueError(f"delta={delta} must be in (0, 1)")
    return math.sqrt(2.0 * math.log(2.0 * M * L / delta) / min_dm)


@dataclass(frozen=True)
class BoundTerms:
    """The three parts of the bound (1) and their sum."""

    compression: float
    attention: float
    truncation: float

    @property
    def total(self) -> float:
        return self.compression + self.attention + self.truncation


def thm41_bound(rho_norms: Sequence[float], groups: Sequence[tuple[int, int]], d: int, B: float = 1.0,
                eps: float = 0.0, attn_errors: Sequence[float] | None = None) -> BoundTerms:
    """Theorem 4.1, Eq. (1): sum_m ||rho_m|| B ((1 + eps) 1{d_m <= d} sqrt(1 - d_m/d) + 1.3 e^{0.02m}/H_m)
    + sum_{k > M} ||rho_k|| B.

    eps: the concentration term (0 drops it, as Corollary 4.1 does; `eps_delta` gives the
    theorem's). attn_errors: replace 1.3 e^{0.02m}/H_m by achieved l1 errors of exp-sum fits.
    """
    M = len(groups)
    if M > len(rho_norms):
        raise ValueError(f"{M} groups but only {len(rho_norms)} lags in rho_norms")
    comp = attn = 0.0
    for m, (H_m, d_m) in enumerate(groups, start=1):
        r = rho_norms[m - 1] * B
        comp += r * (1.0 + eps) * compression_term(d_m, d)
        attn += r * (attention_term(m, H_m) if attn_errors is None else attn_errors[m - 1])
    trunc = B * float(sum(rho_norms[M:]))
    return BoundTerms(comp, attn, trunc)


def fig1_error(H, d: int = paper.FIG1["d"], D: int = paper.FIG1["D"], rho: float = 1.0,
               const: float = paper.ATTN_CONST, rate: float = paper.ATTN_RATE):
    """Fig. 1: one group (M = 1) of H heads of dimension D / H, no truncation, no concentration:
    E_D(H) = rho (1{D/H <= d} sqrt(1 - D / (H d)) + 1.3 e^{0.02} / H). H may be an array (real H)."""
    H = np.asarray(H, dtype=float)
    if np.any(H <= 0):
        raise ValueError("H must be > 0")
    head_dim = D / H
    comp = np.where(head_dim <= d, np.sqrt(np.clip(1.0 - head_dim / d, 0.0, None)), 0.0)
    out = rho * (comp + const * math.exp(rate) / H)
    return float(out) if out.ndim == 0 else out


def uniform_groups(H: int, D: int, lags: int) -> list[tuple[int, int]] | None:
    """A standard layer of H heads of dimension D / H, its heads split as evenly as possible over
    min(H, lags) lags (earlier lags get the extra heads); None if H does not divide D."""
    if D % H:
        return None
    M = min(H, lags)
    base, extra = divmod(H, M)
    return [(base + (1 if m < extra else 0), D // H) for m in range(M)]


def uniform_head_bound(H: int, D: int, d: int, rho_norms: Sequence[float], B: float = 1.0) -> float | None:
    """The Theorem 4.1 bound for a standard H-head layer (`uniform_groups`), or None if H does not divide D."""
    groups = uniform_groups(H, D, len(rho_norms))
    return None if groups is None else thm41_bound(rho_norms, groups, d, B).total


# --- Lemma B.1's constant -------------------------------------------------------------------

def bump(x):
    """The standard bump Psi(x) = exp(-1 / (1 - x^2)) on (-1, 1), 0 outside."""
    x = np.asarray(x, dtype=float)
    inside = np.abs(x) < 1
    out = np.zeros_like(x)
    out[inside] = np.exp(-1.0 / (1.0 - x[inside] ** 2))
    return out


def bump_derivative_sups(q: int, n: int = 200001) -> list[float]:
    """sup_{[-1,1]} |Psi^{(k)}| for k = 0..q, from the exact derivatives of Psi on a fine grid.

    Psi^{(k)}(x) = P_k(x) / (1 - x^2)^{2k} Psi(x) with P_0 = 1 and
    P_{k+1} = P_k' (1 - x^2)^2 + P_k (4 k x (1 - x^2) - 2 x)  (polynomials, exact)."""
    x = np.linspace(-1, 1, n)[1:-1]
    psi = bump(x)
    P = np.polynomial.Polynomial([1.0])
    w = np.polynomial.Polynomial([1.0, 0.0, -1.0])  # 1 - x^2
    X = np.polynomial.Polynomial([0.0, 1.0])
    sups = []
    for k in range(q + 1):
        vals = P(x) / (1 - x ** 2) ** (2 * k) * psi
        sups.append(float(np.max(np.abs(vals))))
        P = P.deriv() * w * w + P * (4 * k * X * w - 2 * X)
    return sups


def lemma_b1_constant(q: int) -> float:
    """C(q) = M(q) / (1 - 1/e)^q with M(q) = max_{k <= q} sup |Psi^{(k)}| (Wang & E 2024, Lemma F.1)."""
    return max(bump_derivative_sups(q)) / (1 - 1 / math.e) ** q


# --- Theorem E.1 / Corollary E.1 (n-th order Volterra term) --------------------------------

def volterra_terms(kernel_norms: dict[tuple[int, ...], float], n: int, M: int, min_d: int, min_H: int, d: int,
                   B: float = 1.0, T: int | None = None) -> dict[str, float]:
    """The terms of Theorem E.1 for the n-th order term, without concentration (eps_delta = 0):

    compression = S_M 1{min d_m <= d} sqrt(1 - (min d_m / d)^n),
    attention   = S_M [(B + eps_Attn)^n - B^n],   eps_Attn = 1.3 e^{0.02 T} / min_m H_m,
    truncation  = sum over tau outside [0..M]^n of ||H^(n)(tau)|| B^n  (our bound on eps_H),
    where S_M = sum over tau in [0..M]^n of ||H^(n)(tau)||_2 (`kernel_norms`: tau -> norm).
    T is undefined in the paper; default T = M (the farthest lag the heads extract).
    """
    T = M if T is None else T
    inside = sum(v for tau, v in kernel_norms.items() if len(tau) == n and max(tau) <= M)
    outside = sum(v for tau, v in kernel_norms.items() if len(tau) == n and max(tau) > M)
    eps_attn = attention_term(T, min_H)
    comp = inside * (math.sqrt(1.0 - (min_d / d) ** n) if min_d <= d else 0.0)
    return {"compression": comp, "attention": inside * ((B + eps_attn) ** n - B ** n),
            "truncation": outside * B ** n}
