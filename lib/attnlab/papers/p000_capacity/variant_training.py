"""The training loop shared by the variant models of §7 and App. A.3 (softmax, value channel, dense
graphs, the pre-LN block): R replicas in one tensor program, one batch per step, a validation
check every `check_every` steps and an early-stopping rule that *freezes* a replica
(core.train.MaskedAdam: its parameters and moments stop changing), optional decoupled weight
decay (AdamW) applied to active replicas only.

The rule of App. A.1 (`Threshold`): stop after `patience` consecutive checks whose score beats a
level (validation micro-F1 > 0.995). For the value channel (§7.2: "the same check interval and
patience" on validation MSE, no level given) `Plateau`: stop after `patience` consecutive checks
without improving on the best score.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import torch

from attnlab.core.checkpoint import Checkpoint
from attnlab.core.train import MaskedAdam


@dataclass
class Threshold:
    """Freeze after `patience` consecutive checks with score > level (higher is better)."""

    level: float = 0.995
    patience: int = 5

    def start(self, R: int, device) -> None:
        self.passes = torch.zeros(R, dtype=torch.long, device=device)

    def keep(self, score: torch.Tensor) -> torch.Tensor:
        self.passes = torch.where(score > self.level, self.passes + 1, torch.zeros_like(self.passes))
        return self.passes < self.patience


@dataclass
class Plateau:
    """Freeze after `patience` consecutive checks without a score below best * (1 - rel) (lower is better)."""

    patience: int = 5
    rel: float = 1e-3

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
class FitLog:
    steps: list[int]
    stopped: list[bool]
    final_loss: list[float]
    seconds: float


def fit(params, loss_at: Callable[[int], torch.Tensor], steps: int, lr: float, *,
        validate: Callable[[], torch.Tensor] | None = None, rule=None, check_every: int = 500,
        weight_decay: float = 0.0, progress=None, checkpoint: Checkpoint | None = None) -> FitLog:
    """Minimise `loss_at(step)` ([R], one loss per replica; their sum is backpropagated, so each
    replica gets exactly its own gradient) with Adam(W) at learning rate `lr` for `steps` steps.
    Every `check_every` steps `validate()` ([R] scores) feeds `rule`, which freezes replicas.
    `params`: a list of parameters with a leading replica axis R, or a list of such lists (groups
    of R_1, R_2, ... replicas, one optimiser each; losses and scores concatenated in group order).
    With `checkpoint` (`core.checkpoint.Checkpoint`) a saved state (parameters, Adam states, active
    mask, steps trained, the rule's state, the step) is loaded first and saved as the checkpoint
    says (raising `Incomplete` at its deadline): the data of a step is `loss_at(step)`'s, so the
    resumed fit ends bit for bit as an uninterrupted one."""
    groups = params if isinstance(params[0], (list, tuple)) else [params]
    sizes = [g[0].shape[0] for g in groups]
    R = sum(sizes)
    dev = groups[0][0].device
    dtype = groups[0][0].dtype
    opts = [MaskedAdam(g) for g in groups]
    bounds = [(sum(sizes[:i]), sum(sizes[:i + 1])) for i in range(len(sizes))]
    active = torch.ones(R, dtype=torch.bool, device=dev)
    trained = torch.zeros(R, dtype=torch.long, device=dev)
    if rule is not None:
        rule.start(R, dev)
    lr_vec = torch.full((R,), lr, dtype=dtype, device=dev)
    loss = torch.zeros(R, device=dev)
    flat = [p for g in groups for p in g]
    first, before = 0, 0.0
    state = checkpoint.load(dev) if checkpoint is not None else None
    if state is not None:
        with torch.no_grad():
            for p, v in zip(flat, state["params"], strict=True):
                p.copy_(v)
        for opt, s in zip(opts, state["opts"], strict=True):
            opt.load_state_dict(s)
        active.copy_(state["active"])
        trained.copy_(state["trained"])
        if rule is not None:
            vars(rule).update(state["rule"])
        first, before = state["step"], state["seconds"]
        if progress is not None:
            progress.update(first)
    start = time.perf_counter()
    for step in range(first, steps):
        loss = loss_at(step)
        for g in groups:
            for p in g:
                p.grad = None
        loss.sum().backward()
        for g, opt, (a, b) in zip(groups, opts, bounds):
            if weight_decay:
                with torch.no_grad():
                    keep = 1 - lr * weight_decay * active[a:b].to(dtype)
                    for p in g:
                        p.mul_(keep.view((-1,) + (1,) * (p.dim() - 1)))
            opt.step(lr_vec[a:b], active[a:b])
        trained += active
        if progress is not None:
            progress.update(1)
        if validate is not None and rule is not None and (step + 1) % check_every == 0:
            active &= rule.keep(validate())
            if not active.any():
                break
        if checkpoint is not None and step + 1 < steps and checkpoint.due(step + 1):
            checkpoint.save({"params": flat, "opts": [o.state_dict() for o in opts], "active": active,
                             "trained": trained, "rule": dict(vars(rule)) if rule is not None else {},
                             "step": step + 1, "seconds": before + time.perf_counter() - start})
            checkpoint.stop_if_late(step + 1, steps, f"a program of {R} replicas")
    return FitLog(trained.cpu().tolist(), (~active).cpu().tolist(), loss.detach().cpu().tolist(),
                  before + time.perf_counter() - start)
