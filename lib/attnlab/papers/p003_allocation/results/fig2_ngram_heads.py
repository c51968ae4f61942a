"""Fig. 2 (§6.1): the 4-gram task y_t = x_{t-1} + ... + x_{t-4} learned by a one-layer Transformer
encoder at a fixed model dimension D, against the number of heads H (head dimension D/H). The
paper reports the best MSE over learning rates and seeds, with the optimum at 32 heads of
dimension 8 (D = 256), as Corollary 4.1 predicts. All head counts, learning rates and seeds
train as replicas of one tensor program; each seed draws its own training stream (and its own
initialisation), the evaluation sequences are shared.

Every trained row is judged over the seeds (the seed rule, `ClaimsTable.add_seeds`): within a seed
the best MSE over the learning rates is kept (the paper's protocol selects the learning rate), and
no seed is singled out: the paper's "best over learning rates and seeds" would pick one, so the
rows show the spread over the seeds instead."""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import BATCH, CHUNK, Param, ParameterError, SEED, SEEDS, STEPS
from attnlab.papers.p003_allocation import bounds, paper, sweeps, tasks
from attnlab.papers.p003_allocation.models import EncoderConfig

PARAMS = (
    Param("d", "int", "token dimension d (assumed 8, the §4 example)", min=1, max=256),
    Param("D", "int", "model dimension D (the paper: 256)", min=2, max=2048),
    Param("L", "int", "sequence length (not stated; ours)", min=5, max=4096),
    Param("heads", "int_list", "head counts H (each must divide D)", min=1, max=2048),
    Param("lrs", "float_list", "Adam learning rates (cosine schedule); the best is kept", min=1e-6, max=1.0),
    SEEDS.described("number of seeds (a count); every row is judged over them"),
    SEED.described("the first seed: seeds seed, seed + 1, ... (moves every seed; 0 in every preset)"),
    STEPS.described("training steps"),
    BATCH.described("sequences per step"),
    Param("ffn_mult", "int", "FFN width as a multiple of D (torch's default layer: 4)", min=0, max=8),
    Param("noise", "float", "standard deviation of the target noise (not stated; ours)", min=0.0, max=10.0),
    Param("n_eval", "int", "fresh evaluation sequences", min=16, max=65536),
    CHUNK.described("replicas per tensor program (memory)"),
)
PRESETS = {
    # three seeds in the former one-seed budget: 5 head counts (H = 16 dropped), batch 16 (was 32), 512
    # evaluation sequences (was 1024); on one thread the program's cost grows with its replicas
    # (measured: 6 x 3 replicas at batch 32 cost 2x the one-seed preset); at 180 steps the ends fall to
    # 1.8-2.2x the minimum, at 250 every seed kept them at 2.7x
    "ci": {"d": 8, "D": 64, "L": 16, "heads": [1, 2, 4, 8, 32], "lrs": [1e-2], "seeds": 3, "seed": 0, "steps": 250,
           "batch": 16, "ffn_mult": 1, "noise": 0.01, "n_eval": 512, "chunk": 64},
    "medium": {"d": 8, "D": 256, "L": 64, "heads": [1, 2, 4, 8, 16, 32, 64, 128, 256], "lrs": [1e-3, 3e-3],
               "seeds": 1, "seed": 0, "steps": 3000, "batch": 64, "ffn_mult": 4, "noise": 0.01, "n_eval": 1024, "chunk": 18},
    "full": {"d": 8, "D": 256, "L": 64, "heads": [1, 2, 4, 8, 16, 32, 64, 128, 256], "lrs": [3e-4, 1e-3, 3e-3],
             "seeds": 3, "seed": 0, "steps": 10000, "batch": 64, "ffn_mult": 4, "noise": 0.01, "n_eval": 1024, "chunk": 27},
}


def compute(ctx: Context) -> dict:
    """Trains one encoder per (H, lr, seed) (stored per replica, resumable). Result: `runs`
    (H, lr, seed, eval MSE, loss curve), `best` (H -> best eval MSE over lr x seed: the paper's
    protocol, shown only beside the per-seed values of `per_seed`), `bound`
    (H -> the Theorem 4.1 bound of a standard H-head layer), `zero_mse` (the zero model's MSE)."""
    cfg = ctx.config
    bad = [h for h in cfg["heads"] if cfg["D"] % h]
    if bad:
        raise ParameterError(f"parameter 'heads': value {cfg['heads']} is not allowed; every H must divide D = {cfg['D']} "
                             f"(not {bad})")
    task = tasks.ConvTask(d=cfg["d"], L=cfg["L"], rho=tasks.NGRAM4, noise=cfg["noise"])
    combos = [(h, lr, s) for h in cfg["heads"] for lr in cfg["lrs"] for s in seed_list(cfg)]
    models = [EncoderConfig(cfg["d"], cfg["D"], h, cfg["ffn_mult"] * cfg["D"], s) for h, _, s in combos]
    keys = [sweeps.unit_key(task, m, lr, cfg["steps"], cfg["batch"], cfg["n_eval"]) for m, (_, lr, _) in zip(models, combos)]

    def fn(missing):
        for i0 in range(0, len(missing), cfg["chunk"]):
            part = missing[i0:i0 + cfg["chunk"]]
            for j, res, sec in sweeps.train(task, [models[i] for i in part], [combos[i][1] for i in part], cfg["steps"],
                                            cfg["batch"], cfg["n_eval"], device=ctx.device, progress=ctx.progress):
                yield part[j], res, sec

    out = ctx.units(keys, fn)
    runs = [{"H": h, "lr": lr, "seed": s, "eval_mse": o["eval_mse"], "curve": o["curve"]} for (h, lr, s), o in zip(combos, out)]
    best = {str(h): min(r["eval_mse"] for r in runs if r["H"] == h) for h in cfg["heads"]}
    rho = [1.0] * paper.NGRAM_LAGS
    bound = {str(h): bounds.uniform_head_bound(h, cfg["D"], cfg["d"], rho) for h in cfg["heads"]}
    return {"config": cfg, "runs": runs, "best": best, "bound": bound,
            "zero_mse": task.target_variance + cfg["noise"] ** 2}


def seed_list(cfg: dict) -> list[int]:
    """The seeds of a config: seed, seed + 1, ..., seed + seeds - 1."""
    return list(range(cfg["seed"], cfg["seed"] + cfg["seeds"]))


def per_seed(result: dict) -> dict[int, np.ndarray]:
    """seed -> the best evaluation MSE over the learning rates, per H (in the config's order)."""
    H = result["config"]["heads"]
    seeds = sorted({r["seed"] for r in result["runs"]})
    return {s: np.array([min(r["eval_mse"] for r in result["runs"] if r["H"] == h and r["seed"] == s) for h in H])
            for s in seeds}


def _shape(H: list[int], v: np.ndarray) -> dict:
    i = int(np.argmin(v))
    return {"argmin": H[i], "interior": 0 < i < len(H) - 1, "left": float(v[0] / v[i]), "right": float(v[-1] / v[i]),
            "min": float(v[i]), "u": float(min(v[0], v[-1]) / v[1:-1].min()) if len(v) > 2 else float("nan")}


def shape(result: dict) -> dict:
    """The U-shape per seed (seed -> argmin over H of the best MSE over learning rates, the ratios of
    the two ends to the minimum, and `u`: the better end over the best interior H, >= 2 for an
    interior argmin with both ends >= 2x the minimum), and `median`: the same for the median curve
    over seeds."""
    H = result["config"]["heads"]
    ps = per_seed(result)
    return {"seeds": {s: _shape(H, v) for s, v in ps.items()},
            "median": _shape(H, np.median(np.stack(list(ps.values())), axis=0))}


def claims(result: dict) -> ClaimsTable:
    cfg = result["config"]
    sh = shape(result)
    per = sh["seeds"]
    t = ClaimsTable(rtol=TRAINED_RTOL)
    H = cfg["heads"]
    lr_note = "the best of the learning rates, " if len(cfg["lrs"]) > 1 else ""
    text1 = (f"Fig. 2: a trade-off: the MSE ({lr_note}per seed) is lowest at an interior H, both ends >= 2x the "
             f"minimum (the better end, H = {H[0]} or {H[-1]}, over the best interior H)")
    if len(H) >= 3:
        t.add_seeds("1", text1, paper="U-shape", values=[v["u"] for v in per.values()], threshold=2,
                    tolerance="≥ 2x (interior argmin, ends ≥ 2x)", asserted=True, source="text")
    else:
        t.inconclusive("1", text1, paper="U-shape", ours=f"{len(H)} head counts", source="text",
                       why="an interior optimum needs three or more head counts")
    argmins = [v["argmin"] for v in per.values()]
    ours = "argmin H per seed: " + ", ".join(map(str, argmins))
    predicted = cfg["D"] // cfg["d"]
    if cfg["D"] == paper.FIG2["D"] and cfg["d"] == 8 and len(cfg["lrs"]) * cfg["seeds"] > 1:
        claimed = paper.FIG2["claimed_heads"]
        hits = sum(a == claimed for a in argmins)
        text = ("the optimum (per seed, the best of the learning rates) is 32 heads of dimension 8 (M = 4, "
                "d_m = H_m = 8), as Corollary 4.1 predicts; the paper takes the best over learning rates and seeds")
        if 0 < hits < len(argmins):
            t.inconclusive("2", text, paper=claimed, ours=ours, source="text", rtol=1.0,
                           why=f"same H in every seed: {hits} of {len(argmins)} seeds (no seed is picked)")
        else:
            t.add("2", text, paper=claimed, ours=ours, holds=hits == len(argmins), tolerance="same H in every seed",
                  source="text")
    else:
        t.inconclusive("2", f"the optimum is at head dimension d (H = D/d = {predicted} here; 32 at the paper's D = 256)",
                       paper=predicted, ours=ours,
                       why=f"{len(cfg['lrs'])} lr x {cfg['seeds']} seeds at D = {cfg['D']}, {cfg['steps']} steps; "
                           "neighbouring H are within 2x and the argmin moves with the seed", source="text",
                       rtol=1.0)  # an argmin of near-equal MSEs: another CPU's rounding can move it to a neighbour
        t.not_run("3", "Fig. 2 at D = 256: optimum at 32 heads of dimension 8", paper=paper.FIG2["claimed_heads"],
                  command="attnlab run 003-allocation/fig2-ngram-heads --scale full --headless", source="text")
    worst = max(r["eval_mse"] for r in result["runs"])
    t.consistency("4", "every trained model (every H, lr, seed) beats the zero model (MSE = Var y = 4)",
                  expected=f"< {result['zero_mse']:.2f}", ours=round(worst, 3), holds=worst < result["zero_mse"])
    return t


EXPERIMENTS = (Experiment(id="003-allocation/fig2-ngram-heads", label="Fig. 2 (§6.1)",
                          title="The 4-gram task against the number of heads at a fixed model dimension",
                          params=PARAMS, presets=PRESETS, compute=compute),)
