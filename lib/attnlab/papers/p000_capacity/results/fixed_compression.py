"""Fig. 4 (§6.1): the fixed-compression diagonal lambda = m / d_model = 8, from (128, 16) to (4096, 512).

At fixed lambda the capacity law D_K* ≈ c m log m / d collapses to c lambda log m: D_K* should grow only
logarithmically in m, and the optimal head count should stay proportional to lambda. (a) The paper's
printed diagonal (Fig. 8's ranges, Table 1's d_k* where it covers the cell) against that prediction and
against the alternative "flat in m" (D_K* ∝ m / d). (b) A trained CI diagonal at lambda = 4,
(64, 16) → (256, 64), as one replica-batched program (sweeps.run), D_K* by the paper's rule. The
seeds are replicas of the same program; every trained row is judged per seed (each seed's own D_K*,
h*) with the seed rule (`ClaimsTable.add_seeds`, `ClaimsTable.add_seed_outcomes`), and `seed` moves every seed.
"""

from __future__ import annotations

import math

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable, seed_summary
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import LR, N_TEST, Param, ParameterError, SEEDS, STEPS

from .. import analysis, paper, sweeps
from ..seeds import SEED_PARAM

PARAMS = (
    Param("ms", "int_list", "item counts m along the diagonal (d_model = m / lam)", min=4, max=8192),
    Param("lam", "int", "compression lambda = m / d_model", min=1, max=256),
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
FULL_DKS = [8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64, 72, 80, 88, 96, 112, 120, 128, 144, 160, 192, 256]
PRESETS = {
    # three seeds as replicas of one program: D_K in {12, 16, 20, 24, 32} within [0.6, 1.0] x (formerly every 4 from
    # 12 to 32 within [0.5, 1.15] x) and 2200 steps at lr 2e-2 (formerly 3000 at 1e-2; 1800 left a cell short of 0.99
    # in a seed) keep the former CPU time
    "ci": {**sweeps.CI_RUN, "ms": [32, 64, 128], "lam": 4, "heads": [1, 2, 4], "dks": [12, 16, 20, 24, 32], "window_lo": 0.6,
           "window_hi": 1.0, "seeds": 3, "seed": 0, "steps": 2200, "table2": False, "lr": 2e-2, "n_val": 200,
           "n_test": 500, "max_replicas": 128},
    "full": {**sweeps.FULL_RUN, "ms": [m for m, _ in paper.DIAGONAL], "lam": 8, "heads": list(paper.HEADS), "dks": FULL_DKS,
             "window_lo": 0.3, "window_hi": 2.0, "seeds": paper.SEEDS_LARGEST, "seed": 0, "steps": 200000, "table2": True,
             "lr": paper.LR, "n_val": paper.N_VAL, "n_test": paper.N_TEST, "max_replicas": 256},
}


def paper_diagonal() -> list[dict]:
    """The lambda = 8 diagonal as printed: Fig. 8's range, the central value and h* where Table 1
    fixes them (or the range is one number), and the law's abscissa x = lambda log2 m."""
    inf = analysis.infer_central()
    rows = []
    for m, d in paper.DIAGONAL:
        lo, hi = paper.FIG8_DKSTAR[(m, d)]
        c = inf[(m, d)]["central"] if (m, d) in inf else (lo if lo == hi else None)
        rows.append({"m": m, "d": d, "lo": lo, "hi": hi, "central": c,
                     "h_star": inf[(m, d)]["h_star"] if (m, d) in inf else None, "x": analysis.law_x(m, d)})
    return rows


def compute(ctx: Context) -> dict:
    """(a) `paper_diagonal`. (b) Trains one replica per (m, m / lam, h, D_K, seed) with the protocol
    of App. A.1 (as the capacity-law chapter); the result holds `runs` and `cells` (per "m,d": D_K*
    central / lower / upper, h*, d_k*, h* interval, x)."""
    cfg = ctx.config
    if cfg["window_lo"] >= cfg["window_hi"]:
        raise ParameterError(f"parameters 'window_lo' {cfg['window_lo']} / 'window_hi' {cfg['window_hi']}: "
                             "window_lo must be below window_hi")
    cells = []
    for m in sorted(cfg["ms"]):
        if m % cfg["lam"] or m // cfg["lam"] < 2:
            raise ParameterError(f"parameter 'ms': m = {m} is not a multiple of lam = {cfg['lam']} with m / lam >= 2")
        cells.append((m, m // cfg["lam"]))
    window = (cfg["window_lo"], cfg["window_hi"])
    for m, d in cells:
        if not sweeps.cell_grid(m, d, cfg["heads"], cfg["dks"], window):
            raise ParameterError(f"parameter 'dks' {cfg['dks']}: no (h, D_K) for (m, d) = ({m}, {d}) in the window "
                                 f"{window} x m log2 m / d")
    keys = sweeps.sweep_keys(cells, cfg["heads"], cfg["dks"], cfg["seeds"], steps=cfg["steps"], lr=cfg["lr"],
                             n_val=cfg["n_val"], n_test=cfg["n_test"], window=window, table2=cfg["table2"],
                             first_seed=cfg["seed"])
    runs = sweeps.run(ctx, keys, cfg["max_replicas"])
    return {"config": cfg, "diagonal": paper_diagonal(), "runs": runs,
            "cells": {f"{m},{d}": v for (m, d), v in sweeps.thresholds(runs).items()}}


def claims(result: dict) -> ClaimsTable:
    rows = result["diagonal"]
    t = ClaimsTable(rtol=TRAINED_RTOL)
    by_m = {r["m"]: r for r in rows}
    # (a) the printed diagonal
    law = 12 / 9   # log2 4096 / log2 512
    lo, hi = by_m[4096]["lo"] / by_m[512]["central"], by_m[4096]["hi"] / by_m[512]["central"]
    t.consistency("1", "§6.1: from m ≥ 512 D_K* grows like log m: D_K*(4096, 512) / D_K*(512, 64) from the printed "
                       "ranges, against the law's log2 4096 / log2 512 = 1.33 (a flat D_K* ∝ m / d would give 1)",
                  expected=round(law, 2), ours=f"{lo:.2f}–{hi:.2f}", holds=lo <= law <= hi and lo > 1,
                  tolerance="1.33 inside the range, and the range above 1")
    mono_lo = [by_m[m]["lo"] for m in (512, 1024, 2048, 4096)]
    t.consistency("2", "§6.1: D_K* rises with m from m = 512 on ('roughly'): the lower ends of the printed ranges "
                       "are non-decreasing",
                  expected="non-decreasing", ours=" → ".join(map(str, mono_lo)),
                  holds=all(a <= b for a, b in zip(mono_lo, mono_lo[1:])))
    late = [r["hi"] / r["x"] for r in rows if r["m"] >= 512]
    first = by_m[128]["central"] / by_m[128]["x"]
    t.consistency("3", "§6.1: the first points are 'slightly conservative': D_K* / (lam log2 m) at (128, 16) "
                       f"(central {by_m[128]['central']}) against the largest upper end from m = 512 on",
                  expected=f"> {max(late):.2f}", ours=round(first, 2), holds=first > max(late),
                  tolerance="above every later ratio")
    known = [r for r in rows if r["h_star"]]
    lam = 8  # the paper's diagonal
    t.consistency("4", "§6.1: the optimal head count stays proportional to lam = 8 along the diagonal (h* that Table 1 "
                       "and Fig. 8 fix: " + ", ".join(f"({r['m']}, {r['d']}) → {r['h_star']}" for r in known) + ")",
                  expected=f"{lam}, within × 2", ours=", ".join(str(r["h_star"]) for r in known),
                  holds=all(lam / 2 <= r["h_star"] <= lam * 2 for r in known), tolerance="within × 2 of lam")
    t.inconclusive("5", "Fig. 4's bars: h* of (1024, 128), (2048, 256), (4096, 512)", paper="not printed", ours="–",
                   why="Table 1 covers only the base grid; the bars are not given as numbers")
    # (b) the trained CI diagonal, judged per seed (each seed's own D_K*, h*)
    cfg = result["config"]
    cells = sorted((int(k.split(",")[0]), int(k.split(",")[1])) for k in result["cells"])
    per = sweeps.seed_thresholds(result["runs"])
    n = len(per)
    ours = {k: [th[k] for th in per] for k in cells}

    def show(values):
        return "/".join("–" if v is None else str(v) for v in values)
    for (m, d), cs in ours.items():
        if (m, d) in paper.FIG8_DKSTAR:
            plo, phi = paper.FIG8_DKSTAR[(m, d)]
            a, b = sweeps.grid_step_range(cs[0]["grid"], plo, phi)
            t.add_seed_outcomes(f"6 ({m},{d})", f"Fig. 8: D_K* of (m, d) = ({m}, {d}) (lam = {cfg['lam']}) on the grid {cs[0]['grid']}, "
                                    f"within one grid step (per seed; h* by seed {show(c['h_star'] for c in cs)})",
                                paper=f"{plo}–{phi}", ours=show(c["central"] for c in cs),
                                holds=[c["central"] is not None and a <= c["central"] <= b for c in cs],
                                tolerance=(f"{a}–{b}" if a > -math.inf and b < math.inf else f"≤ {b}" if b < math.inf else f"≥ {a}"),
                                asserted=True, source="figure")
    done = [k for k in cells if all(c["central"] for c in ours[k])]
    if len(done) >= 2:
        (m0, d0), (m1, d1) = done[0], done[-1]
        ratios = [ours[(m1, d1)][i]["central"] / ours[(m0, d0)][i]["central"] for i in range(n)]
        pred = math.log2(m1) / math.log2(m0)
        mid = math.sqrt(pred * m1 / m0)  # the geometric middle between log growth and growth like m
        t.add_seeds("7", f"§6.1: at fixed lam D_K* grows like log m, not like m: D_K*({m1}, {d1}) / D_K*({m0}, {d0}) "
                         f"per seed (log: × {pred:.2f}; like m: × {m1 // m0})", paper=f"× {pred:.2f}", values=ratios,
                    threshold=mid, above=False, tolerance=f"< {mid:.2f} (nearer log than m)", asserted=True,
                    source="text")
        step = max(b / a for a, b in zip(ours[done[0]][0]["grid"], ours[done[0]][0]["grid"][1:]))
        t.inconclusive("8", f"logarithmic growth along the CI diagonal (law: × {pred:.2f} from m = {m0} to {m1}) "
                            "against a flat D_K* (D_K* ∝ m / d)", paper=f"× {pred:.2f}", ours=f"× {seed_summary(ratios)}",
                       why=f"the predicted rise is about one D_K grid step (up to × {step:.2f})")
    if len(done) >= 2:
        hs = [[ours[k][i]["h_star"] for k in done] for i in range(n)]
        text = ("§6.1: the optimal head count is proportional to lam, so roughly constant along a diagonal: "
                "h* per cell " + ", ".join(f"({m}, {d})" for m, d in done) + ", per seed")
        h_top = max(cfg["heads"])
        shown = "; ".join(", ".join(map(str, h)) for h in hs)
        if any(h_top in h for h in hs):
            # an h* at the largest head count trained is capped: an h* growing along the diagonal would
            # read as constant too, so the check cannot separate the claim from its alternative
            t.inconclusive("8b", text, paper="∝ lam", ours=shown,
                           why=f"h* reaches the largest head count trained (h ≤ {h_top}) in some seed: a growing h* "
                               "would be capped and look constant too", source="text")
        else:
            t.add_seed_outcomes("8b", text, paper="∝ lam", ours=shown, holds=[max(h) <= 2 * min(h) for h in hs],
                                tolerance="max / min ≤ 2", source="text")
    t.not_run("9", "Fig. 4 itself: the lam = 8 diagonal (128, 16) → (4096, 512), h ≤ 64, Table 2 cutoffs up to "
                   "200,000 steps, 3 seeds",
              paper=", ".join("–".join(map(str, sorted(set(paper.FIG8_DKSTAR[k])))) for k in paper.DIAGONAL),
              command="attnlab run 000-capacity/fixed-compression --scale full --headless")
    return t


EXPERIMENTS = (Experiment(
    id="000-capacity/fixed-compression", label="Fig. 4 (§6.1)",
    title="The fixed-compression diagonal: D_K* and h* at m / d_model = 8",
    params=PARAMS, presets=PRESETS, compute=compute,
    summary="At fixed compression D_K* grows slowly in m: the printed diagonal rises 1.29–2.14x from m = 512 to 4096 "
            "(log predicts 1.33); a CI diagonal at lam = 4 is too short to tell log from flat."),)
