"""The trained experiments of §7 / App. D.1: a replica-batched trainer generic over the model.

Four functions; the chapters need nothing else:

- `train(model, task, x_train, *, epochs | steps, batch, lr, seed, scheduler)` trains the R
  replicas of any `ReplicaModule` whose forward maps values x [B, n] to predictions [R, B, n].
  The loss is the sum over replicas of each replica's MSE (so each replica's gradient is its own),
  Adam is `core.train.MaskedAdam`. Replica r may have its own task (`task` a list of R names)
  and its own number of steps (`steps` a list): a replica past its steps is frozen (masked
  update: parameters, moments and step count stop changing). Every replica sees the same
  mini-batches: an epoch is one permutation of x_train drawn from (seed, epoch) only, cut into
  batches of `batch` (the last one smaller, as a shuffled DataLoader). So a replica trained in a
  batch equals the same replica trained alone (tested).
  Schedulers: "plateau" = the authors' ReduceLROnPlateau(mode min, factor 0.9, patience 50,
  min_lr 1e-6, threshold 1e-4 relative) stepped once per epoch on that epoch's summed batch
  loss, per replica; "onecycle" = torch's OneCycleLR (cosine, warm-up `pct_start`, div 25,
  final div 1e4) over each replica's steps; "constant".
- `evaluate(model, task, c_list, samples, seed)` → [R, len(c_list)] test MSE per replica and
  scale c (test lists of §7 with App. E's rejection, seeded from (n, c, samples, seed) only).
- `unit_key(config, seed, task, protocol)` → the store key of one trained model.
- `sweep(ctx, units, protocol)` trains (or loads from the store, `Context.units`) every unit
  (ModelConfig, seed, task) and returns one row per unit: train MSE, test MSE per c, steps,
  final lr, loss curve. Units are grouped into tensor programs by `program_of` (the config's
  fields other than the padded widths: n, kind, heads, layers, ...) and, with `joint=False`
  (the paper's independent runs), by seed, each seed with its own training set and data order;
  `joint=True` (an older CI shortcut) gives all seeds one training set and one data order (they then
  differ in their initialisation only), and the key records which. `mix_seeds=True` (CI) keeps the
  independent runs (each seed its own training set, data order and test lists: the same key and the
  same model as alone) but trains every seed of a program as replicas of one tensor program, each
  replica on its own batches [R, B, n].

Long programs (paper scale: 2000 epochs) save a checkpoint every `checkpoint_every` steps
(ctx.config, 0 = none) through core (`core.checkpoint`, in results/<scale>/checkpoints/<result id>/);
with `time_limit` minutes set the sweep stops after the checkpoint that passes the limit, or
before the next program, and raises `Incomplete`; the same command resumes from the checkpoint.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable, Sequence

import numpy as np
import torch

from attnlab.core.checkpoint import Checkpoint, checkpoint_dir, Deadline, deadline_of
from attnlab.core.experiment import Context, Incomplete  # noqa: F401 (raised through core; tests import it here)
from attnlab.core.hashing import derive_seed, stable_hash
from attnlab.core.params import ParameterError, SEED
from attnlab.core.progress import tqdm
from attnlab.core.train import MaskedAdam

from .models import Transformer
from .tasks import TASKS, sample_lists, targets

SCHEDULERS = ("plateau", "onecycle", "constant")
PLATEAU = dict(factor=0.9, patience=50, min_lr=1e-6, threshold=1e-4, eps=1e-8)  # the authors' code [repo]
PADDED = ("embed", "hidden", "qk_dim")  # ModelConfig fields that may differ inside one program


# ------------------------------------------------------------------------------------------ data

def _task_list(task: str | Sequence[str], R: int) -> list[str]:
    tasks = [task] * R if isinstance(task, str) else list(task)
    if len(tasks) != R:
        raise ValueError(f"{len(tasks)} tasks for {R} replicas: give one task or one per replica")
    bad = [t for t in tasks if t not in TASKS]
    if bad:
        raise ValueError(f"task {bad[0]!r}: choose one of {', '.join(TASKS)}")
    return tasks


def replica_targets(tasks: list[str], x: np.ndarray, dtype: torch.dtype, device) -> torch.Tensor:
    """[R, N, n] targets (replica r gets tasks[r] of x [N, n], or of x[r] for per-replica lists x [R, N, n]);
    each distinct task (and list set) computed once."""
    if x.ndim == 3:
        if len(x) != len(tasks):
            raise ValueError(f"{len(x)} list sets for {len(tasks)} replicas: give one per replica")
        return torch.stack([torch.as_tensor(targets(t, xr), dtype=dtype, device=device) for t, xr in zip(tasks, x)])
    per = {t: torch.as_tensor(targets(t, x), dtype=dtype, device=device) for t in dict.fromkeys(tasks)}
    return torch.stack([per[t] for t in tasks])


def test_lists(n: int, c: float, samples: int, seed: int) -> np.ndarray:
    """The test lists at scale c (§7; App. E's rejection for c > 1), seeded from (n, c, samples, seed)."""
    rng = np.random.default_rng(derive_seed({"test": float(c), "n": n, "samples": samples}, seed))
    return sample_lists(rng, samples, n, float(c))


def train_lists(n: int, samples: int, seed: int) -> np.ndarray:
    """The training lists (§7: values in [−2, 2]), seeded from (n, samples, seed)."""
    rng = np.random.default_rng(derive_seed({"train": True, "n": n, "samples": samples}, seed))
    return sample_lists(rng, samples, n, 1.0)


def _per_replica(seed: int | Sequence[int], R: int) -> list[int] | None:
    """None for one shared seed; else the R seeds (one per replica)."""
    if isinstance(seed, (int, np.integer)):
        return None
    seeds = [int(s) for s in seed]
    if len(seeds) != R:
        raise ValueError(f"{len(seeds)} seeds for {R} replicas: give one seed or one per replica")
    return seeds


def _order(N: int, seed: int, epoch: int) -> torch.Tensor:
    """Epoch `epoch`'s permutation of the N training lists, from (seed, epoch) only."""
    g = torch.Generator().manual_seed(derive_seed({"order": epoch}, seed))
    return torch.randperm(N, generator=g)


def _length_batches(lengths: np.ndarray, batch: int, seed: int, epoch: int) -> list[tuple[int, torch.Tensor]]:
    """Epoch `epoch`'s batches of variable-length lists: (ℓ, indices) with one length per batch;
    each length's lists permuted, cut into batches of `batch`, all batches shuffled; from (seed,
    epoch) only."""
    out = []
    for ell in np.unique(lengths):
        where = torch.as_tensor(np.flatnonzero(lengths == ell))
        perm = where[_order(len(where), seed, epoch * 1000 + int(ell))]
        out += [(int(ell), perm[s:s + batch]) for s in range(0, len(perm), batch)]
    order = _order(len(out), seed, -1 - epoch).tolist()
    return [out[i] for i in order]


def variable_targets(tasks: list[str], x: np.ndarray, lengths: np.ndarray, dtype: torch.dtype, device) -> torch.Tensor:
    """[R, N, n] targets of variable-length lists (row i: the target of x[i, :lengths[i]], then 0)."""
    y = torch.zeros((len(tasks),) + x.shape, dtype=dtype, device=device)
    for ell in np.unique(lengths):
        rows = np.flatnonzero(lengths == ell)
        y[:, torch.as_tensor(rows), :ell] = replica_targets(tasks, x[rows, :ell], dtype, device)
    return y


@torch.no_grad()
def variable_mse(model: torch.nn.Module, task: str | Sequence[str], x: np.ndarray, lengths: np.ndarray,
                 chunk: int = 4096) -> np.ndarray:
    """[R] MSE over every real position of variable-length lists x [N, n] (lengths [N])."""
    p0 = next(model.parameters())
    tasks = _task_list(task, p0.shape[0])
    total = torch.zeros(p0.shape[0], dtype=torch.float64, device=p0.device)
    for ell in np.unique(lengths):
        rows = x[lengths == ell, :ell]
        for s in range(0, len(rows), chunk):
            xs = rows[s:s + chunk]
            pad = np.zeros((len(xs), x.shape[1]))
            pad[:, :ell] = xs
            pred = model(torch.as_tensor(pad, dtype=p0.dtype, device=p0.device), length=int(ell))
            total += ((pred - replica_targets(tasks, xs, p0.dtype, p0.device)) ** 2).double().sum(dim=(1, 2))
    return (total / lengths.sum()).cpu().numpy()


# ------------------------------------------------------------------------------------- schedules

def onecycle_lr(step: torch.Tensor, total: torch.Tensor, max_lr: float, pct_start: float = 0.1,
                div_factor: float = 25.0, final_div_factor: float = 1e4) -> torch.Tensor:
    """torch.optim.lr_scheduler.OneCycleLR (anneal 'cos', two phases) at `step`, per replica
    (total: [R] steps): max_lr/div up to max_lr at pct_start·total − 1, then down to
    max_lr/div/final_div at total − 1."""
    step, total = step.double(), total.double()
    initial, final = max_lr / div_factor, max_lr / div_factor / final_div_factor
    end1 = pct_start * total - 1
    end2 = total - 1

    def cos(a, b, pct):
        return b + (a - b) / 2 * (torch.cos(math.pi * pct) + 1)

    up = cos(initial, max_lr, (step / end1.clamp(min=1e-12)).clamp(0, 1))
    down = cos(max_lr, final, ((step - end1) / (end2 - end1).clamp(min=1e-12)).clamp(0, 1))
    return torch.where(step <= end1, up, down)


@dataclass
class Plateau:
    """ReduceLROnPlateau (mode min, relative threshold, cooldown 0) for R replicas at once."""

    lr: np.ndarray
    best: np.ndarray
    bad: np.ndarray

    @classmethod
    def start(cls, lr: float, R: int) -> "Plateau":
        return cls(np.full(R, float(lr)), np.full(R, np.inf), np.zeros(R, dtype=np.int64))

    def step(self, loss: np.ndarray, active: np.ndarray) -> None:
        """One epoch's loss per replica; inactive replicas keep their state."""
        p = PLATEAU
        better = loss < self.best * (1 - p["threshold"])
        self.best = np.where(active & better, loss, self.best)
        self.bad = np.where(active, np.where(better, 0, self.bad + 1), self.bad)
        cut = active & (self.bad > p["patience"])
        new = np.maximum(self.lr * p["factor"], p["min_lr"])
        self.lr = np.where(cut & (self.lr - new > p["eps"]), new, self.lr)
        self.bad = np.where(cut, 0, self.bad)


# ----------------------------------------------------------------------------------------- train

@dataclass
class TrainLog:
    """Per-replica outcome of `train` (lists indexed by replica)."""

    steps: list[int]  # Adam steps taken
    train_mse: list[float]  # MSE on the whole training set after training
    final_lr: list[float]
    curve: list[list[float]]  # [points][R]: mean batch loss of every `curve_every`-th epoch
    seconds: float


def train(model: torch.nn.Module, task: str | Sequence[str], x_train: np.ndarray, *, batch: int, lr: float,
          seed: int, epochs: int | None = None, steps: int | Sequence[int] | None = None,
          scheduler: str = "plateau", pct_start: float = 0.1, curve_every: int = 1,
          checkpoint: str | None = None, checkpoint_every: int = 0, deadline: float | None = None,
          progress: bool = False, desc: str = "train", lengths: np.ndarray | None = None) -> TrainLog:
    """Train the R replicas of `model` (forward: x [B, n] → [R, B, n]) on x_train [N, n] with MSE.

    Give `epochs` (every replica) or `steps` (an int, or one per replica: a replica stops, frozen,
    after its own steps). `seed` fixes the data order (the same for every replica). Independent data
    per replica: x_train [R, N, n] (replica r trains on x_train[r]) and `seed` a list of R seeds
    (replica r's data order); replica r then trains exactly as alone on x_train[r] with seed[r]. `lr` is the
    initial (plateau, constant) or peak (onecycle) learning rate. With `checkpoint` (a path) and
    `checkpoint_every` > 0, the state is saved every that many steps and a later call with the
    same arguments resumes from it; past `deadline` (time.time()) it raises `Incomplete` after a
    checkpoint. Returns a `TrainLog`.

    Variable lengths (App. D.1.4): with `lengths` [N], list i holds lengths[i] values (the rest of
    its row is padding, never read); every batch holds lists of one length ℓ (per epoch, each
    length's lists are permuted and cut into batches, and all batches are shuffled, from (seed,
    epoch) only), the model is called as model(x [B, n], length=ℓ) → [R, B, ℓ], and the loss is
    the MSE over the ℓ real positions."""
    if (epochs is None) == (steps is None):
        raise ValueError("give exactly one of epochs and steps")
    if scheduler not in SCHEDULERS:
        raise ValueError(f"scheduler {scheduler!r}: choose one of {', '.join(SCHEDULERS)}")
    params = [p for p in model.parameters() if p.requires_grad]
    dev, dt = params[0].device, params[0].dtype
    R = params[0].shape[0]
    tasks = _task_list(task, R)
    x_np = np.asarray(x_train, dtype=np.float64)
    seeds = _per_replica(seed, R)
    if (seeds is not None) != (x_np.ndim == 3):
        raise ValueError("independent data per replica needs both x_train [R, N, n] and one seed per replica")
    if seeds is not None and (len(x_np) != R or lengths is not None):
        raise ValueError(f"x_train of shape {x_np.shape}: per-replica lists need [R = {R}, N, n] (fixed length)")
    N = x_np.shape[-2] if x_np.ndim == 3 else len(x_np)
    if x_np.ndim not in (2, 3) or N < 1:
        raise ValueError(f"x_train of shape {x_np.shape}: need [N, n] with N >= 1")
    if lengths is None:
        per_epoch = math.ceil(N / batch)
    else:
        lengths = np.asarray(lengths, dtype=np.int64)
        if lengths.shape != (N,) or lengths.min() < 1 or lengths.max() > x_np.shape[1]:
            raise ValueError(f"lengths: need one length in 1..{x_np.shape[1]} per training list")
        per_epoch = sum(math.ceil(int((lengths == ell).sum()) / batch) for ell in np.unique(lengths))
    if epochs is not None:
        steps = epochs * per_epoch
    budget = np.array([steps] * R if isinstance(steps, (int, np.integer)) else list(steps), dtype=np.int64)
    if len(budget) != R or (budget < 0).any():
        raise ValueError(f"steps {list(budget)}: need one non-negative count or one per replica ({R})")
    total = int(budget.max())
    x = torch.as_tensor(x_np, dtype=dt, device=dev)
    y = replica_targets(tasks, x_np, dt, dev) if lengths is None else variable_targets(tasks, x_np, lengths, dt, dev)
    opt = MaskedAdam(params)
    plateau = Plateau.start(lr, R)
    step, curve, seconds = 0, [], 0.0
    epoch_sum = torch.zeros(R, dtype=torch.float64, device=dev)
    saver = (Checkpoint(checkpoint, checkpoint_every, Deadline.absolute(deadline) if checkpoint_every else None)
             if checkpoint else None)  # without checkpoint_every: loaded if present, never saved
    ck = saver.load(dev) if saver is not None else None
    if ck is not None:
        model.load_state_dict(ck["model"])
        opt.t.copy_(ck["t"])
        for a, b in zip(opt.m + opt.v, ck["m"] + ck["v"]):
            a.copy_(b)
        plateau = Plateau(**{k: np.asarray(v) for k, v in ck["plateau"].items()})
        step, curve, seconds = ck["step"], ck["curve"], ck["seconds"]
        epoch_sum = ck["epoch_sum"].to(dev)
    budget_t = torch.as_tensor(budget, device=dev)
    epoch_batches = None
    epoch_orders = None  # per-replica data: the epoch's permutations [R, N]
    rows = torch.arange(R, device=dev)[:, None]
    start = time.perf_counter()
    bar = tqdm(total=total, initial=step, desc=desc, disable=not progress, mininterval=5.0, leave=False)
    while step < total:
        epoch, k = divmod(step, per_epoch)
        active = budget_t > step
        if seeds is not None:
            if epoch_orders is None or epoch_orders[0] != epoch:
                epoch_orders = (epoch, torch.stack([_order(N, s, epoch) for s in seeds]).to(dev))
            idx = epoch_orders[1][:, k * batch:(k + 1) * batch]  # [R, B]
            pred = model(x[rows, idx])
            loss = ((pred - y[rows, idx]) ** 2).mean(dim=(1, 2))
        elif lengths is None:
            idx = _order(N, seed, epoch)[k * batch:(k + 1) * batch].to(dev)
            pred = model(x[idx])
            loss = ((pred - y[:, idx]) ** 2).mean(dim=(1, 2))
        else:
            if epoch_batches is None or epoch_batches[0] != epoch:
                epoch_batches = (epoch, _length_batches(lengths, batch, seed, epoch))
            ell, idx = epoch_batches[1][k]
            idx = idx.to(dev)
            pred = model(x[idx], length=ell)
            loss = ((pred - y[:, idx, :ell]) ** 2).mean(dim=(1, 2))
        for p in params:
            p.grad = None
        loss.sum().backward()
        if scheduler == "plateau":
            lr_vec = torch.as_tensor(plateau.lr, dtype=dt, device=dev)
        elif scheduler == "onecycle":
            lr_vec = onecycle_lr(torch.full((R,), step, device=dev), budget_t, lr, pct_start).to(dt)
        else:
            lr_vec = torch.full((R,), lr, dtype=dt, device=dev)
        opt.step(lr_vec, active)
        epoch_sum += loss.detach().double() * active
        step += 1
        bar.update(1)
        if k == per_epoch - 1 or step == total:  # the end of an epoch (or of training)
            act = (budget > step - 1)
            if scheduler == "plateau":
                plateau.step(epoch_sum.cpu().numpy(), act)
            if epoch % curve_every == 0:
                curve.append((epoch_sum / (k + 1)).cpu().tolist())
            epoch_sum.zero_()
        if saver is not None and step < total and saver.due(step):
            saver.save({"model": model.state_dict(), "t": opt.t, "m": opt.m, "v": opt.v, "step": step,
                        "plateau": {k: v.tolist() for k, v in asdict(plateau).items()}, "curve": curve,
                        "seconds": seconds + time.perf_counter() - start, "epoch_sum": epoch_sum})
            if saver.deadline.passed():
                bar.close()
                saver.stop_if_late(step, total, f"{R} models")
    bar.close()
    seconds += time.perf_counter() - start
    final_lr = (plateau.lr if scheduler == "plateau" else
                onecycle_lr(torch.as_tensor(budget - 1).clamp(min=0), torch.as_tensor(budget), lr, pct_start).numpy()
                if scheduler == "onecycle" else np.full(R, lr))
    train_mse = mse(model, tasks, x_np) if lengths is None else variable_mse(model, tasks, x_np, lengths)
    return TrainLog(steps=budget.tolist(), train_mse=train_mse.tolist(),
                    final_lr=[float(v) for v in final_lr], curve=curve, seconds=seconds)


# -------------------------------------------------------------------------------------- evaluate

@torch.no_grad()
def mse(model: torch.nn.Module, task: str | Sequence[str], x: np.ndarray, chunk: int = 4096) -> np.ndarray:
    """[R] MSE of each replica on the lists x [N, n], or replica r on x[r] of x [R, N, n] (float64
    accumulation over chunks of `chunk` lists)."""
    p0 = next(model.parameters())
    R = p0.shape[0]
    tasks = _task_list(task, R)
    total = torch.zeros(R, dtype=torch.float64, device=p0.device)
    x = np.asarray(x)
    N = x.shape[-2]
    for s in range(0, N, chunk):
        xs = np.asarray(x[..., s:s + chunk, :], dtype=np.float64)
        y = replica_targets(tasks, xs, p0.dtype, p0.device)
        pred = model(torch.as_tensor(xs, dtype=p0.dtype, device=p0.device))
        total += ((pred - y) ** 2).double().sum(dim=(1, 2))
    return (total / (N * x.shape[-1])).cpu().numpy()


def evaluate(model: torch.nn.Module, task: str | Sequence[str], c_list: Sequence[float], samples: int,
             seed: int | Sequence[int], n: int | None = None) -> np.ndarray:
    """[R, len(c_list)] test MSE of each replica at each scale c (c = 1: the ID test; c > 1 with
    App. E's rejection). Test lists from (n, c, samples, seed) only (`seed` a list: replica r's lists
    from seed[r]); n defaults to model.n."""
    n = n if n is not None else model.n
    seeds = _per_replica(seed, next(model.parameters()).shape[0])
    if seeds is None:
        return np.stack([mse(model, task, test_lists(n, c, samples, seed)) for c in c_list], axis=1)
    return np.stack([mse(model, task, _stacked(seeds, lambda s: test_lists(n, c, samples, s))) for c in c_list],
                    axis=1)


# --------------------------------------------------------------------------------------- sweeps

@dataclass(frozen=True)
class Protocol:
    """How every model of a sweep is trained and tested (the part of a stored key that is not the
    model). Give epochs (the paper: 2000) or steps (CI)."""

    samples: int  # training lists (the paper: 30,000)
    batch: int  # (the authors' code: 1000)
    lr: float  # initial (plateau) or peak (onecycle) learning rate (the paper: 5e-4)
    epochs: int | None = None
    steps: int | None = None
    scheduler: str = "plateau"
    c_list: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0)  # test scales
    test_samples: int = 1000
    joint: bool = False  # True: every seed on one training set and data order (they differ in init only)
    joint_seed: int | None = None  # joint: the seed of that shared training set and order (None: -1, as before)
    mix_seeds: bool = False  # not joint: train the seeds of a program together, each on its own data (not in the key)

    def __post_init__(self):
        if (self.epochs is None) == (self.steps is None):
            raise ValueError("a Protocol needs exactly one of epochs and steps")
        if self.scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler {self.scheduler!r}: choose one of {', '.join(SCHEDULERS)}")
        object.__setattr__(self, "c_list", tuple(float(c) for c in self.c_list))
        if self.mix_seeds and self.joint:
            raise ValueError("mix_seeds is for independent runs (joint=False): joint seeds already share a program")

    @property
    def key(self) -> dict:
        """What a stored unit was trained under: every field but `mix_seeds` (how units are grouped into
        programs does not change a model), None-valued fields left out."""
        return {k: v for k, v in asdict(self).items() if v is not None and k != "mix_seeds"}


def model_key(config: Any) -> dict:
    """A config's fields that differ from their defaults (so a field added later with a default
    that keeps today's behaviour leaves every stored key unchanged), with its class name."""
    out = {"model": type(config).__name__}
    for f in fields(config):
        v = getattr(config, f.name)
        if v != f.default:
            out[f.name] = v
    return out


def unit_key(config: Any, seed: int, task: str, protocol: Protocol) -> dict:
    """The store key of one trained model: its config (non-default fields), seed, task, protocol."""
    return {**model_key(config), "seed": int(seed), "task": task, **protocol.key}


def program_of(config: Any) -> tuple:
    """What replicas of one program share: every field except the padded widths (PADDED)."""
    return tuple((f.name, getattr(config, f.name)) for f in fields(config) if f.name not in PADDED)


def data_seed(protocol: Protocol, seed: int) -> int:
    """The seed of a program's training set and data order: per model seed (independent runs),
    or one for all seeds (joint: `protocol.joint_seed`, default -1)."""
    if protocol.joint:
        return -1 if protocol.joint_seed is None else int(protocol.joint_seed)
    return int(seed)


# ---------------------------------------------------------------------------------- seed offsets

SEED_PARAM = SEED.described("first seed: the models use seeds seed, seed + 1, …, seed + seeds − 1 (and, where "
                   "the seeds share one training set, its data seed moves with it); 0 = the book's run")


def seed_list(cfg: dict) -> list[int]:
    """The model seeds of a chapter's config: `seeds` of them from `seed` (0 when the config has none)."""
    first, count = int(cfg.get("seed") or 0), int(cfg["seeds"])
    if first < 0 or count < 1:
        raise ParameterError(f"parameters 'seed' = {first} and 'seeds' = {count}: need seed >= 0 and seeds >= 1")
    return list(range(first, first + count))


def joint_seed(cfg: dict) -> int | None:
    """The shared data seed of a joint protocol whose seeds start at cfg['seed']: None (that is -1, the
    book's run, whose store keys stay as they were) for seed 0, else -1 - seed (other data too)."""
    first = int(cfg.get("seed") or 0)
    return None if first == 0 else -1 - first


def _stacked(seeds: list[int], make: Callable[[int], np.ndarray]) -> np.ndarray:
    """[R, ...]: make(seed) per replica, each distinct seed drawn once."""
    per = {s: make(s) for s in dict.fromkeys(seeds)}
    return np.stack([per[s] for s in seeds])


def sweep(ctx: Context, units: Sequence[tuple[Any, int, str]], protocol: Protocol,
          build: Callable[[list, list, Any], torch.nn.Module] | None = None,
          program: Callable[[Any], tuple] = program_of, desc: str = "programs") -> list[dict]:
    """Train (or load) every unit (config, seed, task) under `protocol`; one row per unit:
    {train_mse, test_mse (list over protocol.c_list), c_list, steps, final_lr, curve, seconds}.

    `build(configs, seeds, device)` makes a program's model (default: `Transformer`); `program`
    groups the configs that can share one (default: equal fields but the padded widths). Every
    model's training set has protocol.samples lists of length config.n."""
    build = build or (lambda cs, ss, dev: Transformer(cs, ss, device=dev))
    keys = [unit_key(c, s, t, protocol) for c, s, t in units]
    if len({stable_hash(k) for k in keys}) != len(keys):
        raise ValueError("two units of a sweep have the same key")
    cfg = ctx.config
    deadline = deadline_of(ctx)  # the run's time limit (absolute: the same for every worker of a cluster)

    def plan(missing: list[int]) -> list[list[int]]:
        groups: dict[tuple, list[int]] = {}
        for i in missing:
            c, s, _ = units[i]
            groups.setdefault((repr(program(c)), None if protocol.mix_seeds else data_seed(protocol, s)), []).append(i)
        return [g for _, g in sorted(groups.items(), key=lambda kv: min(kv[1]))]

    def run(group: list[int]):
        deadline.next_program("before the next program")
        cs, ss, ts = zip(*(units[i] for i in group))
        n = cs[0].n
        ds = data_seed(protocol, ss[0])
        if protocol.mix_seeds:  # each replica its own training set, data order and test lists (its seed's)
            ds = [data_seed(protocol, s) for s in ss]
        model = build(list(cs), list(ss), ctx.device)
        x = (train_lists(n, protocol.samples, ds) if not protocol.mix_seeds else
             _stacked(ds, lambda d: train_lists(n, protocol.samples, d)))
        ck = str(checkpoint_dir(ctx) / (stable_hash({"program": [keys[i] for i in group]}) + ".pt"))
        log = train(model, list(ts), x, batch=protocol.batch, lr=protocol.lr, seed=ds, epochs=protocol.epochs,
                    steps=protocol.steps, scheduler=protocol.scheduler,
                    curve_every=max(1, (protocol.epochs or 0) // 100), checkpoint=ck,
                    checkpoint_every=cfg.get("checkpoint_every") or 0, deadline=deadline.at,
                    progress=ctx.progress, desc=f"{cs[0].kind if hasattr(cs[0], 'kind') else ''} {len(group)} models")
        test = evaluate(model, list(ts), protocol.c_list, protocol.test_samples, seed=ds, n=n)
        Checkpoint(ck).remove()
        for r, i in enumerate(group):
            yield i, {"train_mse": log.train_mse[r], "test_mse": test[r].tolist(), "c_list": list(protocol.c_list),
                      "steps": log.steps[r], "final_lr": log.final_lr[r],
                      "curve": [round(pt[r], 7) for pt in log.curve], "seconds": round(log.seconds / len(group), 3)}, \
                log.seconds / len(group)

    return ctx.units(keys, run, plan, desc)
