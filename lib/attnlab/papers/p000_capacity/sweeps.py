"""The paper's resumable capacity sweep (§6.1, App. A.1–A.2): runs over (m, d, h, D_K, seed),
trained as replica-batched programs (`models.train_grid`) through the result store.

A unit is one trained replica, keyed by its full configuration and protocol, so a rerun (or a
larger grid that contains it) reuses it. The plan packs the missing units into programs of at
most `max_replicas` replicas, cell by cell (one (m, d) cell's runs share their data), so a long
paper-scale sweep is a sequence of resumable chunks.

Every trained chapter's programs checkpoint through core (`core.checkpoint.program_checkpoint`):
with `checkpoint_every` (RESUME_PARAMS) a program saves its state every that many steps, and with
`time_limit` minutes a run stops at the first checkpoint after the limit, or between programs, with
`Incomplete` (exit 75); the same command resumes bit for bit, from
results/<scale>/checkpoints/<result id>/. `CI_RUN` and `FULL_RUN`: the presets' values.
"""

from __future__ import annotations

import inspect
import math

from attnlab.core.checkpoint import deadline_of, program_checkpoint, RESUME_PARAMS  # noqa: F401 (chapters' params)
from attnlab.core.experiment import Context
from attnlab.core.progress import tqdm

from . import analysis, models, paper

CI_RUN = dict(checkpoint_every=0, time_limit=0.0)  # CI programs (seconds) are not checkpointed
# every 20,000 steps (as paper 002's): a 256-replica program's state (weights and Adam moments) can reach
# ~100 MB; a run stops only when told (-p time_limit MINUTES)
FULL_RUN = dict(checkpoint_every=20_000, time_limit=0.0)


def grouped_programs(ctx: Context, keys: list[dict], steps: int, run, group=lambda key: key["seed"]):
    """`Context.units`' compute for the trained chapters: the missing units grouped (by default by seed,
    whose data they share), one tensor program per group. run(group, its keys, progress bar) returns one
    row per key (with its "seconds"); one progress bar counts groups × steps. A `run` that takes a
    `checkpoint` keyword gets its program's (`program_checkpoint`: None without checkpoint_every and
    time_limit); past the time limit the sweep stops between programs in any case."""
    checkpointed = "checkpoint" in inspect.signature(run).parameters
    deadline_of(ctx)  # the run's time limit starts now

    def compute(missing):
        groups: dict = {}
        for i in missing:
            groups.setdefault(group(keys[i]), []).append(i)
        bar = tqdm(total=len(groups) * steps, desc="training", disable=not ctx.progress, mininterval=2.0)
        for g, idx in groups.items():
            ks = [keys[i] for i in idx]
            checkpoint = program_checkpoint(ctx, ks)
            rows = run(g, ks, bar, checkpoint=checkpoint) if checkpointed else run(g, ks, bar)
            for i, row in zip(idx, rows):
                yield i, row, row["seconds"]
            if checkpoint is not None:  # the rows are stored
                checkpoint.remove()
        bar.close()
    return compute


def cell_grid(m: int, d: int, heads, dks, window: tuple[float, float] | None = None) -> list[tuple[int, int]]:
    """The (h, D_K) pairs of one cell: h divides D_K, and (with `window` = (lo, hi)) D_K lies in
    [lo, hi] x m log2 m / d, the part of the grid where the threshold can be."""
    x = analysis.law_x(m, d)
    return [(h, D) for D in sorted(dks) for h in sorted(heads)
            if D % h == 0 and (window is None or window[0] * x <= D <= window[1] * x)]


def sweep_keys(cells, heads, dks, seeds: int, *, steps: int, lr: float, n_val: int, n_test: int,
               window: tuple[float, float] | None = None, table2: bool = False, first_seed: int = 0) -> list[dict]:
    """One store key per run, seeds first_seed .. first_seed + seeds - 1. `steps`: the cap; with
    `table2`, each cell's own cutoff (Table 2, never above the cap)."""
    keys = []
    for m, d in cells:
        cut = min(paper.TABLE2_STEPS.get((m, d), paper.TABLE2_DEFAULT), steps) if table2 else steps
        for s in range(first_seed, first_seed + seeds):
            for h, D in cell_grid(m, d, heads, dks, window):
                keys.append({"what": "capacity-run", "m": m, "d": d, "h": h, "D_K": D, "seed": s, "steps": cut,
                             "lr": lr, "n_val": n_val, "n_test": n_test})
    return keys


def plan(keys: list[dict], max_replicas: int):
    """Split missing unit indices into programs: cells in order, at most `max_replicas` each."""
    def split(missing: list[int]) -> list[list[int]]:
        by_cell: dict[tuple[int, int], list[int]] = {}
        for i in missing:
            by_cell.setdefault((keys[i]["m"], keys[i]["d"]), []).append(i)
        groups, cur = [], []
        for idx in by_cell.values():
            for i in idx:
                cur.append(i)
                if len(cur) == max_replicas:
                    groups.append(cur)
                    cur = []
        if cur:
            groups.append(cur)
        return groups
    return split


def run(ctx: Context, keys: list[dict], max_replicas: int = 512) -> list[dict]:
    """Train (or load) every key; one `models.train_grid` program per planned group."""
    def train(group: list[int]):
        checkpoint = program_checkpoint(ctx, [keys[i] for i in group])
        runs = [dict(keys[i]) for i in group]
        cap = max(r["steps"] for r in runs)
        bar = tqdm(total=cap, desc=f"training {len(runs)} replicas", disable=not ctx.progress, mininterval=5.0)
        out = models.train_grid(runs, steps=cap, lr=runs[0]["lr"], ell=paper.CONTEXT_LENGTH, rho=paper.RHO,
                                alpha=paper.ALPHA, check_every=paper.CHECK_EVERY, patience=paper.PATIENCE,
                                stop_f1=paper.STOP_F1, n_val=runs[0]["n_val"], n_test=runs[0]["n_test"],
                                device=str(ctx.device), progress=bar, checkpoint=checkpoint)
        bar.close()
        for i, row in zip(group, out):
            yield i, row, row["seconds"]
        if checkpoint is not None:
            checkpoint.remove()

    lrs = {(k["lr"], k["n_val"], k["n_test"]) for k in keys}
    if len(lrs) > 1:
        raise ValueError(f"one sweep uses one (lr, n_val, n_test); got {sorted(lrs)}")
    deadline_of(ctx)  # the run's time limit starts now, on the context every worker of a cluster gets
    return ctx.units(keys, train, plan=plan(keys, max_replicas), desc="programs")


def by_cell(runs: list[dict]) -> dict[tuple[int, int], list[dict]]:
    out: dict[tuple[int, int], list[dict]] = {}
    for r in runs:
        out.setdefault((r["m"], r["d"]), []).append(r)
    return out


def seed_thresholds(runs: list[dict], level: float = paper.PASS_F1) -> list[dict[tuple[int, int], dict]]:
    """`thresholds` of each seed's own runs, in seed order (the seed rule judges a trained D_K* per seed)."""
    seeds = sorted({r["seed"] for r in runs})
    return [thresholds([r for r in runs if r["seed"] == s], level) for s in seeds]


def thresholds(runs: list[dict], level: float = paper.PASS_F1) -> dict[tuple[int, int], dict]:
    """Per (m, d) cell: `analysis.dk_star` (central / lower / upper D_K*, h*, d_k*, h* interval),
    plus the law's abscissa x = m log2 m / d and the tested D_K grid."""
    out = {}
    for (m, d), rr in by_cell(runs).items():
        out[(m, d)] = {**analysis.dk_star(rr, level), "x": analysis.law_x(m, d),
                       "grid": sorted({r["D_K"] for r in rr})}
    return out


def grid_step_range(grid: list[int], lo: float, hi: float) -> tuple[float, float]:
    """The values a D_K* measured on `grid` may take and still be within one grid step of the range
    [lo, hi]: from the largest grid value below lo (or -inf) to the smallest above hi (or +inf)."""
    below = [g for g in grid if g < lo]
    above = [g for g in grid if g > hi]
    return (max(below) if below else -math.inf, min(above) if above else math.inf)
