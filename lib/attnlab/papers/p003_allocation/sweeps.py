"""Resumable training over configurations (Fig. 2): every (heads, learning rate, seed) of a
sweep is one replica of one tensor program; each finished replica is one stored unit.

Loss: mean squared error over positions and coordinates, per replica; the replicas' losses are
summed for the backward pass, so each replica's gradient is exactly its own. Optimiser: Adam
with a per-replica learning rate and a cosine schedule (core.schedules.warmup_cosine), trained by
core.train.train_program.

A program can be checkpointed (`core.checkpoint.Checkpoint`, from `program_checkpoint(ctx, keys)`):
its state is saved as the checkpoint says (every `checkpoint_every` steps, or at the run's time
limit, which then raises `Incomplete`), and the same call resumes it bit for bit.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Iterator

import torch

from attnlab.core.checkpoint import Checkpoint
from attnlab.core.schedules import cosine_factor as cosine  # noqa: F401 (bench.py, sweeps_test.py read it here)
from attnlab.core.schedules import warmup_cosine
from attnlab.core.train import train_program
from attnlab.papers.p003_allocation import tasks as T
from attnlab.papers.p003_allocation.models import EncoderConfig, ReplicaEncoder


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
    R = len(configs)
    base = torch.tensor(lrs, dtype=dtype, device=device)
    seeds = sorted({c.seed for c in configs})
    streams = {s: T.batches(task, batch, s, dtype) for s in seeds}
    pick = torch.tensor([seeds.index(c.seed) for c in configs], device=device)
    curve: list = []
    started: list = []

    def loss_fn(step):
        if not started:  # after a resume: each seed's stream fast-forwarded past the batches used
            started.append(True)
            for _ in range(step):
                for s in seeds:
                    next(streams[s])
        data = [next(streams[s]) for s in seeds]
        x = torch.stack([d[0] for d in data]).to(device).index_select(0, pick)
        y = torch.stack([d[1] for d in data]).to(device).index_select(0, pick)
        loss = ((model(x) - y) ** 2).mean(dim=(1, 2, 3))
        if step % curve_every == 0 or step == steps - 1:
            curve.append([step, *loss.detach().cpu().tolist()])
        return loss

    setup = time.perf_counter() - start
    log = train_program(list(model.parameters()), loss_fn, steps, warmup_cosine(base, steps), checkpoint=checkpoint,
                        extra={"curve": curve}, progress=True if progress else None, desc="train")
    start = time.perf_counter()
    xe, ye = T.eval_set(task, n_eval, dtype)
    with torch.no_grad():
        mse = torch.zeros(R, dtype=torch.float64)
        for i in range(0, n_eval, 256):
            xb = xe[i:i + 256].to(device).expand(R, -1, -1, -1)
            out = model(xb)
            mse += ((out - ye[i:i + 256].to(device)) ** 2).sum(dim=(1, 2, 3)).double().cpu()
        mse /= n_eval * task.L * task.d
    seconds = (setup + log.seconds + time.perf_counter() - start) / R  # setup, training (all calls), evaluation
    for r in range(R):
        yield r, {"eval_mse": float(mse[r]), "final_loss": log.final_loss[r],
                  "curve": [[int(c[0]), float(c[1 + r])] for c in curve]}, seconds
