"""Replica-batched training: one Adam step updates R independent models at once.

The loss is the sum over replicas of each replica's mean cross-entropy, so each replica's
gradient is exactly its own. `MaskedAdam` follows torch.optim.Adam's update, with a
per-replica learning rate, step count and *active* mask: early stopping freezes a replica
(its parameters, moments and step count stop changing; zero gradients would not stop Adam).

`train_program` is the one training loop of the book: a paper supplies its parameters, its
per-replica loss of a step and its protocol values (learning rates or a schedule from
core.schedules, weight decay, clipping, the stop rule and its check interval); the program does the
updates, freezing, checkpoint and resume, the time limit and the progress bar. `train_replicas`
(cross-entropy on token batches) is a thin use of it.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterator

import torch
from .checkpoint import Checkpoint
from .progress import tqdm
from .schedules import linear_lr  # noqa: F401 (moved to core.schedules; imported from here too)


class MaskedAdam:
    """Adam (Kingma & Ba 2015) over parameters with a leading replica axis: each replica is updated
    exactly as torch.optim.Adam(fused=True) updates that replica alone, with its own learning rate,
    step count and *active* mask (an inactive replica's parameters, moments and step count do not change).

    Per element, with t its replica's step count: m ← b1 m + (1 − b1) g; v ← b2 v + (1 − b2) g²;
    p ← p − (lr / (1 − b1^t)) m / (√v / √(1 − b2^t) + eps).

    A step is torch's fused Adam kernel (`torch._fused_adam_`: one pass over parameter, gradient and
    both moments) on each run of consecutive replicas that share (learning rate, step count): one call
    for a sweep whose replicas are all active at one learning rate, whatever the parameter count.
    Bit for bit torch.optim.Adam(fused=True) on each replica alone (train_test.py). `m`, `v`: the
    moments, one tensor per parameter (a checkpoint reads and restores them in place); `t`: [R] step counts."""

    def __init__(self, params, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.params = [p for p in params if p.requires_grad]
        self.b1, self.b2 = betas
        self.eps = eps
        p0 = self.params[0]
        R = p0.shape[0]
        if any(p.shape[0] != R or p.dtype != p0.dtype or p.device != p0.device for p in self.params):
            raise ValueError("MaskedAdam: every parameter needs the same leading replica axis, dtype and device")
        if not all(p.is_contiguous() for p in self.params):  # the fused kernel reads memory in order
            raise ValueError("MaskedAdam: every parameter must be contiguous")
        self.t = torch.zeros(R, dtype=p0.dtype, device=p0.device)
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self._runs_cache: dict[tuple, list] = {}

    def state_dict(self) -> dict:
        """Step counts and moments (for a checkpoint; `load_state_dict` restores them in place)."""
        return {"t": self.t, "m": list(self.m), "v": list(self.v)}

    @torch.no_grad()
    def load_state_dict(self, state: dict) -> None:
        """Restore `state_dict()`'s values in place (the cached views of the fused step stay valid)."""
        if len(state["m"]) != len(self.m) or len(state["v"]) != len(self.v):
            raise ValueError(f"MaskedAdam: a state of {len(state['m'])} parameters for {len(self.m)}")
        self.t.copy_(state["t"])
        for a, b in zip(self.m + self.v, list(state["m"]) + list(state["v"])):
            a.copy_(b)

    def _lists(self, runs: tuple[tuple[int, int], ...]) -> list[list[torch.Tensor]]:
        """[params, grads, m, v] as the slices [a, a + n) of every parameter, run by run."""
        if runs not in self._runs_cache:
            if len(self._runs_cache) > 64:
                self._runs_cache.clear()
            self._runs_cache[runs] = [[x.narrow(0, a, n) for a, n in runs for x in xs]
                                      for xs in (self.params, self.m, self.v)]
        ps, ms, vs = self._runs_cache[runs]
        grads = [p.grad if p.grad.is_contiguous() else p.grad.contiguous() for p in self.params]
        gs = [g.narrow(0, a, n) for a, n in runs for g in grads]
        return [ps, gs, ms, vs]

    @torch.no_grad()
    def step(self, lr: torch.Tensor, active: torch.Tensor) -> None:
        """lr: [R] learning rates; active: [R] bools. Inactive replicas are left exactly as they are."""
        self.t += active.to(self.t.dtype)
        groups: dict[tuple[float, float], list[tuple[int, int]]] = {}
        last, start = None, 0
        # one read of (active, lr, t) per step (on a GPU one synchronisation), float64: exact for both dtypes
        keys = [(a != 0, l, t) for a, l, t in torch.stack([active.to(torch.float64), lr.to(torch.float64),
                                                           self.t.to(torch.float64)], 1).tolist()]
        for r, key in enumerate(keys + [None]):  # runs of consecutive active replicas with one (lr, t)
            if key != last:
                if last is not None and last[0]:
                    groups.setdefault(last[1:], []).append((start, r - start))
                last, start = key, r
        for (lr_r, t_r), runs in groups.items():
            ps, gs, ms, vs = self._lists(tuple(runs))
            step = torch.full((), t_r, dtype=torch.float32, device=self.t.device)
            torch._fused_adam_(ps, gs, ms, vs, [], [step] * len(ps), lr=lr_r, beta1=self.b1, beta2=self.b2,
                               weight_decay=0.0, eps=self.eps, amsgrad=False, maximize=False)


class Threshold:
    """Stop rule (App. A.1 of paper 000): freeze a replica after `patience` consecutive checks whose
    score beats `level` (higher is better)."""

    def __init__(self, level: float = 0.995, patience: int = 5):
        self.level, self.patience = level, patience

    def start(self, R: int, device) -> None:
        self.passes = torch.zeros(R, dtype=torch.long, device=device)

    def keep(self, score: torch.Tensor) -> torch.Tensor:
        self.passes = torch.where(score > self.level, self.passes + 1, torch.zeros_like(self.passes))
        return self.passes < self.patience


class Plateau:
    """Stop rule: freeze a replica after `patience` consecutive checks without a score below
    best · (1 − rel) (lower is better)."""

    def __init__(self, patience: int = 5, rel: float = 1e-3):
        self.patience, self.rel = patience, rel

    def start(self, R: int, device) -> None:
        self.best = torch.full((R,), float("inf"), dtype=torch.float64, device=device)
        self.bad = torch.zeros(R, dtype=torch.long, device=device)

    def keep(self, score: torch.Tensor) -> torch.Tensor:
        score = score.to(self.best.dtype)
        better = score < self.best * (1 - self.rel)
        self.best = torch.where(better, score, self.best)
        self.bad = torch.where(better, torch.zeros_like(self.bad), self.bad + 1)
        return self.bad < self.patience


@dataclass
class ProgramLog:
    """Outcome of `train_program`, per replica (lists indexed by replica)."""

    steps: list[int]  # updates each replica took
    stopped: list[bool]  # frozen by the stop rule or by the loss function's keep mask (not by a step budget)
    active: list[bool]  # still training at the end
    final_loss: list[float]  # the losses of the last step computed
    seconds: float  # training time, resumed calls included


def _restore_into(obj, saved) -> None:
    """Put a saved value back into the live object `obj` in place (tensor, list, deque or dict)."""
    if isinstance(obj, torch.Tensor):
        obj.copy_(saved)
    elif isinstance(obj, deque):
        obj.clear()
        obj.extend(saved)
    elif isinstance(obj, list):
        obj[:] = saved
    elif isinstance(obj, dict):
        obj.update(saved)
    else:
        raise TypeError(f"train_program: cannot restore a {type(obj).__name__} in place")


def _clip_(groups: list[list[torch.Tensor]], max_norm: float) -> None:
    """Per replica, torch.nn.utils.clip_grad_norm_: scale replica r's gradients (over its group's
    parameters) by min(1, max_norm / (‖g_r‖ + 1e-6)), ‖g_r‖ the 2-norm of the norms of its parameters' gradients."""
    for group in groups:
        grads = [p.grad for p in group]
        norms = torch.stack([g.reshape(g.shape[0], -1).norm(dim=1) for g in grads]).norm(dim=0)
        coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.view((-1,) + (1,) * (g.dim() - 1)).to(g.dtype))


def train_program(params, loss_fn: Callable[[int], torch.Tensor | tuple[torch.Tensor, torch.Tensor]], steps: int,
                  lr, *, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
                  clip: float | None = None, active: torch.Tensor | None = None,
                  max_steps: torch.Tensor | None = None, validate: Callable[[], torch.Tensor] | None = None,
                  rule=None, check_every: int = 0, checkpoint: Checkpoint | None = None, extra: dict | None = None,
                  progress=None, desc: str | None = None) -> ProgramLog:
    """Minimise the per-replica losses `loss_fn(step)` ([R]; their sum is backpropagated, so each
    replica gets exactly its own gradient) with Adam(W) for steps 0 .. `steps` − 1 (one `MaskedAdam`).

    `params`: parameters with a leading replica axis R, or a list of such lists (groups of R_1, R_2,
    ... replicas, one MaskedAdam each; losses, scores and masks concatenate in group order).
    Per step: loss_fn(step) (it may return (losses, keep): keep [R] bools freezes replicas before
    this update, e.g. a batch-accuracy rule); no replica active: stop; optional per-replica gradient
    clipping at norm `clip`; decoupled weight decay p ← p (1 − lr · weight_decay) on active replicas
    (AdamW); the Adam update at lr(step) for active replicas. `lr`: a float, an [R] tensor, or a
    schedule step -> float or [R] (core.schedules; one with `observe` also sees each check's scores).
    Then every `check_every` steps (if `validate`): `rule.keep(validate())` freezes replicas
    (Threshold, Plateau); `max_steps` [R]: a replica freezes after its own step budget.
    A frozen replica's parameters, moments and step count do not change.

    `checkpoint` (core.checkpoint.Checkpoint): a saved state (parameters, Adam states, masks, counters,
    the rule's and the schedule's state, `extra`'s values, the step) is loaded first, and saved as
    `checkpoint.due` says; past its deadline `Incomplete` is raised after the save (exit code 75).
    The data of a step must be loss_fn(step)'s alone, so a resumed program ends bit for bit as an
    uninterrupted one. `extra`: name -> a live tensor, list, deque or dict the loss function keeps
    (a curve, recent accuracies), saved and restored in place. `progress`: True for a bar of its own
    (`desc`), or an object with update(n) (a chapter's bar), or None."""
    groups = [list(g) for g in params] if isinstance(params[0], (list, tuple)) else [list(params)]
    groups = [[p for p in g if p.requires_grad] for g in groups]
    opts = [MaskedAdam(g, betas=betas, eps=eps) for g in groups]
    sizes = [g[0].shape[0] for g in groups]
    R = sum(sizes)
    bounds = [(sum(sizes[:i]), sum(sizes[:i + 1])) for i in range(len(sizes))]
    flat = [p for g in groups for p in g]
    dev, dtype = flat[0].device, flat[0].dtype
    desc = desc or f"a program of {R} replicas"
    active = (torch.ones(R, dtype=torch.bool, device=dev) if active is None else active.to(dev).clone())
    if max_steps is not None:
        max_steps = max_steps.to(dev)
        active &= max_steps > 0
    trained = torch.zeros(R, dtype=torch.long, device=dev)
    stopped = torch.zeros(R, dtype=torch.bool, device=dev)
    if rule is not None:
        rule.start(R, dev)
    schedule = lr if callable(lr) else None
    fixed = None if schedule is not None else (torch.as_tensor(lr, dtype=dtype, device=dev).expand(R).clone()
                                               if isinstance(lr, torch.Tensor) else torch.full((R,), lr, dtype=dtype, device=dev))
    loss = torch.zeros(R, device=dev)
    first, before = 0, 0.0
    state = checkpoint.load(dev) if checkpoint is not None else None
    if state is not None:
        with torch.no_grad():
            for p, v in zip(flat, state["params"], strict=True):
                p.copy_(v)
        for opt, s in zip(opts, state["opts"], strict=True):
            opt.load_state_dict(s)
        for t, name in ((active, "active"), (trained, "trained"), (stopped, "stopped")):
            t.copy_(state[name])
        if rule is not None:
            vars(rule).update(state["rule"])
        if hasattr(schedule, "load_state_dict"):
            schedule.load_state_dict(state["schedule"])
        for name, obj in (extra or {}).items():
            _restore_into(obj, state["extra"][name])
        first, before = state["step"], state["seconds"]
    own_bar = progress is True
    bar = tqdm(total=steps, initial=first, desc=desc, mininterval=5.0, leave=False) if own_bar else progress or None
    if bar is not None and not own_bar and first:
        bar.update(first)
    start = time.perf_counter()
    try:
        for step in range(first, steps):
            if not active.any():
                break
            out = loss_fn(step)
            loss, keep = out if isinstance(out, tuple) else (out, None)
            if keep is not None:
                stopped |= active & ~keep
                active &= keep
                if not active.any():
                    break
            for p in flat:
                p.grad = None
            loss.sum().backward()
            if clip is not None:
                _clip_(groups, clip)
            if schedule is None:
                lr_vec = fixed
            else:
                now = schedule(step)
                lr_vec = (now.to(dev, dtype) if isinstance(now, torch.Tensor) else
                          torch.full((R,), float(now), dtype=dtype, device=dev))
            for g, opt, (a, b) in zip(groups, opts, bounds):
                if weight_decay:
                    with torch.no_grad():
                        scale = lr_vec[a:b] if schedule is not None or isinstance(lr, torch.Tensor) else lr
                        keep_w = 1 - scale * weight_decay * active[a:b].to(dtype)
                        for p in g:
                            p.mul_(keep_w.view((-1,) + (1,) * (p.dim() - 1)))
                opt.step(lr_vec[a:b], active[a:b])
            trained += active
            if bar is not None:
                bar.update(1)
            if validate is not None and check_every and (step + 1) % check_every == 0:
                scores = validate()
                if rule is not None:
                    keep = rule.keep(scores)
                    stopped |= active & ~keep
                    active &= keep
                if hasattr(schedule, "observe"):
                    schedule.observe(scores, active)
            if max_steps is not None:
                active &= trained < max_steps
            if not active.any():
                break
            if checkpoint is not None and step + 1 < steps and checkpoint.due(step + 1):
                checkpoint.save({"params": flat, "opts": [o.state_dict() for o in opts], "active": active,
                                 "trained": trained, "stopped": stopped,
                                 "rule": dict(vars(rule)) if rule is not None else {},
                                 "schedule": schedule.state_dict() if hasattr(schedule, "state_dict") else {},
                                 "extra": {k: list(v) if isinstance(v, deque) else v for k, v in (extra or {}).items()},
                                 "step": step + 1,
                                 "seconds": before + time.perf_counter() - start})
                checkpoint.stop_if_late(step + 1, steps, desc)
    finally:
        if own_bar:
            bar.close()
    return ProgramLog(trained.cpu().tolist(), stopped.cpu().tolist(), active.cpu().tolist(),
                      loss.detach().cpu().tolist(), before + time.perf_counter() - start)


@dataclass
class TrainLog:
    """Per-replica outcome of `train_replicas` (lists indexed by replica)."""

    steps_trained: list[int]
    final_loss: list[float]
    tail_batch_accuracy: list[float]
    stopped_early: list[bool]
    seconds: float
    loss_curve: list[list[float]] = field(default_factory=list)  # every `curve_every` steps


# exp(z − max) is evaluated at arguments >= −70: a smaller argument (a class that far below the best
# one, common once a model is confident) makes exp's result, and its products in the backward,
# subnormal floats or 0, slow special cases of torch's CPU exp and float arithmetic (~25x and ~15x a
# normal input on the AVX-512 machine of 2026-11-25; a 64-model counting sweep at lr 1e-2 slowed from
# 3.5 to 6.9 ms per step by step 1,000 without the floor, 2.9 ms with it). exp(−70) ≈ 4e−31 in their
# place changes the sum it enters (>= 1) by less than 1e−29 and a gradient entry by less than 1e−30,
# below float32's resolution of the values it is added to.
EXP_FLOOR = -70.0


class _ClassAxisCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy per replica over the class axis 1: z [R, C, N], targets [N] -> [R],
    loss_r = mean_n (log Σ_c exp z_rcn − z_r,y_n,n), with the gradient written out:
    ∂loss_r/∂z_rcn = (softmax_c(z_r·n) − [c = y_n]) / N. The forward keeps exp(z − max) (its argument
    floored at `EXP_FLOOR`) for the backward, which normalises it in place (so the backward runs once)."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        R, C, N = z.shape
        mx = z.amax(1, keepdim=True)  # [R, 1, N]
        e = (z - mx).clamp_min_(EXP_FLOOR).exp_()
        s = e.sum(1)  # [R, N]
        idx = targets.reshape(1, 1, N).expand(R, 1, N)
        pick = z.gather(1, idx).squeeze(1)
        ctx.save_for_backward(e, s, idx)
        ctx.spent = False
        return (s.log() + mx.squeeze(1) - pick).mean(1)

    @staticmethod
    def backward(ctx, g: torch.Tensor):
        if ctx.spent:
            raise RuntimeError("class_axis_cross_entropy: the backward overwrites its saved tensors; it runs once")
        ctx.spent = True
        e, s, idx = ctx.saved_tensors
        R, C, N = e.shape
        gn = g / N  # [R]
        gz = e.mul_((gn[:, None] / s)[:, None, :])  # softmax · g / N
        gz.scatter_add_(1, idx, (-gn).view(R, 1, 1).expand(R, 1, N))  # − [c = y] · g / N
        return gz, None


def class_axis_cross_entropy(z: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of each replica with the classes on axis 1: z [R, C, N], targets [N] -> [R].
    The reductions over the (short) class axis run along the contiguous axis N, and the gradient is
    the written-out (softmax − one-hot) / N (`_ClassAxisCrossEntropy`; its backward runs once)."""
    return _ClassAxisCrossEntropy.apply(z, targets)


def replica_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of each replica: logits [R,B,N], targets [B] -> [R].

    Computed with the class axis in the middle ([R,N,B], `class_axis_cross_entropy`): fast when
    `logits` is a transposed view of a [R,N,B] tensor, as the replica models return.
    """
    return class_axis_cross_entropy(logits.transpose(1, 2), targets)


def train_replicas(model: torch.nn.Module,
                   batches: Iterator[tuple[torch.Tensor, torch.Tensor]] | Callable[[int], Iterator], steps: int,
                   lr: Callable[[int], float | torch.Tensor], *, stop_at_accuracy: float | None = None,
                   tail: int = 100, curve_every: int = 50, progress: bool = True, desc: str = "train",
                   checkpoint: Checkpoint | None = None) -> TrainLog:
    """Train the R replicas of `model` (forward: tokens [B,S] -> logits [R,B,N]) for `steps` batches.

    Before each update, a replica whose batch accuracy reached `stop_at_accuracy` is frozen.
    `tail_batch_accuracy` is the mean batch accuracy over the last `tail` batches (the paper's metric).

    `batches`: an iterator of (tokens, targets), or a function start -> the iterator from batch
    `start` on. With `checkpoint` (`core.checkpoint.Checkpoint`, e.g. `program_checkpoint(ctx, keys)`)
    a saved state is loaded first (the iterator is then fast-forwarded past the batches already used,
    or the function called with the step reached), and the state (parameters, Adam's step counts and
    moments, the active mask, the steps trained, the tail accuracies and loss curve so far, the step)
    is saved as `checkpoint.due` says (every `checkpoint.every` steps, or at its deadline), and past
    the deadline `Incomplete` is raised after the save: the resumed program ends bit for bit as an
    uninterrupted one (train_test.py). Without a checkpoint the loop does no checkpoint work.
    """
    params = list(model.parameters())
    R = params[0].shape[0]
    recent: deque[torch.Tensor] = deque(maxlen=tail)
    curve: list[list[float]] = []
    it: list = []  # the batch iterator, made at the first step (the step reached, after a resume)

    def loss_fn(step: int):
        if not it:
            if callable(batches):
                it.append(batches(step))
            else:
                for _ in range(step):
                    next(batches)
                it.append(batches)
        tokens, targets = next(it[0])
        logits = model(tokens)
        loss = replica_cross_entropy(logits, targets)
        keep = None
        if stop_at_accuracy is not None or step >= steps - tail:  # accuracy only where it is used
            with torch.no_grad():
                acc = (logits.max(-1).indices == targets).to(logits.dtype).mean(1)  # = argmax (first maximum), faster
                recent.append(acc)
                if stop_at_accuracy is not None:
                    keep = acc < stop_at_accuracy
        if step % curve_every == 0:
            curve.append(loss.detach().cpu().tolist())
        return (loss, keep) if keep is not None else loss

    def lr_vec(step: int) -> torch.Tensor:
        now = lr(step)
        return now if isinstance(now, torch.Tensor) else torch.full((R,), float(now))  # as before: float32 first

    log = train_program(params, loss_fn, steps, lr_vec, checkpoint=checkpoint,
                        extra={"recent": recent, "curve": curve}, progress=True if progress else None, desc=desc)
    tail_acc = torch.stack(list(recent)).mean(0) if recent else torch.zeros(R)
    return TrainLog(steps_trained=log.steps, final_loss=log.final_loss, tail_batch_accuracy=tail_acc.cpu().tolist(),
                    stopped_early=[not a for a in log.active], seconds=log.seconds, loss_curve=curve)
