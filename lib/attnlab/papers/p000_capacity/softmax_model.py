"""The scaled-softmax QK model of §7.1 (and §8), replica-batched.

The max-over-heads model of `models` with the paper's four changes (§7.1): per-head scores are
scaled by 1/sqrt(d_k), a softmax runs along the context (key) dimension, heads are aggregated by a
sum instead of a max, and training may run longer. A_pq = sum_k softmax_q(S^(k)_pq / sqrt(d_k));
an edge p -> q iff A_pq > tau, tau learned (the logistic loss and micro-F1 of App. A.1 unchanged).
Replicas differ in (h, D_K); padded heads contribute nothing (masked to 0 after the softmax).
"""

from __future__ import annotations

import torch

from attnlab.core.replica import ReplicaModule

from . import constructions as C
from . import dense_graphs, models
from attnlab.core.train import Threshold, train_program


class SoftmaxSumQK(ReplicaModule):
    """specs: one (h, D_K) per replica; inits: (W_Q, W_K) per replica (d x D_K); tau starts at tau0."""

    def __init__(self, d: int, specs: list[tuple[int, int]], inits, tau0: float = 0.5,
                 device: str | torch.device = "cpu"):
        super().__init__(len(specs), torch.float32, device)
        D = max(D_K for _, D_K in specs)
        H = max(h for h, _ in specs)
        self.add("W_Q", (d, D))
        self.add("W_K", (d, D))
        self.add("tau", (1,))
        assign = torch.zeros(self.R, D, H)
        head_ok = torch.zeros(self.R, H)
        dk = torch.ones(self.R)
        for r, ((h, D_K), (wq, wk)) in enumerate(zip(specs, inits)):
            if D_K % h:
                raise ValueError(f"replica {r}: h = {h} does not divide D_K = {D_K}")
            self.place("W_Q", r, wq)
            self.place("W_K", r, wk)
            self.place("tau", r, torch.full((1,), float(tau0)))
            d_k = D_K // h
            for k in range(h):
                assign[r, k * d_k:(k + 1) * d_k, k] = 1
            head_ok[r, :h] = 1
            dk[r] = d_k
        self.register_buffer("assign", assign.to(self.device))
        self.register_buffer("head_ok", head_ok.to(self.device))
        self.register_buffer("dk", dk.to(self.device))  # integers: exact in any float type

    def aggregate(self, Xc: torch.Tensor) -> torch.Tensor:
        """Xc: (n, ell, d), or (R, n, ell, d) one batch per replica -> A = sum over the replica's heads of
        the row-softmax of S^(k)/sqrt(d_k), (R, n, ell, ell)."""
        spec = "npd,rdc->rnpc" if Xc.dim() == 3 else "rnpd,rdc->rnpc"
        Q = torch.einsum(spec, Xc, self.w("W_Q"))
        K = torch.einsum(spec, Xc, self.w("W_K"))
        S = torch.einsum("rnpc,rnqc,rch->rnhpq", Q, K, self.assign) / self.dk.sqrt().view(-1, 1, 1, 1, 1)
        P = torch.softmax(S, dim=-1) * self.head_ok[:, None, :, None, None]
        return P.sum(dim=2)

    def forward(self, Xc: torch.Tensor) -> torch.Tensor:
        """A - tau, (R, n, ell, ell): positive where an edge is declared (models.micro_f1 reads it)."""
        return self.aggregate(Xc) - self.w("tau").view(-1, 1, 1, 1)


def train_seed(m: int, d: int, specs: list[tuple[int, int]], seed: int, *, steps: int, lr: float, ell: int = 16,
               rho: float = 0.5, alpha: float = 10.0, tau0: float = 0.5, check_every: int = 500, patience: int = 5,
               stop_f1: float = 0.995, n_val: int = 500, n_test: int = 2000, device: str = "cpu",
               progress=None, kind: str = "softmax", checkpoint=None) -> list[dict]:
    """The protocol of `models.train_seed` (same data of `seed`, same initial W_Q, W_K per (h, D_K),
    same loss, early-stopping rule and metric) on the softmax-sum model (`kind="softmax"`, tau
    starting at tau0) or, through the same loop, on the max-over-heads model (`kind="max"`, tau
    starting at 0 as in App. A.1); per replica: test micro-F1, learned tau, steps trained,
    whether it stopped early. `checkpoint`: resume from and save to it (`core.train.train_program`)."""
    data = models.seed_data(m, d, seed, ell, rho, steps, n_val, n_test)
    dev = torch.device(device)
    X = torch.tensor(data["X"], dtype=torch.float32, device=dev)

    def emb(ctx):
        return X[torch.as_tensor(ctx, device=dev)]

    def labels(ctx):
        return torch.as_tensor(C.context_labels(ctx, data["perm"]), device=dev)

    inits = [models.init_weights(d, h, D, m, seed) for h, D in specs]
    if kind == "softmax":
        model = SoftmaxSumQK(d, specs, inits, tau0, dev)
    elif kind == "max":
        model = models.MaxOverHeadsQK(d, specs, inits, dev)
    else:
        raise ValueError(f"kind {kind!r}: choose 'softmax' or 'max'")
    Xtr, ytr = emb(data["train"]), labels(data["train"])
    Xval, yval = emb(data["val"]), labels(data["val"])
    if kind == "max":  # its fused loss (the same function, backward written out), as models.train_seed
        def loss_at(s):
            return model.loss(Xtr[s:s + 1], ytr[s:s + 1], alpha)
    else:
        def loss_at(s):
            return models.rgr_loss(model(Xtr[s:s + 1]), ytr[s:s + 1], alpha)
    log = train_program([model.W_Q, model.W_K, model.tau], loss_at, steps, lr,
                        validate=lambda: models.micro_f1(model, Xval, yval), rule=Threshold(stop_f1, patience),
                        check_every=check_every, progress=progress, checkpoint=checkpoint)
    f1 = models.micro_f1(model, emb(data["test"]), labels(data["test"]))
    R = len(specs)
    return [{"h": h, "D_K": D_K, "seed": seed, "f1": float(f1[r]), "tau": float(model.tau[r, 0].detach()),
             "steps": log.steps[r], "stopped": log.stopped[r], "seconds": log.seconds / R}
            for r, (h, D_K) in enumerate(specs)]



def train_runs(runs: list[dict], *, steps: int, lr: float, ell: int = 16, rho: float = 0.5, alpha: float = 10.0,
               tau0: float = 0.5, check_every: int = 500, patience: int = 5, stop_f1: float = 0.995, n_val: int = 500,
               n_test: int = 2000, device: str = "cpu", progress=None, kind: str = "softmax",
               checkpoint=None) -> list[dict]:
    """`train_seed` for replicas of different (m, d, seed) in ONE tensor program: one replica per run
    (a dict with m, d, h, D_K, seed), each on the data of its (m, d, seed) (`models.seed_data`,
    embeddings zero-padded to the largest d) with the initial W_Q, W_K of `models.init_weights`;
    the softmax-sum model (`kind="softmax"`) or the max-over-heads model (`kind="max"`, one
    `models.HeadPaddedQK` per head count, tau starting at 0). Same loss, early-stopping rule and
    metric as `train_seed`; a replica's function, loss and gradients are its own, so it follows its
    `train_seed` trajectory up to float summation order."""
    dev = torch.device(device)
    D = max(r["d"] for r in runs)
    cache: dict[tuple, dict] = {}
    for r in runs:
        key = (r["m"], r["d"], r["seed"])
        if key not in cache:
            data = models.seed_data(*key, ell, rho, steps, n_val, n_test)
            X = torch.zeros(r["m"], D, dtype=torch.float32)
            X[:, :r["d"]] = torch.tensor(data["X"], dtype=torch.float32)
            cache[key] = {name: (X[torch.as_tensor(data[name])],
                                 torch.as_tensor(C.context_labels(data[name], data["perm"])))
                          for name in ("train", "val", "test")}

    def stacked(name):
        keys = [(r["m"], r["d"], r["seed"]) for r in runs]
        return tuple(torch.stack([cache[k][name][j] for k in keys]).to(dev) for j in range(2))

    specs = [(r["h"], r["D_K"]) for r in runs]
    inits = [models.init_weights(r["d"], r["h"], r["D_K"], r["m"], r["seed"]) for r in runs]
    (Xtr, ytr), (Xva, yva) = stacked("train"), stacked("val")
    if kind == "softmax":
        model = SoftmaxSumQK(D, specs, inits, tau0, dev)
        params, margin, order = [model.W_Q, model.W_K, model.tau], model, None
        tau = lambda: model.tau[:, 0]  # noqa: E731
    elif kind == "max":
        model = dense_graphs.GroupedQK(D, specs, inits, dev)
        params, margin, order = model.param_groups, model.grouped, model.order
        Xtr, ytr, Xva, yva = Xtr[order], ytr[order], Xva[order], yva[order]  # group order, for training
        tau = model.tau
    else:
        raise ValueError(f"kind {kind!r}: choose 'softmax' or 'max'")
    log = train_program(params, lambda s: models.rgr_loss(margin(Xtr[:, s:s + 1]), ytr[:, s:s + 1], alpha), steps, lr,
                        validate=lambda: dense_graphs.micro_f1(margin, Xva, yva), rule=Threshold(stop_f1, patience),
                        check_every=check_every, progress=progress, checkpoint=checkpoint)
    f1 = dense_graphs.micro_f1(model, *stacked("test"))
    back = list(range(len(runs))) if order is None else model.back.tolist()
    taus = tau().detach()
    return [{"h": r["h"], "D_K": r["D_K"], "seed": r["seed"], "f1": float(f1[i]), "tau": float(taus[i]),
             "steps": log.steps[back[i]], "stopped": log.stopped[back[i]], "seconds": log.seconds / len(runs)}
            for i, r in enumerate(runs)]
