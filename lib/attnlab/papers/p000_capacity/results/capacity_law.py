"""Figs. 2, 3, 8, 10 and Tables 1–2 (§6.1, App. A.2): the capacity law D_K* ≈ 1.19 m log2 m / d_model,
the head count h* that attains D_K*, and the per-head width d_k* at the threshold.

Two parts. (a) Refits of the paper's own printed numbers (Fig. 8's D_K* ranges, Table 1's d_k*),
exact: the central D_K* and h* they imply, the law's constant and R² (with and without the three
d = 16 points), its exponent, the alternative D_K* ∝ m/d, and Fig. 10's line for h*. (b) A trained
mini-sweep over (m, d, h, D_K, seed) as replica-batched programs (sweeps.run), D_K* by the paper's
rule (smallest D_K with mean test F1 ≥ 0.99 for some h), compared with Fig. 8 and with the law. The
seeds are replicas of the same programs; every trained row is judged per seed (each seed's own
D_K*, h*) with the seed rule (`ClaimsTable.add_seed_outcomes`), and `seed` moves every seed.
"""

from __future__ import annotations

import math

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable, seed_summary
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import LR, N_TEST, Param, ParameterError, SEEDS, STEPS

from .. import analysis, paper, sweeps
from ..seeds import SEED_PARAM

PARAMS = (
    Param("cells", "int_rows", "(m, d_model) cells of the sweep", min=2, max=8192, width=2),
    Param("heads", "int_list", "head counts h", min=1, max=256),
    Param("dks", "int_list", "total key dimensions D_K (a pair is trained where h divides D_K)", min=1, max=4096),
    Param("window_lo", "float", "smallest D_K trained, as a multiple of m log2 m / d", min=0.0, max=100.0),
    Param("window_hi", "float", "largest D_K trained, as a multiple of m log2 m / d", min=0.01, max=1000.0),
    SEEDS.described("number of seeds (graph, embeddings, initialisation)"),
    SEED_PARAM,
    STEPS.described("maximum training steps (one context per step)"),
    Param("table2", "bool", "cap each cell at its Table 2 step cutoff (default 20,000)"),
    LR.described("Adam learning rate (the paper: 1e-3)"),
    Param("n_val", "int", "validation contexts (early stopping)", min=10, max=20000),
    N_TEST.described("test contexts"),
    Param("max_replicas", "int", "replicas per training program (one resumable chunk)", min=1, max=100000),
) + sweeps.RESUME_PARAMS
FULL_DKS = [4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64, 72, 80, 88, 96, 112, 128, 144, 160,
            192, 224, 256, 320, 384, 448, 512]
PRESETS = {
    # three seeds as replicas of one program: D_K in {6, 8, 16, 24, 32} (12 dropped) and 2000 steps at lr 2e-2
    # (formerly 3000 at 1e-2; 1000 steps at 1e-2 do not converge) keep the former CPU time
    "ci": {**sweeps.CI_RUN, "cells": [[64, 32], [64, 16], [128, 32]], "heads": [1, 2, 4], "dks": [6, 8, 16, 24, 32],
           "window_lo": 0.4, "window_hi": 1.2, "seeds": 3, "seed": 0, "steps": 2000, "table2": False, "lr": 2e-2,
           "n_val": 200, "n_test": 500, "max_replicas": 64},
    "full": {**sweeps.FULL_RUN, "cells": [[m, d] for m in paper.BASE_M for d in paper.BASE_D]
             + [list(c) for c in paper.DIAGONAL[3:]] + [list(paper.EXTRA_POINT)],
             "heads": list(paper.HEADS), "dks": FULL_DKS, "window_lo": 0.15, "window_hi": 3.0, "seeds": 10, "seed": 0,
             "steps": 200000, "table2": True, "lr": paper.LR, "n_val": paper.N_VAL, "n_test": paper.N_TEST,
             "max_replicas": 256},
}


def _cells(cfg) -> list[tuple[int, int]]:
    return [(int(m), int(d)) for m, d in cfg["cells"]]


def refits() -> dict:
    """Part (a): every refit of the paper's printed numbers (no training)."""
    inf = analysis.infer_central()
    keys = list(paper.FIG8_DKSTAR)
    unknown = [k for k in keys if k not in inf and paper.FIG8_DKSTAR[k][0] != paper.FIG8_DKSTAR[k][1]]
    x = np.array([analysis.law_x(m, d) for m, d in keys])
    x_ln = np.array([analysis.law_x(m, d, math.log) for m, d in keys])
    xm = np.array([m / d for m, d in keys])
    keep = np.array([k not in paper.FIG3_EXCLUDED for k in keys])

    def values(fill: dict) -> np.ndarray:
        return np.array([inf[k]["central"] if k in inf else fill.get(k, paper.FIG8_DKSTAR[k][0]) for k in keys], float)

    def origin(xx, yy) -> tuple[float, float, float]:
        """slope through the origin, uncentred R² (regression through the origin), centred R²."""
        a = float(xx @ yy / (xx @ xx))
        return a, 1 - float(((yy - a * xx) ** 2).sum() / (yy ** 2).sum()), analysis.r_squared(yy, a * xx)

    # the two D_K* the paper prints only as ranges and Table 1 does not fix: scan them over their ranges
    scan = []
    (k1, k2) = unknown
    for c1 in range(paper.FIG8_DKSTAR[k1][0], paper.FIG8_DKSTAR[k1][1] + 1):
        for c2 in range(paper.FIG8_DKSTAR[k2][0], paper.FIG8_DKSTAR[k2][1] + 1):
            y = values({k1: c1, k2: c2})
            a, r2u, r2c = origin(x, y)
            ae, r2ue, r2ce = origin(x[keep], y[keep])
            miss = (abs(a - paper.FIG3_SLOPE) + abs(r2u - paper.FIG3_R2) + abs(ae - paper.FIG3_SLOPE_EXCL)
                    + abs(r2ue - paper.FIG3_R2_EXCL))
            scan.append((miss, c1, c2, a, r2u, r2c, ae, r2ue, r2ce))
    scan.sort()
    best = scan[0]
    y = values({k1: best[1], k2: best[2]})
    base = [k for k in keys if k in inf]
    yb_lo = np.array([paper.FIG8_DKSTAR[k][0] for k in base], float)
    xb = np.array([analysis.law_x(*k) for k in base])
    h_pts = [(m / d, inf[(m, d)]["h_star"]) for (m, d) in base]
    hl = analysis.fit_line([p[0] for p in h_pts], [p[1] for p in h_pts])
    c_all, beta_all, _ = analysis.fit_power(x, y)
    c_ex, beta_ex, _ = analysis.fit_power(x[keep], y[keep])
    design = np.array([[1.0, math.log(m), math.log(d)] for m, d in keys])
    free_all = np.linalg.lstsq(design, np.log(y), rcond=None)[0]
    free_ex = np.linalg.lstsq(design[keep], np.log(y[keep]), rcond=None)[0]
    dks = list(paper.TABLE1_DK.values())
    return {
        "points": [{"m": m, "d": d, "lo": paper.FIG8_DKSTAR[(m, d)][0], "hi": paper.FIG8_DKSTAR[(m, d)][1],
                    "central": float(c), "x": float(xx), "inferred": (m, d) in inf,
                    "h_star": inf[(m, d)]["h_star"] if (m, d) in inf else None,
                    "excluded": (m, d) in paper.FIG3_EXCLUDED} for (m, d), c, xx in zip(keys, y, x)],
        "unique_centrals": sum(len(v["candidates"]) == 1 for v in inf.values()), "n_base": len(inf),
        "unknown": [list(k) for k in unknown], "best_fill": [best[1], best[2]],
        "law": {"slope": best[3], "r2": best[4], "r2_centred": best[5], "slope_excl": best[6], "r2_excl": best[7],
                "r2_excl_centred": best[8]},
        "slope_range": [min(s[3] for s in scan), max(s[3] for s in scan)],
        "r2_range": [min(s[4] for s in scan), max(s[4] for s in scan)],
        "base_lower_fit": list(analysis.fit_origin(xb, yb_lo)),
        "ln_slope": origin(x_ln, y)[0],
        "alt": {"r2": origin(xm, y)[1], "r2_excl": origin(xm[keep], y[keep])[1]},
        "power": {"beta": beta_all, "c": c_all, "beta_excl": beta_ex, "c_excl": c_ex},
        "free": {"m": float(free_all[1]), "d": float(free_all[2]), "m_excl": float(free_ex[1]),
                 "d_excl": float(free_ex[2])},
        "hfit": {"slope": hl[0], "intercept": hl[1], "r2": hl[2]},
        "table1": {"min": min(dks), "max": max(dks), "median": float(np.median(dks))},
    }


def compute(ctx: Context) -> dict:
    """Part (a): `refits` of the paper's printed data. Part (b): trains one replica per
    (m, d, h, D_K, seed) of the grid with the protocol of App. A.1 (ell = 16, rho = 0.5, alpha = 10,
    validation every 500 steps, freeze after 5 checks above 0.995), several cells in one program;
    the result holds `runs` (per replica: test micro-F1, tau, steps, early stop) and `cells` (per
    cell "m,d": D_K* central / lower / upper, h*, d_k*, the h* interval, x = m log2 m / d)."""
    cfg = ctx.config
    if cfg["window_lo"] >= cfg["window_hi"]:
        raise ParameterError(f"parameters 'window_lo' {cfg['window_lo']} / 'window_hi' {cfg['window_hi']}: "
                             "window_lo must be below window_hi")
    window = (cfg["window_lo"], cfg["window_hi"])
    for m, d in _cells(cfg):
        if d > m or not sweeps.cell_grid(m, d, cfg["heads"], cfg["dks"], window):
            raise ParameterError(f"parameter 'cells': ({m}, {d}) has d_model > m or no (h, D_K) of 'heads' "
                                 f"{cfg['heads']} / 'dks' {cfg['dks']} in the window {window} x m log2 m / d")
    keys = sweeps.sweep_keys(_cells(cfg), cfg["heads"], cfg["dks"], cfg["seeds"], steps=cfg["steps"], lr=cfg["lr"],
                             n_val=cfg["n_val"], n_test=cfg["n_test"], window=window, table2=cfg["table2"],
                             first_seed=cfg["seed"])
    runs = sweeps.run(ctx, keys, cfg["max_replicas"])
    cells = {f"{m},{d}": v for (m, d), v in sweeps.thresholds(runs).items()}
    return {"config": cfg, "refit": refits(), "runs": runs, "cells": cells}


def _cell(result, m, d):
    return result["cells"].get(f"{m},{d}")


def claims(result: dict) -> ClaimsTable:
    R = result["refit"]
    law = R["law"]
    t = ClaimsTable(rtol=TRAINED_RTOL)
    # ---- (a) the paper's printed numbers ------------------------------------------------------
    t.consistency("1", "App. A.2: Fig. 8's D_K* range and Table 1's d_k* fix a unique central D_K* = h d_k* "
                       "(h a tested power of two) on every base-grid cell (the h* of Figs. 2 and 10)",
                  expected=R["n_base"], ours=R["unique_centrals"], holds=R["unique_centrals"] == R["n_base"],
                  asserted=True)
    (k1, k2), (c1, c2) = R["unknown"], R["best_fill"]
    # claims 2-4 refit the paper's own printed D_K* (Fig. 8, Table 1): arithmetic on its data, so consistency
    # checks of its fit, not reproductions (the trained sweep below is the measurement)
    t.consistency("2", f"Fig. 3 refit from the paper's own data: slope of D_K* against m log2 m / d through the origin, all 16 points of Fig. 8 (centrals "
               f"from Table 1; the unprinted centrals of {tuple(k1)}, {tuple(k2)} taken as {c1}, {c2} inside their "
               f"ranges; over the whole ranges {R['slope_range'][0]:.3f}–{R['slope_range'][1]:.3f})",
          expected=paper.FIG3_SLOPE, ours=law["slope"], holds=abs(law["slope"] - paper.FIG3_SLOPE) < 0.01,
          tolerance="± 0.01", asserted=True, source="text")
    t.consistency("3", f"Fig. 3 refit: R² of that fit is the regression-through-the-origin (uncentred) R²; the centred R² would be "
               f"{law['r2_centred']:.3f}",
          expected=paper.FIG3_R2, ours=law["r2"], holds=abs(law["r2"] - paper.FIG3_R2) < 0.002, tolerance="± 0.002",
          asserted=True, source="text")
    t.consistency("4", "§6.1 refit: without the three (d = 16, m > 64) points: slope and (uncentred) R²",
          expected=f"{paper.FIG3_SLOPE_EXCL} / {paper.FIG3_R2_EXCL}", ours=f"{law['slope_excl']:.3f} / {law['r2_excl']:.3f}",
          holds=abs(law["slope_excl"] - paper.FIG3_SLOPE_EXCL) < 0.002 and abs(law["r2_excl"] - paper.FIG3_R2_EXCL) < 0.002,
          tolerance="± 0.002 each", asserted=True, source="text")
    t.consistency("5", "the law's log is log2: with ln the same fit gives a slope 1/ln 2 times larger",
                  expected=round(law["slope"] / math.log(2), 3), ours=round(R["ln_slope"], 3),
                  holds=abs(R["ln_slope"] - law["slope"] / math.log(2)) < 1e-9, tolerance="1e-9")
    p = R["power"]
    t.inconclusive("6", "the law is linear in m log2 m / d: free exponent β of D_K* = c x^β on the paper's data "
                        f"(13 points without the d = 16 ones: β = {p['beta_excl']:.2f}); free fit D_K* ∝ m^a d^b: "
                        f"a = {R['free']['m_excl']:.2f}, b = {R['free']['d_excl']:.2f} (13 points)",
                   paper="β = 1", ours=round(p["beta"], 2),
                   why="β > 1: the points curve upward, but m and d are confounded on the grid (diagonal)")
    t.inconclusive("7", "the law against the alternative D_K* ∝ m / d on the paper's own data: uncentred R² of the "
                        f"two through-origin fits (all 16 points; 13 points: law {law['r2_excl']:.3f}, m/d "
                        f"{R['alt']['r2_excl']:.3f})",
                   paper=round(law["r2"], 3), ours=round(R["alt"]["r2"], 3),
                   why="the log2 m factor varies 6 → 12 while D_K* spans 5 → 448: neither fit is clearly better")
    tb = R["table1"]
    t.consistency("8", "Table 1 / §6.1: d_k* ∈ [5, 24] on the base grid", expected="5–24",
                  ours=f"{tb['min']}–{tb['max']}", holds=(tb["min"], tb["max"]) == paper.TABLE1_RANGE_STATED)
    t.consistency("9", "§6.1: the median of Table 1's d_k* is 11 (erratum: it is 8)",
                  expected=paper.TABLE1_MEDIAN_STATED, ours=tb["median"], holds=tb["median"] == paper.TABLE1_MEDIAN_STATED)
    hs = {(q["m"], q["d"]): q["h_star"] for q in R["points"] if q["inferred"]}
    mono = all(hs[(m, d)] <= hs[(m2, d)] for (m, d) in hs for (m2, d2) in hs if d2 == d and m2 > m) and \
        all(hs[(m, d)] >= hs[(m, d2)] for (m, d) in hs for (m2, d2) in hs if m2 == m and d2 > d)
    t.consistency("10", "Fig. 2: more heads as m grows or d_model shrinks (the h* Table 1 and Fig. 8 imply, base grid)",
                  expected="monotone", ours="monotone" if mono else "not monotone", holds=mono)
    hf = R["hfit"]
    t.inconclusive("11", "Fig. 10: h* ≈ 1.65 m/d − 6.64 (R² 0.824); the 12 base-grid h* alone give "
                         f"{hf['slope']:.2f} m/d {hf['intercept']:+.2f} (R² {hf['r2']:.3f})",
                   paper=paper.FIG10_SLOPE, ours=round(hf["slope"], 2),
                   why="the h* of the diagonal points are not printed; no power-of-two choice of them gives all three numbers")
    # ---- (b) the trained mini-sweep, judged per seed (each seed's own D_K*, h*) ------------------
    cfg = result["config"]
    cells = _cells(cfg)
    per = [{f"{m},{d}": v for (m, d), v in th.items()} for th in sweeps.seed_thresholds(result["runs"])]
    n = len(per)

    def cell(i, m, d):
        return per[i].get(f"{m},{d}")

    ours = {(m, d): [cell(i, m, d)["central"] if cell(i, m, d) else None for i in range(n)] for m, d in cells}

    def show(values):
        return "/".join("–" if v is None else str(v) for v in values)
    for m, d in cells:
        c = _cell(result, m, d)
        if (m, d) in paper.FIG8_DKSTAR and c is not None:
            lo, hi = paper.FIG8_DKSTAR[(m, d)]
            a, b = sweeps.grid_step_range(c["grid"], lo, hi)
            hstar = show(cell(i, m, d)["h_star"] for i in range(n))
            t.add_seed_outcomes(f"12 ({m},{d})", f"Fig. 8: D_K* of (m, d) = ({m}, {d}) on the grid {c['grid']}, within one grid step "
                                     f"(per seed; h* by seed {hstar})",
                                paper=f"{lo}–{hi}", ours=show(ours[(m, d)]),
                                holds=[v is not None and a <= v <= b for v in ours[(m, d)]],
                                tolerance=(f"{a}–{b}" if a > -math.inf and b < math.inf else f"≤ {b}" if b < math.inf else f"≥ {a}"),
                                asserted=True, source="figure")
    pairs = [((m, d), (m, d2)) for (m, d) in cells for (m2, d2) in cells if m2 == m and d2 > d] + \
            [((m2, d), (m, d)) for (m, d) in cells for (m2, d2) in cells if d2 == d and m2 > m]
    if pairs:
        def ordered(i):
            return all(ours[a][i] is not None and ours[b][i] is not None and ours[a][i] > ours[b][i] for a, b in pairs)
        t.add_seed_outcomes("13", "§6.1: D_K* grows with m and falls with d_model (per seed): "
                      + ", ".join(f"D_K*{a} > D_K*{b}" for a, b in pairs),
                            paper="yes", ours="; ".join(", ".join(f"{ours[a][i]} > {ours[b][i]}" for a, b in pairs) for i in range(n)),
                            holds=[ordered(i) for i in range(n)], tolerance="strict, every pair", asserted=True, source="text")
    seeds = sorted({r["seed"] for r in result["runs"]})
    for m, d in cells:
        singles = [max((r["f1"] for r in result["runs"] if (r["m"], r["d"], r["h"], r["seed"]) == (m, d, 1, s)),
                       default=None) for s in seeds]
        cs = [cell(i, m, d) for i in range(n)]
        if m // d >= 4 and hs.get((m, d), 1) > 1 and all(c and c["central"] for c in cs) and None not in singles:
            t.add_seed_outcomes(f"14 ({m},{d})", f"§6.1, Fig. 2: a multi-head advantage in the compressed regime (m/d = {m // d}): "
                                     "h* > 1, and one head stays below 0.99 at every D_K tested (per seed)",
                                paper=f"h* = {hs[(m, d)]}",
                                ours="; ".join(f"h* = {c['h_star']}, h = 1 best {f:.3f}" for c, f in zip(cs, singles)),
                                holds=[c["h_star"] > 1 and f < 0.99 for c, f in zip(cs, singles)],
                                tolerance="h* > 1 and F1(h = 1) < 0.99", asserted=True, source="figure")
    known = [(m, d) for m, d in cells if (m, d) in hs and all(cell(i, m, d) and cell(i, m, d)["central"]
                                                               for i in range(n))]
    if known:
        t.add_seed_outcomes("14b", "Fig. 2: h* per cell as Table 1 and Fig. 8 imply, cells " + ", ".join(map(str, known))
                            + " (per seed)", paper=", ".join(str(hs[k]) for k in known),
                            ours="; ".join(", ".join(str(cell(i, *k)["h_star"]) for k in known) for i in range(n)),
                            holds=[all(cell(i, *k)["h_interval"][0] <= hs[k] <= cell(i, *k)["h_interval"][1] for k in known)
                    for i in range(n)], tolerance="inside our h* interval", source="figure")
    done = [(m, d) for m, d in cells if all(v is not None for v in ours[(m, d)])]
    if done:
        x = [analysis.law_x(m, d) for m, d in done]
        slopes = [analysis.fit_origin(x, [ours[k][i] for k in done])[0] for i in range(n)]
        paper_same = [analysis.infer_central().get(k, {}).get("central") for k in done]
        if all(v is not None for v in paper_same):
            a_paper = analysis.fit_origin(x, paper_same)[0]
            t.add_seed_outcomes("15", "the law's constant at these small cells: slope of D_K* against m log2 m / d through the origin, "
                          f"per seed (the paper's own D_K* of the same cells give {a_paper:.2f}; the 1.19 of all 16 "
                          "points is pulled up by the d = 16 cells)",
                                paper=round(a_paper, 2), ours=seed_summary(slopes),
                                holds=[a_paper / 1.5 <= v <= a_paper * 1.5 for v in slopes],
                                tolerance="within × 1.5 (one grid step)", asserted=True, source="figure")
        ms = sorted({m for m, _ in done})
        t.inconclusive("16", "the law D_K* ∝ m log2 m / d against D_K* ∝ m / d at this scale",
                       paper="m log2 m / d", ours=f"slope {seed_summary(slopes)}",
                       why=f"m ∈ {ms}: log2 m changes by {math.log2(max(ms)) / math.log2(min(ms)):.2f}x, "
                           "less than one D_K grid step (1.33–1.5x)")
    t.not_run("17", "the paper's sweep: m ∈ {64..512} × d ∈ {16, 32, 64}, the diagonal, (1024, 32); h ≤ 64, "
                    "10 seeds, Table 2 cutoffs, early stopping; slope 1.19, R² 0.944, h* fit",
              paper="D_K* of Fig. 8", command="attnlab run 000-capacity/capacity-law --scale full --headless")
    return t


EXPERIMENTS = (Experiment(
    id="000-capacity/capacity-law", label="Figs. 2, 3, 8, 10; Tables 1–2 (§6.1, App. A.2)",
    title="The capacity law: D_K* against m log m / d_model, and the optimal head count",
    params=PARAMS, presets=PRESETS, compute=compute,
    summary="The paper's own D_K* give its 1.19 slope and R² exactly (uncentred R²); a CI sweep lands within one "
            "grid step of Fig. 8 but cannot separate m log m from m at m ≤ 128."),)
