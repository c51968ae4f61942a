"""Corollary 4.1 and Corollary E.1: the allocation rule as an integer program, solved exactly.

Corollary 4.1 (ε_δ dropped, as the paper does):

    min over M, (H_m, d_m)   sum_{m<=M} ||rho_m|| B (1{d_m<=d} sqrt(1 - d_m/d) + 1.3 e^{0.02 m}/H_m)
                             + sum_{k>M} ||rho_k|| B
    s.t.  sum_m H_m d_m = D,  H_m, d_m positive integers,  M <= M_max.

The objective is a sum over groups, so a dynamic program over the budget used solves it
exactly: g_m(c) = min over H d = c of group m's cost, then best_m(b) = min_c best_{m-1}(b - c) + g_m(c).
`enumerate_cor41` checks it by brute force (every M and every tuple of (H_m, d_m)) where small.

Corollary E.1 (n-th order Volterra term) depends on the allocation only through M, min d_m and
min H_m; `solve_cor_e1` enumerates those and keeps the pairs some allocation with
sum H_m d_m = D realises (an exact feasibility test by a boolean subset-sum over budgets).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from . import bounds


@dataclass(frozen=True)
class Allocation:
    """An optimum: M groups, (H_m, d_m) per group, and the objective value."""

    groups: tuple[tuple[int, int], ...]
    objective: float

    @property
    def M(self) -> int:
        return len(self.groups)

    @property
    def budget(self) -> int:
        return sum(H * d for H, d in self.groups)


def group_cost(m: int, H: int, d_m: int, rho_norm: float, d: int, B: float = 1.0) -> float:
    """Group m's term of the Corollary 4.1 objective."""
    return rho_norm * B * (bounds.compression_term(d_m, d) + bounds.attention_term(m, H))


def objective(rho_norms: Sequence[float], groups: Sequence[tuple[int, int]], d: int, B: float = 1.0) -> float:
    """The Corollary 4.1 objective of an allocation (Theorem 4.1's bound with ε_δ = 0)."""
    return bounds.thm41_bound(rho_norms, groups, d, B).total


def _pairs(c: int, max_dm: int | None) -> list[tuple[int, int]]:
    """Every (H, d_m) with H d_m = c (and d_m <= max_dm)."""
    return [(c // dm, dm) for dm in range(1, c + 1) if c % dm == 0 and (max_dm is None or dm <= max_dm)]


def solve_cor41(rho_norms: Sequence[float], D: int, d: int, M_max: int, B: float = 1.0,
                max_dm: int | None = None) -> Allocation:
    """The exact optimum of Corollary 4.1 by dynamic programming over the budget (ties: fewer
    groups first, then the first best (H, d_m) in order of increasing d_m)."""
    if D < 1 or M_max < 1:
        raise ValueError(f"D={D} and M_max={M_max} must be >= 1")
    M_max = min(M_max, len(rho_norms), D)
    inf = math.inf
    best_alloc: Allocation | None = None
    # prev[b]: best cost of groups 1..m-1 using budget exactly b; choice[m][b] = (c, H, d_m)
    prev = np.full(D + 1, inf)
    prev[0] = 0.0
    choices = []
    for m in range(1, M_max + 1):
        g = np.full(D + 1, inf)
        arg = [None] * (D + 1)
        for c in range(1, D + 1):
            for H, dm in _pairs(c, max_dm):
                v = group_cost(m, H, dm, rho_norms[m - 1], d, B)
                if v < g[c] - 1e-15:
                    g[c], arg[c] = v, (H, dm)
        cur = np.full(D + 1, inf)
        from_c = np.zeros(D + 1, dtype=int)
        for b in range(1, D + 1):
            cands = prev[b - np.arange(1, b + 1)] + g[1:b + 1]  # c = 1..b
            i = int(np.argmin(cands))
            cur[b], from_c[b] = cands[i], i + 1
        choices.append((from_c, arg))
        prev = cur
        if cur[D] < inf:
            total = float(cur[D]) + B * float(sum(rho_norms[m:]))
            if best_alloc is None or total < best_alloc.objective - 1e-12:
                groups, b = [], D
                for mm in range(m, 0, -1):
                    fc, ar = choices[mm - 1]
                    c = int(fc[b])
                    groups.append(ar[c])
                    b -= c
                best_alloc = Allocation(tuple(reversed(groups)), total)
    if best_alloc is None:
        raise ValueError(f"no allocation with budget D={D}")
    return best_alloc


def enumerate_cor41(rho_norms: Sequence[float], D: int, d: int, M_max: int, B: float = 1.0) -> Allocation:
    """The exact optimum by brute force over every M <= M_max and every tuple of (H_m, d_m) with
    sum H_m d_m = D (exponential: use for D <= ~32)."""
    best: Allocation | None = None
    M_max = min(M_max, len(rho_norms), D)
    for M in range(1, M_max + 1):
        for parts in _compositions(D, M):
            for groups in itertools.product(*[_pairs(c, None) for c in parts]):
                v = objective(rho_norms, groups, d, B)
                if best is None or v < best.objective - 1e-12:
                    best = Allocation(tuple(groups), v)
    assert best is not None
    return best


def _compositions(n: int, k: int):
    """Ordered k-tuples of positive integers summing to n."""
    for cuts in itertools.combinations(range(1, n), k - 1):
        bounds_ = (0, *cuts, n)
        yield tuple(bounds_[i + 1] - bounds_[i] for i in range(k))


# --- Corollary E.1 ---------------------------------------------------------------------------

def realisable(D: int, M: int, min_d: int, min_H: int, max_dm: int | None = None) -> bool:
    """Is there an allocation of M groups with every d_m >= min_d, H_m >= min_H (d_m <= max_dm)
    and sum H_m d_m = D, in which some group has exactly d_m = min_d and some exactly H_m = min_H?"""
    top = D if max_dm is None else max_dm
    free = np.zeros(D + 1, dtype=bool)   # products allowed for any group
    for dm in range(min_d, min(top, D) + 1):
        for H in range(min_H, D // dm + 1):
            free[H * dm] = True
    def reach(sets):
        cur = np.zeros(D + 1, dtype=bool)
        cur[0] = True
        for s in sets:
            nxt = np.zeros(D + 1, dtype=bool)
            for c in np.nonzero(s)[0]:
                nxt[c:] |= cur[:D + 1 - c]
            cur = nxt
        return bool(cur[D])
    # a group attaining min_d and a (possibly the same) group attaining min_H
    exact_both = np.zeros(D + 1, dtype=bool)
    if min_d * min_H <= D:
        exact_both[min_d * min_H] = True
    exact_d = np.zeros(D + 1, dtype=bool)
    for H in range(min_H, D // min_d + 1):
        exact_d[H * min_d] = True
    exact_H = np.zeros(D + 1, dtype=bool)
    for dm in range(min_d, min(top, D) + 1):
        if min_H * dm <= D:
            exact_H[min_H * dm] = True
    if reach([exact_both] + [free] * (M - 1)):
        return True
    return M >= 2 and reach([exact_d, exact_H] + [free] * (M - 2))


@dataclass(frozen=True)
class VolterraOptimum:
    M: int
    min_d: int
    min_H: int
    objective: float
    terms: dict


def solve_cor_e1(kernel_norms: dict[tuple[int, ...], float], n: int, D: int, d: int, M_max: int,
                 B: float = 1.0, with_truncation: bool = True, max_dm: int | None = None) -> VolterraOptimum:
    """Exact minimiser of Corollary E.1's objective over M <= M_max and allocations with
    sum H_m d_m = D, d_m <= d (the theorem's assumption). with_truncation=False: the objective
    exactly as printed in (9), which leaves out ε_H (then lags beyond M cost nothing)."""
    top = d if max_dm is None else min(d, max_dm)
    best: VolterraOptimum | None = None
    for M in range(1, M_max + 1):
        for min_d in range(1, top + 1):
            for min_H in range(1, D // (M * min_d) + 1):
                if M * min_d * min_H > D or not realisable(D, M, min_d, min_H, top):
                    continue
                t = bounds.volterra_terms(kernel_norms, n, M, min_d, min_H, d, B)
                v = t["compression"] + t["attention"] + (t["truncation"] if with_truncation else 0.0)
                if best is None or v < best.objective - 1e-12:
                    best = VolterraOptimum(M, min_d, min_H, v, t)
    if best is None:
        raise ValueError(f"no allocation with D={D}, M <= {M_max}, d_m <= {top}")
    return best
