"""Fig. 6 (§7.2): the value channel. Test MSE of message retrieval against the total key dimension
D_K, one line per head count, m = 64 with d_model = 16 (compressed) and 32. The QK path of the core
model (max over heads, raw scores) mixes frozen random messages y_i = x_i W_V; the target is the
message of the permutation neighbour. Replica-batched: every (d, h, D_K, seed) in one program (each seed
its own graph, embeddings, W_V and initialisation). Every trained row is judged over the seeds with
the seed rule (`ClaimsTable.add_seeds`); `seed` moves every seed.
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable, seed_summary
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import LR, N_TEST, Param, ParameterError, SEEDS, STEPS

from .. import paper, sweeps, value_model
from ..seeds import SEED_PARAM, by_seed, seed_range

PARAMS = (
    Param("m", "int", "number of items (the paper: 64)", min=17, max=4096),
    Param("d_models", "int_list", "embedding dimensions, one panel each (the paper: 16 and 32)", min=2, max=1024),
    Param("heads", "int_list", "head counts h", min=1, max=256),
    Param("dks", "int_list", "total key dimensions D_K (a pair is trained where h divides D_K)", min=1, max=4096),
    Param("d_msg", "int", "message dimension (not given in the paper)", min=1, max=1024),
    SEEDS.described("number of seeds (graph, embeddings, W_V, initialisation)"),
    SEED_PARAM,
    STEPS.described("maximum training steps (one context per step)"),
    LR.described("Adam learning rate (the paper: 1e-3)"),
    N_TEST.described("test contexts"),
) + sweeps.RESUME_PARAMS
PRESETS = {
    # three seeds as replicas of one program cost 3x one seed (compute-bound): D_K in {16, 64} (32 dropped) and
    # 1250 steps at lr 5e-3 (instead of 2500 at 3e-3) keep the former CPU time
    "ci": {**sweeps.CI_RUN, "m": 64, "d_models": [16, 32], "heads": [1, 4, 16], "dks": [16, 64], "d_msg": 16, "seeds": 3,
           "seed": 0, "steps": 1250, "lr": 5e-3, "n_test": 1000},
    "full": {**sweeps.FULL_RUN, "m": 64, "d_models": [16, 32], "heads": [1, 2, 4, 8, 16], "dks": [16, 32, 48, 64, 96, 128], "d_msg": 16,
             "seeds": 3, "seed": 0, "steps": 20000, "lr": 1e-3, "n_test": 2000},
}


def compute(ctx: Context) -> dict:
    """Trains one replica per (d, h, D_K, seed) on the MSE of Eq. (4) (ell = 16, rho = 0.5, one
    context per step, validation MSE every 500 steps, a replica frozen after 5 checks without
    improvement); the result holds `runs` (per replica: d, h, D_K, seed, test MSE — the zero
    predictor scores about 1 —, steps trained, whether it stopped early)."""
    cfg = ctx.config
    if max(cfg["d_models"]) > cfg["m"]:
        raise ParameterError(f"parameter 'd_models': {cfg['d_models']} is not allowed; every d_model must be <= m = "
                             f"{cfg['m']}")
    grid = [(h, D) for h in sorted(cfg["heads"]) for D in sorted(cfg["dks"]) if D % h == 0]
    if not grid:
        raise ParameterError(f"parameters 'heads' {cfg['heads']} / 'dks' {cfg['dks']}: no head count divides a D_K")
    keys = [{"what": "run", "m": cfg["m"], "d": d, "h": h, "D_K": D, "seed": s, "d_msg": cfg["d_msg"],
             "steps": cfg["steps"], "lr": cfg["lr"], "n_test": cfg["n_test"]}
            for s in seed_range(cfg) for d in sorted(cfg["d_models"]) for h, D in grid]

    def run(seed, ks, bar, checkpoint=None):
        return value_model.train_runs(ks, steps=cfg["steps"], lr=cfg["lr"], d_msg=cfg["d_msg"],
                                      ell=paper.CONTEXT_LENGTH, rho=paper.RHO, n_test=cfg["n_test"],
                                      device=str(ctx.device), progress=bar, checkpoint=checkpoint)

    runs = ctx.units(keys, sweeps.grouped_programs(ctx, keys, cfg["steps"], run, group=lambda k: 0))
    return {"config": cfg, "runs": runs}


def mean_mse(result: dict, d: int) -> dict[tuple[int, int], float]:
    """{(h, D_K): mean test MSE over seeds} of the panel d."""
    acc: dict[tuple[int, int], list[float]] = {}
    for r in result["runs"]:
        if r["d"] == d:
            acc.setdefault((r["h"], r["D_K"]), []).append(r["mse"])
    return {k: float(np.mean(v)) for k, v in acc.items()}


def seed_mse(result: dict, d: int) -> list[dict[tuple[int, int], float]]:
    """Per seed (in seed order): {(h, D_K): test MSE} of the panel d."""
    return [{(r["h"], r["D_K"]): r["mse"] for r in rr if r["d"] == d} for rr in by_seed(result["runs"]).values()]


def claims(result: dict) -> ClaimsTable:
    """Rows 1-5 judged over the seeds (each seed's own value, `add_seeds`); row 6 at the paper's protocol."""
    cfg = result["config"]
    t = ClaimsTable(rtol=TRAINED_RTOL)
    ds = sorted(cfg["d_models"])
    lo_d, hi_d = ds[0], ds[-1]
    lo, hi = seed_mse(result, lo_d), seed_mse(result, hi_d)
    top = max(D for _, D in lo[0])
    has_one = any(h == 1 for h, _ in lo[0])
    has_multi = any(h >= 4 and D == top for h, D in lo[0])
    gaps_lo = []
    if has_one and has_multi:
        one_min = [min(v for (h, D), v in f.items() if h == 1) for f in lo]
        t.add_seeds("1", f"§7.2, Fig. 6 (d = {lo_d}): the single head fails to reduce the MSE, plateauing high (per "
                         f"seed, its lowest test MSE over D_K ∈ {sorted({D for h, D in lo[0] if h == 1})}; zero "
                         "predictor ≈ 1)", paper="high plateau", values=one_min, threshold=0.5, tolerance="≥ 0.5",
                    asserted=True, source="text")
        best = [min(v for (h, D), v in f.items() if h >= 4 and D == top) for f in lo]
        if (1, top) in lo[0]:
            ratio = [b / f[(1, top)] for b, f in zip(best, lo)]
            t.add_seeds("2", f"… while h ≥ 4 drive the MSE down: best h ≥ 4 over h = 1 at D_K = {top}, per seed",
                        paper="much lower", values=ratio, threshold=0.7, above=False, tolerance="≤ 0.7",
                        asserted=True, source="text")
            gaps_lo = [f[(1, top)] - b for b, f in zip(best, lo)]
    if hi_d != lo_d:
        top_g = max(D for _, D in hi[0])
        hs = sorted(h for h, D in hi[0] if D == top_g)
        if 1 in hs and len(hs) > 1:
            # per seed: the best multi-head MSE over the single head's, at the largest D_K (< 1: a multi-head model wins)
            win = [min(f[(h, top_g)] for h in hs if h > 1) / f[(1, top_g)] for f in hi]
            best_h = [min((h for h in hs), key=lambda h: f[(h, top_g)]) for f in hi]
            t.add_seeds("3", f"d = {hi_d}: multi-head models still attain the lowest final MSE (per seed, the best "
                             f"h > 1 over h = 1 at D_K = {top_g}; the best h by seed: "
                             + ", ".join(map(str, best_h)) + ")", paper="h ∈ {4, 8}", values=win, threshold=1,
                        above=False, tolerance="< 1 (a multi-head model wins)", asserted=True, source="text")
            if gaps_lo:
                gaps_hi = [f[(1, top_g)] - min(f[(h, top_g)] for h in hs) for f in hi]
                t.add_seeds("4", f"the gap narrows with less compression: per seed, MSE(h = 1) − best MSE at the "
                                 f"largest D_K, d = {hi_d} minus the same at d = {lo_d} ({seed_summary(gaps_lo)})",
                            paper="narrower", values=[a - b for a, b in zip(gaps_hi, gaps_lo)], threshold=0,
                            above=False, tolerance="< 0", asserted=False, source="text")
        low = min(D for _, D in hi[0])
        h_max = max(h for h, D in hi[0] if D == low)
        if (1, low) in hi[0] and h_max > 1:
            diff = [f[(1, low)] - f[(h_max, low)] for f in hi]
            # a difference of under 2 % of the zero predictor's MSE: 'beats' and 'on par' look the same
            t.add_seeds("5", f"d = {hi_d}, low D_K = {low}: a single head beats the most fragmented h = {h_max} (d_k = "
                             f"{low // h_max}); per seed, MSE(h = 1) − MSE(h = {h_max})", paper="< 0", values=diff,
                        threshold=0, above=False, atol=0.02,
                        tolerance="< 0 beyond ±0.02 (2 % of the zero predictor's MSE)", source="text")
    t.not_run("6", "Fig. 6 itself: h ≤ 16, a finer D_K sweep, 3 seeds, lr 1e-3 with early stopping on validation MSE",
              paper="as above, with 95% CIs", command="attnlab run 000-capacity/fig6-value-channel --scale full --headless")
    return t


EXPERIMENTS = (Experiment(
    id="000-capacity/fig6-value-channel", label="Fig. 6 (§7.2)",
    title="The value channel: test MSE of message retrieval against the total key dimension",
    params=PARAMS, presets=PRESETS, compute=compute,
    summary="Retrieving a neighbour's message through raw max-over-heads scores: one head plateaus at d = 16, "
            "several heads drive the MSE down."),)
