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
import torch.nn.functional as F
from .progress import tqdm


class MaskedAdam:
    """Adam (Kingma & Ba 2015, as in torch.optim.Adam) over parameters with a leading replica axis."""

    def __init__(self, params, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.params = [p for p in params if p.requires_grad]
        self.b1, self.b2 = betas
        self.eps = eps
        R = self.params[0].shape[0]
        self.t = torch.zeros(R, dtype=self.params[0].dtype, device=self.params[0].device)
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self, lr: torch.Tensor, active: torch.Tensor) -> None:
        """lr: [R] learning rates; active: [R] bools. Inactive replicas are left exactly as they are."""
        act = active.to(self.t.dtype)
        self.t += act
        t = self.t.clamp(min=1)
        bc1, bc2 = 1 - self.b1 ** t, 1 - self.b2 ** t
        if bool(active.all()):  # the common case: no masking, one multi-tensor pass per operation
            self._step_all_active(lr, bc1, bc2)
            return
        for p, m, v in zip(self.params, self.m, self.v):
            shape = (-1,) + (1,) * (p.dim() - 1)
            a = active.view(shape)
            g = p.grad
            m.copy_(torch.where(a, self.b1 * m + (1 - self.b1) * g, m))
            v.copy_(torch.where(a, self.b2 * v + (1 - self.b2) * g * g, v))
            denom = (v.sqrt() / bc2.sqrt().view(shape)) + self.eps
            update = (lr / bc1).view(shape) * m / denom
            p.sub_(torch.where(a, update, torch.zeros((), dtype=p.dtype, device=p.device)))

    def _step_all_active(self, lr: torch.Tensor, bc1: torch.Tensor, bc2: torch.Tensor) -> None:
        """`step` with every replica active, as multi-tensor (torch._foreach_*) operations: the same
        float operations in the same order as the masked loop above (where(True, x, y) = x), so the
        result is bit for bit the same; only the per-operation dispatch over parameters is saved."""
        ps, ms, vs = self.params, self.m, self.v
        gs = [p.grad for p in ps]
        shapes = [(-1,) + (1,) * (p.dim() - 1) for p in ps]
        torch._foreach_mul_(ms, self.b1)  # m = b1 * m + (1 - b1) * g
        torch._foreach_add_(ms, torch._foreach_mul(gs, 1 - self.b1))
        g2 = torch._foreach_mul(gs, 1 - self.b2)  # v = b2 * v + ((1 - b2) * g) * g
        torch._foreach_mul_(g2, gs)
        torch._foreach_mul_(vs, self.b2)
        torch._foreach_add_(vs, g2)
        denom = torch._foreach_sqrt(vs)  # sqrt(v) / sqrt(bc2) + eps
        sbc2 = bc2.sqrt()
        torch._foreach_div_(denom, [sbc2.view(s) for s in shapes])
        torch._foreach_add_(denom, self.eps)
        step = lr / bc1  # update = (lr / bc1) * m / denom
        update = torch._foreach_mul([step.view(s) for s in shapes], ms)
        torch._foreach_div_(update, denom)
        torch._foreach_sub_(ps, update)


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


def replica_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of each replica: logits [R,B,N], targets [B] -> [R].

    Computed with the class axis in the middle ([R,N,B]): fast when `logits` is a transposed view
    of a [R,N,B] tensor, as the replica models return.
    """
    R, B, N = logits.shape
    return F.cross_entropy(logits.transpose(1, 2), targets.expand(R, B), reduction="none").mean(1)


def train_replicas(model: torch.nn.Module, batches: Iterator[tuple[torch.Tensor, torch.Tensor]], steps: int,
                   lr: Callable[[int], float | torch.Tensor], *, stop_at_accuracy: float | None = None,
                   tail: int = 100, curve_every: int = 50, progress: bool = True, desc: str = "train") -> TrainLog:
    """Train the R replicas of `model` (forward: tokens [B,S] -> logits [R,B,N]) for `steps` batches.

    Before each update, a replica whose batch accuracy reached `stop_at_accuracy` is frozen.
    `tail_batch_accuracy` is the mean batch accuracy over the last `tail` batches (the paper's metric).
    """
    params = [p for p in model.parameters()]
    opt = MaskedAdam(params)
    R = params[0].shape[0]
    dev = params[0].device
    active = torch.ones(R, dtype=torch.bool, device=dev)
    trained = torch.zeros(R, dtype=torch.long, device=dev)
    recent: deque[torch.Tensor] = deque(maxlen=tail)
    curve: list[list[float]] = []
    start = time.perf_counter()
    loss = torch.zeros(R)
    bar = tqdm(range(steps), desc=desc, disable=not progress, mininterval=5.0, leave=False)
    for step in bar:
        tokens, targets = next(batches)
        logits = model(tokens)
        loss = replica_cross_entropy(logits, targets)
        if stop_at_accuracy is not None or step >= steps - tail:  # accuracy only where it is used
            with torch.no_grad():
                acc = (logits.argmax(-1) == targets).to(logits.dtype).mean(1)
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
    bar.close()
    tail_acc = torch.stack(list(recent)).mean(0) if recent else torch.zeros(R)
    return TrainLog(steps_trained=trained.cpu().tolist(), final_loss=loss.detach().cpu().tolist(),
                    tail_batch_accuracy=tail_acc.cpu().tolist(), stopped_early=(~active).cpu().tolist(),
                    seconds=time.perf_counter() - start, loss_curve=curve)
