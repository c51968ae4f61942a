"""Throughput workloads of paper 004 (`python -m attnlab.bench`): attention-only Transformer sweeps.

The plain baseline is the one-layer attention-only Transformer of Eqs. 1-2 written directly as an
`nn.Module` (per-head maps), trained one model at a time with torch.optim.Adam on the same batches.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attnlab.core.benchmark import Workload, clock


class PlainAoT(nn.Module):
    """The one-layer attention-only Transformer (Eqs. 1-2): the last token's residual plus the sum over
    heads of W_O^h softmax(q kᵀ/√d_h) V^h, unembedded by W_U."""

    def __init__(self, N: int, S: int, d: int, d_h: int, H: int):
        super().__init__()
        self.E, self.P = nn.Embedding(N, d), nn.Parameter(torch.randn(S, d))
        b = 1 / math.sqrt(d)
        self.W_Q, self.W_K, self.W_V = (nn.Parameter(torch.empty(H, d_h, d).uniform_(-b, b)) for _ in range(3))
        self.W_O = nn.Parameter(torch.empty(H, d, d_h).uniform_(-1 / math.sqrt(d_h), 1 / math.sqrt(d_h)))
        self.W_U = nn.Linear(d, N, bias=False)
        self.scale = 1 / math.sqrt(d_h)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        x = self.E(t) + self.P  # [B, S, d]
        q = torch.einsum("bd,hkd->bhk", x[:, -1], self.W_Q) * self.scale
        k = torch.einsum("bsd,hkd->bhsk", x, self.W_K)
        v = torch.einsum("bsd,hkd->bhsk", x, self.W_V)
        a = torch.einsum("bhk,bhsk->bhs", q, k).softmax(-1)
        o = torch.einsum("bhs,bhsk->bhk", a, v)
        return self.W_U(x[:, -1] + torch.einsum("bhk,hdk->bd", o, self.W_O))


def _batches(cfg: dict, steps: int) -> list:
    from .tasks import lookup_table_task, paper_batches

    tokens, targets = lookup_table_task(cfg["N"], cfg["S"])
    it = paper_batches(tokens, targets, cfg["batch_size"], cfg["n_batches"])
    return [next(it) for _ in range(steps)]


def _rows(cfg: dict, idx=None) -> list:
    rows = cfg["models [d, d_h, H, seed]"]
    return rows if idx is None else [rows[i] for i in idx]


def _lr(cfg: dict, steps: int):
    from attnlab.core.train import linear_lr

    return linear_lr(cfg["lr_start"], cfg["lr_end"], steps)


def _train_batched(cfg: dict, batches: list, steps: int, idx=None) -> float:
    from attnlab.core.train import train_replicas

    from .models import AoTConfig, ReplicaAoT

    dev = cfg.get("device", "cpu")
    model = ReplicaAoT([AoTConfig(cfg["N"], cfg["S"], d, dh, H, s) for d, dh, H, s in _rows(cfg, idx)], device=dev)
    tick = clock(dev)
    start = tick()
    train_replicas(model, iter(batches), steps, _lr(cfg, steps), progress=False)
    return tick() - start


def _train_plain(cfg: dict, batches: list, steps: int, row: list) -> float:
    (d, d_h, H, seed), dev = row, cfg.get("device", "cpu")
    torch.manual_seed(seed)
    model = PlainAoT(cfg["N"], cfg["S"], d, d_h, H).to(dev)
    lr = _lr(cfg, steps)
    opt = torch.optim.Adam(model.parameters(), lr=lr(0), betas=tuple(cfg["betas"]), eps=cfg["eps"])
    tick = clock(dev)
    start = tick()
    for step in range(steps):
        x, y = batches[step]
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        for g in opt.param_groups:
            g["lr"] = lr(step)
        opt.step()
    return tick() - start


def workloads(steps: int) -> list[Workload]:
    common = {"paper": "004", "S": 2, "batch_size": 256, "n_batches": 64, "steps": steps,
              "lr_start": 1e-2, "lr_end": 5e-4, "betas": [0.9, 0.999], "eps": 1e-8}
    # the paper's sizes (Fig. 1a's range): N = 50, d = 4..11, H = 1..8, d_h = d - (H - 1) % 4 (<= d)
    paper = {**common, "N": 50,
             "models [d, d_h, H, seed]": [[d, d - (H - 1) % 4, H, 0] for d in range(4, 12) for H in range(1, 9)]}
    # Experiment 6's sweep (Fig. 4): N = 10, d = d_h = 2, H = 1..21, seeds 0, 1, 2, ... (first 64)
    exp6 = {**common, "N": 10, "models [d, d_h, H, seed]": [[2, 2, H, s] for s in range(4) for H in range(1, 22)][:64]}
    return [
        Workload("004 AoT paper sizes", paper,
                 f"004 AoT, paper's sizes: N = 50, d 4..11, d_h ≤ d, H 1..8, 64 models, {steps} steps of batch 256",
                 single=35, batches=_batches, train_batched=_train_batched, train_plain=_train_plain),  # single: d = 8, H = 4
        Workload("004 AoT Exp. 6", exp6,
                 f"004 AoT, Exp. 6: N = 10, d = d_h = 2, H 1..21, 64 models, {steps} steps of batch 256",
                 single=9, batches=_batches, train_batched=_train_batched, train_plain=_train_plain),  # H = 10
    ]
