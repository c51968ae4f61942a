"""Figs. 11–13 (App. A.3): dense r-regular graphs. Micro-F1 of the trained max-over-heads QK model
against D_K per head count (Fig. 11), the smallest passing D_K against x = (r m / d) log2 m
(Fig. 12: one line D_K* ≈ 0.46 x for every r), and the head count at that budget against r
(Fig. 13: rising with density, near m'/d = r m / d). The D_K grid scales with r (D_K = f r), so
a threshold proportional to the number of edges shows as the same f for every r. Replica-batched:
every (r, h, D_K) of a seed in one program (grouped by head count).
"""

from __future__ import annotations

import math

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError

from .. import dense_graphs, paper, sweeps

PARAMS = (
    Param("m", "int", "number of items (the paper: 128)", min=17, max=4096),
    Param("d_model", "int", "embedding dimension (the paper: 32)", min=2, max=1024),
    Param("degrees", "int_list", "graph degrees r (out- and in-degree of every node)", min=1, max=64),
    Param("heads", "int_list", "head counts h", min=1, max=256),
    Param("dk_factors", "int_list", "D_K grid per degree: D_K = f r for each f (a pair is trained where h divides "
          "D_K)", min=1, max=512),
    Param("seeds", "int", "number of seeds (graph, embeddings, initialisation)", min=1, max=20),
    Param("steps", "int", "maximum training steps (one context per step)", min=1, max=500000),
    Param("lr", "float", "Adam learning rate (the paper: 1e-3)", min=1e-6, max=1.0),
    Param("n_test", "int", "test contexts", min=10, max=20000),
) + sweeps.RESUME_PARAMS
PRESETS = {
    "ci": {**sweeps.CI_RUN, "m": 128, "d_model": 32, "degrees": [1, 2, 4], "heads": [1, 2, 4, 8], "dk_factors": [16, 32], "seeds": 1,
           "steps": 3000, "lr": 1e-2, "n_test": 1000},
    "full": {**sweeps.FULL_RUN, "m": 128, "d_model": 32, "degrees": [1, 2, 4, 8, 16], "heads": [1, 2, 4, 8, 16, 32],
             "dk_factors": [4, 8, 12, 16, 24, 32], "seeds": 10, "steps": 20000, "lr": 1e-3, "n_test": 2000},
}
FIT_SLOPE = 0.46  # Eq. (32): D_K* ≈ 0.46 x, x = (r m / d) log2 m
LEVEL = 0.99      # App. A.2: the passing level of mean test micro-F1


def compute(ctx: Context) -> dict:
    """Trains one replica per (r, h, D_K = f r, seed) with App. A.3's protocol (r-regular graph,
    source-based contexts with rho = 0.5, class-balanced logistic loss, ell = 16, validation every
    500 steps, freeze after 5 checks above 0.995); the result holds `runs` (per replica: r, h,
    D_K, seed, test micro-F1, learned tau, steps trained, whether it stopped early)."""
    cfg = ctx.config
    m, d = cfg["m"], cfg["d_model"]
    if d > m or max(cfg["degrees"]) >= m // 2:
        raise ParameterError(f"parameters 'd_model' = {d} / 'degrees' = {cfg['degrees']}: need d_model <= m = {m} "
                             f"and every degree below m / 2 = {m // 2}")
    keys = [{"what": "run", "m": m, "d": d, "r": r, "h": h, "D_K": f * r, "seed": s, "steps": cfg["steps"],
             "lr": cfg["lr"], "n_test": cfg["n_test"]}
            for s in range(cfg["seeds"]) for r in sorted(cfg["degrees"]) for h in sorted(cfg["heads"])
            for f in sorted(cfg["dk_factors"]) if (f * r) % h == 0]
    if not keys:
        raise ParameterError(f"parameters 'heads' {cfg['heads']} / 'dk_factors' {cfg['dk_factors']}: no head count "
                             "divides a D_K")

    def run(seed, ks, bar, checkpoint=None):
        return dense_graphs.train_runs(ks, steps=cfg["steps"], lr=cfg["lr"], ell=paper.CONTEXT_LENGTH, rho=paper.RHO,
                                       n_test=cfg["n_test"], device=str(ctx.device), progress=bar, checkpoint=checkpoint)

    runs = ctx.units(keys, sweeps.grouped_programs(ctx, keys, cfg["steps"], run))
    return {"config": cfg, "runs": runs}


def mean_f1(result: dict, r: int) -> dict[tuple[int, int], float]:
    """{(h, D_K): mean test F1 over seeds} for degree r."""
    acc: dict[tuple[int, int], list[float]] = {}
    for q in result["runs"]:
        if q["r"] == r:
            acc.setdefault((q["h"], q["D_K"]), []).append(q["f1"])
    return {k: float(np.mean(v)) for k, v in acc.items()}


def x_edges(m: int, d: int, r: int) -> float:
    """Eq. (31): x = (m' / d) log2 m with m' = r m."""
    return r * m / d * math.log2(m)


def thresholds(result: dict, level: float = LEVEL) -> dict[int, dict]:
    """Per degree r: D_K* (smallest D_K at which some h reaches mean F1 >= level; None if none on
    the grid), h_min (the smallest head count passing at D_K*) and x."""
    cfg = result["config"]
    out = {}
    for r in sorted(cfg["degrees"]):
        f = mean_f1(result, r)
        ok = sorted((D, h) for (h, D), v in f.items() if v >= level)
        star = ok[0][0] if ok else None
        h_min = min(h for D, h in ok if D == star) if ok else None
        out[r] = {"dk_star": star, "h_min": h_min, "x": x_edges(cfg["m"], cfg["d_model"], r)}
    return out


def claims(result: dict) -> ClaimsTable:
    cfg = result["config"]
    m, d = cfg["m"], cfg["d_model"]
    rs = sorted(cfg["degrees"])
    t = ClaimsTable(rtol=TRAINED_RTOL)
    dense = [r for r in rs if r >= 2]
    if dense:
        r2 = dense[0]
        f = mean_f1(result, r2)
        one = [v for (h, D), v in f.items() if h == 1]
        if one:
            t.add("1", f"Fig. 11, r = {r2}: a single head plateaus well below 1 (its best mean F1 over D_K ∈ "
                       f"{sorted({D for _, D in f})})", paper="well below 1.0", ours=max(one), holds=max(one) < 0.6,
                  tolerance="< 0.6", asserted=True, source="text")
        r4 = dense[-1]
        g = mean_f1(result, r4)
        few = [v for (h, D), v in g.items() if h <= 2]
        if r4 >= 4 and few:
            t.add("2", f"Fig. 11, r = {r4}: one and two heads both plateau (best mean F1 of h ≤ 2)",
                  paper="well below 1.0", ours=max(few), holds=max(few) < 0.8, tolerance="< 0.8", asserted=True,
                  source="text")
    tops = {}
    for r in rs:
        f = mean_f1(result, r)
        top = max(D for _, D in f)
        many = [v for (h, D), v in f.items() if h >= 4 and D == top]
        if many:
            tops[r] = (top, max(many))
    if tops:
        worst = min(v for _, v in tops.values())
        t.add("3", "Fig. 11: four to eight heads jump to F1 ≈ 1 (the worst over r of the best h ≥ 4 at D_K = "
                   f"{max(cfg['dk_factors'])} r; r = {', '.join(map(str, tops))})", paper="≈ 1.0", ours=worst,
              holds=worst >= 0.95, tolerance="≥ 0.95", asserted=True, source="text")
    th = thresholds(result)
    found = {r: v for r, v in th.items() if v["dk_star"] is not None}
    if len(found) >= 2:
        ratios = [v["dk_star"] / v["x"] for v in found.values()]
        spread = max(ratios) / min(ratios)
        text4 = ("Fig. 12: the passing budget collapses onto one line in x = (r m/d) log2 m: max/min over r of "
                 "D_K*/x (" + ", ".join(f"r = {r}: {v['dk_star']}" for r, v in found.items()) + ")")
        fs = sorted(cfg["dk_factors"])
        step = max(b / a for a, b in zip(fs, fs[1:])) if len(fs) >= 2 else math.inf
        if len(fs) <= 2:
            # D_K = f r with few, widely spaced f: D_K*/x takes only len(fs) values, and any law within a grid
            # step of linear in r over the range of r (e.g. the lower bound's m' log(m^2/m')) reads the same
            t.inconclusive("4", text4, paper="one line", ours=spread, source="text",
                           why=f"D_K grid {fs} × r ({len(fs)} steps of × {step:g}): laws within × {step:g} of linear "
                               f"over r = {min(found)}..{max(found)} (e.g. m' log(m²/m')) give the same ratios")
        else:
            t.add("4", text4, paper="one line", ours=spread, holds=spread <= step + 1e-9,
                  tolerance=f"≤ × {step:g} (one grid step)", asserted=False, source="text")
        slope = sum(v["dk_star"] * v["x"] for v in found.values()) / sum(v["x"] ** 2 for v in found.values())
        below = [f for f in cfg["dk_factors"] if f < min(v["dk_star"] / r for r, v in found.items())]
        lower = max(below) if below else None
        t.inconclusive("5", "Eq. (32): D_K* ≈ 0.46 x; our grid's passing budgets give the slope (through the origin) "
                            "on the left, the failing grid step below them "
                            + (f"{lower * d / m / math.log2(m):.2f} x" if lower else "nothing"),
                       paper=FIT_SLOPE, ours=slope,
                       why="a few thousand steps at lr 1e-2 on a 2-point grid; the paper trains up to 20,000 steps "
                           "with early stopping (its own r = 1 point, Fig. 8: 21 = 0.75 x)", source="text")
        hs = [v["h_min"] for v in found.values()]
        mono = all(a <= b for a, b in zip(hs, hs[1:]))
        t.add("6", "Fig. 13: the head count needed at the passing budget rises with density (smallest passing h at "
                   "D_K*, by r: " + ", ".join(f"{r}: {v['h_min']}" for r, v in found.items()) + ")",
              paper="rises ~ r", ours=f"{hs[0]} → {hs[-1]}", holds=mono and hs[-1] > hs[0],
              tolerance="non-decreasing, rising", asserted=False, source="text")
        rel = [v["h_min"] * d / (r * m) for r, v in found.items()]
        t.add("7", "… within a factor of ~2 of m'/d = r m/d: the range over r of h / (r m/d)", paper="within ×2",
              ours=f"{min(rel):.2f}–{max(rel):.2f}", holds=min(rel) >= 0.5 and max(rel) <= 2.0,
              tolerance="0.5–2", asserted=False, source="text")
    t.not_run("8", "Figs. 11–13 at the paper's protocol: r ∈ {1, 2, 4, 8, 16}, h ≤ 32, a finer D_K grid, 10 seeds, up "
                   "to 20,000 steps at lr 1e-3 with early stopping", paper="D_K* ≈ 0.46 x; h* tracks r m/d",
              command="attnlab run 000-capacity/figs11-13-regular-graphs --scale full --headless")
    return t


EXPERIMENTS = (Experiment(
    id="000-capacity/figs11-13-regular-graphs", label="Figs. 11–13 (App. A.3)",
    title="Dense r-regular graphs: F1 against D_K, capacity against the number of edges, heads against density",
    params=PARAMS, presets=PRESETS, compute=compute,
    summary="Denser graphs need a larger key budget (at CI every r passes at D_K = 32 r and fails at 16 r, too "
            "coarse to show proportionality to the edges) and more heads; one or two heads plateau."),)
