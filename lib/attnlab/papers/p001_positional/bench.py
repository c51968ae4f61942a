"""Throughput workloads of paper 001 (`python -m attnlab.bench`): Fig. 4's sweep of positional Transformers.

The plain baseline is App. D.1.1's positional Transformer written directly as an `nn.Module`
(nn.Linear maps; attention from the one-hot positions only; the residual concatenated, Eq. 1),
trained one model at a time with torch.optim.Adam on the same batches.
"""

from __future__ import annotations

import math
import numpy as np
import torch
from torch import nn

from attnlab.core.benchmark import Workload, clock

TASKS = ("cumsum", "cummin", "sort", "maxsub")


class PlainPositional(nn.Module):
    """x [B, n] → [B, n]: encoder, L layers of Φ(⊕_h softmax(P W_Q^h (P W_K^h)ᵀ/√d_k) h W_V^h W_O ⊕ h), decoder."""

    def __init__(self, n: int, E: int, hidden: int, heads: int, layers: int):
        super().__init__()
        self.n, self.H = n, heads
        nodes = n + 1
        self.register_buffer("P", torch.eye(nodes))
        self.enc, self.dec = nn.Linear(1, E), nn.Linear(E, 1)
        self.q = nn.ModuleList(nn.Linear(nodes, heads * nodes) for _ in range(layers))
        self.k = nn.ModuleList(nn.Linear(nodes, heads * nodes) for _ in range(layers))
        self.v = nn.ModuleList(nn.Linear(E, E) for _ in range(layers))
        self.o = nn.ModuleList(nn.Linear(E, E) for _ in range(layers))
        self.m1 = nn.ModuleList(nn.Linear(2 * E, hidden) for _ in range(layers))
        self.m2 = nn.ModuleList(nn.Linear(hidden, E) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, nodes = x.shape[0], self.n + 1
        h = self.enc(torch.cat([x, x.new_zeros(B, 1)], 1).unsqueeze(-1))  # [B, nodes, E]
        for q, k, v, o, m1, m2 in zip(self.q, self.k, self.v, self.o, self.m1, self.m2):
            Q = q(self.P).view(nodes, self.H, nodes).transpose(0, 1)  # [H, nodes, d_k]
            K = k(self.P).view(nodes, self.H, nodes).transpose(0, 1)
            A = torch.softmax(Q @ K.transpose(1, 2) / math.sqrt(nodes), -1)  # [H, nodes, nodes]
            V = v(h).view(B, nodes, self.H, -1).transpose(1, 2)  # [B, H, nodes, d_v]
            attn = o((A @ V).transpose(1, 2).reshape(B, nodes, -1))
            h = m2(torch.relu(m1(torch.cat([attn, h], -1))))
        return self.dec(h).squeeze(-1)[:, : self.n]


def _batches(cfg: dict, steps: int) -> list:
    """Lists of the §7 training distribution and every task's targets: (x [B, n], {task: y [B, n]})."""
    from .sweeps import train_lists
    from .tasks import targets

    x = train_lists(cfg["n"], steps * cfg["batch_size"], 0)
    out = []
    for s in range(steps):
        xs = x[s * cfg["batch_size"]:(s + 1) * cfg["batch_size"]]
        out.append((torch.tensor(xs, dtype=torch.float32),
                    {t: torch.tensor(targets(t, xs), dtype=torch.float32) for t in TASKS}))
    return out


def _rows(cfg: dict, idx=None) -> list:
    rows = cfg["models [task, seed]"]
    return rows if idx is None else [rows[i] for i in idx]


def _config(cfg: dict):
    from .models import ModelConfig

    return ModelConfig(n=cfg["n"], kind="positional", heads=cfg["heads"], embed=cfg["embed"], hidden=cfg["hidden"])


def _train_batched(cfg: dict, batches: list, steps: int, idx=None) -> float:
    """sweeps.train's step (forward, per-replica MSE, MaskedAdam) on given batches, constant lr."""
    from attnlab.core.train import MaskedAdam

    from .models import Transformer

    rows, dev = _rows(cfg, idx), cfg.get("device", "cpu")
    model = Transformer([_config(cfg)] * len(rows), [s for _, s in rows]).to(dev)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = MaskedAdam(params)
    R = len(rows)
    active = torch.ones(R, dtype=torch.bool, device=dev)
    lr = torch.full((R,), cfg["lr"], device=dev)
    tick = clock(dev)
    start = tick()
    for step in range(steps):
        x, ys = batches[step]
        y = torch.stack([ys[TASKS[t]] for t, _ in rows])  # [R, B, n]
        loss = ((model(x) - y) ** 2).mean(dim=(1, 2))
        for p in params:
            p.grad = None
        loss.sum().backward()
        opt.step(lr, active)
    return tick() - start


def _train_plain(cfg: dict, batches: list, steps: int, row: list) -> float:
    (t, seed), dev = row, cfg.get("device", "cpu")
    torch.manual_seed(seed)
    c = _config(cfg)
    model = PlainPositional(cfg["n"], cfg["embed"], cfg["hidden"], cfg["heads"], c.depth).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    tick = clock(dev)
    start = tick()
    for step in range(steps):
        x, ys = batches[step]
        loss = ((model(x) - ys[TASKS[t]]) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return tick() - start


def workloads(steps: int) -> list[Workload]:
    steps = max(1, steps // 5)  # a step costs tens of times a counting step: a fifth of the steps
    cfg = {"paper": "001", "n": 8, "heads": 2, "embed": 16, "hidden": 16, "batch_size": 64, "lr": 1e-2,
           "steps": steps, "tasks": list(TASKS),
           "models [task, seed]": [[t, s] for t in range(len(TASKS)) for s in range(16)]}
    return [Workload("001 positional Transformers", cfg,
                     f"001 Fig. 4, positional Transformers, n = 8, 4 layers, E = hidden = 16, 4 tasks × 16 seeds, "
                     f"64 models, {steps} steps of batch 64",
                     single=17,  # cummin, seed 1
                     batches=_batches, train_batched=_train_batched, train_plain=_train_plain)]
