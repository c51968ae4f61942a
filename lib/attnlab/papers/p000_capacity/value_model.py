"""The value-channel model of §7.2 (message retrieval), replica-batched.

The key-query path of the core model is unchanged: W_Q, W_K in R^{d x D_K} split into h heads,
S_max = max_k Q^(k) K^(k)T, no 1/sqrt(d_k), no softmax, no threshold. A random value map
W_V in R^{d x d_msg} is drawn once and frozen; node i carries the message y_i = x_i W_V. The
prediction at position p of a context is y^_p = (S_max V_C)_p, Eq. (3), with V_C = X_C W_V the
in-context messages and the raw scores as mixing weights (all q in C, q = p included); the loss
is the mean over the "valid" positions (pi(v_p) in C) of ||y^_p - y_pi(p)||^2, Eq. (4).

The paper leaves d_msg and the law of W_V open: here W_V has i.i.d. N(0, 1/d_msg) entries, so
E||y_i||^2 = ||x_i||^2 = 1 and the zero predictor has MSE 1 (the scale of every reported MSE).
"""

from __future__ import annotations

import torch

from attnlab.core.replica import ReplicaModule

from . import models
from . import tasks as T
from attnlab.core.train import Plateau, train_program


class ValueChannelQK(ReplicaModule):
    """specs: one (h, D_K) per replica; inits: (W_Q, W_K) per replica (d x D_K)."""

    def __init__(self, d: int, specs: list[tuple[int, int]], inits, device: str | torch.device = "cpu"):
        super().__init__(len(specs), torch.float32, device)
        D = max(D_K for _, D_K in specs)
        H = max(h for h, _ in specs)
        self.add("W_Q", (d, D))
        self.add("W_K", (d, D))
        assign = torch.zeros(self.R, D, H)
        head_ok = torch.zeros(self.R, H, dtype=torch.bool)
        for r, ((h, D_K), (wq, wk)) in enumerate(zip(specs, inits)):
            if D_K % h:
                raise ValueError(f"replica {r}: h = {h} does not divide D_K = {D_K}")
            self.place("W_Q", r, wq)
            self.place("W_K", r, wk)
            d_k = D_K // h
            for k in range(h):
                assign[r, k * d_k:(k + 1) * d_k, k] = 1
            head_ok[r, :h] = True
        self.register_buffer("assign", assign.to(self.device))
        self.register_buffer("head_ok", head_ok.to(self.device))

    def scores(self, Xc: torch.Tensor) -> torch.Tensor:
        """Xc: (R, n, ell, d), one batch per replica (zero-padded to the largest d) -> S_max, (R, n, ell, ell)."""
        Q = torch.einsum("rnpd,rdc->rnpc", Xc, self.w("W_Q"))
        K = torch.einsum("rnpd,rdc->rnpc", Xc, self.w("W_K"))
        S = torch.einsum("rnpc,rnqc,rch->rnhpq", Q, K, self.assign)
        return S.masked_fill(~self.head_ok[:, None, :, None, None], float("-inf")).amax(dim=2)

    def forward(self, Xc: torch.Tensor, Vc: torch.Tensor) -> torch.Tensor:
        """Xc: (R, n, ell, d), Vc: (R, n, ell, d_msg) -> y^ = S_max V_C, (R, n, ell, d_msg), Eq. (3)."""
        return torch.einsum("rnpq,rnqe->rnpe", self.scores(Xc), Vc)


def value_map(d: int, d_msg: int, seed: int):
    """The frozen W_V of a seed: i.i.d. N(0, 1/d_msg) entries (numpy float64, (d, d_msg))."""
    return T.rng(seed, "W_V", d, d_msg).standard_normal((d, d_msg)) / d_msg ** 0.5


def retrieval_targets(contexts, perm):
    """(targets, valid): targets[n, p] = pi(v_p) (the vertex whose message position p must
    retrieve) and valid[n, p] = pi(v_p) is in the context, Eq. (4)'s index set."""
    tgt = perm[contexts]
    valid = (tgt[:, :, None] == contexts[:, None, :]).any(axis=2)
    return tgt, valid


def mse(pred: torch.Tensor, target: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Eq. (4) per replica: sum over valid positions of ||y^ - y||^2 / number of valid positions.
    pred, target (R, n, ell, e), valid (R, n, ell) bool."""
    err = ((pred - target) ** 2).sum(-1) * valid.to(pred.dtype)
    return err.sum(dim=(1, 2)) / valid.sum(dim=(1, 2)).clamp(min=1)


def train_runs(runs: list[dict], *, steps: int, lr: float, d_msg: int = 16, ell: int = 16, rho: float = 0.5,
               check_every: int = 500, patience: int = 5, n_val: int = 500, n_test: int = 2000, device: str = "cpu",
               progress=None, chunk: int = 250, checkpoint=None) -> list[dict]:
    """Train one replica per run (a dict with m, d, h, D_K, seed) in ONE tensor program: each
    (m, d, seed) has its own data (the embeddings, permutation and contexts of `models.seed_data`,
    its W_V), embeddings zero-padded to the largest d; initial W_Q, W_K of `models.init_weights`.
    MSE of Eq. (4), one context per step, Adam; validation MSE every `check_every` steps, a replica
    frozen after `patience` checks without improvement. Per replica: test MSE (zero predictor:
    about 1), steps trained, whether it stopped early. `checkpoint`: resume from and save to it
    (`core.train.train_program`)."""
    dev = torch.device(device)
    D = max(r["d"] for r in runs)
    cache: dict[tuple, dict] = {}
    for r in runs:
        key = (r["m"], r["d"], r["seed"])
        if key in cache:
            continue
        m, d, seed = key
        data = models.seed_data(m, d, seed, ell, rho, steps, n_val, n_test)
        X = torch.zeros(m, D, dtype=torch.float32)
        X[:, :d] = torch.tensor(data["X"], dtype=torch.float32)
        Y = X[:, :d] @ torch.tensor(value_map(d, d_msg, seed), dtype=torch.float32)
        parts = {}
        for name in ("train", "val", "test"):
            tgt, valid = retrieval_targets(data[name], data["perm"])
            c = torch.as_tensor(data[name])
            parts[name] = (X[c], Y[c], Y[torch.as_tensor(tgt)], torch.as_tensor(valid))
        cache[key] = parts

    def stacked(name):
        return [torch.stack([cache[(r["m"], r["d"], r["seed"])][name][j] for r in runs]).to(dev) for j in range(4)]

    specs = [(r["h"], r["D_K"]) for r in runs]
    model = ValueChannelQK(D, specs, [models.init_weights(r["d"], r["h"], r["D_K"], r["m"], r["seed"]) for r in runs],
                           dev)
    tr, va = stacked("train"), stacked("val")

    @torch.no_grad()
    def evaluate(b):
        Xc, Vc, Yt, ok = b
        err = 0
        for a in range(0, Xc.shape[1], chunk):
            s = slice(a, a + chunk)
            pred = model(Xc[:, s], Vc[:, s])
            err = err + (((pred - Yt[:, s]) ** 2).sum(-1) * ok[:, s]).sum(dim=(1, 2))
        return err.double() / ok.sum(dim=(1, 2)).clamp(min=1)

    log = train_program([model.W_Q, model.W_K],
                        lambda s: mse(model(tr[0][:, s:s + 1], tr[1][:, s:s + 1]), tr[2][:, s:s + 1],
                                      tr[3][:, s:s + 1]),
                        steps, lr, validate=lambda: evaluate(va), rule=Plateau(patience), check_every=check_every,
                        progress=progress, checkpoint=checkpoint)
    test = evaluate(stacked("test"))
    return [{**{k: r[k] for k in ("m", "d", "h", "D_K", "seed")}, "mse": float(test[i]), "steps": log.steps[i],
             "stopped": log.stopped[i], "seconds": log.seconds / len(runs)} for i, r in enumerate(runs)]


def train_seed(m: int, d: int, specs: list[tuple[int, int]], seed: int, **kw) -> list[dict]:
    """`train_runs` for the replicas (h, D_K) of one (m, d, seed)."""
    return train_runs([{"m": m, "d": d, "h": h, "D_K": D_K, "seed": seed} for h, D_K in specs], **kw)
