"""Figs. 22–24 (App. D.1.6): ID and OOD loss against the scale factor with other positional
encodings: binary (⌈log₂ n⌉ dims, 0 → −1) and sinusoidal (⌈n/2⌉ dims) for both architectures,
and RoPE in the standard Transformer against the positional Transformer with one-hot P."""

from __future__ import annotations

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable
from attnlab.core.experiment import Context, Experiment

from .. import paper
from ..tasks import TASKS
from ..variant_runs import (
    CI, CI_OPS, FULL, FULL_OPS, OPERATIONAL_PARAMS, TRAIN_PARAMS, at, full_command, run_variants, task_list,
)

SLUG = "positional-encodings"
PARAMS = TRAIN_PARAMS + OPERATIONAL_PARAMS
PRESETS = {"ci": {**CI, **CI_OPS, "tasks": "cumsum"}, "full": {**FULL, **FULL_OPS, "tasks": ",".join(TASKS)}}

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


def compute(ctx: Context) -> dict:
    """Trains the seven variants (positional with one-hot / binary / sinusoidal P; standard with the
    same three, and standard + RoPE) on every task and seed, in two tensor programs (one per
    kind); the result holds `runs[variant][task]` = {"test": [seeds][c] MSE, "train": [seeds]}."""
    cfg = ctx.config
    task_list(cfg)
    return {"config": cfg, "runs": run_variants(ctx, VARIANTS, desc="positional encodings")}


def claims(result: dict) -> ClaimsTable:
    cfg, runs = result["config"], result["runs"]
    tasks, cmax = task_list(cfg), max(cfg["c_list"])
    full = cfg["scale"] == "full"
    ci = cfg["scale"] == "ci"  # asserted where calibrated; other scales show their verdicts without raising
    t = ClaimsTable(rtol=TRAINED_RTOL)
    for key, (fig, enc, red, blue) in zip("123", FIGURES[:2]):
        ratios = [at(cfg, runs[red][task]["test"], cmax) / at(cfg, runs[blue][task]["test"], cmax) for task in tasks]
        text = (f"{fig}: with {enc} P the positional Transformer beats the standard one OOD in every task "
                f"(least standard / positional median MSE at c = {cmax:g}, {', '.join(tasks)})")
        if ci and key == "1":  # measured on three CPUs: 2.18 (AVX-512, AVX2 kernels), 10.7 (no vector kernels)
            t.inconclusive(key, text, paper="positional lower, every task", ours=min(ratios), rtol=1.0,
                           why="≥ 2; at CI scale this ratio ranges from 2.2 to 10.7 with the CPU's rounding alone, "
                               "so it cannot be judged against 2", source="text")
            continue
        t.add(key, text, paper="positional lower, every task", ours=min(ratios), holds=min(ratios) >= 2,
              tolerance="≥ 2", asserted=ci, source="text")
    ratios = [at(cfg, runs["standard + RoPE"][task]["test"], cmax) / at(cfg, runs["positional, one-hot"][task]["test"], cmax)
              for task in tasks]
    t.add("3", f"Fig. 24: standard + RoPE stays 'far from' the positional Transformer (least standard + RoPE / "
          f"positional median MSE at c = {cmax:g})", paper="far above, every task", ours=min(ratios),
          holds=min(ratios) >= 10, tolerance="≥ 10", asserted=ci, source="text")
    gain = [at(cfg, runs["standard, one-hot"][task]["test"], cmax) / at(cfg, runs["standard + RoPE"][task]["test"], cmax)
            for task in tasks]
    text = (f"Fig. 24 / §7: RoPE 'manages to decrease the OOD test loss' of the standard Transformer (least "
            f"standard / standard + RoPE median MSE at c = {cmax:g})")
    if min(gain) > 2 or max(gain) < 0.5:
        t.add("4", text, paper="> 1", ours=min(gain), holds=min(gain) > 2, tolerance="> 2", source="text")
    else:
        t.inconclusive("4", text, paper="> 1", ours=min(gain),
                       why=f"within 2× either way with {cfg['seeds']} seed(s), {cfg['steps'] or cfg['epochs']} "
                           f"{'steps' if cfg['steps'] else 'epochs'}; §7 also says 'no significant differences'",
                       source="text")
    c1 = {enc: min(at(cfg, runs[f"positional, {enc}"][task]["test"], 1.0) / at(cfg, runs["positional, one-hot"][task]["test"], 1.0)
                   for task in tasks) for enc in ("binary", "sinusoidal")}
    # 'less expressive' is a statement about what the encodings can represent; a higher ID MSE after a fixed
    # training budget is consistent with it but cannot tell it from slower fitting of the same function
    t.inconclusive("5", "binary and sinusoidal P are 'less expressive than one-hot': the positional Transformer's ID "
                   "(c = 1) MSE with them over its one-hot MSE (least over the two encodings and the tasks)",
                   paper="≥ 1 (less expressive)", ours=min(c1.values()),
                   why="higher ID MSE after a fixed budget: lower expressivity or slower fitting, this run cannot "
                       "tell which", source="text")
    shared = [k for k in paper.FIG24_C10_MEDIANS if k in tasks]
    if full and shared and 10.0 in cfg["c_list"]:
        worst = min(at(cfg, runs["standard + RoPE"][k]["test"], 10.0) / at(cfg, runs["positional, one-hot"][k]["test"], 10.0)
                    for k in shared)
        ref = min(paper.FIG24_C10_MEDIANS[k][0] / paper.FIG24_C10_MEDIANS[k][1] for k in shared)
        t.add("P1", f"paper scale, Fig. 24: standard + RoPE / positional median MSE at c = 10, least over "
              f"{', '.join(shared)}", paper=round(ref), ours=worst, holds=worst >= 100, tolerance="≥ 100", source="figure")
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
