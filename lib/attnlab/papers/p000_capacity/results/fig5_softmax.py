"""Fig. 5 (§7.1): the scaled-softmax QK model, micro-F1 against the total key dimension D_K, one
line per head count. The model of Fig. 1 with per-head softmax over the context, scores / sqrt(d_k)
and a sum over heads; the max-over-heads model is trained beside it on the same data, initial
weights and step budget, to show the threshold's shift to the right. Replica-batched: one program
per (panel, model), replicas = (h, D_K, seed) (each seed its own graph, embeddings and
initialisation). Every trained row is judged over the seeds with the seed rule
(`ClaimsTable.add_seeds`, `ClaimsTable.add_seed_outcomes`); `seed` moves every seed.
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import LR, N_TEST, Param, ParameterError, SEEDS, STEPS

from .. import paper, softmax_model, sweeps
from ..seeds import SEED_PARAM, by_seed, seed_range

PARAMS = (
    Param("panels", "int_rows", "panels (m, d_model), each a (number of items, embedding dimension)", width=2,
          min=2, max=4096),
    Param("heads", "int_list", "head counts h", min=1, max=256),
    Param("dks", "int_list", "total key dimensions D_K (a pair is trained where h divides D_K)", min=1, max=4096),
    Param("compare_heads", "int_list", "head counts at which the max-over-heads model is trained too (0: none)",
          min=0, max=256),
    SEEDS.described("number of seeds (graph, embeddings, initialisation)"),
    SEED_PARAM,
    STEPS.described("maximum training steps (one context per step)"),
    LR.described("Adam learning rate (the paper: 1e-3)"),
    N_TEST.described("test contexts"),
) + sweeps.RESUME_PARAMS
PRESETS = {
    # three seeds as replicas cost 3x one seed (compute-bound): h in {1, 8}, D_K in {16, 64}, the max model at h = 8
    # (instead of h in {1, 4, 8}, D_K in {16, 32, 64}, max at h = 4) and 2000 steps (instead of 3000) keep the CPU time
    "ci": {**sweeps.CI_RUN, "panels": [[64, 16]], "heads": [1, 8], "dks": [16, 64], "compare_heads": [8], "seeds": 3,
           "seed": 0, "steps": 2000, "lr": 1e-2, "n_test": 1000},
    "full": {**sweeps.FULL_RUN, "panels": [[64, 16], [64, 32], [128, 32], [256, 32]], "heads": [1, 2, 4, 8, 16],
             "dks": [8, 16, 24, 32, 48, 64, 96, 128], "compare_heads": [1, 2, 4, 8, 16], "seeds": 3, "seed": 0,
             "steps": 80000, "lr": 1e-3, "n_test": 2000},
}


def compute(ctx: Context) -> dict:
    """Trains one replica per (panel, model, h, D_K, seed) with the protocol of App. A.1 (ell = 16,
    rho = 0.5, alpha = 10, validation every 500 steps, freeze after 5 checks above 0.995); the
    result holds `runs` (per replica: panel m, d, model "softmax" or "max", h, D_K, seed, test
    micro-F1, learned tau, steps trained, whether it stopped early)."""
    cfg = ctx.config
    for m, d in cfg["panels"]:
        if d > m or m < 17:
            raise ParameterError(f"parameter 'panels': ({m}, {d}) is not allowed; need d_model <= m and m >= 17 "
                                 f"(contexts of {paper.CONTEXT_LENGTH} distinct items)")
    grid = [(h, D) for h in sorted(cfg["heads"]) for D in sorted(cfg["dks"]) if D % h == 0]
    if not grid:
        raise ParameterError(f"parameters 'heads' {cfg['heads']} / 'dks' {cfg['dks']}: no head count divides a D_K")
    compare = [(h, D) for h, D in grid if h in cfg["compare_heads"]]
    keys = [{"what": "run", "model": model, "m": m, "d": d, "h": h, "D_K": D, "seed": s, "steps": cfg["steps"],
             "lr": cfg["lr"], "n_test": cfg["n_test"]}
            for m, d in cfg["panels"] for s in seed_range(cfg)
            for model, specs in (("softmax", grid), ("max", compare)) for h, D in specs]

    def run(group, ks, bar, checkpoint=None):  # every seed a replica of the (model, panel) program
        model, m, d = group
        out = softmax_model.train_runs([{"m": m, "d": d, "h": k["h"], "D_K": k["D_K"], "seed": k["seed"]} for k in ks],
                                       steps=cfg["steps"], lr=cfg["lr"], ell=paper.CONTEXT_LENGTH, rho=paper.RHO,
                                       n_test=cfg["n_test"], device=str(ctx.device), progress=bar, kind=model,
                                       checkpoint=checkpoint)
        return [{**row, "model": model, "m": m, "d": d} for row in out]

    runs = ctx.units(keys, sweeps.grouped_programs(ctx, keys, cfg["steps"], run,
                                                   group=lambda k: (k["model"], k["m"], k["d"])))
    return {"config": cfg, "runs": runs}


def mean_f1(result: dict, model: str = "softmax", panel: tuple[int, int] | None = None) -> dict[tuple[int, int], float]:
    """{(h, D_K): mean test F1 over seeds} of one model on one panel (default: the first)."""
    m, d = panel or tuple(result["config"]["panels"][0])
    acc: dict[tuple[int, int], list[float]] = {}
    for r in result["runs"]:
        if r["model"] == model and r["m"] == m and r["d"] == d:
            acc.setdefault((r["h"], r["D_K"]), []).append(r["f1"])
    return {k: float(np.mean(v)) for k, v in acc.items()}


def dk_star(f: dict[tuple[int, int], float], level: float = 0.99) -> int | None:
    """Smallest D_K at which some h reaches mean test F1 >= level (App. A.2's central estimate)."""
    ok = [D for (h, D), v in f.items() if v >= level]
    return min(ok) if ok else None


def seed_f1(result: dict, model: str = "softmax", panel: tuple[int, int] | None = None) -> list[dict]:
    """Per seed (in seed order): {(h, D_K): test F1} of one model on one panel (default: the first)."""
    m, d = panel or tuple(result["config"]["panels"][0])
    return [{(r["h"], r["D_K"]): r["f1"] for r in rr if r["model"] == model and r["m"] == m and r["d"] == d}
            for rr in by_seed(result["runs"]).values()]


def claims(result: dict) -> ClaimsTable:
    """Rows 1-7 judged over the seeds (each seed's own F1: `add_seeds`, `ClaimsTable.add_seed_outcomes`); row 8 at the paper's protocol."""
    cfg = result["config"]
    m, d = cfg["panels"][0]
    fs, fms = seed_f1(result, "softmax"), seed_f1(result, "max")
    f = fs[0]
    t = ClaimsTable(rtol=TRAINED_RTOL)
    top = max(D for _, D in f)
    if any(h == 1 for h, _ in f) and any(h > 1 and D == top for h, D in f):
        single = [max(v for (h, D), v in g.items() if h == 1) for g in fs]
        multi = [max(v for (h, D), v in g.items() if h > 1 and D == top) for g in fs]
        t.add_seeds("1", f"§7.1, Fig. 5: with softmax, a single head still fails in the compressed regime (per seed, the "
                         f"best F1 of h = 1 over D_K ∈ {sorted({D for _, D in f})}, m = {m}, d = {d})", paper="< 0.99",
                    values=single, threshold=0.8, above=False, tolerance="< 0.8", asserted=True, source="text")
        gaps = [v - g.get((1, top), s1) for v, g, s1 in zip(multi, fs, single)]
        t.add_seeds("2", f"a distinct multi-head advantage at the same budget: best h > 1 minus h = 1 at D_K = {top}, "
                         "per seed", paper="large", values=gaps, threshold=0.25, tolerance="≥ 0.25", asserted=True,
                    source="figure")
        # judged on the error 1 − F1: the trained precision is relative, and an F1 near 1 moves in its error
        t.add_seeds("3", f"multi-head softmax models approach perfect recovery: per seed, 1 − F1 of the best h > 1 at "
                         f"D_K = {top}", paper="≤ 0.01 (F1 ≥ 0.99)", values=[1 - v for v in multi], threshold=0.05,
                    above=False, tolerance="≤ 0.05 (F1 ≥ 0.95)", asserted=True, source="figure")
    shared = sorted(k for k in fms[0] if k in f and k[0] > 1)
    if shared:
        diffs = [[fm[k] - g[k] for k in shared] for g, fm in zip(fs, fms)]
        t.add_seeds("4", f"the threshold shifts right: F1 of the max-over-heads model minus the softmax model, per seed "
                         f"the mean over the {len(shared)} shared (h > 1, D_K) (same data, initial weights, steps)",
                    paper="> 0", values=[float(np.mean(x)) for x in diffs], threshold=0.03, tolerance="≥ 0.03",
                    asserted=True, source="text")
        # measured: a float32 reordering of the max model's score computation (same function to 1e-6) moved this
        # minimum from +0.025 to -0.040 at one seed: one (h, D_K) point moves by ~0.06, the row's precision
        t.add_seeds("5", "… and never the other way round: per seed, the smallest of those differences", paper="≥ 0",
                    values=[min(x) for x in diffs], threshold=-0.02, atol=0.06,
                    tolerance="≥ −0.02 beyond ±0.06 (one point moves by ~0.06 under float32 rounding)",
                    source="text")
        stars = [(dk_star(g), dk_star(fm)) for g, fm in zip(fs, fms)]
        text = "smallest D_K with F1 ≥ 0.99: softmax against max-over-heads (on this grid, per seed)"
        ours = "; ".join(f"{a or 'not reached'} vs {b or 'not reached'}" for a, b in stars)
        if any(b is None for _, b in stars):
            t.inconclusive("6", text, paper="softmax > max", ours=ours,
                           why="the max model does not pass on this grid in some seed", source="text")
        else:
            t.add_seed_outcomes("6", text, paper="softmax > max", ours=ours, holds=[a is None or a > b for a, b in stars],
                                tolerance="softmax larger or not reached", source="text")
    lo, hi = paper.FIG8_DKSTAR.get((m, d), (None, None))
    if lo is not None:
        soft = [dk_star(g) for g in fs]
        t.add_seed_outcomes("7", f"Fig. 8 gives D_K* = {lo}–{hi} for the max model at (m, d) = ({m}, {d}); the softmax model "
                     "needs more (its smallest passing D_K on our grid, per seed)", paper=f"> {hi}",
                            ours="/".join(str(v) if v is not None else f"not reached (≤ {top})" for v in soft),
                            holds=[v is None or v > hi for v in soft], tolerance=f"> {hi} or not reached", source="figure")
    t.not_run("8", "Fig. 5 itself: several (m, d) panels incl. (64, 32) where h = 1 suffices, 3 seeds, up to 80,000 "
                   "steps at lr 1e-3 with early stopping", paper="advantage in every panel but (64, 32)",
              command="attnlab run 000-capacity/fig5-softmax --scale full --headless")
    return t


EXPERIMENTS = (Experiment(
    id="000-capacity/fig5-softmax", label="Fig. 5 (§7.1)",
    title="The softmax variant: F1 against the total key dimension, per head count",
    params=PARAMS, presets=PRESETS, compute=compute,
    summary="With softmax, scaling and a sum over heads, one head still fails; multi-head models pass, later "
            "than the max-over-heads model."),)
