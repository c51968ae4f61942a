"""Replica-batched training sweeps over (d, p) for paper 002 (§4's protocol; Figs. 1, 2, 10-14).

`run_sweep` trains every (d, p, seed) of one variant that is not yet in the result store
(`Context.units`). One stored entry per trained model (its config and the training protocol are
the key), so a rerun resumes and a larger grid reuses the points it shares with a smaller one.
`sweep_grid` runs it over the (d, p) grid of several variants (the phase diagrams), `train_seeds`
over the seeds of one model (the introspection chapters); `grid_array`, `grids`, `running_best`
and `min_params_reaching` reduce the rows.

Models are grouped into tensor programs by MLP width: padding every replica to the largest p of
its program costs R · p_max, so widths are bucketed by ⌈log₄ p⌉ (p ≤ 4, 5-16, 17-64, 65-256).
With `joint` (CI scale) all models of a variant train as one program. With streams="per-seed"
each seed trains on its own data stream (the stream its independent run would draw: the paper
draws fresh data per run), the replicas of one seed sharing it as in one independent program;
streams="shared" (the default, the earlier CI shortcut) gives every seed one stream, so the seeds
differ in their initialisation only. Per-seed streams cost 10-30 % more CPU at CI scale (the
data factors of the mixing are per replica, R-fold), so a chapter opts in.

Long programs (paper scale: 156,500 steps) save a checkpoint (weights, Adam moments, step) every
`checkpoint_every` steps through core (`core.checkpoint.program_checkpoint`, in
results/<scale>/checkpoints/<result id>/); with `time_limit` minutes set, the sweep stops after the
checkpoint that passes the limit, or before the next program, and raises `Incomplete`; the same
command then resumes from the checkpoint.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from attnlab.core.checkpoint import deadline_of, program_checkpoint
from attnlab.core.experiment import Context, Incomplete  # noqa: F401 (raised through core; tests import it here)
from attnlab.core.hashing import derive_seed
from attnlab.core.params import LR, Param, ParameterError, require_memory, STEPS
from attnlab.core.train import MaskedAdam

from . import bounds, paper
from .models import CountingConfig, ReplicaCounting, counting_batches, eval_tokens, train_counting
from .reference import CountingWeights


# Training parameters shared by the sweep chapters (each adds its grid parameters).
TRAINING_PARAMS = (
    STEPS.described("Adam steps per model (paper 156,500 = 500 epochs x 313 batches)"),
    Param("batch_size", "int", "sequences per step (paper 32)", min=1, max=65_536),
    LR.described("learning rate at step 0 (paper 1e-3)"),
    Param("lr_end", "float", "learning rate at the last step, linear in between (paper: constant 1e-3)",
          min=0.0, max=1.0),
    Param("eval_n", "int", "eval sequences (paper 3,000)", min=100, max=1_000_000),
    Param("eval_every", "int", "steps between evals for the best-accuracy curve; 0 = final only (paper: every epoch)",
          min=0, max=10_000_000),
    Param("checkpoint_every", "int", "steps between checkpoints of a program; 0 = none", min=0, max=10_000_000),
    Param("time_limit", "float", "minutes after which the sweep stops at a checkpoint (0 = no limit)", min=0.0,
          max=10_000.0),
    Param("joint", "bool", "train all models of a variant as one program (cheap at CI scale; the chapter says "
          "whether its seeds share one data stream there) instead of the paper's independent runs"),
)

# The `full` presets: the paper's protocol as independent runs, checkpointed every 20,000 steps and
# stopped at a checkpoint after 7 minutes (a rerun resumes).
FULL_TRAINING = dict(**paper.PROTOCOL, checkpoint_every=20_000, time_limit=7.0, joint=False)


@dataclass(frozen=True)
class Protocol:
    """How every model of a sweep is trained (the part of a stored key that is not the model)."""

    steps: int
    batch_size: int
    lr: float
    lr_end: float
    eval_n: int = paper.EVAL_N
    eval_every: int = 0
    sampler: str = "code"
    frozen_embeddings: bool = False  # App. D.3: embeddings fixed at random N(0, I/d) vectors
    keep_weights: bool = False

    @classmethod
    def from_config(cls, cfg: dict, **extra: Any) -> "Protocol":
        names = ("steps", "batch_size", "lr", "lr_end", "eval_n", "eval_every")
        return cls(**{k: cfg[k] for k in names}, **extra)


def p_bucket(p: int) -> int:
    """⌈log₄ p⌉ with p ≤ 4 in one bucket: the programs' padded widths are then 4, 16, 64, 256."""
    return max(1, math.ceil(math.log(p, 4) - 1e-9))


def _key(c: CountingConfig, proto: Protocol) -> dict:
    key = {"variant": c.variant, "T": c.T, "L": c.L, "d": c.d, "p": c.p, "seed": c.seed, **asdict(proto)}
    if not proto.keep_weights:
        del key["keep_weights"]
    return key


def weights_to_json(w: CountingWeights) -> dict:
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in asdict(w).items() if v is not None}


def weights_from_json(d: dict) -> CountingWeights:
    return CountingWeights(**{k: (np.asarray(v, dtype=np.float64) if k != "variant" else v) for k, v in d.items()})


def _freeze_embeddings(model: ReplicaCounting) -> None:
    """Replace each replica's embeddings by fixed random vectors μ_t ~ N(0, I/d) (BOS included;
    App. D.3 [repo]) and stop their training."""
    with torch.no_grad():
        for r, c in enumerate(model.configs):
            gen = torch.Generator().manual_seed(derive_seed({"frozen-embeddings": c.seed_config()}, c.seed))
            model.place("emb", r, torch.randn((c.T + model.bos, c.d), generator=gen, dtype=torch.float64) / math.sqrt(c.d))
    model.emb.requires_grad_(False)


def _train_program(ctx: Context, configs: list[CountingConfig], proto: Protocol, keys: list[dict], data_seed: int,
                   cfg: dict, stream_seeds: list[int] | None = None, stream_of: list[int] | None = None) -> list[dict]:
    """Train one program; with stream_seeds, replica r trains on the data stream seeded
    stream_seeds[stream_of[r]] (each a `counting_batches` stream; `data_seed` is then unused)."""
    checkpoint = program_checkpoint(ctx, keys)  # past the time limit: stop here, before the program
    T, L = configs[0].T, configs[0].L
    d, p = max(c.d for c in configs), max(c.p for c in configs)  # every replica is padded to these
    per_seq = 4 * L * (4 * d + 2 * p + 4 * L + 2)  # float32 activations of one sequence (measured: within 1.2x)
    require_memory(len(configs) * per_seq * max(1.3 * proto.batch_size, proto.eval_n),
                   f"a program of {len(configs)} models (d={d}, p={p})",
                   {"T": T, "L": L, "batch_size": proto.batch_size, "eval_n": proto.eval_n}, device=ctx.device)
    model = ReplicaCounting(configs, device=ctx.device)
    if stream_seeds is not None and len(stream_seeds) == 1:
        data_seed, stream_seeds = stream_seeds[0], None  # one stream: the plain [B, L] batches
    if stream_seeds is not None:
        model.set_streams(stream_of)
    if proto.frozen_embeddings:
        _freeze_embeddings(model)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = MaskedAdam(params, betas=paper.ADAM_BETAS, eps=paper.ADAM_EPS)
    ev = eval_tokens(T, L, n=proto.eval_n, device=ctx.device)
    lr = lambda s: proto.lr + (proto.lr_end - proto.lr) * s / max(1, proto.steps - 1)  # noqa: E731
    done, evals, curve, seconds = 0, [], [], 0.0
    ck = checkpoint.load(ctx.device) if checkpoint is not None else None
    if ck is not None:
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        done, evals, curve, seconds = ck["done"], ck["evals"], ck["curve"], ck["seconds"]
    every = cfg.get("checkpoint_every") or proto.steps
    final = None
    while done < proto.steps:
        n = min(every, proto.steps - done)
        if stream_seeds is None:
            batches = counting_batches(T, L, proto.batch_size, seed=data_seed, sampler=proto.sampler, device=ctx.device,
                                       start=done)
        else:  # [S, B, L]: one batch per stream
            batches = map(lambda bs: torch.stack(bs), zip(*[
                counting_batches(T, L, proto.batch_size, seed=s, sampler=proto.sampler, device=ctx.device, start=done)
                for s in stream_seeds]))
        log = train_counting(model, batches, n, lr, eval_set=ev, eval_every=proto.eval_every or None, opt=opt,
                             start=done, progress=ctx.progress, desc=f"{configs[0].variant}: {len(configs)} models")
        done += n
        seconds += log.seconds
        evals += log.eval_curve
        curve += log.loss_curve
        final = log.final_accuracy
        if proto.eval_every and done % proto.eval_every == 0 and done < proto.steps:
            evals.append(final)
        if done < proto.steps:  # (checkpoint_every > 0, so `checkpoint` is not None)
            checkpoint.save({"model": model.state_dict(), "opt": opt.state_dict(), "done": done, "evals": evals,
                             "curve": curve, "seconds": seconds})
            checkpoint.stop_if_late(done, proto.steps, f"a program of {len(configs)} models")
    rows = []
    ev_arr = np.array(evals + [final]) if evals else np.array([final])
    for r, c in enumerate(configs):
        row = {"final_accuracy": final[r], "best_accuracy": float(ev_arr[:, r].max()), "n_params": c.n_params,
               "eval_curve": ev_arr[:-1, r].round(5).tolist(), "loss_curve": [round(x[r], 5) for x in curve],
               "seconds": round(seconds / len(configs), 3)}
        if proto.keep_weights:
            row["weights"] = weights_to_json(model.weights(r))
        rows.append(row)
    if checkpoint is not None:
        checkpoint.remove()
    return rows


def run_sweep(ctx: Context, variant: str, T: int, L: int, dp: list[tuple[int, int]], seeds: list[int],
              proto: Protocol, data_seed: int = 0, joint: bool = False, streams: str = "shared") -> list[dict]:
    """Train (or load) every model (variant, T, L, d, p, seed) for (d, p) in dp and seed in seeds.

    joint=False (the paper's independent runs): one program per (width bucket, seed), each seed
    with its own data stream. joint=True (cheap at CI scale, where a step's fixed cost dominates):
    all models in one program; with streams="per-seed" each seed trains on the data stream its
    independent run draws (per-replica batches, `ReplicaCounting.set_streams`), with
    streams="shared" every model on one stream (seeds differ in the initialisation only). The
    stored key records the mode ("joint": data_seed, plus "streams": "per-seed"), so they never
    mix; a model's training does not depend on the other models of its program (tested), so any
    subset reuses it.

    Returns one row per model: d, p, seed, final_accuracy, best_accuracy (max over the evals
    every `eval_every` steps and the final one; Fig. 10), n_params, eval_curve, loss_curve and,
    with proto.keep_weights, the weights (as `weights_from_json` reads them)."""
    cfg = ctx.config
    configs = [CountingConfig(variant, T, L, d, p, s) for (d, p) in dp for s in seeds]
    # the data stream is in the key: "joint": data_seed for one shared stream; for independent runs a
    # nonzero data_seed (a reseeded CI run) adds "data_seed", so the keys of data_seed 0 (every stored
    # paper-scale run) are unchanged
    if streams not in ("per-seed", "shared"):
        raise ValueError(f"run_sweep: streams={streams!r}; choose 'per-seed' or 'shared'")
    joint_key = {"joint": data_seed, **({"streams": streams} if streams != "shared" else {})}
    key_of = ((lambda c: {**_key(c, proto), **joint_key}) if joint else
              (lambda c: {**_key(c, proto), **({"data_seed": data_seed} if data_seed else {})}))
    keys = [key_of(c) for c in configs]

    deadline_of(ctx)  # the run's time limit, from now on (absolute: the same for every worker of a cluster)

    def plan(missing: list[int]) -> list[list[int]]:
        """The programs, in training order: one per (p bucket, seed) (different seeds see
        different data), or all models in one when joint."""
        groups: dict[tuple[int, int], list[int]] = {}
        for i in missing:
            c = configs[i]
            groups.setdefault((0, -1) if joint else (p_bucket(c.p), c.seed), []).append(i)
        return [group for _, group in sorted(groups.items())]

    def train(group: list[int]):
        """Train one program (the models `group`); yield each row as the program ends."""
        seed = configs[group[0]].seed
        stream_seeds = stream_of = None
        if joint and streams == "per-seed":  # each seed the stream of its independent run (below)
            seeds_in = sorted({configs[i].seed for i in group})
            stream_seeds = [derive_seed({"data": data_seed}, s) for s in seeds_in]
            stream_of = [seeds_in.index(configs[i].seed) for i in group]
        stream = derive_seed({"data": data_seed, "joint": True}, 0) if joint else derive_seed({"data": data_seed}, seed)
        rows = _train_program(ctx, [configs[i] for i in group], proto, [keys[i] for i in group], stream, cfg,
                              stream_seeds, stream_of)
        for i, row in zip(group, rows):
            yield i, row, row["seconds"]

    found = ctx.units(keys, train, plan, f"{variant} programs")
    return [{"variant": variant, "d": c.d, "p": c.p, "seed": c.seed, **row} for c, row in zip(configs, found)]


def seed_list(cfg: dict, name: str = "seed_list") -> list[int]:
    """The chapter's seeds (seeds are replicas, issue 27), refused with a ParameterError when one repeats
    (a repeated seed would count one run twice in a row judged over seeds)."""
    seeds = list(cfg[name])
    if len(set(seeds)) != len(seeds):
        raise ParameterError(f"parameter {name!r}: value {seeds!r} has repeated seeds; give distinct seed ids")
    return seeds


def seed_param(paper_runs: str = "paper: 5 runs") -> Param:
    """The seed knob shared by the trained chapters: `attnlab run ID -p seed_list '[3, 4, 5]'` reruns
    the chapter with other seeds (tests/test_reseed.py)."""
    return Param("seed_list", "int_list", f"list of distinct seed ids: model seeds, trained as replicas ({paper_runs})",
                 min=0, max=2**31 - 1)


DATA_SEED = Param("data_seed", "int", "seed of the training data stream(s) (see the chapter for whether its seeds share one)",
                  min=0, max=2**31 - 1)


def sweep_grid(ctx: Context, variants, T: int, L: int, d_list: list[int], p_list: list[int],
               seeds: list[int], data_seed: int = 0, streams: str = "shared") -> dict:
    """Train (or load) the (d, p, seed) grid of every variant at (T, L) with the protocol of
    ctx.config (Figs. 1, 2, 10-14). Returns T, L, d_list, p_list, seeds, majority (2/L), rows
    {variant: [{d, p, seed, final_accuracy, best_accuracy, n_params}]} (no curves) and bounds
    {variant: the §5.2 bounds of `bounds.theory_bounds`, tuples as lists}."""
    proto = Protocol.from_config(ctx.config)
    dp = [(d, p) for d in d_list for p in p_list]
    rows = {}
    for v in variants:
        got = run_sweep(ctx, v, T, L, dp, seeds, proto, data_seed=data_seed, joint=ctx.config.get("joint", False),
                        streams=streams)
        rows[v] = [{k: r[k] for k in ("d", "p", "seed", "final_accuracy", "best_accuracy", "n_params")} for r in got]
    return {"T": T, "L": L, "d_list": list(d_list), "p_list": list(p_list), "seeds": list(seeds),
            "majority": 2 / L, "rows": rows,
            "bounds": {v: {k: list(b) if isinstance(b, tuple) else b for k, b in bounds.theory_bounds(v, T, L).items()}
                       for v in variants}}


def train_seeds(ctx: Context, variant: str, T: int, L: int, d: int, p: int, seeds: list[int], proto: Protocol, *,
                batched: bool, data_seed: int = 0) -> list[dict]:
    """Train (or load from the store) one model per seed, with weights (proto.keep_weights), for
    the introspection chapters.

    batched=False: one program and one data stream per seed (the paper's independent runs).
    batched=True: one replica-batched program for all seeds, which all see the same
    mini-batches (initialisations differ; the CI shortcut: one program costs about a quarter of
    the separate ones on one CPU thread). Rows as `run_sweep` returns them."""
    if not proto.keep_weights:
        raise ValueError("train_seeds is for introspection: pass a Protocol with keep_weights=True")
    return run_sweep(ctx, variant, T, L, [(d, p)], list(seeds), proto, data_seed=data_seed, joint=batched)


def grid_array(rows: list[dict], d_list: list[int], p_list: list[int], field: str = "final_accuracy",
               reduce: str = "mean") -> np.ndarray:
    """[len(d_list), len(p_list)] array of `field` reduced over seeds (mean, max, std (ddof 0), min)."""
    out = np.full((len(d_list), len(p_list)), np.nan)
    fn = {"mean": np.mean, "max": np.max, "std": np.std, "min": np.min}[reduce]
    for i, d in enumerate(d_list):
        for j, p in enumerate(p_list):
            vals = [r[field] for r in rows if r["d"] == d and r["p"] == p]
            if vals:
                out[i, j] = fn(vals)
    return out


def running_best(rows: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """Fig. 2's line: accuracy's cumulative maximum after sorting the runs by parameter count."""
    order = sorted(rows, key=lambda r: (r["n_params"], -r["final_accuracy"]))
    n = np.array([r["n_params"] for r in order])
    return n, np.maximum.accumulate(np.array([r["final_accuracy"] for r in order]))


def grids(sweep: dict, variant: str) -> dict[str, np.ndarray]:
    """The per-cell arrays of Figs. 1, 10, 11 from a `sweep_grid` result: mean / std (over seeds)
    of the final accuracy, best accuracy (max over seeds and evals), and the star / dot masks of
    Fig. 1 (some run reached 100% / ≥ 99% at some eval)."""
    rows, d, p = sweep["rows"][variant], sweep["d_list"], sweep["p_list"]
    best = grid_array(rows, d, p, "best_accuracy", "max")
    return {"mean": grid_array(rows, d, p, "final_accuracy", "mean"),
            "std": grid_array(rows, d, p, "final_accuracy", "std"),
            "best": best, "stars": best >= 1.0, "dots": (best >= 0.99) & (best < 1.0)}


def min_params_reaching(rows: list[dict], threshold: float) -> int | None:
    """Smallest parameter count of a run with final accuracy ≥ threshold (None if none)."""
    ok = [r["n_params"] for r in rows if r["final_accuracy"] >= threshold]
    return min(ok) if ok else None


# Precision of the trained rows judged over seeds (`ClaimsTable.add_seeds`): the band around a
# threshold inside which a seed counts as undecided. An accuracy is measured on a fixed eval set and
# printed to three digits: half a point (ACC_ATOL) is the most that float noise of another CPU moves
# an accuracy that has settled; the run-to-run variation itself is the seeds' spread. A ratio of two
# trained statistics (RATIO_RTOL) is as precise as its factors, 5 %.
ACC_ATOL = 0.005
RATIO_RTOL = 0.05


def by_seed(rows: list[dict]) -> dict[int, list[dict]]:
    """{seed: that seed's rows}, in seed order (a chapter's seeds are replicas: one value per seed)."""
    out: dict[int, list[dict]] = {}
    for r in sorted(rows, key=lambda r: r["seed"]):
        out.setdefault(r["seed"], []).append(r)
    return out


def seed_sweeps(sweep: dict) -> list[dict]:
    """One sweep per seed (the rows of that seed only), in seed order: a cell's "mean" is then that
    seed's final accuracy and its "best" that seed's best over evals."""
    return [{**sweep, "seeds": [s], "rows": {v: [r for r in rows if r["seed"] == s] for v, rows in sweep["rows"].items()}}
            for s in sorted(sweep["seeds"])]
