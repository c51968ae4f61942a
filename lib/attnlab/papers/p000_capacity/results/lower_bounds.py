"""§9: the bit-budget bound, Theorem 9.2 and Lemma 9.3, evaluated exactly. log2 C(m(m-1), m') by
lgamma, the D_K floors for b-bit parameters and for margin gamma, the asymptotic shape
(m'/d) log2(m^2/m'), the paper's empirical D_K* (Fig. 8) beside them, and the Lipschitz constants of
Lemma 9.3 (max and sum aggregation) and Eq. (29) (two-item softmax) as property tests.
"""

from __future__ import annotations

import math

import numpy as np

from attnlab.core.claims import ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, SEED

from .. import bounds, paper
from .. import tasks as T

PARAMS = (
    Param("bits", "int_list", "bits per parameter b of the warm-up bound", min=1, max=64),
    Param("gamma", "float", "margin gamma of Theorem 9.2", min=1e-6, max=0.999),
    Param("trials", "int", "random (parameters, perturbation, pair) draws for the Lipschitz tests", min=10, max=10**6),
    SEED.described("seed"),
)
PRESETS = {"ci": {"bits": [1, 8, 32], "gamma": 0.1, "trials": 3000, "seed": 0},
           "full": {"bits": [1, 8, 16, 32], "gamma": 0.1, "trials": 100000, "seed": 0}}


def table(bits: list[int], gamma: float) -> list[dict]:
    """Per (m, d) of Fig. 8, m' = m: log2 C(m(m-1), m'), the bit-budget D_K floor per b, the margin
    floor, the asymptotic shape, and the paper's D_K* range."""
    rows = []
    for (m, d), (lo, hi) in sorted(paper.FIG8_DKSTAR.items()):
        rows.append({"m": m, "d": d, "log2_binom": bounds.log2_binom(m * (m - 1), m),
                     "bit_floor": {str(b): bounds.bit_budget_dk(m, m, d, b) for b in bits},
                     "margin_floor": bounds.covering_dk(m, m, d, gamma),
                     "shape": bounds.asymptotic_shape(m, m, d), "mlog2m_d": m * math.log2(m) / d,
                     "dk_star": [lo, hi]})
    return rows


def lipschitz(trials: int, seed: int) -> dict:
    """Largest ratio |change of the decision| / (||dU||_F + ||dV||_F + |dtau|) over random normalised
    settings (26) and perturbations: max aggregation (Lemma 9.3), sum aggregation (the paper: "the
    same Lemma holds"), and the two-item softmax sum A_ij of Eq. (29) (claimed constant 1/2)."""
    g = T.rng(seed, "lipschitz")
    worst = {"max": 0.0, "sum": 0.0, "softmax": 0.0}
    for _ in range(trials):
        d, h, d_k = int(g.integers(2, 9)), int(g.integers(1, 9)), int(g.integers(1, 5))
        U, V = g.standard_normal((d, h * d_k)), g.standard_normal((d, h * d_k))
        U, V = U / np.linalg.norm(U), V / np.linalg.norm(V)
        tau = float(g.uniform(-1, 1))
        eps = 10.0 ** g.uniform(-4, -1)
        dU, dV = g.standard_normal(U.shape), g.standard_normal(V.shape)
        scale = eps / (np.linalg.norm(dU) + np.linalg.norm(dV))
        dU, dV, dt = dU * scale, dV * scale, float(g.uniform(-eps, eps))
        U2, V2 = U + dU, V + dV
        nU, nV = max(1.0, np.linalg.norm(U2)), max(1.0, np.linalg.norm(V2))
        U2, V2 = U2 / nU, V2 / nV  # stay inside the ball (26)
        dist = np.linalg.norm(U2 - U) + np.linalg.norm(V2 - V) + abs(dt)
        x = g.standard_normal((2, d))
        x /= np.maximum(1.0, np.linalg.norm(x, axis=1, keepdims=True)) * g.uniform(1, 2, size=(2, 1))
        for agg in ("max", "sum"):
            f1 = bounds.decision(U, V, tau, x[0], x[1], h, agg)
            f2 = bounds.decision(U2, V2, tau + dt, x[0], x[1], h, agg)
            worst[agg] = max(worst[agg], abs(f1 - f2) / dist)

        def soft(Ua, Va):  # A_ij for the context (i, j): sum over heads of sigma((S_ij - S_ii)/sqrt(d_k))
            q = (x[0] @ Ua).reshape(h, d_k)
            s_ij = (q * (x[1] @ Va).reshape(h, d_k)).sum(axis=1)
            s_ii = (q * (x[0] @ Va).reshape(h, d_k)).sum(axis=1)
            return float((1 / (1 + np.exp(-(s_ij - s_ii) / math.sqrt(d_k)))).sum())

        dist_uv = np.linalg.norm(U2 - U) + np.linalg.norm(V2 - V)
        worst["softmax"] = max(worst["softmax"], abs(soft(U, V) - soft(U2, V2)) / dist_uv)
    return worst


def origin_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares slope of y = a x through the origin, and R^2 = 1 - SS_res / SS_tot (centred)."""
    a = float(x @ y / (x @ x))
    return a, float(1 - ((y - a * x) ** 2).sum() / ((y - y.mean()) ** 2).sum())


def capacity_fit(log=math.log2, which: int = 0) -> tuple[float, float]:
    """Fig. 3's law refitted on the paper's own Fig. 8 numbers: the 12 base-grid points
    (m in {64..512}, d in {16, 32, 64}), lower (which=0) or upper (1) end, against m log m / d."""
    pts = [(m, d, v[which]) for (m, d), v in paper.FIG8_DKSTAR.items() if m <= 512]
    x = np.array([m * log(m) / d for m, d, _ in pts])
    return origin_fit(x, np.array([v for _, _, v in pts], dtype=float))


def compute(ctx: Context) -> dict:
    """Evaluates the bounds (instant) and the Lipschitz property tests; the result holds `rows`
    (per (m, d) of Fig. 8: log2 C, D_K floors, shape, the paper's D_K*) and `lipschitz` (largest
    ratios per aggregation)."""
    cfg = ctx.config
    rows = ctx.unit({"what": "table", "bits": cfg["bits"], "gamma": cfg["gamma"]},
                    lambda: table(cfg["bits"], cfg["gamma"]))
    lip = ctx.unit({"what": "lipschitz", "trials": cfg["trials"], "seed": cfg["seed"]},
                   lambda: lipschitz(cfg["trials"], cfg["seed"]))
    return {"config": cfg, "rows": rows, "lipschitz": lip}


def claims(result: dict) -> ClaimsTable:
    cfg = result["config"]
    t = ClaimsTable()
    rows = result["rows"]
    r256 = next(r for r in rows if (r["m"], r["d"]) == (256, 32))
    b1 = r256["bit_floor"]["1"] if "1" in r256["bit_floor"] else None
    if b1 is not None:
        t.consistency("1", "bit budget, (m, d, m′) = (256, 32, 256), b = 1: D_K ≥ (log2 C(m(m−1), m′) − 1)/(2d) "
                           "(§9's warm-up bound evaluated, derivation below the table: 37.7)", expected=37.7, ours=b1,
                      holds=abs(b1 - 37.7) < 0.1, tolerance="± 0.1", asserted=True, source="derived")
    err = max(abs(r["shape"] - r["mlog2m_d"]) for r in rows)
    t.consistency("2", "for permutations (m′ = m) the shape (m′/d) log2(m²/m′) equals m log2 m / d, the x-axis of Fig. 3",
                  expected=0.0, ours=err, holds=err < 1e-9, tolerance="< 1e-9", asserted=True)
    ratios = [r["log2_binom"] / (r["m"] * math.log2(r["m"] * r["m"] / r["m"])) for r in rows]
    t.consistency("3", "log2 C(m(m−1), m) ≈ m log2 m: ratio over the Fig. 8 configurations (the Ω(·) of Eq. (24))",
                  expected="Θ(1)", ours=f"{min(ratios):.2f} – {max(ratios):.2f}", holds=0.5 < min(ratios) <= max(ratios) < 1.5,
                  tolerance="0.5 – 1.5", asserted=True)
    b_max = str(max(cfg["bits"]))
    worst = min(r["dk_star"][0] / r["bit_floor"][b_max] for r in rows)
    # the paper's own printed D_K* against our closed-form floor: arithmetic on its numbers, not a measurement
    t.consistency("4", f"every empirical D_K* of Fig. 8 (lower end) lies above the b = {b_max} bit-budget floor (float "
                       "parameters; smallest ratio D_K* / floor; the paper's printed numbers against the closed form)",
                  expected="≥ 1", ours=worst, holds=worst >= 1, tolerance="≥ 1", asserted=True, source="figure")
    big = [r for r in rows if r["m"] >= 1024]
    spread = max(r["dk_star"][0] / r["mlog2m_d"] for r in rows) / min(r["dk_star"][0] / r["mlog2m_d"] for r in rows)
    t.inconclusive("5", "the lower bound's shape m log2 m / d orders the empirical D_K* (spread of D_K* / shape, all 16 points)",
                   paper="Θ(1)", ours=spread, why="the bound fixes the shape only up to a constant; b = 32 floors are "
                                                  f"{max(r['dk_star'][0] / r['bit_floor'][b_max] for r in big):.0f}× below D_K*")
    a_lo, r2_lo = capacity_fit(math.log2, 0)
    a_hi, r2_hi = capacity_fit(math.log2, 1)
    t.consistency("4b", f"Fig. 3's law D_K* ≈ 1.19 m log m / d (R² = 0.944) refitted through the origin on the paper's own "
                        f"Fig. 8 numbers, 12 base-grid points, log2 (lower ends; upper ends give {a_hi:.2f}, R² {r2_hi:.3f})",
                  expected=paper.FIG3_SLOPE, ours=a_lo, holds=1.0 <= a_lo <= 1.45 and r2_lo >= 0.85,
                  tolerance="slope 1.0 – 1.45, R² ≥ 0.85", asserted=True, source="figure")
    a_ln, _ = capacity_fit(math.log, 0)
    t.consistency("4c", "the same fit with ln instead of log2 gives a slope far from 1.19: the law's log is log2",
                  expected="> 1.45", ours=a_ln, holds=a_ln > 1.45, tolerance="> 1.45", asserted=True)
    med = float(np.median(list(paper.TABLE1_DK.values())))
    t.consistency("4d", "§6.1: the per-head widths d_k* of Table 1 have median 11", expected=paper.TABLE1_MEDIAN_STATED,
                  ours=med, holds=med == paper.TABLE1_MEDIAN_STATED, tolerance="exact")
    lip = result["lipschitz"]
    t.consistency("6", "Lemma 9.3 (max over heads): largest abs Δ(S − τ) / (‖ΔU‖_F + ‖ΔV‖_F + abs Δτ) on random settings",
                  expected=paper.LIPSCHITZ_MAX, ours=lip["max"], holds=lip["max"] <= paper.LIPSCHITZ_MAX + 1e-9,
                  tolerance="≤ 1", asserted=True)
    t.consistency("7", "the same for sum aggregation (the paper: the lemma also holds; it is the one-head bilinear form)",
                  expected=paper.LIPSCHITZ_MAX, ours=lip["sum"], holds=lip["sum"] <= paper.LIPSCHITZ_MAX + 1e-9,
                  tolerance="≤ 1", asserted=True)
    t.consistency("8", "Eq. (29), two-item softmax summed over heads: largest abs ΔA / (‖ΔU‖_F + ‖ΔV‖_F)",
                  expected=paper.LIPSCHITZ_SOFTMAX, ours=lip["softmax"],
                  holds=lip["softmax"] <= paper.LIPSCHITZ_SOFTMAX + 1e-9, tolerance="≤ 1/2", asserted=True)
    return t


EXPERIMENTS = (Experiment(
    id="000-capacity/lower-bounds", label="§9, Theorem 9.2, Lemma 9.3",
    title="Lower bounds: D_K = Ω((m′/d) log(m²/m′)), evaluated exactly",
    params=PARAMS, presets=PRESETS, compute=compute,
    summary="Counting labelings against parameter descriptions; the Lipschitz step as a property test."),)
