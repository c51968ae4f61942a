"""Fig. 2 (§6.1): the 4-gram task y_t = x_{t-1} + ... + x_{t-4} learned by a one-layer Transformer
encoder at a fixed model dimension D, against the number of heads H (head dimension D/H). The
paper reports the best MSE over learning rates and seeds, with the optimum at 32 heads of
dimension 8 (D = 256), as Corollary 4.1 predicts. All head counts, learning rates and seeds
train as replicas of one tensor program."""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError
from attnlab.papers.p003_allocation import bounds, paper, sweeps, tasks
from attnlab.papers.p003_allocation.models import EncoderConfig

PARAMS = (
    Param("d", "int", "token dimension d (assumed 8, the §4 example)", min=1, max=256),
    Param("D", "int", "model dimension D (the paper: 256)", min=2, max=2048),
    Param("L", "int", "sequence length (not stated; ours)", min=5, max=4096),
    Param("heads", "int_list", "head counts H (each must divide D)", min=1, max=2048),
    Param("lrs", "float_list", "Adam learning rates (cosine schedule); the best is kept", min=1e-6, max=1.0),
    Param("seeds", "int", "number of seeds (a count); the best is kept", min=1, max=20),
    Param("steps", "int", "training steps", min=1, max=200000),
    Param("batch", "int", "sequences per step", min=1, max=4096),
    Param("ffn_mult", "int", "FFN width as a multiple of D (torch's default layer: 4)", min=0, max=8),
    Param("noise", "float", "standard deviation of the target noise (not stated; ours)", min=0.0, max=10.0),
    Param("n_eval", "int", "fresh evaluation sequences", min=16, max=65536),
    Param("chunk", "int", "replicas per tensor program (memory)", min=1, max=10000),
)
PRESETS = {
    "ci": {"d": 8, "D": 64, "L": 16, "heads": [1, 2, 4, 8, 16, 32], "lrs": [1e-2], "seeds": 1, "steps": 250,
           "batch": 32, "ffn_mult": 1, "noise": 0.01, "n_eval": 1024, "chunk": 64},
    "medium": {"d": 8, "D": 256, "L": 64, "heads": [1, 2, 4, 8, 16, 32, 64, 128, 256], "lrs": [1e-3, 3e-3],
               "seeds": 1, "steps": 3000, "batch": 64, "ffn_mult": 4, "noise": 0.01, "n_eval": 1024, "chunk": 18},
    "full": {"d": 8, "D": 256, "L": 64, "heads": [1, 2, 4, 8, 16, 32, 64, 128, 256], "lrs": [3e-4, 1e-3, 3e-3],
             "seeds": 3, "steps": 10000, "batch": 64, "ffn_mult": 4, "noise": 0.01, "n_eval": 1024, "chunk": 27},
}


def compute(ctx: Context) -> dict:
    """Trains one encoder per (H, lr, seed) (stored per replica, resumable). Result: `runs`
    (H, lr, seed, eval MSE, loss curve), `best` (H -> best eval MSE over lr x seed), `bound`
    (H -> the Theorem 4.1 bound of a standard H-head layer), `zero_mse` (the zero model's MSE)."""
    cfg = ctx.config
    bad = [h for h in cfg["heads"] if cfg["D"] % h]
    if bad:
        raise ParameterError(f"parameter 'heads': value {cfg['heads']} is not allowed; every H must divide D = {cfg['D']} "
                             f"(not {bad})")
    task = tasks.ConvTask(d=cfg["d"], L=cfg["L"], rho=tasks.NGRAM4, noise=cfg["noise"])
    combos = [(h, lr, s) for h in cfg["heads"] for lr in cfg["lrs"] for s in range(cfg["seeds"])]
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


def shape(result: dict) -> dict:
    """argmin over H of the best MSE, and the ratios of the two ends to the minimum."""
    H = result["config"]["heads"]
    v = np.array([result["best"][str(h)] for h in H])
    i = int(np.argmin(v))
    return {"argmin": H[i], "interior": 0 < i < len(H) - 1, "left": float(v[0] / v[i]), "right": float(v[-1] / v[i]),
            "min": float(v[i])}


def claims(result: dict) -> ClaimsTable:
    cfg = result["config"]
    s = shape(result)
    t = ClaimsTable(rtol=TRAINED_RTOL)
    t.add("1", "Fig. 2: a trade-off: the best MSE is lowest at an interior H, both ends >= 2x the minimum",
          paper="U-shape", ours=f"argmin H = {s['argmin']}; ends {s['left']:.1f}x, {s['right']:.1f}x",
          holds=s["interior"] and s["left"] >= 2 and s["right"] >= 2, tolerance="interior argmin, ends >= 2x",
          asserted=True, source="text")
    predicted = cfg["D"] // cfg["d"]
    if cfg["D"] == paper.FIG2["D"] and cfg["d"] == 8 and len(cfg["lrs"]) * cfg["seeds"] > 1:
        t.add("2", "the optimum is 32 heads of dimension 8 (M = 4, d_m = H_m = 8), as Corollary 4.1 predicts",
              paper=paper.FIG2["claimed_heads"], ours=s["argmin"], holds=s["argmin"] == paper.FIG2["claimed_heads"],
              tolerance="same H", source="text")
    else:
        t.inconclusive("2", f"the optimum is at head dimension d (H = D/d = {predicted} here; 32 at the paper's D = 256)",
                       paper=predicted, ours=s["argmin"],
                       why=f"{len(cfg['lrs'])} lr x {cfg['seeds']} seed at D = {cfg['D']}, {cfg['steps']} steps; "
                           "neighbouring H are within 2x", source="text")
        t.not_run("3", "Fig. 2 at D = 256: optimum at 32 heads of dimension 8", paper=paper.FIG2["claimed_heads"],
                  command="attnlab run 003-allocation/fig2-ngram-heads --scale full --headless", source="text")
    t.consistency("4", "every trained model beats the zero model (MSE = Var y = 4)", expected=f"< {result['zero_mse']:.2f}",
                  ours=round(max(result["best"].values()), 3), holds=max(result["best"].values()) < result["zero_mse"])
    return t


EXPERIMENTS = (Experiment(id="003-allocation/fig2-ngram-heads", label="Fig. 2 (§6.1)",
                          title="The 4-gram task against the number of heads at a fixed model dimension",
                          params=PARAMS, presets=PRESETS, compute=compute),)
