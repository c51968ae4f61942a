"""Figs. 11–13 (App. A.3): dense r-regular graphs. Micro-F1 of the trained max-over-heads QK model
against D_K per head count (Fig. 11), the smallest passing D_K against x = (r m / d) log2 m
(Fig. 12: one line D_K* ≈ 0.46 x for every r), and the head count at that budget against r
(Fig. 13: rising with density, near m'/d = r m / d). The D_K grid scales with r (D_K = f r), so
a threshold proportional to the number of edges shows as the same f for every r. Replica-batched:
every (r, h, D_K, seed) in one program (grouped by head count; each seed its own graphs, embeddings
and initialisation). Every trained row is judged over the seeds with the seed rule
(`ClaimsTable.add_seeds`, `ClaimsTable.add_seed_outcomes`); `seed` moves every seed.
"""

from __future__ import annotations

import math

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable, seed_summary
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import LR, N_TEST, Param, ParameterError, SEEDS, STEPS

from .. import dense_graphs, paper, sweeps
from ..seeds import SEED_PARAM, by_seed, seed_range

PARAMS = (
    Param("m", "int", "number of items (the paper: 128)", min=17, max=4096),
    Param("d_model", "int", "embedding dimension (the paper: 32)", min=2, max=1024),
    Param("degrees", "int_list", "graph degrees r (out- and in-degree of every node)", min=1, max=64),
    Param("heads", "int_list", "head counts h", min=1, max=256),
    Param("dk_factors", "int_list", "D_K grid per degree: D_K = f r for each f (a pair is trained where h divides "
          "D_K)", min=1, max=512),
    SEEDS.described("number of seeds (graph, embeddings, initialisation)"),
    SEED_PARAM,
    STEPS.described("maximum training steps (one context per step)"),
    LR.described("Adam learning rate (the paper: 1e-3)"),
    N_TEST.described("test contexts"),
    Param("n_val", "int", "validation contexts (early stopping, every 500 steps; the paper: 500)", min=10, max=20000),
) + sweeps.RESUME_PARAMS
PRESETS = {
    # three seeds as replicas of one program cost 3x one seed (the program is compute-bound; 1000 steps do not
    # converge): r in {2, 4} and h in {1, 4, 8} (r = 1 and h = 2 dropped), 2500 steps, 100 validation and 500 test
    # contexts (formerly r in {1, 2, 4}, h in {1, 2, 4, 8}, 3000 steps, 500 and 1000) keep the former CPU time
    "ci": {**sweeps.CI_RUN, "m": 128, "d_model": 32, "degrees": [2, 4], "heads": [1, 4, 8], "dk_factors": [16, 32],
           "seeds": 3, "seed": 0, "steps": 2500, "lr": 1e-2, "n_test": 500, "n_val": 100},
    "full": {**sweeps.FULL_RUN, "m": 128, "d_model": 32, "degrees": [1, 2, 4, 8, 16], "heads": [1, 2, 4, 8, 16, 32],
             "dk_factors": [4, 8, 12, 16, 24, 32], "seeds": 10, "seed": 0, "steps": 20000, "lr": 1e-3, "n_test": 2000,
             "n_val": 500},
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
             "lr": cfg["lr"], "n_test": cfg["n_test"], **({"n_val": cfg["n_val"]} if cfg["n_val"] != 500 else {})}
            for s in seed_range(cfg) for r in sorted(cfg["degrees"]) for h in sorted(cfg["heads"])
            for f in sorted(cfg["dk_factors"]) if (f * r) % h == 0]
    if not keys:
        raise ParameterError(f"parameters 'heads' {cfg['heads']} / 'dk_factors' {cfg['dk_factors']}: no head count "
                             "divides a D_K")

    def run(seed, ks, bar, checkpoint=None):
        return dense_graphs.train_runs(ks, steps=cfg["steps"], lr=cfg["lr"], ell=paper.CONTEXT_LENGTH, rho=paper.RHO,
                                       n_val=cfg["n_val"], n_test=cfg["n_test"], device=str(ctx.device), progress=bar,
                                       checkpoint=checkpoint)

    runs = ctx.units(keys, sweeps.grouped_programs(ctx, keys, cfg["steps"], run, group=lambda k: 0))
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


def seed_f1(result: dict, r: int) -> list[dict[tuple[int, int], float]]:
    """Per seed (in seed order): {(h, D_K): test F1} for degree r."""
    return [{(q["h"], q["D_K"]): q["f1"] for q in qq if q["r"] == r} for qq in by_seed(result["runs"]).values()]


def _star(f: dict[tuple[int, int], float], level: float) -> tuple[int | None, int | None]:
    ok = sorted((D, h) for (h, D), v in f.items() if v >= level)
    star = ok[0][0] if ok else None
    return star, (min(h for D, h in ok if D == star) if ok else None)


def thresholds(result: dict, level: float = LEVEL, seed_index: int | None = None) -> dict[int, dict]:
    """Per degree r: D_K* (smallest D_K at which some h reaches F1 >= level; None if none on the
    grid), h_min (the smallest head count passing at D_K*) and x; of the mean F1 over seeds, or with
    `seed_index` of that seed's own F1."""
    cfg = result["config"]
    out = {}
    for r in sorted(cfg["degrees"]):
        f = mean_f1(result, r) if seed_index is None else seed_f1(result, r)[seed_index]
        star, h_min = _star(f, level)
        out[r] = {"dk_star": star, "h_min": h_min, "x": x_edges(cfg["m"], cfg["d_model"], r)}
    return out


def claims(result: dict) -> ClaimsTable:
    """Rows 1-3, 6, 7 judged over the seeds (each seed's own F1: `add_seeds`, `ClaimsTable.add_seed_outcomes`); rows 4, 5
    inconclusive at this grid (their per-seed values shown); row 8 at the paper's protocol."""
    cfg = result["config"]
    m, d = cfg["m"], cfg["d_model"]
    rs = sorted(cfg["degrees"])
    n_seeds = len(by_seed(result["runs"]))
    t = ClaimsTable(rtol=TRAINED_RTOL)
    dense = [r for r in rs if r >= 2]
    if dense:
        r2 = dense[0]
        f = seed_f1(result, r2)
        if any(h == 1 for h, _ in f[0]):
            t.add_seeds("1", f"Fig. 11, r = {r2}: a single head plateaus well below 1 (per seed, its best F1 over D_K ∈ "
                             f"{sorted({D for _, D in f[0]})})", paper="well below 1.0",
                        values=[max(v for (h, D), v in g.items() if h == 1) for g in f], threshold=0.6, above=False,
                        tolerance="< 0.6", asserted=True, source="text")
        r4 = dense[-1]
        g = seed_f1(result, r4)
        if r4 >= 4 and any(h <= 2 for h, _ in g[0]):
            few = sorted({h for h, _ in g[0] if h <= 2})
            t.add_seeds("2", f"Fig. 11, r = {r4}: one and two heads both plateau (per seed, the best F1 of h ∈ {few}"
                             + (", the only one of them trained)" if len(few) == 1 else ")"),
                        paper="well below 1.0", values=[max(v for (h, D), v in gg.items() if h <= 2) for gg in g],
                        threshold=0.8, above=False, tolerance="< 0.8", asserted=True, source="text")
    tops = []
    for r in rs:
        f = seed_f1(result, r)
        top = max(D for _, D in f[0])
        if any(h >= 4 and D == top for h, D in f[0]):
            tops.append([max(v for (h, D), v in g.items() if h >= 4 and D == top) for g in f])
    if tops:
        worst = np.min(np.asarray(tops), axis=0)  # per seed, the worst over r
        # judged on the error 1 − F1 (the trained precision is relative: an F1 near 1 moves in its error)
        t.add_seeds("3", "Fig. 11: four to eight heads jump to F1 ≈ 1: per seed, 1 − F1 of the best h ≥ 4 at D_K = "
                         f"{max(cfg['dk_factors'])} r, worst over r = {', '.join(map(str, rs))}", paper="≈ 0",
                    values=(1 - worst).tolist(), threshold=0.05, above=False, tolerance="≤ 0.05 (F1 ≥ 0.95)",
                    asserted=True, source="text")
    per = [thresholds(result, seed_index=i) for i in range(n_seeds)]
    found_all = [{r: v for r, v in th.items() if v["dk_star"] is not None} for th in per]
    if all(len(fd) >= 2 for fd in found_all):
        spreads = [max(v["dk_star"] / v["x"] for v in fd.values()) / min(v["dk_star"] / v["x"] for v in fd.values())
                   for fd in found_all]
        stars = ["/".join(str(th[r]["dk_star"]) for r in rs) for th in per]
        text4 = ("Fig. 12: the passing budget collapses onto one line in x = (r m/d) log2 m: max/min over r of "
                 f"D_K*/x, per seed (D_K* at r = {'/'.join(map(str, rs))} by seed: {'; '.join(stars)})")
        fs = sorted(cfg["dk_factors"])
        step = max(b / a for a, b in zip(fs, fs[1:])) if len(fs) >= 2 else math.inf
        if len(fs) <= 2:
            # D_K = f r with few, widely spaced f: D_K*/x takes only len(fs) values, and any law within a grid
            # step of linear in r over the range of r (e.g. the lower bound's m' log(m^2/m')) reads the same
            t.inconclusive("4", text4, paper="one line", ours=seed_summary(spreads), source="text",
                           why=f"D_K grid {fs} × r ({len(fs)} steps of × {step:g}): laws within × {step:g} of linear "
                               f"over r = {min(rs)}..{max(rs)} (e.g. m' log(m²/m')) give the same ratios")
        else:
            t.add_seeds("4", text4, paper="one line", values=spreads, threshold=step, above=False,
                        tolerance=f"≤ × {step:g} (one grid step)", source="text")
        slopes = [sum(v["dk_star"] * v["x"] for v in fd.values()) / sum(v["x"] ** 2 for v in fd.values())
                  for fd in found_all]
        lowers = []
        for fd in found_all:
            below = [f for f in cfg["dk_factors"] if f < min(v["dk_star"] / r for r, v in fd.items())]
            lowers.append(max(below) * d / m / math.log2(m) if below else None)
        lower_text = (f"{seed_summary(lowers)} x" if all(x is not None for x in lowers) else
                      "nothing in some seed")
        t.inconclusive("5", "Eq. (32): D_K* ≈ 0.46 x; our grid's passing budgets give the slope (through the origin, "
                            f"per seed) on the left, the failing grid step below them {lower_text}",
                       paper=FIT_SLOPE, ours=seed_summary(slopes),
                       why="a few thousand steps at lr 1e-2 on a 2-point grid; the paper trains up to 20,000 steps "
                           "with early stopping (its own r = 1 point, Fig. 8: 21 = 0.75 x)", source="text")
        hs = [[fd[r]["h_min"] for r in fd] for fd in found_all]
        t.add_seed_outcomes("6", "Fig. 13: the head count needed at the passing budget rises with density (per seed, "
                            "the smallest passing h at D_K* by r = " + "/".join(map(str, rs)) + ")", paper="rises ~ r",
                            ours="; ".join("/".join(map(str, h)) for h in hs),
                            holds=[all(a <= b for a, b in zip(h, h[1:])) and h[-1] > h[0] for h in hs],
                            tolerance="non-decreasing, rising", source="text")
        rel = [[v["h_min"] * d / (r * m) for r, v in fd.items()] for fd in found_all]
        t.add_seed_outcomes("7", "… within a factor of ~2 of m'/d = r m/d: the range over r of h / (r m/d), per seed",
                            paper="within ×2", ours="; ".join(f"{min(x):.2f}–{max(x):.2f}" for x in rel),
                            holds=[min(x) >= 0.5 and max(x) <= 2.0 for x in rel], tolerance="0.5–2", source="text")
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
