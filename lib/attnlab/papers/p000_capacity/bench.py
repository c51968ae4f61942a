"""Throughput workloads of paper 000 (`python -m attnlab.bench`): the max-over-heads QK sweep of Fig. 1.

The plain baseline is the §3 model written directly as an `nn.Module` (W_Q, W_K split into h column
blocks, the max over heads of the head scores, a threshold τ), trained one model at a time with
torch.optim.Adam on the same contexts with the loss of App. A.1.
"""

from __future__ import annotations

import torch
from torch import nn

from attnlab.core.benchmark import Workload, clock


class PlainMaxQK(nn.Module):
    """S_max(p, q) − τ with S^(k) = (X W_Q^(k)) (X W_K^(k))ᵀ over h heads of width D_K / h (no scaling)."""

    def __init__(self, W_Q: torch.Tensor, W_K: torch.Tensor, h: int):
        super().__init__()
        self.W_Q, self.W_K = nn.Parameter(W_Q.float().clone()), nn.Parameter(W_K.float().clone())
        self.tau = nn.Parameter(torch.zeros(1))
        self.h = h

    def forward(self, Xc: torch.Tensor) -> torch.Tensor:
        n, ell, _ = Xc.shape
        q = (Xc @ self.W_Q).view(n, ell, self.h, -1)
        k = (Xc @ self.W_K).view(n, ell, self.h, -1)
        return torch.einsum("nphc,nqhc->nhpq", q, k).amax(dim=1) - self.tau


def _batches(cfg: dict, steps: int) -> list:
    """One training context per step (E0): its embeddings [1, ell, d] and labels [1, ell, ell]."""
    from .constructions import context_labels
    from .models import seed_data

    data = seed_data(cfg["m"], cfg["d"], 0, cfg["ell"], cfg["rho"], steps, 1, 1)
    X = torch.tensor(data["X"], dtype=torch.float32)
    ctx = torch.as_tensor(data["train"])
    y = torch.as_tensor(context_labels(data["train"], data["perm"]))
    return [(X[ctx[s:s + 1]], y[s:s + 1]) for s in range(steps)]


def _rows(cfg: dict, idx=None) -> list:
    rows = cfg["models [h, D_K, seed]"]
    return rows if idx is None else [rows[i] for i in idx]


def _train_batched(cfg: dict, batches: list, steps: int, idx=None) -> float:
    """models.train_seed's step (the fused App. A.1 loss `MaxOverHeadsQK.loss`, MaskedAdam) on given contexts."""
    from attnlab.core.train import MaskedAdam

    from .models import MaxOverHeadsQK, init_weights

    rows, dev = _rows(cfg, idx), cfg.get("device", "cpu")
    model = MaxOverHeadsQK(cfg["d"], [(h, D) for h, D, _ in rows],
                           [init_weights(cfg["d"], h, D, cfg["m"], s) for h, D, s in rows], dev)
    params = [model.W_Q, model.W_K, model.tau]
    opt = MaskedAdam(params)
    R = len(rows)
    active = torch.ones(R, dtype=torch.bool, device=dev)
    lr = torch.full((R,), cfg["lr"], device=dev)
    tick = clock(dev)
    start = tick()
    for step in range(steps):
        Xc, y = batches[step]
        loss = model.loss(Xc, y, cfg["alpha"])
        for p in params:
            p.grad = None
        loss.sum().backward()
        opt.step(lr, active)
    return tick() - start


def _train_plain(cfg: dict, batches: list, steps: int, row: list) -> float:
    from .models import init_weights, rgr_loss

    (h, D_K, seed), dev = row, cfg.get("device", "cpu")
    model = PlainMaxQK(*init_weights(cfg["d"], h, D_K, cfg["m"], seed), h).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    tick = clock(dev)
    start = tick()
    for step in range(steps):
        Xc, y = batches[step]
        loss = rgr_loss(model(Xc)[None], y, cfg["alpha"])[0]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return tick() - start


def workloads(steps: int) -> list[Workload]:
    cfg = {"paper": "000", "m": 64, "d": 16, "ell": 16, "rho": 0.5, "alpha": 10.0, "lr": 3e-3, "steps": steps,
           "models [h, D_K, seed]": [[h, D, s] for h in (1, 2, 4, 8) for D in (8, 16, 32, 64) for s in range(4)]}
    return [Workload("000 max-over-heads QK", cfg,
                     f"000 Fig. 1, max-over-heads QK, m = 64, d = 16, h 1..8 × D_K 8..64 × 4 seeds, 64 models, "
                     f"{steps} steps of one context of 16",
                     single=37,  # h = 4, D_K = 16, seed 1
                     batches=_batches, train_batched=_train_batched, train_plain=_train_plain)]
