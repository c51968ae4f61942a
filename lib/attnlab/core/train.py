"""Replica-batched training: one Adam step updates R independent models at once.

The loss is the sum over replicas of each replica's mean cross-entropy, so each replica's
gradient is exactly its own. `MaskedAdam` follows torch.optim.Adam's update, with a
per-replica learning rate, step count and *active* mask: early stopping freezes a replica
(its parameters, moments and step count stop changing; zero gradients would not stop Adam).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterator

import torch
from .checkpoint import Checkpoint
from .progress import tqdm


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


def linear_lr(start: float, end: float, steps: int, steps_per_epoch: int = 1) -> Callable[[int], float]:
    """Learning rate falling linearly from `start` to `end`, stepped once per epoch.

    Mirrors torch's LinearLR: at epoch e of E = steps // steps_per_epoch, lr = start + (end - start) * e / E.
    """
    epochs = max(1, steps // steps_per_epoch)
    return lambda step: start + (end - start) * min(step // steps_per_epoch, epochs) / epochs


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
    params = [p for p in model.parameters()]
    opt = MaskedAdam(params)
    R = params[0].shape[0]
    dev = params[0].device
    active = torch.ones(R, dtype=torch.bool, device=dev)
    trained = torch.zeros(R, dtype=torch.long, device=dev)
    recent: deque[torch.Tensor] = deque(maxlen=tail)
    curve: list[list[float]] = []
    first, before = 0, 0.0
    if checkpoint is not None:
        state = checkpoint.load(dev)
        if state is not None:
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            active.copy_(state["active"])
            trained.copy_(state["trained"])
            recent.extend(state["recent"])
            curve, first, before = state["curve"], state["step"], state["seconds"]
    if callable(batches):
        batches = batches(first)
    else:
        for _ in range(first):
            next(batches)
    start = time.perf_counter()
    loss = torch.zeros(R)
    bar = tqdm(range(first, steps), desc=desc, disable=not progress, mininterval=5.0, leave=False, initial=first,
               total=steps)
    for step in bar:
        tokens, targets = next(batches)
        logits = model(tokens)
        loss = replica_cross_entropy(logits, targets)
        if stop_at_accuracy is not None or step >= steps - tail:  # accuracy only where it is used
            with torch.no_grad():
                acc = (logits.max(-1).indices == targets).to(logits.dtype).mean(1)  # = argmax (first maximum), faster
                recent.append(acc)
                if stop_at_accuracy is not None:
                    active &= acc < stop_at_accuracy
        if step % curve_every == 0:
            curve.append(loss.detach().cpu().tolist())
        if not active.any():
            break
        for p in params:
            p.grad = None
        loss.sum().backward()
        lr_now = lr(step)
        lr_vec = lr_now if isinstance(lr_now, torch.Tensor) else torch.full((R,), float(lr_now))
        opt.step(lr_vec.to(dev, params[0].dtype), active)
        trained += active
        if checkpoint is not None and step + 1 < steps and checkpoint.due(step + 1):
            checkpoint.save({"model": model.state_dict(), "opt": opt.state_dict(), "active": active,
                             "trained": trained, "recent": list(recent), "curve": curve, "step": step + 1,
                             "seconds": before + time.perf_counter() - start})
            if checkpoint.deadline.passed():
                bar.close()
                checkpoint.stop_if_late(step + 1, steps, desc)
    bar.close()
    tail_acc = torch.stack(list(recent)).mean(0) if recent else torch.zeros(R)
    return TrainLog(steps_trained=trained.cpu().tolist(), final_loss=loss.detach().cpu().tolist(),
                    tail_batch_accuracy=tail_acc.cpu().tolist(), stopped_early=(~active).cpu().tolist(),
                    seconds=before + time.perf_counter() - start, loss_curve=curve)
