"""Resumable training over configurations (Fig. 2): every (heads, learning rate, seed) of a
sweep is one replica of one tensor program; each finished replica is one stored unit.

Loss: mean squared error over positions and coordinates, per replica; the replicas' losses are
summed for the backward pass, so each replica's gradient is exactly its own. Optimiser: Adam
(core.train.MaskedAdam) with a per-replica learning rate and a cosine schedule.

A program can be checkpointed (`core.checkpoint.Checkpoint`, from `program_checkpoint(ctx, keys)`):
its state is saved as the checkpoint says (every `checkpoint_every` steps, or at the run's time
limit, which then raises `Incomplete`), and the same call resumes it bit for bit.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict
from typing import Iterator

import torch

from attnlab.core.checkpoint import Checkpoint
from attnlab.core.progress import tqdm
from attnlab.core.train import MaskedAdam
from attnlab.papers.p003_allocation import tasks as T
from attnlab.papers.p003_allocation.models import EncoderConfig, ReplicaEncoder


def cosine(step: int, steps: int, warmup: int = 0) -> float:
    """Learning-rate factor: linear warm-up, then cosine decay to 0."""
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


def unit_key(task: T.ConvTask, cfg: EncoderConfig, lr: float, steps: int, batch: int, n_eval: int) -> dict:
    """The store key of one trained replica."""
    return {"what": "conv-encoder", **task.key(), "model": asdict(cfg), "lr": lr, "steps": steps, "batch": batch,
            "n_eval": n_eval}


def train(task: T.ConvTask, configs: list[EncoderConfig], lrs: list[float], steps: int, batch: int, n_eval: int,
          device="cpu", dtype=torch.float32, progress: bool = True, curve_every: int = 25,
          checkpoint: Checkpoint | None = None) -> Iterator[tuple[int, dict, float]]:
    """Train the replicas (configs[i] with learning rate lrs[i]) together; yields (i, result, seconds)
    per replica at the end. result: eval MSE on `n_eval` fresh sequences, final training loss and
    the training-loss curve. With `checkpoint`, a saved state is loaded first (parameters, Adam's
    state, the step, the curve; each seed's training stream is fast-forwarded past the batches
    used), and the state is saved as `checkpoint.due` says; past its deadline `Incomplete` is raised
    after the save. The resumed program ends bit for bit as an uninterrupted one."""
    start = time.perf_counter()
    model = ReplicaEncoder(configs, task.L, dtype=dtype, device=device)
    params = list(model.parameters())
    opt = MaskedAdam(params)
    R = len(configs)
    active = torch.ones(R, dtype=torch.bool, device=device)
    base = torch.tensor(lrs, dtype=dtype, device=device)
    seeds = sorted({c.seed for c in configs})
    streams = {s: T.batches(task, batch, s, dtype) for s in seeds}
    pick = torch.tensor([seeds.index(c.seed) for c in configs], device=device)
    curve, first, before = [], 0, 0.0
    if checkpoint is not None:
        state = checkpoint.load(device)
        if state is not None:
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            curve, first, before = state["curve"], state["step"], state["seconds"]
            for _ in range(first):
                for s in seeds:
                    next(streams[s])
    loss = torch.zeros(R)
    bar = tqdm(range(first, steps), desc="train", disable=not progress, mininterval=5.0, leave=False, initial=first,
               total=steps)
    for step in bar:
        data = [next(streams[s]) for s in seeds]
        x = torch.stack([d[0] for d in data]).to(device).index_select(0, pick)
        y = torch.stack([d[1] for d in data]).to(device).index_select(0, pick)
        out = model(x)
        loss = ((out - y) ** 2).mean(dim=(1, 2, 3))
        if step % curve_every == 0 or step == steps - 1:
            curve.append([step, *loss.detach().cpu().tolist()])
        for p in params:
            p.grad = None
        loss.sum().backward()
        opt.step(base * cosine(step, steps), active)
        if checkpoint is not None and step + 1 < steps and checkpoint.due(step + 1):
            checkpoint.save({"model": model.state_dict(), "opt": opt.state_dict(), "curve": curve, "step": step + 1,
                             "seconds": before + time.perf_counter() - start})
            if checkpoint.deadline.passed():
                bar.close()
                checkpoint.stop_if_late(step + 1, steps, f"{R} replicas")
    bar.close()
    xe, ye = T.eval_set(task, n_eval, dtype)
    with torch.no_grad():
        mse = torch.zeros(R, dtype=torch.float64)
        for i in range(0, n_eval, 256):
            xb = xe[i:i + 256].to(device).expand(R, -1, -1, -1)
            out = model(xb)
            mse += ((out - ye[i:i + 256].to(device)) ** 2).sum(dim=(1, 2, 3)).double().cpu()
        mse /= n_eval * task.L * task.d
    seconds = (before + time.perf_counter() - start) / R
    for r in range(R):
        yield r, {"eval_mse": float(mse[r]), "final_loss": float(loss[r].detach()),
                  "curve": [[int(c[0]), float(c[1 + r])] for c in curve]}, seconds
