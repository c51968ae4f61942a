"""Fig. 7 (App. E.1): the induction-head task learned by two-layer Transformers at a fixed model
width d_model, against the number of heads (head dimension d_model / H). The paper's claim is
qualitative ("how the number of heads influences the ability of the model to capture the
Induction Head mechanism"; the title says "trade-off"). Its generator and target are unspecified;
ours are in `induction.py`. Every (heads, learning rate, seed) trains as one replica of one
tensor program. Each seed keeps its best learning rate (the paper's protocol: "the best model is
chosen by validation MSE"); seeds are never picked: the trade-off row is judged in every seed
(`ClaimsTable.add_seed_outcomes`) and "this run" shows the median and spread over seeds.

Whether a model learned the induction head is judged on the validation MSE the paper reports, between
two references measured on the same validation split: the constant 1/V prediction (`chance_mse`) and a
perfect induction head (`perfect_head_mse`: exact next tokens where a repeat makes them predictable, 1/V
elsewhere). Only (repeats - 1)(P - 1) of the L - 1 positions are predictable (4 of 127 at the paper's
L = 128), so the two are close (0.0900 and 0.0872): a model "learned" when it closes at least
LEARNED_FRACTION of that gap."""

from __future__ import annotations

import numpy as np

from attnlab.core.checkpoint import deadline_of, program_checkpoint, RESUME_PARAMS
from attnlab.core.claims import TRAINED_RTOL, ClaimsTable, seed_summary
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import BATCH, CHUNK, Param, ParameterError, SEED, SEEDS
from attnlab.core.progress import tqdm
from attnlab.papers.p003_allocation import induction as I

LEARNED_FRACTION = 0.5  # of the gap between the constant 1/V prediction and a perfect induction head

PARAMS = (
    Param("V", "int", "vocabulary size (the paper: 10 unique tokens)", min=2, max=1000),
    Param("L", "int", "sequence length (the paper: 128)", min=4, max=4096),
    Param("P", "int", "pattern length (the paper: 5)", min=2, max=512),
    Param("repeats", "int", "occurrences of the pattern per sequence (not stated; ours)", min=2, max=64),
    Param("n", "int", "sequences, split 80/20 train/validation (the paper: 10,000)", min=10, max=1_000_000),
    Param("d_model", "int", "model width (the paper: 256)", min=2, max=4096),
    Param("heads", "int_list", "head counts H, each dividing d_model (the paper: 1..32)", min=1, max=4096),
    Param("epochs", "int", "training epochs (the paper: 500)", min=1, max=100000),
    BATCH.described("sequences per step (not stated; ours)"),
    Param("lrs", "float_list", "AdamW learning rates (the paper: 1e-3, 5e-4, 1e-4); the best is kept", min=1e-6, max=1.0),
    Param("wd", "float", "AdamW weight decay (the paper: 1e-4)", min=0.0, max=1.0),
    Param("clip", "float", "per-model gradient-norm clip (the paper: 1.0; 0 = off)", min=0.0, max=100.0),
    SEEDS.described("number of seeds, trained as replicas (a count; the paper: 3); each keeps its best "
          "learning rate, and the rows are judged over the seeds (none is picked)"),
    SEED.described("the first seed: seeds seed, seed + 1, ... (moves every seed: initialisation, shuffling and "
          "the dataset; 0 in every preset)"),
    CHUNK.described("replicas per tensor program (memory)"),
) + RESUME_PARAMS
# a run stops only when told (`-p time_limit MINUTES`: at the limit, saving its program's state, or between
# programs; `-p checkpoint_every STEPS` saves more often); the same command resumes bit for bit
RUN = dict(checkpoint_every=0, time_limit=0.0)
PRESETS = {
    "ci": {"V": 10, "L": 32, "P": 5, "repeats": 2, "n": 500, "d_model": 32, "heads": [1, 4, 16], "epochs": 4,
           "batch": 32, "lrs": [1e-3], "wd": 1e-4, "clip": 1.0, "seeds": 3, "seed": 0, "chunk": 64,
           **RUN},
    "medium": {"V": 10, "L": 128, "P": 5, "repeats": 2, "n": 10000, "d_model": 256, "heads": [1, 2, 4, 8, 16, 32],
               "epochs": 100, "batch": 64, "lrs": [1e-3], "wd": 1e-4, "clip": 1.0, "seeds": 1, "seed": 0, "chunk": 6,
               **RUN},
    "full": {"V": 10, "L": 128, "P": 5, "repeats": 2, "n": 10000, "d_model": 256, "heads": [1, 2, 4, 8, 16, 32],
             "epochs": 500, "batch": 64, "lrs": [1e-3, 5e-4, 1e-4], "wd": 1e-4, "clip": 1.0, "seeds": 3, "seed": 0,
             "chunk": 18, **RUN},
}


def compute(ctx: Context) -> dict:
    """Trains one two-layer model per (H, lr, seed) (stored per replica, resumable) on the dataset of
    the first seed (`seed`; one dataset per run, as the paper's). Result: `runs` (H, lr, seed, final /
    best validation MSE, accuracies, curve), `seeds`, `best` (H -> per seed, the best validation MSE
    over learning rates), `ind_acc` (H -> per seed, the induction accuracy of that run), `task` facts."""
    cfg = ctx.config
    bad = [h for h in cfg["heads"] if cfg["d_model"] % h]
    if bad:
        raise ParameterError(f"parameter 'heads': value {cfg['heads']} is not allowed; every H must divide d_model = "
                             f"{cfg['d_model']} (not {bad})")
    try:
        task = I.InductionTask(V=cfg["V"], L=cfg["L"], P=cfg["P"], repeats=cfg["repeats"], n=cfg["n"])
    except ValueError as e:
        raise ParameterError(f"parameters 'L', 'P', 'repeats': {e}") from None
    if task.n_train < cfg["batch"]:
        raise ParameterError(f"parameter 'batch': value {cfg['batch']} is not allowed; at most the {task.n_train} "
                             "training sequences")
    seeds = list(range(cfg["seed"], cfg["seed"] + cfg["seeds"]))
    data_seed = cfg["seed"]
    combos = [(h, lr, s) for h in cfg["heads"] for lr in cfg["lrs"] for s in seeds]
    models = [I.IHConfig(cfg["V"], cfg["L"] - 1, cfg["d_model"], h, seed=s) for h, _, s in combos]
    keys = [I.unit_key(task, m, lr, cfg["wd"], cfg["epochs"], cfg["batch"], cfg["clip"], data_seed)
            for m, (_, lr, _) in zip(models, combos)]
    bar = (lambda it: tqdm(it, desc="epochs", leave=False)) if ctx.progress else None

    def fn(missing):
        for i0 in range(0, len(missing), cfg["chunk"]):
            part = missing[i0:i0 + cfg["chunk"]]
            checkpoint = program_checkpoint(ctx, [keys[i] for i in part])  # past the time limit: stop here
            for j, res, sec in I.train(task, [models[i] for i in part], [combos[i][1] for i in part], cfg["wd"],
                                       cfg["epochs"], cfg["batch"], cfg["clip"], device=ctx.device, progress=bar,
                                       data_seed=data_seed, checkpoint=checkpoint):
                yield part[j], res, sec
            if checkpoint is not None:  # the program's units are stored: its state is no longer needed
                checkpoint.remove()

    deadline_of(ctx)  # the run's time limit starts now
    out = ctx.units(keys, fn)
    runs = [{"H": h, "lr": lr, "seed": s, **o} for (h, lr, s), o in zip(combos, out)]
    best, ind = {}, {}
    for h in cfg["heads"]:
        picked = [min((r for r in runs if r["H"] == h and r["seed"] == s), key=lambda r: r["best_val_mse"])
                  for s in seeds]  # per seed, its best learning rate (the paper's protocol)
        best[str(h)], ind[str(h)] = [r["best_val_mse"] for r in picked], [r["ind_acc"] for r in picked]
    x, starts = I.generate(task, data_seed)
    ok = _check_task(task, x, starts)
    mask = I.induction_mask(task, starts)
    return {"config": cfg, "runs": runs, "seeds": seeds, "best": best, "ind_acc": ind, "chance_mse": I.chance_mse(cfg["V"]),
            "perfect_mse": I.perfect_head_mse(x[task.n_train:], mask[task.n_train:], cfg["V"]),
            "task_ok": ok, "n_val": task.n - task.n_train, "induction_positions": int(mask[task.n_train:].sum())}


def learned_cutoff(result: dict) -> float:
    """The validation MSE below which a model learned the induction head: LEARNED_FRACTION of the way
    from the constant 1/V prediction down to a perfect induction head (both on the validation split)."""
    chance, perfect = result["chance_mse"], result["perfect_mse"]
    return chance - LEARNED_FRACTION * (chance - perfect)


def _check_task(task: I.InductionTask, x, starts) -> bool:
    """Every occurrence of a sequence holds the same P tokens, and occurrences do not overlap."""
    import torch

    occ = torch.stack([x.gather(1, starts[:, j:j + 1] + torch.arange(task.P)) for j in range(task.repeats)], 1)
    same = bool((occ == occ[:, :1]).all())
    apart = bool((starts.diff(dim=1) >= task.P).all()) and bool((starts[:, -1] + task.P <= task.L).all())
    return same and apart


def claims(result: dict) -> ClaimsTable:
    cfg = result["config"]
    t = ClaimsTable(rtol=TRAINED_RTOL)
    n_ind = result["n_val"] * (cfg["repeats"] - 1) * (cfg["P"] - 1)
    t.consistency("1", "the task: every sequence repeats its pattern at the recorded places (no overlap); induction "
                  "positions in the validation split = n_val (repeats - 1)(P - 1)", expected=n_ind,
                  ours=result["induction_positions"] if result["task_ok"] else "broken",
                  holds=result["task_ok"] and result["induction_positions"] == n_ind, asserted=True)
    falls = all(r["val_mse"] < r["untrained_mse"] for r in result["runs"])
    worst = max(r["val_mse"] / r["untrained_mse"] for r in result["runs"])
    t.consistency("2", "training runs: every model's validation MSE falls below its untrained value (largest ratio)",
                  expected="< 1", ours=round(worst, 3), holds=falls, tolerance="final < untrained", asserted=True)
    H = cfg["heads"]
    best = np.array([result["best"][str(h)] for h in H])  # [H, seed]: per seed, its best learning rate
    acc = np.array([result["ind_acc"][str(h)] for h in H])
    n_seeds = best.shape[1]
    chance, perfect, cutoff = result["chance_mse"], result["perfect_mse"], learned_cutoff(result)
    learned = best.min(axis=0) < cutoff  # per seed
    argmin = [H[i] for i in best.argmin(axis=0)]
    ours = ", ".join(f"H={h}: {seed_summary(b)}" for h, b in zip(H, best))
    text = "Fig. 7: the number of heads changes how well the induction head is learned (a trade-off)"
    lr_note = f"each seed's best of {len(cfg['lrs'])} learning rates (the paper's protocol)" if len(cfg["lrs"]) > 1 else ""
    if learned.all() and len(H) >= 3:
        t.add_seed_outcomes("3", "Fig. 7: a trade-off over the number of heads (best validation MSE lowest at an "
                            "interior H" + (f"; {lr_note}" if lr_note else "") + ")", paper="trade-off",
                            ours=ours + "; argmin H per seed: " + ", ".join(map(str, argmin)),
                            holds=[0 < H.index(h) < len(H) - 1 for h in argmin],
                            tolerance=f"interior argmin (induction learned: best MSE < {cutoff:.4f})", source="figure")
    elif learned.all():
        t.inconclusive("3", text, paper="trade-off", ours=ours,
                       why=f"{len(H)} head counts: an interior optimum needs three or more", source="figure")
    elif learned.any():
        t.inconclusive("3", text, paper="trade-off", ours=ours,
                       why=f"the induction head is learned (best MSE < {cutoff:.4f}) in {int(learned.sum())} of "
                           f"{n_seeds} seeds only: the trade-off is judged only where every seed learned it",
                       source="figure")
    else:
        t.inconclusive("3", text, paper="trade-off", ours=ours,
                       why=f"no model closes {LEARNED_FRACTION:.0%} of the gap between the constant 1/V prediction "
                           f"(MSE {chance:.4f}) and a perfect induction head on the same data ({perfect:.4f}), i.e. "
                           f"reaches {cutoff:.4f}, in any of {n_seeds} seeds: no induction learned at "
                           f"{cfg['epochs']} epochs of {cfg['n']} sequences", source="figure")
    t.inconclusive("4", "induction accuracy (argmax next token inside a repeated pattern) against chance 1/V",
                   paper="–", ours=", ".join(f"H={h}: {seed_summary(a)}" for h, a in zip(H, acc)),
                   why=f"chance is {1 / cfg['V']:.2f}; the paper gives no accuracy", source="")
    t.not_run("5", "Fig. 7 at the paper's protocol: L = 128, d_model = 256, H = 1..32, 500 epochs of 8,000 sequences, "
              "3 seeds, each its best of 3 learning rates (judged in every seed)", paper="trade-off",
              command="attnlab run 003-allocation/fig7-induction-heads --scale full --headless", source="figure")
    return t


EXPERIMENTS = (Experiment(id="003-allocation/fig7-induction-heads", label="Fig. 7 (App. E.1)",
                          title="The induction-head task against the number of heads at a fixed width",
                          params=PARAMS, presets=PRESETS, compute=compute),)
