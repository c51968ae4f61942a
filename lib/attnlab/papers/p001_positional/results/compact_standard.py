"""Figs. 20–21 (App. D.1.5): compact standard Transformers: ⌈log₂ n⌉ + 1 layers or a single layer,
with small MLP hidden widths, on cumulative sum and cumulative minimum; ID and OOD loss against
the scale factor, beside the positional Transformer."""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError

from .. import paper
from ..variant_runs import (
    CI, CI_OPS, FULL, FULL_OPS, OPERATIONAL_PARAMS, TRAIN_PARAMS, add_direction, at, full_command, per_seed,
    run_variants, task_list,
)

SLUG = "compact-standard"
PARAMS = tuple(p for p in TRAIN_PARAMS if p.name != "hidden") + (
    Param("hidden", "int", "MLP hidden width of the positional reference model (the paper: 64)", min=1, max=1024),
    Param("hidden_list", "int_list", "MLP hidden widths of the standard models (the authors' code: 2, 4, 8, 16)",
          min=1, max=1024),
    Param("layers_list", "int_list", "depths of the standard models (the paper: log n + 1 = 4, and 1)", min=1, max=16),
) + OPERATIONAL_PARAMS
# CI: 180 steps, three seeds, each its own data (calibrated with one seed at 200 steps: the best
# compact standard model 16-80x above the positional one at c = 10; three seeds at 200: 38-121x); cumulative
# sum only: three seeds of both tasks would cost ~1.7x the former 17 s on one thread (`tasks` adds cummin)
PRESETS = {"ci": {**CI, **CI_OPS, "steps": 180, "tasks": "cumsum", "hidden_list": [2, 16], "layers_list": [3, 1]},
           "full": {**FULL, **FULL_OPS, "tasks": "cumsum,cummin", "hidden_list": list(paper.COMPACT_HIDDEN), "layers_list": [4, 1]}}
SEPARATES = 3.0  # a ratio beyond 3× either way is a direction; inside it, inconclusive


def variants(cfg: dict) -> dict:
    out = {f"standard, L = {L}, hidden {h}": dict(kind="standard", layers=L, hidden=h)
           for L in cfg["layers_list"] for h in cfg["hidden_list"]}
    out["positional"] = dict(kind="positional")
    return out


def compute(ctx: Context) -> dict:
    """Trains the standard Transformer at every (depth, hidden width) of the grid, and the
    positional Transformer (width `hidden`) as the reference, on every task and seed (one tensor
    program per depth: the widths are padded replicas). The result holds `runs[name][task]` =
    {"test": [seeds][c] MSE, "train": [seeds]} with names 'standard, L = …, hidden …' and 'positional'."""
    cfg = ctx.config
    task_list(cfg)
    if len(set(cfg["layers_list"])) != len(cfg["layers_list"]) or len(set(cfg["hidden_list"])) != len(cfg["hidden_list"]):
        raise ParameterError(f"parameters 'layers_list', 'hidden_list': values {cfg['layers_list']}, "
                             f"{cfg['hidden_list']} are not allowed; give distinct values")
    return {"config": cfg, "runs": run_variants(ctx, variants(cfg), desc="compact standard")}


def claims(result: dict) -> ClaimsTable:
    """Figs. 20–21 at CI scale, every trained row judged over seeds (per seed, the ratio of the models of
    the same seed index) with a band of 3× either way (`add_direction`): 1 (small / large hidden width,
    per depth), 2 (deep / shallow, median over widths), 3 (best compact standard / positional,
    asserted at CI); at paper scale the medians at c = 10 against the paper's."""
    cfg, runs = result["config"], result["runs"]
    cmax, tasks = max(cfg["c_list"]), task_list(cfg)
    Ls, hs = cfg["layers_list"], sorted(cfg["hidden_list"])
    name = lambda L, h: f"standard, L = {L}, hidden {h}"  # noqa: E731
    mse = lambda nm, task: per_seed(cfg, runs[nm][task]["test"], cmax)  # noqa: E731
    t = ClaimsTable(rtol=TRAINED_RTOL)
    for task in tasks:
        fig = {"cumsum": "Fig. 20", "cummin": "Fig. 21"}.get(task, "Figs. 20–21")
        for L in Ls:
            add_direction(t, f"1-{task}-L{L}", f"{fig}, {task}, {L} layer(s): 'OOD performance deteriorates as the "
                          f"network size decreases' (MSE at c = {cmax:g}, hidden {hs[0]} / hidden {hs[-1]}, per seed)",
                          paper="> 1", values=mse(name(L, hs[0]), task) / mse(name(L, hs[-1]), task),
                          separates=SEPARATES, source="text")
        if len(Ls) >= 2:
            deep, shallow = max(Ls), min(Ls)
            r = np.median([mse(name(deep, h), task) / mse(name(shallow, h), task) for h in hs], axis=0)
            add_direction(t, f"2-{task}", f"{fig}, {task}: 'single-layer networks exhibit slightly better performance' "
                          f"(per seed, the median over widths of the MSE ratio at c = {cmax:g}, {deep} layers / "
                          f"{shallow})", paper="> 1", values=r, separates=SEPARATES, source="text")
        best = np.min([mse(name(L, h), task) for L in Ls for h in hs], axis=0)
        add_direction(t, f"3-{task}", f"{fig}, {task}: every compact standard model 'remains inferior' to the "
                      f"positional Transformer (per seed, the best standard MSE at c = {cmax:g} over the positional "
                      "one's)", paper="> 1", values=best / mse("positional", task), separates=SEPARATES,
                      asserted=cfg["scale"] == "ci", source="text")
    if cfg["scale"] != "full":
        for task, per in paper.FIG20_21_C10_MEDIANS.items():
            t.not_run(f"P-{task}", f"paper scale, {'Fig. 20' if task == 'cumsum' else 'Fig. 21'}: median MSE at c = 10 "
                      "of the standard model, 4 layers, hidden 2 / 4 / 8 / 16", paper=list(per[4].values()),
                      command=full_command(SLUG), source="figure")
    else:
        for task, per in paper.FIG20_21_C10_MEDIANS.items():
            if task in tasks and set(per[4]) <= set(hs) and 4 in Ls:
                ours = [at(cfg, runs[name(4, h)][task]["test"], 10.0) for h in per[4]]
                ok = all(abs(np.log10(o / p)) <= 1 for o, p in zip(ours, per[4].values()))
                t.add(f"P-{task}", f"paper scale, {'Fig. 20' if task == 'cumsum' else 'Fig. 21'}: median MSE at c = 10, "
                      "4 layers, hidden 2 / 4 / 8 / 16", paper=list(per[4].values()), ours=ours, holds=ok,
                      tolerance="each within 10×", source="figure")
    return t


EXPERIMENTS = (Experiment(id=f"001-positional/{SLUG}", label="Figs. 20–21 (App. D.1.5)",
                          title="Compact standard Transformers",
                          params=PARAMS, presets=PRESETS, compute=compute,
                          summary="Smaller or shallower standard Transformers do not close the OOD gap to the "
                                  "positional Transformer."),)
