"""Learning-rate schedules of the papers, for `core.train.train_program` (one value per replica).

A schedule is a function step -> learning rate (a float, or an [R] tensor: one per replica), or,
for a schedule that reads the training (ReduceLROnPlateau), an object with `__call__(step)` and
`observe(scores, active)` (the program calls it at each check) and `state_dict` /
`load_state_dict` (saved in the program's checkpoint). Each is tested against torch's own scheduler
on a single replica (schedules_test.py).

- `linear_lr(start, end, steps, steps_per_epoch)`: torch's LinearLR, stepped once per epoch.
- `warmup_cosine(lr, steps, warmup)` (factor `cosine_factor`): linear warm-up over `warmup` steps,
  then cosine decay to 0.
- `one_cycle(max_lr, total, pct_start, ...)`: torch's OneCycleLR (cosine annealing, two phases),
  with a per-replica total (each replica its own step budget).
- `ReduceOnPlateau(lr, R, factor, patience, threshold, min_lr, eps)`: torch's ReduceLROnPlateau
  (mode min, relative threshold, cooldown 0) for R replicas at once; an inactive replica's state
  does not change.
"""

from __future__ import annotations

import math
from typing import Callable

import torch


def linear_lr(start: float, end: float, steps: int, steps_per_epoch: int = 1) -> Callable[[int], float]:
    """Learning rate falling linearly from `start` to `end`, stepped once per epoch.

    Mirrors torch's LinearLR: at epoch e of E = steps // steps_per_epoch, lr = start + (end - start) * e / E.
    """
    epochs = max(1, steps // steps_per_epoch)
    return lambda step: start + (end - start) * min(step // steps_per_epoch, epochs) / epochs


def cosine_factor(step: int, steps: int, warmup: int = 0) -> float:
    """The factor of `warmup_cosine`: (step + 1) / warmup during the warm-up (step < warmup), then
    (1 + cos(π (step − warmup) / max(1, steps − warmup))) / 2, falling from 1 to 0 at `steps`."""
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


def warmup_cosine(lr: float | torch.Tensor, steps: int, warmup: int = 0) -> Callable[[int], float | torch.Tensor]:
    """lr · cosine_factor(step, steps, warmup): linear warm-up, then cosine decay to 0 (after the
    warm-up torch's CosineAnnealingLR(T_max = steps − warmup, eta_min = 0) in closed form). `lr`: a
    float, or [R] per-replica peak rates."""
    return lambda step: lr * cosine_factor(step, steps, warmup)


def one_cycle(max_lr: float, total: int | torch.Tensor, pct_start: float = 0.3, div_factor: float = 25.0,
              final_div_factor: float = 1e4) -> Callable[[int], torch.Tensor]:
    """torch's OneCycleLR (anneal "cos", two phases) per replica, with `total` steps each ([R] or one
    number): with e1 = pct_start · total − 1, e2 = total − 1, initial = max_lr / div_factor and
    final = initial / final_div_factor, lr rises from initial to max_lr over [0, e1] and falls to
    final over [e1, e2], each phase as cos_anneal(a, b, x) = b + (a − b)(1 + cos(π x)) / 2."""
    total_t = torch.as_tensor(total, dtype=torch.float64).reshape(-1)
    initial = max_lr / div_factor
    final = initial / final_div_factor
    end1 = pct_start * total_t - 1
    end2 = total_t - 1

    def cos(a, b, x):
        return b + (a - b) / 2.0 * (torch.cos(math.pi * x) + 1)

    def f(step: int) -> torch.Tensor:
        s = torch.full_like(total_t, float(step))
        up = cos(initial, max_lr, s / end1)
        down = cos(max_lr, final, ((s - end1) / (end2 - end1)).clamp(0, 1))
        return torch.where(s <= end1, up, down)
    return f


class ReduceOnPlateau:
    """torch's ReduceLROnPlateau (mode "min", threshold_mode "rel", cooldown 0) for R replicas:
    at each `observe(scores, active)`, replica r with score s: better = s < best (1 − threshold);
    best ← s if better; bad ← 0 if better else bad + 1; if bad > patience: lr ← max(lr · factor,
    min_lr) when that changes lr by more than eps, and bad ← 0. Inactive replicas keep their state."""

    def __init__(self, lr: float, R: int, *, factor: float = 0.1, patience: int = 10, threshold: float = 1e-4,
                 min_lr: float = 0.0, eps: float = 1e-8):
        self.factor, self.patience, self.threshold, self.min_lr, self.eps = factor, patience, threshold, min_lr, eps
        self.lr = torch.full((R,), float(lr), dtype=torch.float64)
        self.best = torch.full((R,), math.inf, dtype=torch.float64)
        self.bad = torch.zeros(R, dtype=torch.long)

    def __call__(self, step: int) -> torch.Tensor:
        return self.lr

    def observe(self, scores: torch.Tensor, active: torch.Tensor | None = None) -> None:
        s = torch.as_tensor(scores, dtype=torch.float64).cpu()
        act = torch.ones_like(self.bad, dtype=torch.bool) if active is None else torch.as_tensor(active).cpu().bool()
        better = s < self.best * (1 - self.threshold)
        self.best = torch.where(act & better, s, self.best)
        self.bad = torch.where(act, torch.where(better, torch.zeros_like(self.bad), self.bad + 1), self.bad)
        cut = act & (self.bad > self.patience)
        new = torch.clamp(self.lr * self.factor, min=self.min_lr)
        self.lr = torch.where(cut & (self.lr - new > self.eps), new, self.lr)
        self.bad = torch.where(cut, torch.zeros_like(self.bad), self.bad)

    def state_dict(self) -> dict:
        return {"lr": self.lr, "best": self.best, "bad": self.bad}

    def load_state_dict(self, state: dict) -> None:
        self.lr, self.best, self.bad = (state[k].cpu().clone() for k in ("lr", "best", "bad"))
