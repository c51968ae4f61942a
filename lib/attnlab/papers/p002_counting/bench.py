"""Throughput workloads of paper 002 (`python -m attnlab.bench`): the counting sweep over (d, p).

The plain baseline is §3's counting model written directly as an `nn.Module` (reference.forward in
torch), trained one model at a time with torch.optim.Adam on the same batches.
"""

from __future__ import annotations

import math
import torch
import torch.nn.functional as F
from torch import nn

from attnlab.core.benchmark import Workload, clock

GRID = [1, 2, 3, 4, 6, 8, 11, 16]  # the first 8 values of the paper's (d, p) grid (paper.GRID)


class PlainCounting(nn.Module):
    """§3's counting model, written directly: x ↦ W2 ReLU(W1 (x_b + A x_b)) with A = softmax?(Q Kᵀ/√d) or a
    learned L × L matrix (the `lin` variants)."""

    def __init__(self, variant: str, T: int, L: int, d: int, p: int):
        super().__init__()
        self.variant, self.d = variant, d
        self.emb = nn.Embedding(T, d)
        if variant.startswith("lin"):
            self.A = nn.Parameter(torch.empty(L, L).uniform_(-1 / math.sqrt(L), 1 / math.sqrt(L)))
        else:
            self.W_Q, self.W_K = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.W1, self.W2 = nn.Linear(d, p), nn.Linear(p, L + 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xb = self.emb(x)  # [B, L, d]
        if self.variant.startswith("lin"):
            A = self.A.softmax(-1) if self.variant.endswith("sftm") else self.A
        else:
            A = self.W_Q(xb) @ self.W_K(xb).transpose(1, 2) / math.sqrt(self.d)
            A = A.softmax(-1) if self.variant.endswith("sftm") else A
        return self.W2(torch.relu(self.W1(xb + A @ xb)))  # [B, L, C]


def _batches(cfg: dict, steps: int) -> list:
    from .models import counting_batches

    it = counting_batches(cfg["T"], cfg["L"], cfg["batch_size"])
    return [next(it) for _ in range(steps)]


def _rows(cfg: dict, idx=None) -> list:
    rows = cfg["models [d, p, seed]"]
    return rows if idx is None else [rows[i] for i in idx]


def _train_batched(cfg: dict, batches: list, steps: int, idx=None) -> float:
    from .models import CountingConfig, ReplicaCounting, train_counting

    dev = cfg.get("device", "cpu")
    model = ReplicaCounting([CountingConfig(cfg["variant"], cfg["T"], cfg["L"], d, p, s) for d, p, s in _rows(cfg, idx)],
                            device=dev)
    tick = clock(dev)
    start = tick()  # the final eval runs on one batch (128 sequences): negligible
    train_counting(model, iter(batches), steps, lambda step: cfg["lr"], eval_set=batches[0],
                   betas=tuple(cfg["betas"]), eps=cfg["eps"])
    return tick() - start


def _train_plain(cfg: dict, batches: list, steps: int, row: list) -> float:
    from .models import hist_torch

    d, p, seed = row
    torch.manual_seed(seed)
    dev = cfg.get("device", "cpu")
    model = PlainCounting(cfg["variant"], cfg["T"], cfg["L"], d, p).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"], betas=tuple(cfg["betas"]), eps=cfg["eps"])
    tick = clock(dev)
    start = tick()
    for step in range(steps):
        x = batches[step]
        logits, y = model(x), hist_torch(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return tick() - start


def workloads(steps: int) -> list[Workload]:
    out = []
    for variant in ("dot", "lin+sftm"):
        cfg = {"paper": "002", "variant": variant, "T": 8, "L": 6, "batch_size": 128, "steps": steps,
               "lr": 1e-3, "betas": [0.9, 0.98], "eps": 1e-9,
               "models [d, p, seed]": [[d, p, 0] for d in GRID for p in GRID]}
        out.append(Workload(
            f"002 counting {variant}", cfg,
            f"002 counting `{variant}`, T = 8, L = 6, 8 × 8 grid of (d, p), 64 models, {steps} steps of batch 128",
            single=36,  # d = p = 6
            batches=_batches, train_batched=_train_batched, train_plain=_train_plain))
    return out
