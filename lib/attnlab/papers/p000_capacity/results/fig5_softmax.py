"""Fig. 5 (§7.1): the scaled-softmax QK model, micro-F1 against the total key dimension D_K, one
line per head count. The model of Fig. 1 with per-head softmax over the context, scores / sqrt(d_k)
and a sum over heads; the max-over-heads model is trained beside it on the same data, initial
weights and step budget, to show the threshold's shift to the right. Replica-batched: one program
per (panel, model, seed), replicas = (h, D_K).
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError

from .. import paper, softmax_model, sweeps

PARAMS = (
    Param("panels", "int_rows", "panels (m, d_model), each a (number of items, embedding dimension)", width=2,
          min=2, max=4096),
    Param("heads", "int_list", "head counts h", min=1, max=256),
    Param("dks", "int_list", "total key dimensions D_K (a pair is trained where h divides D_K)", min=1, max=4096),
    Param("compare_heads", "int_list", "head counts at which the max-over-heads model is trained too (0: none)",
          min=0, max=256),
    Param("seeds", "int", "number of seeds (graph, embeddings, initialisation)", min=1, max=20),
    Param("steps", "int", "maximum training steps (one context per step)", min=1, max=500000),
    Param("lr", "float", "Adam learning rate (the paper: 1e-3)", min=1e-6, max=1.0),
    Param("n_test", "int", "test contexts", min=10, max=20000),
) + sweeps.RESUME_PARAMS
PRESETS = {
    "ci": {**sweeps.CI_RUN, "panels": [[64, 16]], "heads": [1, 4, 8], "dks": [16, 32, 64], "compare_heads": [4], "seeds": 1,
           "steps": 3000, "lr": 1e-2, "n_test": 1000},
    "full": {**sweeps.FULL_RUN, "panels": [[64, 16], [64, 32], [128, 32], [256, 32]], "heads": [1, 2, 4, 8, 16],
             "dks": [8, 16, 24, 32, 48, 64, 96, 128], "compare_heads": [1, 2, 4, 8, 16], "seeds": 3,
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
            for m, d in cfg["panels"] for s in range(cfg["seeds"])
            for model, specs in (("softmax", grid), ("max", compare)) for h, D in specs]

    def run(group, ks, bar, checkpoint=None):
        model, m, d, seed = group
        out = softmax_model.train_seed(m, d, [(k["h"], k["D_K"]) for k in ks], seed, steps=cfg["steps"],
                                       lr=cfg["lr"], ell=paper.CONTEXT_LENGTH, rho=paper.RHO, n_test=cfg["n_test"],
                                       device=str(ctx.device), progress=bar, kind=model, checkpoint=checkpoint)
        return [{**row, "model": model, "m": m, "d": d} for row in out]

    runs = ctx.units(keys, sweeps.grouped_programs(ctx, keys, cfg["steps"], run,
                                                   group=lambda k: (k["model"], k["m"], k["d"], k["seed"])))
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


def claims(result: dict) -> ClaimsTable:
    cfg = result["config"]
    m, d = cfg["panels"][0]
    f = mean_f1(result, "softmax")
    fmax = mean_f1(result, "max")
    t = ClaimsTable(rtol=TRAINED_RTOL)
    top = max(D for _, D in f)
    single = [v for (h, D), v in f.items() if h == 1]
    multi = max(v for (h, D), v in f.items() if h > 1 and D == top) if any(h > 1 for h, _ in f) else None
    if single and multi is not None:
        t.add("1", f"§7.1, Fig. 5: with softmax, a single head still fails in the compressed regime (best mean F1 of "
                   f"h = 1 over D_K ∈ {sorted({D for _, D in f})}, m = {m}, d = {d})", paper="< 0.99",
              ours=max(single), holds=max(single) < 0.8, tolerance="< 0.8", asserted=True, source="text")
        gap = multi - f.get((1, top), max(single))
        t.add("2", f"a distinct multi-head advantage at the same budget: best h > 1 minus h = 1 at D_K = {top}",
              paper="large", ours=gap, holds=gap >= 0.25, tolerance="≥ 0.25", asserted=True, source="figure")
        t.add("3", f"multi-head softmax models approach perfect recovery (best h > 1 at D_K = {top})", paper="≥ 0.99",
              ours=multi, holds=multi >= 0.95, tolerance="≥ 0.95", asserted=True, source="figure")
    shared = sorted(k for k in fmax if k in f and k[0] > 1)
    if shared:
        diffs = [fmax[k] - f[k] for k in shared]
        mean_diff = float(np.mean(diffs))
        t.add("4", f"the threshold shifts right: F1 of the max-over-heads model minus the softmax model, mean over "
                   f"the {len(shared)} shared (h > 1, D_K) (same data, initial weights, steps)", paper="> 0",
              ours=mean_diff, holds=mean_diff >= 0.03, tolerance="≥ 0.03", asserted=True, source="text")
        text5 = "… and never the other way round: the smallest of those differences"
        if cfg["seeds"] < 3:
            # measured: a float32 reordering of the max model's score computation (same function to 1e-6) moved
            # this minimum from +0.025 to -0.040 at one seed; single points are noisier than the tolerance
            t.inconclusive("5", text5, paper="≥ 0", ours=min(diffs), source="text",
                           why=f"{cfg['seeds']} seed(s): one (h, D_K) point moves by ~0.06 under float32 rounding "
                               "changes, more than the margin (≥ −0.02)")
        else:
            t.add("5", text5, paper="≥ 0", ours=min(diffs), holds=min(diffs) >= -0.02, tolerance="≥ −0.02",
                  asserted=False, source="text")
        s_soft, s_max = dk_star(f), dk_star(fmax)
        text = "smallest D_K with mean F1 ≥ 0.99: softmax against max-over-heads (on this grid)"
        if s_max is None:
            t.inconclusive("6", text, paper="softmax > max", ours=f"{s_soft or 'not reached'} vs not reached",
                           why="the max model does not pass on this grid either", source="text")
        else:
            t.add("6", text, paper="softmax > max", ours=f"{s_soft or 'not reached'} vs {s_max}",
                  holds=s_soft is None or s_soft > s_max,
                  tolerance="softmax larger or not reached", asserted=False, source="text")
    lo, hi = paper.FIG8_DKSTAR.get((m, d), (None, None))
    if lo is not None:
        s_soft = dk_star(f)
        t.add("7", f"Fig. 8 gives D_K* = {lo}–{hi} for the max model at (m, d) = ({m}, {d}); the softmax model "
                   "needs more (its smallest passing D_K on our grid)", paper=f"> {hi}",
              ours=s_soft if s_soft is not None else f"not reached (≤ {max(D for _, D in f)})", holds=s_soft is None or s_soft > hi, tolerance=f"> {hi} or not reached", asserted=False,
              source="figure")
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
