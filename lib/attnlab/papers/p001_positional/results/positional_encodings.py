"""Figs. 22–24 (App. D.1.6): ID and OOD loss against the scale factor with other positional
encodings: binary (⌈log₂ n⌉ dims, 0 → −1) and sinusoidal (⌈n/2⌉ dims) for both architectures,
and RoPE in the standard Transformer against the positional Transformer with one-hot P."""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable, seed_summary
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param

from .. import paper
from ..tasks import TASKS
from ..variant_runs import (
    CI, CI_OPS, FULL, FULL_OPS, OPERATIONAL_PARAMS, TRAIN_PARAMS, add_direction, full_command, per_seed,
    run_variants, task_list,
)

SLUG = "positional-encodings"
ENCODINGS = ("binary", "sinusoidal", "rope")
PARAMS = TRAIN_PARAMS + (
    Param("encodings", "str", "encodings trained beside one-hot P (the paper: binary, sinusoidal, rope)",
          choices=ENCODINGS, sep=","),
) + OPERATIONAL_PARAMS
# CI: three seeds (each its own data), 200 steps, binary P left out (its row 1 cannot be judged at CI
# scale: the ratio moves from 2.2 to 10.7 with the CPU's rounding alone); seven variants times three seeds
# at the former 300 steps would cost ~1.6x the former 20 s on one thread (`encodings` adds binary)
PRESETS = {"ci": {**CI, **CI_OPS, "steps": 200, "tasks": "cumsum", "encodings": "sinusoidal,rope"},
           "full": {**FULL, **FULL_OPS, "tasks": ",".join(TASKS), "encodings": ",".join(ENCODINGS)}}

# name -> ModelConfig options; the standard + RoPE model keeps the concatenated one-hot P, as the
# authors' RoPE runs (their params equal the default ones with RoPE switched on)
VARIANTS = {
    "positional, one-hot": dict(kind="positional"),
    "positional, binary": dict(kind="positional", pe="binary"),
    "positional, sinusoidal": dict(kind="positional", pe="sinusoidal"),
    "standard, one-hot": dict(kind="standard"),
    "standard, binary": dict(kind="standard", pe="binary"),
    "standard, sinusoidal": dict(kind="standard", pe="sinusoidal"),
    "standard + RoPE": dict(kind="standard", rope=True),
}
# the figures: (figure, encoding, the red curve, the blue curve)
FIGURES = (("Fig. 22", "binary", "standard, binary", "positional, binary"),
           ("Fig. 23", "sinusoidal", "standard, sinusoidal", "positional, sinusoidal"),
           ("Fig. 24", "RoPE", "standard + RoPE", "positional, one-hot"))


def variants(cfg: dict) -> dict:
    """The variants of `encodings`: one-hot P in both architectures always, binary and sinusoidal P in
    both, RoPE in the standard one."""
    keep = {"onehot"} | {e.strip() for e in cfg["encodings"].split(",")}
    return {name: opts for name, opts in VARIANTS.items()
            if ("rope" if opts.get("rope") else opts.get("pe", "onehot")) in keep}


def compute(ctx: Context) -> dict:
    """Trains the variants of `encodings` (positional with one-hot / binary / sinusoidal P; standard with
    the same three, and standard + RoPE) on every task and seed, in two tensor programs (one per
    kind); the result holds `runs[variant][task]` = {"test": [seeds][c] MSE, "train": [seeds]}."""
    cfg = ctx.config
    task_list(cfg)
    return {"config": cfg, "runs": run_variants(ctx, variants(cfg), desc="positional encodings")}


def claims(result: dict) -> ClaimsTable:
    """Figs. 22–24 at CI scale, every trained row judged over seeds (per seed, the models of the same
    seed index; the least over tasks): 1 (binary P; inconclusive at CI, see below), 2 (sinusoidal P,
    asserted), 3 (standard + RoPE far above positional, asserted), 4 (RoPE lowers the standard model's
    OOD loss; a band of 2× either way), 5 (lower expressivity; inconclusive by design)."""
    cfg, runs = result["config"], result["runs"]
    tasks, cmax = task_list(cfg), max(cfg["c_list"])
    full = cfg["scale"] == "full"
    ci = cfg["scale"] == "ci"  # asserted where calibrated; other scales show their verdicts without raising
    t = ClaimsTable(rtol=TRAINED_RTOL)
    ratio = lambda a, b, c=cmax: np.min([per_seed(cfg, runs[a][k]["test"], c) / per_seed(cfg, runs[b][k]["test"], c)  # noqa: E731
                                         for k in tasks], axis=0)
    for key, (fig, enc, red, blue) in zip("123", FIGURES[:2]):
        text = (f"{fig}: with {enc} P the positional Transformer beats the standard one OOD in every task "
                f"(per seed, the least standard / positional MSE at c = {cmax:g} over {', '.join(tasks)})")
        if red not in runs:
            t.not_run(key, text, paper="positional lower, every task", source="text",
                      command=f"attnlab run 001-positional/{SLUG} -p encodings {enc},sinusoidal,rope")
            continue
        r = ratio(red, blue)
        if ci and key == "1":  # measured on three CPUs: 2.18 (AVX-512, AVX2 kernels), 10.7 (no vector kernels)
            t.inconclusive(key, text, paper="positional lower, every task", ours=seed_summary(r), rtol=1.0,
                           why="≥ 2; at CI scale this ratio ranges from 2.2 to 10.7 with the CPU's rounding alone, "
                               "so it cannot be judged against 2", source="text")
            continue
        t.add_seeds(key, text, paper="positional lower, every task", values=r, threshold=2, tolerance="≥ 2",
                    asserted=ci, source="text")
    if "standard + RoPE" in runs:
        t.add_seeds("3", f"Fig. 24: standard + RoPE stays 'far from' the positional Transformer (per seed, the least "
                    f"standard + RoPE / positional MSE at c = {cmax:g})", paper="far above, every task",
                    values=ratio("standard + RoPE", "positional, one-hot"), threshold=10, tolerance="≥ 10",
                    asserted=ci, source="text")
        add_direction(t, "4", f"Fig. 24 / §7: RoPE 'manages to decrease the OOD test loss' of the standard Transformer "
                      f"(per seed, the least standard / standard + RoPE MSE at c = {cmax:g}; §7 also says 'no "
                      "significant differences')", paper="> 1", values=ratio("standard, one-hot", "standard + RoPE"),
                      separates=2, source="text")
    others = [e for e in ("binary", "sinusoidal") if f"positional, {e}" in runs]
    if others:
        c1 = np.min([ratio(f"positional, {e}", "positional, one-hot", 1.0) for e in others], axis=0)
        # 'less expressive' is a statement about what the encodings can represent; a higher ID MSE after a fixed
        # training budget is consistent with it but cannot tell it from slower fitting of the same function
        t.inconclusive("5", f"{' and '.join(others)} P {'are' if len(others) > 1 else 'is'} 'less expressive than "
                       "one-hot': the positional Transformer's ID (c = 1) MSE with them over its one-hot MSE (per "
                       f"seed, the least over {' and '.join(others)} and the tasks)", paper="≥ 1 (less expressive)",
                       ours=seed_summary(c1),
                       why="higher ID MSE after a fixed budget: lower expressivity or slower fitting, this run cannot "
                           "tell which", source="text")
    shared = [k for k in paper.FIG24_C10_MEDIANS if k in tasks]
    if full and shared and 10.0 in cfg["c_list"]:
        worst = np.min([per_seed(cfg, runs["standard + RoPE"][k]["test"], 10.0) /
                        per_seed(cfg, runs["positional, one-hot"][k]["test"], 10.0) for k in shared], axis=0)
        ref = min(paper.FIG24_C10_MEDIANS[k][0] / paper.FIG24_C10_MEDIANS[k][1] for k in shared)
        t.add_seeds("P1", f"paper scale, Fig. 24: standard + RoPE / positional MSE at c = 10, per seed, least over "
                    f"{', '.join(shared)}", paper=round(ref), values=worst, threshold=100, tolerance="≥ 100",
                    source="figure")
    else:
        t.not_run("P1", "paper scale, Fig. 24: standard + RoPE / positional median MSE at c = 10, least over the "
                  "five tasks (≥ 100)", paper=round(min(a / b for a, b in paper.FIG24_C10_MEDIANS.values())),
                  command=full_command(SLUG), source="figure")
        t.not_run("P2", "paper scale, Figs. 22–23: positional beats standard with binary and sinusoidal P at every "
                  "c > 1 in all five tasks (10 seeds)", paper="every task", command=full_command(SLUG), source="text")
    return t


EXPERIMENTS = (Experiment(id=f"001-positional/{SLUG}", label="Figs. 22–24 (App. D.1.6)",
                          title="Binary, sinusoidal and rotary positional encodings",
                          params=PARAMS, presets=PRESETS, compute=compute,
                          summary="With binary or sinusoidal P the positional Transformer still beats the standard "
                                  "one OOD; RoPE leaves the standard Transformer far behind."),)
