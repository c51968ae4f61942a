"""Fig. 4 (§7.2): in-distribution and OOD test loss against the scale factor c, standard vs
positional Transformer, five tasks: the paper's headline.

Both architectures are trained on lists with values in [−2, 2] (§7) and tested on lists drawn from
[−2c, 2c] with App. E's rejection step (c = 1: in distribution). Each architecture trains as one
replica-batched tensor program holding every task and seed (`sweeps.sweep`, `mix_seeds`); every seed
is an independent run with its own data (training set, data order and test lists: its seed's), as the
paper's runs; at paper scale one program per architecture and seed.

Every trained row is judged over the seeds with the seed rule (`ClaimsTable.add_seeds`): the
claim's value is measured per seed (standard against positional of the same seed index), "this run"
prints its median and spread, and the row is ✅ or ❌ only when every seed agrees beyond the row's
precision.
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable, fmt, seed_summary
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

SMOKE_RTOL = 0.5  # within 2x: the smoke-run ratios moved by up to 30 % between CPUs

PRESETS = {
    # n = 8 as the paper; E = hidden = 32, 250 Adam steps of 64 lists, OneCycle peak 5e-3, 4,096
    # training lists, three seeds of the three tasks whose gap shows at this length (calibrated at 300
    # steps: narrower or lower-lr standard models often stall at the mean predictor's ID loss; median
    # and sort need ~3,000 steps: `tasks` adds them as a smoke run). On one CPU thread a program's cost
    # grows in proportion to its replicas (measured on a loaded machine: 9 models per architecture at
    # 300 steps cost 1.7x the CPU time of the former preset's 5 at 300, at 250 steps 1.4-1.7x), so the
    # 45 s budget holds 6 models per architecture: cumsum and maxsub, three seeds each (three tasks, 9
    # models, measured 46.8-57 s at 230-250 steps on a quiet machine; at 200 steps cumsum's gap collapses
    # to 3.5x; `tasks` adds cummin). With each seed on its own data (per-replica batches) cumsum and maxsub
    # took 46-48 s as a notebook here, over the budget: CI trains cumsum, `-p tasks cumsum,maxsub` adds maxsub
    "ci": dict(n=8, tasks="cumsum", seeds=3, seed=0, samples=4096, steps=250, epochs=None, batch=64, lr=5e-3,
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


def seed_ratios(result: dict, task: str, c: float) -> list[float]:
    """Standard MSE / positional MSE at scale c, one per seed (the two models of a seed index paired)."""
    i = _at(result, c)
    s = np.asarray(result["test"]["standard"][task], dtype=float)[:, i]
    p = np.asarray(result["test"]["positional"][task], dtype=float)[:, i]
    return (s / p).tolist()


def ratio_of_medians(result: dict, task: str, c: float) -> float:
    """Median standard MSE / median positional MSE at scale c: what the paper's Fig. 4 compares."""
    i = _at(result, c)
    return float(medians(result, "standard", task)[i] / medians(result, "positional", task)[i])


def paper_ratio(task: str) -> float:
    """The paper's Fig. 4 at c = 10: median standard / median positional MSE of the authors' released runs."""
    return paper.FIG4_MEDIANS[task]["standard"][1] / paper.FIG4_MEDIANS[task]["positional"][1]


def gap_summary(result: dict) -> str:
    """A text table, per task trained: this run's ratio at c = 10 (ratio of the medians over seeds, and
    the per-seed spread) against the paper's (its released medians), and how many times smaller ours is;
    then the medians themselves at c = 1 and c = 10, ours against the paper's."""
    if _at(result, 10.0) is None:
        return "c = 10 was not tested: no ratio at c = 10"
    n = len(result["test"]["standard"][result["tasks"][0]])
    lines = [f"standard / positional test MSE at c = 10 ({n} seed{'s' if n != 1 else ''} per architecture)",
             f"{'task':<10} {'ours: ratio of medians':>22}  {'per seed: median (min–max)':<30} "
             f"{'paper (released medians)':>24} {'paper / ours':>12}"]
    for task in result["tasks"]:
        ours, theirs = ratio_of_medians(result, task, 10.0), paper_ratio(task)
        lines.append(f"{task:<10} {fmt(ours) + '×':>22}  {seed_summary(seed_ratios(result, task, 10.0)):<30} "
                     f"{f'{theirs:,.0f}×':>24} {fmt(theirs / ours) + '×':>12}")
    if _at(result, 1.0) is not None:
        lines += ["", "median test MSE over seeds, ours / the paper's (released medians)",
                  f"{'task':<10} {'architecture':<12} {'c = 1':>24} {'c = 10':>24}"]
        for task in result["tasks"]:
            for arch in ("standard", "positional"):
                m, pm = medians(result, arch, task), paper.FIG4_MEDIANS[task][arch]
                cells = [f"{fmt(float(m[_at(result, c)]))} / {fmt(p)}" for c, p in ((1.0, pm[0]), (10.0, pm[1]))]
                lines.append(f"{task:<10} {arch:<12} {cells[0]:>24} {cells[1]:>24}")
    return "\n".join(lines)


def is_paper_protocol(cfg: dict) -> bool:
    """True when the config trains as the paper (2000 epochs of 30,000 lists, ten runs)."""
    return (cfg.get("epochs") or 0) >= paper.EPOCHS and cfg["samples"] >= paper.TRAIN_SAMPLES and cfg["seeds"] >= 10


def _growth(result: dict, arch: str, task: str) -> np.ndarray:
    """Per seed: the test MSE at c = 10 over that at c = 1."""
    a = np.asarray(result["test"][arch][task], dtype=float)
    return a[:, _at(result, 10.0)] / a[:, _at(result, 1.0)]


def claims(result: dict, full: dict | None = None) -> ClaimsTable:
    """Fig. 4 (§7.2) at CI scale: rows 16 (std / pos MSE at c = 10, ID factor at c = 1) and 17 (MSE
    grows with c; growth from c = 1 to 10), asserted on cumsum, cummin, maxsub; median and sort (when
    trained) as a smoke run (inconclusive below the paper's protocol); row 21 (std / pos ≥ 100× at
    c = 10, every task) at paper scale. Every trained row is judged over the seeds (`add_seeds`)."""
    t = ClaimsTable(rtol=TRAINED_RTOL)
    cfg, tasks = result["config"], result["tasks"]
    i1, i10 = _at(result, 1.0), _at(result, 10.0)
    paper_scale = is_paper_protocol(cfg)
    gap = [x for x in tasks if x in GAP_TASKS or paper_scale]
    if i1 is not None and i10 is not None:
        for task in gap:
            t.add_seeds("16", f"Fig. 4, {task}: standard / positional test MSE at c = 10, per seed",
                        paper=round(paper_ratio(task)), values=seed_ratios(result, task, 10.0), threshold=5,
                        tolerance="≥ 5× (our CI-scale threshold)", asserted=True, source="figure")
        if gap:
            worst = np.max([[max(r, 1 / r) for r in seed_ratios(result, x, 1.0)] for x in gap], axis=0)
            pw = max(max(a / b, b / a) for a, b in ((paper.FIG4_MEDIANS[x]["standard"][0],
                                                      paper.FIG4_MEDIANS[x]["positional"][0]) for x in gap))
            t.add_seeds("16b", f"Fig. 4, c = 1: in distribution both fit comparably (per seed, the largest factor "
                        f"between standard and positional test MSE; {', '.join(gap)})", paper=pw,
                        values=worst.tolist(), threshold=10, above=False, tolerance="≤ 10×", asserted=True,
                        source="figure")
            steps = [np.min(np.diff(np.log(np.asarray(result["test"][a][x], dtype=float)), axis=1), axis=1)
                     for a in ("standard", "positional") for x in gap]
            least_step = np.exp(np.min(steps, axis=0))
            t.add_seeds("17a", "test MSE grows with c for both architectures (per seed, the least factor between "
                        "consecutive c, both architectures, every task above)", paper="increasing",
                        values=least_step.tolist(), threshold=1, tolerance="> 1 (increasing at every c)",
                        asserted=True, source="figure")
            growth = np.array([_growth(result, "standard", x) / _growth(result, "positional", x) for x in gap])
            t.add_seeds("17b", "the standard model's MSE grows faster from c = 1 to 10 than the positional one's "
                        f"(per seed, the ratio of the growth factors, least of {', '.join(gap)})",
                        paper="more stable positional", values=growth.min(axis=0).tolist(), threshold=5,
                        tolerance="≥ 5× (our CI-scale threshold)", asserted=True, source="text")
        if not paper_scale:
            for task in [x for x in tasks if x in SMOKE_TASKS]:
                steps_run = cfg["steps"] if cfg["steps"] is not None else f"{cfg['epochs']} epochs"
                t.inconclusive("16s", f"Fig. 4, {task} (smoke run): standard / positional MSE at c = 10, per seed",
                               paper=round(paper_ratio(task)), ours=seed_summary(seed_ratios(result, task, 10.0)),
                               why=f"{steps_run} steps; the gap needs ~3,000 (our CPU calibration)", source="figure",
                               rtol=SMOKE_RTOL)
    _paper_scale(t, full)
    return t


def paper_scale_claims(full: dict) -> ClaimsTable:
    """Claim 21 measured on a stored paper-scale run (rows not asserted)."""
    t = ClaimsTable(rtol=TRAINED_RTOL)
    _paper_scale(t, full)
    return t


def _paper_scale(t: ClaimsTable, full: dict | None) -> None:
    """Claim 21: at c = 10 the ratio is ≥ 100× for every task in every seed, every positional run beats every
    standard run, and the ID medians are within 10× (the paper's protocol, stored run)."""
    cmd = full_command(SLUG)
    ok = full is not None and _at(full, 10.0) is not None and _at(full, 1.0) is not None
    for task in paper.TASKS_ORDER:
        ps, pp = paper.FIG4_MEDIANS[task]["standard"][1], paper.FIG4_MEDIANS[task]["positional"][1]
        text = f"paper scale, Fig. 4, {task}: standard / positional median MSE at c = 10"
        if ok and task in full["tasks"]:
            t.add_seeds("21", text.replace("median MSE", "MSE") + ", per seed", paper=round(ps / pp),
                        values=seed_ratios(full, task, 10.0), threshold=paper.FIG4_RATIO_C10_MIN,
                        tolerance=f"≥ {paper.FIG4_RATIO_C10_MIN}×", source="figure")
        else:
            t.not_run("21", text, paper=round(ps / pp), command=cmd, source="figure")
    text = "paper scale: the worst positional run beats the best standard run at c = 10, every task"
    if ok:
        i = _at(full, 10.0)
        margin = min(np.min(np.asarray(full["test"]["standard"][x])[:, i]) /
                     np.max(np.asarray(full["test"]["positional"][x])[:, i]) for x in full["tasks"])
        t.add("21b", text + " (least best-std / worst-pos)", paper="yes", ours=margin, holds=margin > 1,
              tolerance="> 1 (every seed against every seed)", source="figure", margin=(margin, 1))
    else:
        t.not_run("21b", text, paper="yes", command=cmd, source="figure")


EXPERIMENTS = (Experiment(id=f"001-positional/{SLUG}", label="Fig. 4 (§7.2)",
                          title="ID and OOD loss against the scale factor",
                          params=PARAMS, presets=PRESETS, compute=compute,
                          summary="The positional Transformer's OOD loss grows far slower with c than the "
                                  "standard one's, at equal ID loss."),)
