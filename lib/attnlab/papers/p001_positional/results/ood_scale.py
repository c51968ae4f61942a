"""Fig. 4 (§7.2): in-distribution and OOD test loss against the scale factor c, standard vs
positional Transformer, five tasks: the paper's headline.

Both architectures are trained on lists with values in [−2, 2] (§7) and tested on lists drawn from
[−2c, 2c] with App. E's rejection step (c = 1: in distribution). Each architecture trains as one
replica-batched tensor program holding every task and seed (`sweeps.sweep`); at CI scale every seed
shares one training set and data order (they differ in their initialisation), at paper scale each
seed is an independent run with its own data (one program per architecture and seed).
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param

from .. import paper
from ..tasks import TASKS
from ..variant_runs import FULL, TRAIN_PARAMS, full_command, run_variants, task_list

SLUG = "ood-scale"
OPERATIONAL_PARAMS = (
    Param("checkpoint_every", "int", "steps between checkpoints of a program (0 = none)", min=0, max=10_000_000),
    Param("time_limit", "float", "minutes after which a run stops at a checkpoint (0 = no limit; rerun resumes)",
          min=0.0, max=10_000.0),
)
PARAMS = TRAIN_PARAMS + OPERATIONAL_PARAMS
ARCHS = {"standard": {"kind": "standard"}, "positional": {"kind": "positional"}}
GAP_TASKS = ("cumsum", "cummin", "maxsub")  # the gap shows within a few hundred steps (our CPU calibration)
SMOKE_TASKS = ("cummedian", "sort")  # need ~3,000 steps before their gap shows (our CPU calibration)

PRESETS = {
    # n = 8 as the paper; E = hidden = 32, 300 Adam steps of 64 lists, OneCycle peak 5e-3, 4,096
    # training lists, one seed (calibrated: narrower or lower-lr standard models often stall at the
    # mean predictor's ID loss within 300 steps; median and sort are a smoke run at this length)
    "ci": dict(n=8, tasks=",".join(TASKS), seeds=1, samples=4096, steps=300, epochs=None, batch=64, lr=5e-3,
               scheduler="onecycle", embed=32, hidden=32, c_list=[1.0, 2.0, 5.0, 10.0], test_samples=500,
               checkpoint_every=0, time_limit=0.0),
    # the paper's protocol: 30,000 lists, 2000 epochs of 1000, Adam 5e-4 with the authors'
    # ReduceLROnPlateau, E = hidden = 64, ten independent runs, c = 1 … 10, 1,000 test lists each
    "full": dict(FULL, tasks=",".join(TASKS), checkpoint_every=6000, time_limit=7.0),
}


def compute(ctx: Context) -> dict:
    """Trains a standard and a positional Transformer per (task, seed) and tests each at every c;
    the result holds the config, the tasks, and per architecture and task the test MSE [seed][c]
    ("test") and the final training MSE [seed] ("train")."""
    tasks = task_list(ctx.config)
    runs = run_variants(ctx, ARCHS, tasks, desc="architectures")
    return {"config": ctx.config, "tasks": tasks,
            "test": {a: {t: runs[a][t]["test"] for t in tasks} for a in ARCHS},
            "train": {a: {t: runs[a][t]["train"] for t in tasks} for a in ARCHS}}


def medians(result: dict, arch: str, task: str) -> np.ndarray:
    """The median over seeds of the test MSE, per c."""
    return np.median(np.asarray(result["test"][arch][task], dtype=float), axis=0)


def _at(result: dict, c: float) -> int | None:
    cs = [float(x) for x in result["config"]["c_list"]]
    return cs.index(float(c)) if float(c) in cs else None


def ratio(result: dict, task: str, c: float) -> tuple[float, float]:
    """(median, least over seeds) of standard MSE / positional MSE at scale c (seeds paired)."""
    i = _at(result, c)
    s = np.asarray(result["test"]["standard"][task], dtype=float)[:, i]
    p = np.asarray(result["test"]["positional"][task], dtype=float)[:, i]
    return float(np.median(s) / np.median(p)), float((s / p).min())


def is_paper_protocol(cfg: dict) -> bool:
    """True when the config trains as the paper (2000 epochs of 30,000 lists, ten runs)."""
    return (cfg.get("epochs") or 0) >= paper.EPOCHS and cfg["samples"] >= paper.TRAIN_SAMPLES and cfg["seeds"] >= 10


def claims(result: dict, full: dict | None = None) -> ClaimsTable:
    """Fig. 4 (§7.2) at CI scale: rows 16 (std / pos MSE at c = 10) and 17 (growth from c = 1 to 10),
    asserted on cumsum, cummin, maxsub; median and sort as a smoke run (inconclusive below the paper's
    protocol); row 21 (std / pos ≥ 100× at c = 10, every task) at paper scale."""
    t = ClaimsTable(rtol=0.5)  # within 2x: the smoke-run ratios moved by up to 30 % between CPUs
    cfg, tasks = result["config"], result["tasks"]
    i1, i10 = _at(result, 1.0), _at(result, 10.0)
    paper_scale = is_paper_protocol(cfg)
    gap = [x for x in tasks if x in GAP_TASKS or paper_scale]
    if i1 is not None and i10 is not None:
        for task in gap:
            med, least = ratio(result, task, 10.0)
            ps, pp = paper.FIG4_MEDIANS[task]["standard"][1], paper.FIG4_MEDIANS[task]["positional"][1]
            t.add("16", f"Fig. 4, {task}: standard / positional test MSE at c = 10, median over seeds "
                  f"(least seed {least:.3g})", paper=round(ps / pp), ours=med, holds=med >= 5,
                  tolerance="≥ 5 (our CI-scale threshold)", asserted=True, source="figure")
        worst = max(max(r, 1 / r) for r in (ratio(result, x, 1.0)[0] for x in gap)) if gap else None
        if worst is not None:
            pw = max(max(a / b, b / a) for a, b in ((paper.FIG4_MEDIANS[x]["standard"][0],
                                                      paper.FIG4_MEDIANS[x]["positional"][0]) for x in gap))
            t.add("16b", f"Fig. 4, c = 1: in distribution both fit comparably (largest factor between the medians; "
                  f"{', '.join(gap)})", paper=pw, ours=worst, holds=worst <= 10, tolerance="≤ 10×", asserted=True,
                  source="figure")
        mono = all(np.all(np.diff(medians(result, a, x)) > 0) for a in ("standard", "positional") for x in gap)
        t.add("17a", "test MSE grows with c for both architectures (medians, every task above)",
              paper="increasing", ours="increasing at every c" if mono else "not monotone", holds=mono, tolerance="strictly, every c",
              asserted=True, source="figure")
        growth = {x: (medians(result, "standard", x)[i10] / medians(result, "standard", x)[i1])
                  / (medians(result, "positional", x)[i10] / medians(result, "positional", x)[i1]) for x in gap}
        least = min(growth, key=growth.get) if growth else None
        if least:
            t.add("17b", f"the standard model's MSE grows faster from c = 1 to 10 than the positional one's "
                  f"(ratio of the growth factors, least task: {least})", paper="more stable positional",
                  ours=growth[least], holds=growth[least] >= 5, tolerance="≥ 5× (our CI-scale threshold)", asserted=True,
                  source="text")
        if not paper_scale:
            for task in [x for x in tasks if x in SMOKE_TASKS]:
                med, least = ratio(result, task, 10.0)
                ps, pp = paper.FIG4_MEDIANS[task]["standard"][1], paper.FIG4_MEDIANS[task]["positional"][1]
                steps = cfg["steps"] if cfg["steps"] is not None else f"{cfg['epochs']} epochs"
                t.inconclusive("16s", f"Fig. 4, {task} (smoke run): standard / positional MSE at c = 10, median",
                               paper=round(ps / pp), ours=med,
                               why=f"{steps} steps; the gap needs ~3,000 (our CPU calibration)", source="figure")
    _paper_scale(t, full)
    return t


def paper_scale_claims(full: dict) -> ClaimsTable:
    """Claim 21 measured on a stored paper-scale run (rows not asserted)."""
    t = ClaimsTable(rtol=0.5)  # within 2x: the smoke-run ratios moved by up to 30 % between CPUs
    _paper_scale(t, full)
    return t


def _paper_scale(t: ClaimsTable, full: dict | None) -> None:
    """Claim 21: at c = 10 the median ratio is ≥ 100× for every task, every positional run beats every
    standard run, and the ID medians are within 10× (the paper's protocol, stored run)."""
    cmd = full_command(SLUG)
    ok = full is not None and _at(full, 10.0) is not None and _at(full, 1.0) is not None
    for task in paper.TASKS_ORDER:
        ps, pp = paper.FIG4_MEDIANS[task]["standard"][1], paper.FIG4_MEDIANS[task]["positional"][1]
        text = f"paper scale, Fig. 4, {task}: standard / positional median MSE at c = 10"
        if ok and task in full["tasks"]:
            med, _ = ratio(full, task, 10.0)
            t.add("21", text, paper=round(ps / pp), ours=med, holds=med >= paper.FIG4_RATIO_C10_MIN,
                  tolerance=f"≥ {paper.FIG4_RATIO_C10_MIN}×", source="figure")
        else:
            t.not_run("21", text, paper=round(ps / pp), command=cmd, source="figure")
    text = "paper scale: the worst positional run beats the best standard run at c = 10, every task"
    if ok:
        i = _at(full, 10.0)
        margin = min(np.min(np.asarray(full["test"]["standard"][x])[:, i]) /
                     np.max(np.asarray(full["test"]["positional"][x])[:, i]) for x in full["tasks"])
        t.add("21b", text + " (least best-std / worst-pos)", paper="yes", ours=margin, holds=margin > 1,
              tolerance="> 1", source="figure")
    else:
        t.not_run("21b", text, paper="yes", command=cmd, source="figure")


EXPERIMENTS = (Experiment(id=f"001-positional/{SLUG}", label="Fig. 4 (§7.2)",
                          title="ID and OOD loss against the scale factor",
                          params=PARAMS, presets=PRESETS, compute=compute,
                          summary="The positional Transformer's OOD loss grows far slower with c than the "
                                  "standard one's, at equal ID loss."),)
