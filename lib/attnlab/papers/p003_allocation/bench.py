"""Throughput workloads of paper 003 (`python -m attnlab.bench`): Fig. 2's sweep of one-layer encoders.

The plain baseline is what a user writes: torch's own `nn.TransformerEncoderLayer` (pre-norm, ReLU,
no dropout, causal mask) between a linear embedding with sinusoidal positions and a linear readout,
trained one model at a time with torch.optim.Adam and the same cosine schedule on the same batches.
"""

from __future__ import annotations

import torch
from torch import nn

from attnlab.core.benchmark import Workload, clock


class PlainEncoder(nn.Module):
    """y = W_R TransformerEncoderLayer(W_E x + b_E + PE) + b_R (models.ReplicaEncoder's math, one model)."""

    def __init__(self, d: int, D: int, H: int, ffn: int, L: int):
        super().__init__()
        from .models import sinusoidal

        self.embed = nn.Linear(d, D)
        self.layer = nn.TransformerEncoderLayer(D, H, dim_feedforward=ffn, dropout=0.0, batch_first=True,
                                                norm_first=True)
        self.readout = nn.Linear(D, d)
        self.register_buffer("pe", sinusoidal(L, D))
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(L))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x) + self.pe[: x.shape[1]]
        return self.readout(self.layer(h, src_mask=self.mask, is_causal=True))


def _task(cfg: dict):
    from .tasks import ConvTask

    return ConvTask(cfg["d"], cfg["L"], tuple(cfg["rho"]), cfg["noise"])


def _batches(cfg: dict, steps: int) -> list:
    from .tasks import batches

    it = batches(_task(cfg), cfg["batch_size"], 0)
    return [next(it) for _ in range(steps)]


def _rows(cfg: dict, idx=None) -> list:
    rows = cfg["models [H, lr, seed]"]
    return rows if idx is None else [rows[i] for i in idx]


def _train_batched(cfg: dict, batches: list, steps: int, idx=None) -> float:
    """sweeps.train's step (forward, per-replica MSE, MaskedAdam with a cosine schedule) on given batches."""
    from attnlab.core.train import MaskedAdam

    from .models import EncoderConfig, ReplicaEncoder
    from .sweeps import cosine

    rows, dev = _rows(cfg, idx), cfg.get("device", "cpu")
    model = ReplicaEncoder([EncoderConfig(cfg["d"], cfg["D"], H, cfg["D"], s) for H, _, s in rows], cfg["L"]).to(dev)
    params = list(model.parameters())
    opt = MaskedAdam(params)
    R = len(rows)
    active = torch.ones(R, dtype=torch.bool, device=dev)
    base = torch.tensor([lr for _, lr, _ in rows], device=dev)
    tick = clock(dev)
    start = tick()
    for step in range(steps):
        x, y = batches[step]
        loss = ((model(x.expand(R, -1, -1, -1)) - y) ** 2).mean(dim=(1, 2, 3))
        for p in params:
            p.grad = None
        loss.sum().backward()
        opt.step(base * cosine(step, steps), active)
    return tick() - start


def _train_plain(cfg: dict, batches: list, steps: int, row: list) -> float:
    from .sweeps import cosine

    (H, lr, seed), dev = row, cfg.get("device", "cpu")
    torch.manual_seed(seed)
    model = PlainEncoder(cfg["d"], cfg["D"], H, cfg["D"], cfg["L"]).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    tick = clock(dev)
    start = tick()
    for step in range(steps):
        x, y = batches[step]
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        for g in opt.param_groups:
            g["lr"] = lr * cosine(step, steps)
        opt.step()
    return tick() - start


def workloads(steps: int) -> list[Workload]:
    steps = max(1, steps // 5)  # a step costs tens of times a counting step: a fifth of the steps
    heads, lrs = [1, 4, 16, 64], [3e-4, 1e-3, 3e-3, 1e-2]
    cfg = {"paper": "003", "d": 8, "D": 64, "L": 16, "rho": [0.0, 1.0, 1.0, 1.0, 1.0], "noise": 0.01,
           "batch_size": 32, "steps": steps,
           "models [H, lr, seed]": [[H, lr, s] for H in heads for lr in lrs for s in range(4)]}
    return [Workload("003 4-gram encoders", cfg,
                     f"003 Fig. 2, 4-gram task, d = 8, D = 64, L = 16, heads 1..64 × 4 learning rates × 4 seeds, "
                     f"64 models, {steps} steps of batch 32",
                     single=21,  # H = 4, lr = 1e-3, seed 1
                     batches=_batches, train_batched=_train_batched, train_plain=_train_plain)]
