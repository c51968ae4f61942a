"""Measurements on trained runs and refits of the paper's printed data (§6.1, App. A.2).

* least-squares fits: through the origin (Fig. 3's law), with an intercept (Fig. 10), and a
  power law in log-log coordinates (the law's exponent);
* Student-t quantiles and p-values (numpy only: the regularised incomplete beta by a continued
  fraction) for the App. A.2 error bars;
* D_K* by the paper's rule (central, optimistic lower, conservative upper) and the h* interval
  (paired t-test), from per-seed F1 of runs `{"h", "D_K", "seed", "f1"}`;
* the central D_K* and h* that Fig. 8 and Table 1 imply (`infer_central`).
"""

from __future__ import annotations

import math

import numpy as np

from . import paper


def fit_origin(x, y) -> tuple[float, float]:
    """y = a x by least squares; returns (a, R^2) with R^2 = 1 - SS_res / SS_tot (SS_tot centred)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    a = float(x @ y / (x @ x))
    return a, r_squared(y, a * x)


def fit_line(x, y) -> tuple[float, float, float]:
    """y = a x + b by least squares; returns (a, b, R^2)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    a, b = np.polyfit(x, y, 1)
    return float(a), float(b), r_squared(y, a * x + b)


def fit_power(x, y) -> tuple[float, float, float]:
    """y = c x^beta by least squares on log y against log x; returns (c, beta, R^2 in log space)."""
    a, b, r2 = fit_line(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)))
    return float(math.exp(b)), a, r2


def r_squared(y, yhat) -> float:
    y, yhat = np.asarray(y, float), np.asarray(yhat, float)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    return 1.0 - float(((y - yhat) ** 2).sum()) / ss_tot if ss_tot > 0 else float("nan")


def law_x(m: int, d: int, log=math.log2) -> float:
    """The abscissa of Fig. 3: m log m / d_model (log2 by default; errata: the paper's log is log2)."""
    return m * log(m) / d


# ---- Student t (numpy only) -------------------------------------------------------------------

def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (Lentz; Numerical Recipes 6.4)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1 - x) / b


def t_sf2(t: float, df: int) -> float:
    """Two-sided p-value P(|T| >= |t|) of Student's t with df degrees of freedom."""
    return betainc(df / 2, 0.5, df / (df + t * t))


def t_quantile(p: float, df: int) -> float:
    """The p-quantile (p > 1/2) of Student's t, by bisection on the two-sided tail."""
    target = 2 * (1 - p)
    lo, hi = 0.0, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_sf2(mid, df) > target else (lo, mid)
    return (lo + hi) / 2


def t_interval(values) -> tuple[float, float, float]:
    """(mean, low, high): the 95% t-interval mean ± t_{0.975,n-1} s / sqrt(n) of App. A.2 (n = 1: no width)."""
    v = np.asarray(values, float)
    mean = float(v.mean())
    if len(v) < 2:
        return mean, mean, mean
    half = t_quantile(0.975, len(v) - 1) * float(v.std(ddof=1)) / math.sqrt(len(v))
    return mean, mean - half, mean + half


def paired_t_p(a, b) -> float:
    """Two-sided p-value of the paired t-test of a against b (1.0 when the differences are all equal
    and zero, 0.0 when they are equal and non-zero, 1.0 for fewer than two pairs)."""
    diff = np.asarray(a, float) - np.asarray(b, float)
    if len(diff) < 2:
        return 1.0
    s = float(diff.std(ddof=1))
    if s == 0:
        return 1.0 if float(diff.mean()) == 0 else 0.0
    return t_sf2(float(diff.mean()) / (s / math.sqrt(len(diff))), len(diff) - 1)


# ---- D_K* and h* by the paper's rules ---------------------------------------------------------

def per_config(runs: list[dict]) -> dict[tuple[int, int], dict[int, float]]:
    """{(h, D_K): {seed: F1}}."""
    out: dict[tuple[int, int], dict[int, float]] = {}
    for r in runs:
        out.setdefault((r["h"], r["D_K"]), {})[r["seed"]] = r["f1"]
    return out


def dk_star(runs: list[dict], level: float = paper.PASS_F1) -> dict:
    """App. A.2 on one (m, d) cell: `central` = min D_K with some h's mean F1 >= level, `lower`
    (optimistic) = with the t-interval's upper end >= level, `upper` (conservative) = with its lower
    end >= level (None where nothing passes); `h_star` = the head count attaining the central value
    (ties: larger mean F1), `d_k` = central / h_star, `h_interval` = (min, max) of the head counts
    whose tested D_K is within 10% of the central value and whose per-seed F1 a paired two-sided
    t-test does not separate from h_star's (p > 0.05)."""
    cfg = per_config(runs)
    stats = {k: t_interval(list(v.values())) for k, v in cfg.items()}

    def first(col: int):
        ok = [(D, -stats[(h, D)][0], h) for (h, D) in stats if stats[(h, D)][col] >= level]
        return min(ok) if ok else None

    c, lo, hi = first(0), first(2), first(1)
    out = {"central": c and c[0], "lower": lo and lo[0], "upper": hi and hi[0], "h_star": c and c[2],
           "d_k": c and c[0] // c[2], "h_interval": None}
    if c is not None:
        D0, h0 = c[0], c[2]
        ref = cfg[(h0, D0)]
        kept = []
        for (h, D), f in cfg.items():
            if abs(D - D0) <= paper.HSTAR_WINDOW * D0 and stats[(h, D)][0] >= level:
                seeds = sorted(set(f) & set(ref))
                if h == h0 and D == D0 or paired_t_p([f[s] for s in seeds], [ref[s] for s in seeds]) > paper.HSTAR_ALPHA:
                    kept.append(h)
        out["h_interval"] = (min(kept), max(kept))
    return out


def infer_central(heads=paper.HEADS) -> dict[tuple[int, int], dict]:
    """For each base-grid (m, d) of Table 1: the D_K values h d_k* (h a tested head count) inside
    Fig. 8's [lower, upper] range. Where exactly one exists it is the central D_K* and h* that
    the two printed tables imply (the paper prints neither; Figs. 2 and 10 plot them)."""
    out = {}
    for key, dk in paper.TABLE1_DK.items():
        lo, hi = paper.FIG8_DKSTAR[key]
        cands = [(h * dk, h) for h in heads if lo <= h * dk <= hi]
        out[key] = {"candidates": cands, "central": cands[0][0] if len(cands) == 1 else None,
                    "h_star": cands[0][1] if len(cands) == 1 else None}
    return out
