"""The paper's training over configs, resumable: each trained model (a point) is one stored unit.

`train_points` trains one-layer AoTs (Eq. 1, the authors' shared maps, or 1 head + MLP),
`train_deep_points` L-layer ones, both as replica-batched programs through `Context.units`, each
program checkpointed by core (`core.checkpoint.program_checkpoint`: every `checkpoint_every` steps
and at the run's `time_limit`, which then raises `Incomplete`; the same command resumes it bit for
bit, from results/<scale>/checkpoints/<result id>/, and a run past its time limit stops at the next
program boundary);
`sweep_dh` and `sweep_aot_mlp` are the sweeps of Exps. 2 and 5 shared by the main-text and
appendix chapters; `train_aot_kl` fits AoTs to a conditional distribution (Propositions 1-3).
"""

from __future__ import annotations

import numpy as np
import torch

from attnlab.core.checkpoint import deadline_of, program_checkpoint, RESUME_PARAMS
from attnlab.core.experiment import Context
from attnlab.core.fits import power_fit, presaturation
from attnlab.core.params import CHUNK, Param, ParameterError, require_memory, SEED, SEEDS, STEPS
from attnlab.core.progress import tqdm
from attnlab.core.train import linear_lr, MaskedAdam, train_replicas

from . import bounds, encoders
from .analysis import fits, mean_accuracy, metric_of
from .models import AoTConfig, fig3_parameter_axis, matched_mlp_width, ReplicaAoT
from .models_deep import DeepConfig, ReplicaDeep
from .tasks import full_batches, lookup_table_task, paper_batches


TRAINING_PARAMS = (
    Param("N", "int", "vocabulary size; the sequences are all N^2 bigrams", min=2, max=2000),
    SEEDS.described("parameter seeds per point (the paper: 5)"),
    SEED.described("first parameter seed: the replicas of a point take seeds seed, seed + 1, …, seed + "
          "seeds - 1 (None: 0, the seeds of the stored paper-scale runs)", nullable=True),
    STEPS.described("optimizer steps"),
    Param("batch_size", "int", "sequences per batch; 0 = the whole population every step (CI protocol)", min=0,
          max=65536),
    Param("n_batches", "int", "paper protocol: batches per epoch of the fixed sample", min=1, max=4096),
    Param("lr_start", "float", "learning rate at the start (linear decay, stepped per epoch)", min=0.0, max=1.0),
    Param("lr_end", "float", "learning rate at the end", min=0.0, max=1.0),
    Param("task_seed", "int", "seed of the random look-up table (shared by all replicas)", min=0, max=2**31 - 1),
    CHUNK.described("replicas per tensor program: one resumable unit of work"),
) + RESUME_PARAMS
# The operational values of the presets: CI programs (seconds) are not checkpointed. A paper-scale
# program saves its state every 4,096 steps (a 77-replica Fig. 1a program's state is 27 MiB, 0.7 s to
# write on a loaded CPU box: the 4,096-step programs save none, the 8,192- and 16,384-step ones of
# Figs. 3 and 8-10 one to three), and at its time limit; a run stops only when told (`-p time_limit
# MINUTES`), then at the limit (saving its state), or between programs.
CI_RUN = dict(checkpoint_every=0, time_limit=0.0)
FULL_RUN = dict(checkpoint_every=4096, time_limit=0.0)


def seed_range(cfg: dict) -> range:
    """The parameter seeds of every point: `seeds` consecutive seeds from `seed` (None: 0). The store
    key of a point holds its seed, so the default range keeps the stored runs' keys."""
    first = 0 if cfg.get("seed") is None else cfg["seed"]
    return range(first, first + cfg["seeds"])


def check_training_memory(ctx: Context, points: list[dict], n: int, layers: int = 1) -> None:
    """Refuse (ParameterError) a program of `n` replicas of the largest of `points` whose float32
    activations would not fit: logits [R, B, N] and per-head attention [R, B, H, S, S + 2 d_h],
    for a training batch B (batch_size, or all N^2 sequences) and the all-pairs evaluation (the
    estimate is 1.1-1.6 times the peak measured on CPU for N = 60-100, H = 11-31, d = 13-60)."""
    cfg, S = ctx.config, 2
    H, d = max(p["H"] for p in points), max(p["d"] for p in points)
    d_h = max(p.get("d_h", p["d"]) for p in points)
    w = max(p.get("mlp_width", p.get("w", 0)) for p in points)
    per_seq = layers * (H * S * (S + 2 * d_h) + 2 * S * d + w)
    population = cfg["N"] ** 2
    batch = population if cfg["batch_size"] == 0 else cfg["batch_size"]
    train = 4 * n * batch * (2 * cfg["N"] + 1.5 * per_seq)
    evaluate = 4 * n * population * (cfg["N"] + per_seq)
    sample = 16 * cfg["batch_size"] * cfg["n_batches"]
    require_memory(max(train, evaluate) + sample, f"a program of {n} replicas (H={H}, d={d}, d_h={d_h})",
                   {"N": cfg["N"], "chunk": cfg["chunk"], "batch_size": cfg["batch_size"],
                    "n_batches": cfg["n_batches"]}, device=ctx.device)


def _batches(cfg: dict, tokens: torch.Tensor, targets: torch.Tensor):
    """The training batches of the config as a function start -> the stream from batch `start` on
    (`train_replicas` resumes a program with it): the whole population every step (batch_size 0),
    or the authors' sampled epochs."""
    if cfg["batch_size"] == 0:
        return lambda start: full_batches(tokens, targets)
    return lambda start: paper_batches(tokens, targets, cfg["batch_size"], cfg["n_batches"], cfg["task_seed"], start)


def train_points(ctx: Context, points: list[dict], desc: str) -> list[dict]:
    """Train every point (one AoT replica each) not yet in the store, `chunk` replicas at a time.

    A point is {d, d_h, H, seed} plus optional keys: param ("paper" | "repo", default "paper"),
    mlp_width (default 0: attention only) and lr_end (default: the config's). Defaults are left
    out of the store key, so plain points keep their keys. Replicas of one program share `param`;
    each replica follows its own learning-rate schedule.
    """
    cfg = ctx.config
    common = {k: cfg[k] for k in ("N", "steps", "batch_size", "n_batches", "lr_start", "lr_end", "task_seed")}
    defaults = {"param": "paper", "mlp_width": 0}
    keys = [{"model": "aot", "S": 2, **common, **{k: v for k, v in p.items() if defaults.get(k, None) != v}}
            for p in points]
    programs: dict[int, list[int]] = {}  # each point's program, planned over all points

    def plan(missing: list[int]) -> list[list[int]]:
        """The programs, in training order: similar sizes together, one kind per program, `chunk` at
        most. They are planned over all points, stored or not, so a resumed sweep trains the same
        programs as an uninterrupted one (replicas are independent in exact arithmetic, not in float32
        rounding); a program with missing points is trained whole and stores only those."""
        todo = sorted(range(len(keys)), key=lambda i: (keys[i]["d"], keys[i]["d_h"], keys[i].get("mlp_width", 0),
                                                       keys[i]["H"]))  # similar sizes share a program
        chunks = []  # one program per (param, with or without MLP): attention-only replicas skip the padded MLP
        kind = lambda i: (keys[i].get("param", "paper"), keys[i].get("mlp_width", 0) > 0)  # noqa: E731
        for group_kind in sorted({kind(i) for i in todo}):
            group = [i for i in todo if kind(i) == group_kind]
            chunks += [group[j:j + cfg["chunk"]] for j in range(0, len(group), cfg["chunk"])]
        wanted = set(missing)
        chunks = [c for c in chunks if wanted.intersection(c)]
        check_training_memory(ctx, [points[i] for c in chunks for i in c], max(map(len, chunks)))
        programs.update({i: c for c in chunks for i in c})
        return [[i for i in c if i in wanted] for c in chunks]

    def train(group: list[int]):
        """Train the program of the points `group` (with its stored points, if any); yield the rows of `group`."""
        chunk = programs[group[0]]
        ks = [keys[i] for i in chunk]
        checkpoint = program_checkpoint(ctx, ks)  # past the time limit: stop here, between programs
        tokens, targets = lookup_table_task(cfg["N"], 2, cfg["task_seed"])
        tokens, targets = tokens.to(ctx.device), targets.to(ctx.device)
        spe = 1 if cfg["batch_size"] == 0 else cfg["n_batches"]
        model = ReplicaAoT([AoTConfig(cfg["N"], 2, k["d"], k["d_h"], k["H"], k["seed"], k.get("param", "paper"),
                                      k.get("mlp_width", 0)) for k in ks], device=ctx.device)
        batches = _batches(cfg, tokens, targets)
        ends = sorted({k["lr_end"] for k in ks})
        if len(ends) == 1:
            lr = linear_lr(cfg["lr_start"], ends[0], cfg["steps"], spe)
        else:  # a replica's schedule is exactly the one it would follow alone
            schedules = [linear_lr(k["lr_start"], k["lr_end"], cfg["steps"], spe) for k in ks]
            lr = lambda step: torch.tensor([f(step) for f in schedules], dtype=torch.float64)  # noqa: E731
        log = train_replicas(model, batches, cfg["steps"], lr, progress=ctx.progress, desc=f"{len(chunk)} replicas",
                             checkpoint=checkpoint)
        with torch.no_grad():
            acc = (model(tokens).argmax(-1) == targets).float().mean(1).tolist()
        for r, i in enumerate(chunk):
            if i in group:
                yield i, {"accuracy": acc[r], "tail_batch_accuracy": log.tail_batch_accuracy[r],
                          "final_loss": log.final_loss[r], "steps": log.steps_trained[r]}, log.seconds / len(chunk)
        if checkpoint is not None:  # the rows are stored: the state is no longer needed
            checkpoint.remove()

    deadline_of(ctx)  # the run's time limit starts now, on the context every worker of a cluster gets
    return [{**p, **row} for p, row in zip(points, ctx.units(keys, train, plan, desc))]


def untrained_accuracy(N: int, configs: list[AoTConfig], task_seed: int = 0) -> float:
    """Mean all-pairs accuracy of freshly initialised AoTs (the random baseline is 1/N)."""
    tokens, targets = lookup_table_task(N, 2, task_seed)
    with torch.no_grad():
        return float((ReplicaAoT(configs)(tokens).argmax(-1) == targets).float().mean())


def train_aot_kl(configs: list[AoTConfig], tokens: torch.Tensor, prior: torch.Tensor, cond: torch.Tensor,
                 steps: int, lr: float, device="cpu", curve_every: int = 25, progress: bool = False) -> dict:
    """Full-batch Adam on d_KL(pi, T) (soft targets), replica-batched, float64.
    Returns the final KL per replica and the curve (every `curve_every` steps)."""
    model = ReplicaAoT(configs, dtype=torch.float64, device=device)
    params = list(model.parameters())
    opt = MaskedAdam(params)
    prior, cond, tokens = prior.to(device), cond.to(device), tokens.to(device)
    neg_h = encoders.negative_entropy(prior, cond)
    schedule = linear_lr(lr, lr / 10, steps)
    active = torch.ones(len(configs), dtype=torch.bool, device=device)
    curve, steps_at = [], []

    def kl():
        return -(prior[None, :, None] * cond[None] * torch.log_softmax(model(tokens), -1)).sum((1, 2)) + neg_h

    for step in tqdm(range(steps), desc="AoT on the KL loss", disable=not progress, mininterval=5.0, leave=False):
        for p in params:
            p.grad = None
        loss = kl()
        if step % curve_every == 0:
            curve.append(loss.detach().cpu().tolist())
            steps_at.append(step)
        loss.sum().backward()
        opt.step(torch.full((len(configs),), schedule(step), dtype=torch.float64, device=device), active)
    with torch.no_grad():
        final = kl().cpu().tolist()
    curve.append(final)
    steps_at.append(steps)
    return {"kl": final, "curve": curve, "steps": steps_at}


VARIANTS = Param("variants", "str", "parametrizations to train: both, paper (Eq. 1) or repo (authors' code)",
                 choices=("both", "paper", "repo"))


def variants_of(cfg: dict) -> list[str]:
    return ["paper", "repo"] if cfg["variants"] == "both" else [cfg["variants"]]


def sweep_dh(ctx: Context, d: int, H: int, dh_list: list[int], variants: list[str], desc: str) -> dict:
    """Exp. 2: train (d, d_h, H) for every d_h and variant; mean accuracy per d_h and the two fits."""
    cfg = ctx.config
    if max(dh_list) > d:
        raise ParameterError(f"parameter 'dh_list': value {dh_list} is not allowed; every d_h must be <= d = {d}")
    points = [{"d": d, "d_h": k, "H": H, "seed": s, "param": v} for v in variants for k in dh_list
              for s in seed_range(cfg)]
    rows = train_points(ctx, points, desc)
    metric, x = metric_of(cfg), np.array(dh_list, dtype=float)
    per = {}
    for v in variants:
        acc = np.array([mean_accuracy(rows, metric, param=(v, "paper"), d_h=(k, None)) for k in dh_list])
        per[v] = {"accuracy": acc.tolist(), "fits": fits(x, acc) if len(x) >= 3 else {},
                  "convex": bool(np.all(np.diff(acc, 2) >= -0.02)) if len(x) >= 3 else None}
    return {"d": d, "H": H, "dh_list": list(dh_list), "metric": metric, "points": rows, "per_variant": per,
            "bound": [float(bounds.corollary2_accuracy(cfg["N"], d, k, H)) for k in dh_list],
            "previous": [float(bounds.previous_accuracy_bound(cfg["N"], k, H)) for k in dh_list]}


def sweep_aot_mlp(ctx: Context, d_list: list[int], H_list: list[int], mlp_lr_end: float, desc: str,
                  axis=fig3_parameter_axis) -> dict:
    """Exp. 5: per d, the AoT (d = d_h, H heads) and the MLP model (1 head, w = 2d(H - 1)) against
    the paper's parameter axis; linear fits of accuracy against parameters for both."""
    cfg = ctx.config
    S = seed_range(cfg)
    points = [{"d": d, "d_h": d, "H": H, "seed": s} for d in d_list for H in H_list for s in S]
    points += [{"d": d, "d_h": d, "H": 1, "seed": s, "mlp_width": matched_mlp_width(d, H), "lr_end": mlp_lr_end}
               for d in d_list for H in H_list for s in S]
    rows = train_points(ctx, points, desc)
    metric = metric_of(cfg)
    per_d = {}
    for d in d_list:
        x = np.array([axis(d, H, cfg["N"]) for H in H_list], dtype=float)
        aot = np.array([mean_accuracy(rows, metric, d=(d, None), H=(H, None), mlp_width=(0, 0)) for H in H_list])
        mlp = np.array([mean_accuracy(rows, metric, d=(d, None), H=(1, None), mlp_width=(matched_mlp_width(d, H), 0))
                        for H in H_list])
        fa, fm = power_fit(x, aot), power_fit(x, mlp)
        n = presaturation(aot)
        fpre = power_fit(np.array(H_list[:n], float), aot[:n]) if n >= 2 else None
        per_d[d] = {"params": x.tolist(), "aot": aot.tolist(), "mlp": mlp.tolist(),
                    "widths": [matched_mlp_width(d, H) for H in H_list],
                    "aot_r2": fa.r2, "mlp_r2": fm.r2, "aot_fit": {"a": fa.a, "b": fa.b},
                    "mlp_fit": {"a": fm.a, "b": fm.b},
                    "aot_slope_per_head": fpre.a if fpre else float("nan"),
                    "aot_r2_presat": fpre.r2 if fpre else float("nan")}
    return {"d_list": list(d_list), "H_list": list(H_list), "metric": metric, "points": rows, "per_d": per_d}


TRAIN_KEYS = ("N", "layers", "steps", "batch_size", "n_batches", "lr_start", "lr_end", "task_seed")


def mlp_width(d: int, H: int) -> int:
    """The MLP width that matches an AoT with H heads per layer: 4 d^2 (H - 1) = 2 d w (up to w biases)."""
    return 2 * d * (H - 1)


def deep_config(cfg: dict, p: dict) -> DeepConfig:
    return DeepConfig(cfg["N"], 2, cfg["layers"], p["d"], p["d_h"], p["H"], p["w"], p["seed"])


def train_deep_points(ctx: Context, points: list[dict], desc: str) -> list[dict]:
    """Train every point (one replica each) not yet in the store, `chunk` replicas at a time.
    Each stored row also holds the replica's accuracy before training (the random baseline)."""
    cfg = ctx.config
    keys = [{"model": "deep", "S": 2, **{k: cfg[k] for k in TRAIN_KEYS}, **p} for p in points]
    programs: dict[int, list[int]] = {}  # each point's program, planned over all points

    def plan(missing: list[int]) -> list[list[int]]:
        """The programs, in training order: similar sizes together (less padding), MLP replicas
        together (the MLP runs on them only), `chunk` at most; planned over all points, so a resumed
        sweep trains the same programs as an uninterrupted one (see `train_points`)."""
        todo = sorted(range(len(keys)), key=lambda i: (points[i]["w"] > 0, points[i]["H"], points[i]["d"],
                                                       points[i]["d_h"], points[i]["w"]))
        wanted = set(missing)
        chunks = [c for c in (todo[i:i + cfg["chunk"]] for i in range(0, len(todo), cfg["chunk"]))
                  if wanted.intersection(c)]
        check_training_memory(ctx, [points[i] for c in chunks for i in c], max(map(len, chunks)), cfg["layers"])
        programs.update({i: c for c in chunks for i in c})
        return [[i for i in c if i in wanted] for c in chunks]

    def train(group: list[int]):
        """Train the program of the points `group` (with its stored points, if any); yield the rows of `group`."""
        chunk = programs[group[0]]
        checkpoint = program_checkpoint(ctx, [keys[i] for i in chunk])  # past the time limit: stop here
        tokens, targets = lookup_table_task(cfg["N"], 2, cfg["task_seed"])
        tokens, targets = tokens.to(ctx.device), targets.to(ctx.device)
        model = ReplicaDeep([deep_config(cfg, points[i]) for i in chunk], device=ctx.device)
        with torch.no_grad():
            acc0 = (model(tokens).argmax(-1) == targets).float().mean(1).tolist()
        spe = 1 if cfg["batch_size"] == 0 else cfg["n_batches"]
        log = train_replicas(model, _batches(cfg, tokens, targets), cfg["steps"],
                             linear_lr(cfg["lr_start"], cfg["lr_end"], cfg["steps"], spe),
                             progress=ctx.progress, desc=f"{len(chunk)} replicas", checkpoint=checkpoint)
        with torch.no_grad():
            acc = (model(tokens).argmax(-1) == targets).float().mean(1).tolist()
        for r, i in enumerate(chunk):
            if i not in group:
                continue
            yield i, {"accuracy": acc[r], "tail_batch_accuracy": log.tail_batch_accuracy[r],
                      "untrained_accuracy": acc0[r], "final_loss": log.final_loss[r],
                      "steps": log.steps_trained[r]}, log.seconds / len(chunk)
        if checkpoint is not None:
            checkpoint.remove()

    deadline_of(ctx)  # the run's time limit starts now, on the context every worker of a cluster gets
    return [{**p, **row} for p, row in zip(points, ctx.units(keys, train, plan, desc))]
