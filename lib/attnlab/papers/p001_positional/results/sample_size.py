"""Fig. 2 (§7.1) and Figs. 14-18 (App. D.1.3): training, in-distribution and OOD (c = 3) loss
against the number of training lists N, standard vs positional Transformer, n = 8.

One sweep per N (`arch_runs.run_archs`): both architectures train on the same N lists (values in
[−2, 2]), for a fixed number of steps at CI scale, for 2000 epochs at paper scale (so the paper's
larger sets also get more steps), and are tested in distribution (c = 1) and on [−6, 6] (c = 3).
"""

from __future__ import annotations

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError

from .. import paper
from ..arch_runs import curves as arch_curves, run_archs
from ..tasks import TASKS
from ..variant_runs import FULL, TRAIN_PARAMS, full_command, task_list

SLUG = "sample-size"
PARAMS = tuple(p for p in TRAIN_PARAMS if p.name != "samples") + (
    Param("sizes", "int_list", "training-set sizes N (the paper: 5,000 … 50,000)", min=8, max=200_000),
    Param("checkpoint_every", "int", "steps between checkpoints of a program (0 = none)", min=0, max=10_000_000),
    Param("time_limit", "float", "minutes after which a run stops at a checkpoint (0 = no limit; rerun resumes)",
          min=0.0, max=10_000.0),
)
PRESETS = {
    # tiny N so that the data, not the optimisation, limits the fit (in our calibration, with
    # N = 64 → 4,096 the ID loss fell 1.1-1.2× only); one task, one seed, the ood-scale chapter's
    # recipe (E = 32, 300 steps of 64, OneCycle peak 5e-3)
    "ci": dict(n=8, tasks="cumsum", seeds=1, sizes=[16, 128, 4096], steps=300, epochs=None, batch=64, lr=5e-3,
               scheduler="onecycle", embed=32, hidden=32, c_list=[1.0, 3.0], test_samples=500,
               checkpoint_every=0, time_limit=0.0),
    # the paper: N = 5,000 … 50,000 (step 5,000, the authors' code), 2000 epochs, five tasks, ten runs
    "full": {**{k: v for k, v in FULL.items() if k != "samples"}, "tasks": ",".join(TASKS),
             "sizes": list(paper.SAMPLE_SIZES), "c_list": [1.0, float(paper.OOD_SCALE_FIXED)],
             "checkpoint_every": 6000, "time_limit": 7.0},
}


def compute(ctx: Context) -> dict:
    """Trains both architectures per (N, task, seed) and tests them at c = 1 and c = 3; the result
    holds the config, tasks, sizes, and per N (in `runs`, the order of `sizes`) per architecture and
    task the final training MSE [seed] and test MSE [seed][c]."""
    cfg = ctx.config
    tasks = task_list(cfg)
    if 1.0 not in cfg["c_list"] or len(cfg["c_list"]) != 2:
        raise ParameterError(f"parameter 'c_list': value {cfg['c_list']} is not allowed; give [1, c] "
                             "(in distribution and one OOD scale; the paper: [1, 3])")
    if sorted(set(cfg["sizes"])) != list(cfg["sizes"]):
        raise ParameterError(f"parameter 'sizes': value {cfg['sizes']} is not allowed; give increasing sizes")
    runs = [run_archs(ctx, tasks, cfg["n"], N, desc=f"N = {N}") for N in cfg["sizes"]]
    return {"config": cfg, "tasks": tasks, "sizes": list(cfg["sizes"]), "runs": runs}


def curves(result: dict, arch: str, task: str) -> dict:
    """{"train", "id", "ood"}: median and 10-90 % band per N (Figs. 14-18's three panels)."""
    return arch_curves(result["runs"], result["config"]["c_list"], arch, task)


def claims(result: dict) -> ClaimsTable:
    """Fig. 2 / App. D.1.3: the ID loss falls with N (row 18: soft, not asserted: at CI scale the data limit
    is weak), the OOD ordering of App. D.1.3 at every N (asserted), and row 22 at paper scale (not run)."""
    t = ClaimsTable(rtol=TRAINED_RTOL)
    sizes, tasks = result["sizes"], result["tasks"]
    lo, hi = sizes[0], sizes[-1]
    for task in tasks:
        cv = {a: curves(result, a, task) for a in ("standard", "positional")}
        for arch in ("positional", "standard"):
            idm = cv[arch]["id"]["median"]
            drop = idm[0] / idm[-1]
            pid = paper.FIG14_18_MEDIANS[task][arch]
            text = (f"Fig. 2, {task}, {arch}: ID loss falls with N (N = {lo} → {hi}: factor; paper: 5,000 → 50,000; "
                    f"medians {' → '.join(f'{v:.3g}' for v in idm)})")
            if drop >= 1.5:
                t.add("18", text, paper=pid[5000][0] / pid[50000][0], ours=drop, holds=True,
                      tolerance="≥ 1.5 (soft, our CI-scale threshold)", asserted=False, source="figure")
            else:
                t.inconclusive("18", text, paper=pid[5000][0] / pid[50000][0], ours=drop, source="figure",
                               why="< 1.5: at CI scale training is optimisation-limited, not data-limited")
            tr = cv[arch]["train"]["median"]
            gap_lo, gap_hi = idm[0] / tr[0], idm[-1] / tr[-1]
            t.add("18g", f"{task}, {arch}: the gap ID test / train MSE shrinks with N (N = {lo}: {gap_lo:.3g}; "
                  f"N = {hi})", paper="shrinks", ours=gap_hi, holds=gap_hi < gap_lo,
                  tolerance=f"< {gap_lo:.3g} (soft)", asserted=False, source="text")
        ood_s, ood_p = cv["standard"]["ood"]["median"], cv["positional"]["ood"]["median"]
        least = min(s / p for s, p in zip(ood_s, ood_p))
        pr = min(paper.FIG14_18_MEDIANS[task]["standard"][N][1] / paper.FIG14_18_MEDIANS[task]["positional"][N][1]
                 for N in (5000, 50000))
        c_ood = max(result["config"]["c_list"])
        asserted = task in ("cumsum", "cummin", "maxsub")
        t.add("D.1.3", f"Figs. 14-18, {task}: only the positional model generalises OOD (c = {c_ood:g}): standard / "
              "positional median MSE, least over N", paper=pr, ours=least, holds=least >= 2,
              tolerance="≥ 2 at every N", asserted=asserted, source="figure")
    cmd = full_command(SLUG)
    t.not_run("22", "paper scale: ID MSE falls ≥ 1 decade from 5,000 to 50,000 lists, both architectures, every "
              "task but standard sort", paper="≥ 10×", command=cmd, source="figure")
    t.not_run("22b", "paper scale: positional OOD (c = 3) MSE falls ≥ 1 decade from 5,000 to 50,000; standard stays "
              "≥ 0.3 at every N", paper="≥ 10×; ≥ 0.3", command=cmd, source="figure")
    return t


def paper_scale_claims(full: dict) -> ClaimsTable:
    """Claim 22 measured on a stored paper-scale run."""
    t = ClaimsTable(rtol=TRAINED_RTOL)
    for task in full["tasks"]:
        for arch in ("positional", "standard"):
            cv = curves(full, arch, task)
            drop = cv["id"]["median"][0] / cv["id"]["median"][-1]
            need = 1 if (arch, task) == ("standard", "sort") else 10
            pid = paper.FIG14_18_MEDIANS[task][arch]
            t.add("22", f"paper scale, {task}, {arch}: ID MSE, 5,000 → 50,000 lists (factor)",
                  paper=pid[5000][0] / pid[50000][0], ours=drop, holds=drop >= need, tolerance=f"≥ {need}×",
                  source="figure")
        s, p = curves(full, "standard", task)["ood"]["median"], curves(full, "positional", task)["ood"]["median"]
        t.add("22b", f"paper scale, {task}: positional OOD (c = 3), 5,000 → 50,000 (factor); standard least",
              paper="≥ 10×; ≥ 0.3", ours=f"{p[0] / p[-1]:.3g}×; {min(s):.3g}",
              holds=p[0] / p[-1] >= 10 and min(s) >= 0.3, tolerance="≥ 10×; ≥ 0.3", source="figure")
    return t


EXPERIMENTS = (Experiment(id=f"001-positional/{SLUG}", label="Fig. 2 (§7.1), Figs. 14–18 (App. D.1.3)",
                          title="Sample size against generalization",
                          params=PARAMS, presets=PRESETS, compute=compute,
                          summary="Both architectures fit better with more training lists; only the positional "
                                  "one also generalises out of distribution."),)
