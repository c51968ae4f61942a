"""The trainable max-over-heads QK model of §3 / §6 / App. A.1, replica-batched.

R replicas share the frozen embeddings X of one seed and differ in (h, D_K): W_Q, W_K in
R^{d x D_K} (padded to the largest D_K), split into h column blocks of width d_k = D_K/h, and a
scalar threshold tau. Head scores S^(k) = (X_C W_Q^(k)) (X_C W_K^(k))^T, no scaling, no softmax, no
value path; S_max = max over the replica's heads; an edge p -> q iff S_max(p, q) > tau.
Training (`train_seed`): the weighted logistic loss of App. A.1 on one context per step, Adam
(= AdamW with weight decay 0), validation micro-F1 every `check_every` steps and the early-stopping
rule "stop after `patience` consecutive checks above `stop_f1`", which *freezes* a replica
(core.train.MaskedAdam: its parameters and moments stop changing).
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.core.replica import ReplicaModule, replica_generator
from attnlab.core.train import MaskedAdam

from . import constructions as C
from . import tasks as T


class MaxOverHeadsQK(ReplicaModule):
    """specs: one (h, D_K) per replica; d: embedding dimension; inits: (W_Q, W_K) per replica (d x D_K)."""

    def __init__(self, d: int, specs: list[tuple[int, int]], inits: list[tuple[torch.Tensor, torch.Tensor]],
                 device: str | torch.device = "cpu"):
        super().__init__(len(specs), torch.float32, device)
        D = max(D_K for _, D_K in specs)
        H = max(h for h, _ in specs)
        self.add("W_Q", (d, D))
        self.add("W_K", (d, D))
        self.add("tau", (1,))
        assign = torch.zeros(self.R, D, H)
        head_ok = torch.zeros(self.R, H, dtype=torch.bool)
        for r, ((h, D_K), (wq, wk)) in enumerate(zip(specs, inits)):
            if D_K % h:
                raise ValueError(f"replica {r}: h = {h} does not divide D_K = {D_K}")
            self.place("W_Q", r, wq)
            self.place("W_K", r, wk)
            self.place("tau", r, torch.zeros(1))
            d_k = D_K // h
            for k in range(h):
                assign[r, k * d_k:(k + 1) * d_k, k] = 1
            head_ok[r, :h] = True
        self.register_buffer("assign", assign.to(self.device))
        self.register_buffer("head_ok", head_ok.to(self.device))

    def forward(self, Xc: torch.Tensor) -> torch.Tensor:
        """Xc: (n, ell, d) context embeddings -> S_max - tau, (R, n, ell, ell)."""
        Q = torch.einsum("npd,rdc->rnpc", Xc, self.w("W_Q"))
        K = torch.einsum("npd,rdc->rnpc", Xc, self.w("W_K"))
        S = torch.einsum("rnpc,rnqc,rch->rnhpq", Q, K, self.assign)
        S = S.masked_fill(~self.head_ok[:, None, :, None, None], float("-inf"))
        return S.amax(dim=2) - self.w("tau").view(-1, 1, 1, 1)


def rgr_loss(margin: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    """App. A.1: z = alpha (S_max - tau); mean over the ell^2 pairs of
    softplus(-z) y (ell - 1) + softplus(z) (1 - y), per replica. margin (R, n, ell, ell), y (n, ell, ell)."""
    ell = margin.shape[-1]
    z = alpha * margin
    y = y.to(z.dtype)
    per = F.softplus(-z) * y * (ell - 1) + F.softplus(z) * (1 - y)
    return per.mean(dim=(1, 2, 3))


@torch.no_grad()
def micro_f1(model: MaxOverHeadsQK, Xc: torch.Tensor, y: torch.Tensor, chunk: int = 250) -> torch.Tensor:
    """Micro-F1 per replica over all ordered pairs of the contexts (App. A.1)."""
    tp = fp = fn = 0
    for a in range(0, len(Xc), chunk):
        pred = model(Xc[a:a + chunk]) > 0
        yy = y[a:a + chunk][None]
        tp = tp + (pred & yy).sum(dim=(1, 2, 3))
        fp = fp + (pred & ~yy).sum(dim=(1, 2, 3))
        fn = fn + (~pred & yy).sum(dim=(1, 2, 3))
    tp, fp, fn = (x.double() for x in (tp, fp, fn))
    return torch.where(tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), torch.ones_like(tp))


def init_weights(d: int, h: int, D_K: int, m: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """W_Q, W_K ~ N(0, std = 1/sqrt(d)) (App. A.1, read as a standard deviation), seeded by
    (the replica's config, seed) only."""
    g = replica_generator({"model": "max-qk", "m": m, "d": d, "h": h, "D_K": D_K}, seed)
    return (torch.randn(d, D_K, generator=g, dtype=torch.float64) / d ** 0.5,
            torch.randn(d, D_K, generator=g, dtype=torch.float64) / d ** 0.5)


def seed_data(m: int, d: int, seed: int, ell: int, rho: float, n_train: int, n_val: int, n_test: int) -> dict:
    """The frozen embeddings, the permutation and the train / validation / test contexts of one seed
    (each stream seeded by (seed, its name) only)."""
    X = T.gun_embeddings(m, d, T.rng(seed, "X", m, d))
    perm = T.random_permutation(m, T.rng(seed, "perm", m))
    out = {"X": X, "perm": perm}
    for name, n in (("train", n_train), ("val", n_val), ("test", n_test)):
        out[name] = T.sample_contexts(perm, n, ell, rho, T.rng(seed, "contexts", name, m, ell))
    return out


def train_seed(m: int, d: int, specs: list[tuple[int, int]], seed: int, *, steps: int, lr: float, ell: int = 16,
               rho: float = 0.5, alpha: float = 10.0, check_every: int = 500, patience: int = 5,
               stop_f1: float = 0.995, n_val: int = 500, n_test: int = 2000, device: str = "cpu",
               progress=None) -> list[dict]:
    """Train one replica per (h, D_K) in `specs` on the data of `seed`; returns per replica the test
    micro-F1, the learned tau, the steps trained and whether the early-stopping rule fired."""
    data = seed_data(m, d, seed, ell, rho, steps, n_val, n_test)
    dev = torch.device(device)
    X = torch.tensor(data["X"], dtype=torch.float32, device=dev)

    def emb(ctx):
        return X[torch.as_tensor(ctx, device=dev)]

    def labels(ctx):
        return torch.as_tensor(C.context_labels(ctx, data["perm"]), device=dev)

    model = MaxOverHeadsQK(d, specs, [init_weights(d, h, D, m, seed) for h, D in specs], dev)
    params = [model.W_Q, model.W_K, model.tau]
    opt = MaskedAdam(params)
    R = len(specs)
    active = torch.ones(R, dtype=torch.bool, device=dev)
    passes = torch.zeros(R, dtype=torch.long, device=dev)
    trained = torch.zeros(R, dtype=torch.long, device=dev)
    Xtr, ytr = emb(data["train"]), labels(data["train"])
    Xval, yval = emb(data["val"]), labels(data["val"])
    lr_vec = torch.full((R,), lr, device=dev)
    start = time.perf_counter()
    for step in range(steps):
        loss = rgr_loss(model(Xtr[step:step + 1]), ytr[step:step + 1], alpha)
        for p in params:
            p.grad = None
        loss.sum().backward()
        opt.step(lr_vec, active)
        trained += active
        if (step + 1) % check_every == 0:
            f1 = micro_f1(model, Xval, yval)
            passes = torch.where(f1 > stop_f1, passes + 1, torch.zeros_like(passes))
            active &= passes < patience
            if not active.any():
                break
        if progress is not None:
            progress.update(1)
    f1_test = micro_f1(model, emb(data["test"]), labels(data["test"]))
    seconds = time.perf_counter() - start
    return [{"h": h, "D_K": D_K, "seed": seed, "f1": float(f1_test[r]), "tau": float(model.tau[r, 0].detach()),
             "steps": int(trained[r]), "stopped": bool(not active[r]), "seconds": seconds / R}
            for r, (h, D_K) in enumerate(specs)]
