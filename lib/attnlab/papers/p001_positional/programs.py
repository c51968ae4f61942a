"""Resumable replica-batched training programs for the token-input models of App. D.2 and D.3.

`ReplicaAdamW` is torch.optim.AdamW as minGPT uses it (decoupled weight decay on the matmul
weights only), with a per-replica gradient-norm clip (`torch.nn.utils.clip_grad_norm_` applied to
each replica's own parameters), on top of `attnlab.core.train.MaskedAdam`: each replica's update
depends on its own gradient only.

`run_program` trains one program for `steps` steps, saving a checkpoint (weights, optimizer state,
the batch generator's state, the step) every `checkpoint_every` steps through core
(`core.checkpoint.Checkpoint`: atomic); past `deadline` (seconds since the epoch) it raises
`Incomplete` after a checkpoint, and the same call resumes from it. The
k-hop (`khop.py`) and mixed-type (`mixed.py`) chapters use it.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import torch

from attnlab.core.checkpoint import Checkpoint, Deadline
from attnlab.core.progress import tqdm
from attnlab.core.train import MaskedAdam


class ReplicaAdamW:
    """AdamW over replica-batched parameters: decay (decoupled, `lr * weight_decay`) on the
    parameters named in `decay`, a gradient clip of each replica's global norm to `clip` (0: none)."""

    def __init__(self, named_params: list[tuple[str, torch.nn.Parameter]], decay: set[str],
                 betas: tuple[float, float] = (0.9, 0.999), weight_decay: float = 0.0, clip: float = 0.0):
        self.names = [n for n, _ in named_params]
        self.params = [p for _, p in named_params]
        self.adam = MaskedAdam(self.params, betas=betas)
        self.decay = [p for n, p in named_params if n in decay]
        self.wd, self.clip = weight_decay, clip

    @torch.no_grad()
    def step(self, lr: torch.Tensor, active: torch.Tensor | None = None) -> torch.Tensor:
        """One update with per-replica learning rates `lr` [R]; returns each replica's gradient norm."""
        R = self.params[0].shape[0]
        if active is None:
            active = torch.ones(R, dtype=torch.bool, device=lr.device)
        sq = sum((p.grad.reshape(R, -1).double() ** 2).sum(1) for p in self.params)
        norm = sq.sqrt()
        if self.clip > 0:  # clip_grad_norm_: coef = max_norm / (norm + 1e-6), clamped to 1
            coef = (self.clip / (norm + 1e-6)).clamp(max=1.0).to(self.params[0].dtype)
            for p in self.params:
                p.grad.mul_(coef.view((-1,) + (1,) * (p.dim() - 1)))
        if self.wd > 0:
            keep = torch.where(active, 1 - lr * self.wd, torch.ones_like(lr))
            for p in self.decay:
                p.mul_(keep.view((-1,) + (1,) * (p.dim() - 1)))
        self.adam.step(lr, active)
        return norm

    def state(self) -> dict:
        return {"t": self.adam.t, "m": self.adam.m, "v": self.adam.v}

    @torch.no_grad()
    def load(self, state: dict) -> None:
        self.adam.t.copy_(state["t"])
        for dst, src in zip(self.adam.m + self.adam.v, list(state["m"]) + list(state["v"])):
            dst.copy_(src)


def run_program(model: torch.nn.Module, opt: ReplicaAdamW, loss_fn: Callable[[Any], torch.Tensor],
                steps: int, lr: Callable[[int], float], gen: torch.Generator | list[torch.Generator], *, checkpoint: str | None = None,
                checkpoint_every: int = 0, deadline: float | None = None, progress: bool = True,
                desc: str = "train", curve_every: int = 0) -> dict:
    """Train `steps` steps: each step `loss_fn(gen)` returns the per-replica losses [R] of one batch
    (drawn with `gen`: one generator, or a list, e.g. one per replica); the update is `opt.step`. Returns {"curve": [[step, losses...]], "seconds"}.

    With `checkpoint` (a file path) and `checkpoint_every` > 0, the state is saved every
    `checkpoint_every` steps and loaded if present, so an interrupted program resumes exactly (the
    same batches, the same updates); the file is removed at the end."""
    device = next(model.parameters()).device
    gens = gen if isinstance(gen, (list, tuple)) else [gen]
    done, curve, seconds = 0, [], 0.0
    saver = (Checkpoint(checkpoint, checkpoint_every, Deadline.absolute(deadline) if checkpoint_every else None)
             if checkpoint else None)  # without checkpoint_every: loaded if present, never saved
    ck = saver.load(device) if saver is not None else None
    if ck is not None:
        model.load_state_dict(ck["model"])
        opt.load(ck["opt"])
        for g, st in zip(gens, ck["gen"]):
            g.set_state(st)
        done, curve, seconds = ck["done"], ck["curve"], ck["seconds"]
    start = time.perf_counter()
    bar = tqdm(range(done, steps), desc=desc, disable=not progress, mininterval=5.0, leave=False)
    for step in bar:
        for p in opt.params:
            p.grad = None
        loss = loss_fn(gen)
        loss.sum().backward()
        opt.step(torch.full((loss.shape[0],), float(lr(step)), dtype=opt.params[0].dtype, device=device))
        if curve_every and step % curve_every == 0:
            curve.append([step] + loss.detach().cpu().tolist())
        done = step + 1
        if saver is not None and done < steps and saver.due(done):
            saver.save({"model": model.state_dict(), "opt": opt.state(), "gen": [g.get_state() for g in gens],
                        "done": done, "curve": curve, "seconds": seconds + time.perf_counter() - start})
            if saver.deadline.passed():
                bar.close()
                saver.stop_if_late(done, steps)
    bar.close()
    if saver is not None:
        saver.remove()
    return {"curve": curve, "seconds": seconds + time.perf_counter() - start}
