"""Memorization capacities and accuracy bounds compared in paper 004 (Cor. 2, Table 1, section 7).

Dana, Pydi & Chevaleyre (2025), "Memorization in Attention-only Transformers".

    ours (Cor. 1)          T_0 = H d_h + d               (needs d_h <= d, footnote 1)
    Mahdavi et al. (2024)  T_0 = H (d_h - 1) + 1         (needs S <= d; generally H(min(Q, d_h) - 1) + 1)
    gap                    (H d_h + d) - (H (d_h - 1) + 1) = H + d - 1
    Cor. 2 (uniform prior, Assumption 1)
                           E[Acc] >= phi(X) = 1/N + (1 - 1/N) X / T_0,  X = capacity, T_0 = N^2 for bigrams

Parameter counts of Table 1 and section 7 are O(.) statements; every O-constant is set to 1
here (so only shapes of curves, not absolute values, are meaningful) and logs are natural.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

DH_GT_D_MODES = ("raise", "effective", "as_printed")


# ----------------------------------------------------------------------------- capacities


def capacity_ours(H, d_h: int, d: int, dh_gt_d: str = "raise"):
    """Corollary 1 / Theorem 1: H d_h + d associations (vectorised over H).

    d_h > d is outside the paper's setting (footnote 1). dh_gt_d="effective" returns the
    capacity the construction really has, H min(d, d_h) + d (W_V^h A^h has rank at most d);
    "as_printed" returns H d_h + d anyway, as the paper's Exp. 3 (d < d_h = 10) and Exp. 6
    (d = 2, d_h = 5) bound curves do.
    """
    if dh_gt_d not in DH_GT_D_MODES:
        raise ValueError(f"dh_gt_d={dh_gt_d!r} must be one of {DH_GT_D_MODES}")
    H = _heads(H)
    if d < 1 or d_h < 1:
        raise ValueError(f"d={d} and d_h={d_h} must both be >= 1")
    if d_h > d and dh_gt_d == "raise":
        raise ValueError(
            f"d_h={d_h} must satisfy 1 <= d_h <= d={d} (footnote 1); "
            "pass dh_gt_d='effective' (H min(d, d_h) + d) or 'as_printed' (H d_h + d)"
        )
    per_head = min(d, d_h) if dh_gt_d == "effective" else d_h
    return H * per_head + d


def capacity_mahdavi(H, d_h: int, Q: int | None = None):
    """Mahdavi et al. (2024, Thm 1): H (d_h - 1) + 1; with query rank Q, H (min(Q, d_h) - 1) + 1 (sec. 7)."""
    H = _heads(H)
    if d_h < 1:
        raise ValueError(f"d_h={d_h} must be >= 1")
    if Q is not None and Q < 1:
        raise ValueError(f"Q={Q} (rank of the query family) must be >= 1")
    return H * ((d_h if Q is None else min(Q, d_h)) - 1) + 1


def capacity_gap(H, d: int):
    """capacity_ours - capacity_mahdavi = H + d - 1 (independent of d_h)."""
    return _heads(H) + d - 1


def mahdavi_applicable(S: int, d: int) -> bool:
    """Mahdavi et al.'s construction needs the context length S <= d (section 7)."""
    return bool(S <= d)


# Footnote 5: (context length S, embedding dimension d).
FOOTNOTE5_MODELS = {"GPT-2": (1024, 768), "GPT-3": (2048, 12288)}


# ----------------------------------------------------------------------------- Corollary 2


def phi(X, N: int, T_0: int, clip: bool = True):
    """phi(X) = 1/N + (1 - 1/N) X / T_0 (section 5.1): accuracy of memorizing X of T_0 uniform
    sequences and guessing the rest; clip caps it at 1 (X >= T_0), as the Exp. 6 plot does."""
    if N < 1 or T_0 < 1:
        raise ValueError(f"N={N} and T_0={T_0} must both be >= 1")
    X = np.asarray(X, dtype=np.float64)
    if np.any(X < 0):
        raise ValueError(f"X={X.tolist()} (memorized sequences) must be >= 0")
    value = 1.0 / N + (1.0 - 1.0 / N) * X / T_0
    return np.minimum(value, 1.0) if clip else value


def corollary2_accuracy(N: int, d: int, d_h: int, H, T_0: int | None = None, clip: bool = True,
                        dh_gt_d: str = "raise"):
    """Corollary 2, "our lower bound": E[Acc] >= 1/N + (1 - 1/N)(H d_h + d)/T_0, T_0 = N^2 by default."""
    return phi(capacity_ours(H, d_h, d, dh_gt_d), N, N * N if T_0 is None else T_0, clip)


def previous_accuracy_bound(N: int, d_h: int, H, T_0: int | None = None, clip: bool = True):
    """"Previous lower bound" of the plots: phi(H (d_h - 1) + 1) (Mahdavi et al. 2024)."""
    return phi(capacity_mahdavi(H, d_h), N, N * N if T_0 is None else T_0, clip)


# ----------------------------------------------------------------------------- Table 1 / section 7


@dataclass(frozen=True)
class PriorWork:
    """One row of Table 1 / section 7; O-constants are 1.

    capacity(**kw) takes the keyword arguments named in capacity_args;
    parameters(T_0, S, N, d, eps) is the parameter count needed for T_0 (or T_eps) sequences;
    applicable(S, d) is the row's condition on context length and embedding dimension.
    """

    key: str
    name: str
    citation: str
    source: str  # where the paper states it
    model: str
    task: str
    capacity: Callable[..., float]
    capacity_args: tuple[str, ...]
    capacity_latex: str
    parameters: Callable[..., float]
    parameters_latex: str
    applicable: Callable[[int, int], bool]
    condition_latex: str
    exact: bool  # exact memorization (True) or eps-approximation (False)
    notes: str = ""


def _log(x):
    return np.log(np.asarray(x, dtype=np.float64))


def _hm_bubeck_parameters(T_0, S, N, d, eps):
    if eps is None or not 0 < eps < 1:
        raise ValueError(f"eps={eps} must satisfy 0 < eps < 1 for the Huben & Morris + Bubeck count")
    T = np.asarray(T_0, dtype=np.float64)
    if np.any(T <= 1) or np.any(np.log(T) >= d):
        raise ValueError(f"T_eps={T_0} must satisfy 1 < T_eps < e^d = e^{d} (log(d / log T_eps) > 0)")
    neurons = math.log(1 / eps) * T * np.log(T) / np.log(d / np.log(T))
    return (neurons + d * (S + N)) * (1 + S / d)


def _rows() -> tuple[PriorWork, ...]:
    always = lambda S, d: True  # noqa: E731
    hm_condition = lambda S, d: bool(d >= S + 2)  # noqa: E731
    kim_common = dict(
        name="Kim et al.",
        citation="Kim, Kim & Mozafari (2023, ICLR), Provable memorization capacity of Transformers, Thm 4.1",
        model="Deep Transformer: L layers of 1-head attention (d_h = 1) and width-16 MLPs",
        task="[N]^S -> [N]^S, S copies of the target token",
        capacity=lambda L: np.asarray(L, dtype=np.float64) ** 2,
        capacity_args=("L",),
        capacity_latex=r"T_0 = O(L^2)",
        applicable=always,
        condition_latex=r"\text{none on } S, d",
        exact=True,
    )
    inconsistency = ("Table 1 prints O(S + N + T_0 log T_0) but section 7 (and footnote 6) "
                     "O(S + N + sqrt(T_0 log T_0)); both rows are kept (erratum 4 on the errata page).")
    return (
        PriorWork(
            key="mahdavi2024",
            name="Mahdavi et al.",
            citation=("Mahdavi, Liao & Thrampoulidis (2024, ICLR), Memorization capacity of multi-head "
                      "attention in Transformers, Thm 1"),
            source="Table 1, section 7",
            model="1-layer attention-only ViT, keys != queries, no skip connection",
            task="(keys in R^{d x S}, query in R^d) -> R^d",
            capacity=lambda H, d_h: capacity_mahdavi(H, d_h),
            capacity_args=("H", "d_h"),
            capacity_latex=r"T_0 = H(d_h - 1) + 1",
            parameters=lambda T_0, S, N, d, eps=None: S + N + np.asarray(T_0, dtype=np.float64),
            parameters_latex=r"O(S + N + T_0)",
            applicable=mahdavi_applicable,
            condition_latex=r"S \le d",
            exact=True,
            notes="General form H(min(Q, d_h) - 1) + 1, Q = rank of the queries; tight for shared keys.",
        ),
        PriorWork(
            key="kim2023_table1",
            source="Table 1",
            parameters=lambda T_0, S, N, d, eps=None: S + N + np.asarray(T_0) * _log(T_0),
            parameters_latex=r"O(S + N + T_0 \log T_0)",
            notes=inconsistency,
            **kim_common,
        ),
        PriorWork(
            key="kim2023_sec7",
            source="section 7",
            parameters=lambda T_0, S, N, d, eps=None: S + N + np.sqrt(np.asarray(T_0) * _log(T_0)),
            parameters_latex=r"O(S + N + \sqrt{T_0 \log T_0})",
            notes=inconsistency + " The sqrt term comes from the MLPs; attention needs O(S).",
            **kim_common,
        ),
        PriorWork(
            key="ours_cor1",
            name="This paper (Cor. 1 / Thm 1, eps = 0)",
            citation="Dana, Pydi & Chevaleyre (2025), Corollary 1, Remarks 1",
            source="Table 1, Remarks 1, section 7",
            model="1-layer attention-only Transformer, keys = queries, skip connection, any S",
            task="[N]^S -> [N], next token",
            capacity=lambda H, d_h, d: capacity_ours(H, d_h, d),
            capacity_args=("H", "d_h", "d"),
            capacity_latex=r"T_0 = H d_h + d",
            parameters=lambda T_0, S, N, d, eps=None: d * (S + 2 * N + 4 * (np.asarray(T_0) - d)),
            parameters_latex=r"d(S + 2N + 4(T_0 - d)) \;(= 2S + 4N + 8T_0 - 16 \text{ at } d = 2)",
            applicable=always,
            condition_latex=r"d \ge 2,\ d_h \le d",
            exact=True,
            notes="Exact count, not O(.): d(S + 2N + 4 d_h H) with H d_h = T_0 - d (fractional H allowed).",
        ),
        PriorWork(
            key="huben_morris2023",
            name="Huben & Morris (attention heads simulating MLP neurons)",
            citation=("Huben & Morris (2023), Attention-only Transformers and implementing MLPs "
                      "with attention heads"),
            source="section 7",
            model="Attention heads, one per MLP neuron, learned mask; d_h >= S + 1, d >= S + 2",
            task="exact memorization of T_0 associations",
            capacity=lambda n_heads: np.asarray(n_heads, dtype=np.float64),
            capacity_args=("n_heads",),
            capacity_latex=r"T_0 = \#\text{heads} = \#\text{simulated neurons}",
            parameters=lambda T_0, S, N, d, eps=None: (d + S) * (S + N + np.asarray(T_0, dtype=np.float64)),
            parameters_latex=r"O((d + S)(S + N + T_0))",
            applicable=hm_condition,
            condition_latex=r"d \ge S + 2,\ d_h \ge S + 1",
            exact=True,
        ),
        PriorWork(
            key="huben_morris_bubeck",
            name="Huben & Morris + Bubeck et al. (eps-approximation)",
            citation="Huben & Morris (2023) with Bubeck, Eldan, Lee & Mikulincer (2020, NeurIPS), Thm 2",
            source="section 7",
            model="Attention heads simulating a Bubeck et al. approximate-memorization MLP",
            task="eps-approximate memorization of T_eps sequences",
            capacity=lambda n_heads: np.asarray(n_heads, dtype=np.float64),
            capacity_args=("n_heads",),
            capacity_latex=r"T_\varepsilon",
            parameters=_hm_bubeck_parameters,
            parameters_latex=(r"O\Big(\big(\log\tfrac{1}{\varepsilon}"
                              r" \tfrac{T_\varepsilon \log T_\varepsilon}"
                              r"{\log(d / \log T_\varepsilon)} + d(S + N)\big)(1 + \tfrac{S}{d})\Big)"),
            applicable=hm_condition,
            condition_latex=r"d \ge S + 2",
            exact=False,
            notes="Competitive with Theorem 1 iff S log N log(1/eps) = O(d log d) (hm_bubeck_competitive).",
        ),
        PriorWork(
            key="ours_thm1_eps",
            name="This paper (Thm 1, eps > 0)",
            citation="Dana, Pydi & Chevaleyre (2025), Theorem 1, section 7",
            source="section 7",
            model="1-layer attention-only Transformer, any S",
            task="eps-approximate memorization of the T_eps most likely sequences",
            capacity=lambda H, d_h, d: capacity_ours(H, d_h, d),
            capacity_args=("H", "d_h", "d"),
            capacity_latex=r"T_\varepsilon = H d_h + d",
            parameters=lambda T_0, S, N, d, eps=None: d * (S + N + np.asarray(T_0, dtype=np.float64) - d),
            parameters_latex=r"O(d(S + N + T_\varepsilon - d))",
            applicable=always,
            condition_latex=r"d \ge 2,\ d_h \le d",
            exact=False,
        ),
    )


TABLE1_KEYS = ("mahdavi2024", "kim2023_table1", "ours_cor1")  # the three rows printed in Table 1


def table1_rows() -> tuple[PriorWork, ...]:
    """Table 1's rows plus the section-7 comparisons (Kim section-7 variant, Huben & Morris, + Bubeck)."""
    return _rows()


def parameters_for_capacity(work, T_0, S: int, N: int, d: int, eps: float | None = None):
    """Parameter count (O-constants 1) that `work` (a PriorWork or its key) needs for T_0 sequences."""
    if isinstance(work, str):
        rows = {row.key: row for row in table1_rows()}
        if work not in rows:
            raise ValueError(f"work={work!r} must be one of {tuple(rows)}")
        work = rows[work]
    if np.any(np.asarray(T_0) < 1) or S < 1 or N < 1 or d < 1:
        raise ValueError(f"T_0={T_0}, S={S}, N={N}, d={d} must all be >= 1")
    return work.parameters(T_0, S, N, d, eps)


def hm_bubeck_competitive(S: int, N: int, d: int, eps: float, constant: float = 1.0) -> bool:
    """Section 7: simulating MLPs with heads is competitive iff S log N log(1/eps) = O(d log d);
    with the O-constant set to `constant`: S log N log(1/eps) <= constant * d log d."""
    if not 0 < eps < 1:
        raise ValueError(f"eps={eps} must satisfy 0 < eps < 1")
    return bool(S * math.log(N) * math.log(1 / eps) <= constant * d * math.log(d))


def _heads(H):
    H = np.asarray(H)
    if not np.issubdtype(H.dtype, np.integer) or np.any(H < 0):
        raise ValueError(f"H={H.tolist()} must be integers >= 0")
    return H if H.ndim else int(H)
