"""Dense r-regular graphs (App. A.3): contexts, labels, the class-balanced loss, and replica-batched
training of the max-over-heads QK model across degrees, seeds and head partitions in one program.

Differences from the permutation protocol (App. A.3): the graph is directed r-regular (the union of
r random perfect matchings, `tasks.regular_graph`); a pair p -> q is positive iff q is an
out-neighbour of p and both are in the context; the target-in-context rate rho is implemented over
sources (each position is a selected source with probability rho, and a selected source with no
out-neighbour in the context gets one written over another position); the positive weight of the
logistic loss is w+ = #negatives / #positives of each context, Eq. (30). Everything else (frozen
Gaussian unit-norm embeddings, max over heads, one learned tau, Adam, validation micro-F1 every
500 steps with the early-stopping rule, test micro-F1) is the core protocol.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


from . import models
from .models import HeadPaddedQK
from . import tasks as T
from attnlab.core.train import Threshold, train_program


def out_neighbours(edges: np.ndarray, m: int) -> np.ndarray:
    """(m, r) out-neighbour lists of a regular graph's edge list (sorted by source)."""
    out, _ = T.degrees(edges, m)
    if out.min() != out.max():
        raise ValueError(f"not a regular graph: out-degrees range {out.min()}..{out.max()}")
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    return edges[order, 1].reshape(m, int(out[0]))


def sample_graph_contexts(edges: np.ndarray, m: int, n: int, ell: int, rho: float,
                          gen: np.random.Generator) -> np.ndarray:
    """n contexts of ell distinct vertices (App. A.3): a uniform ell-subset; each position is a
    selected source with probability rho (a Binomial(ell, rho) count and a uniform subset); in a
    random order, a selected source with no out-neighbour in the context gets a uniformly chosen
    out-neighbour written over a random other position. With r = 1 this is `tasks.sample_contexts`'s
    procedure. Vectorised over contexts. Shape (n, ell)."""
    if not 2 <= ell <= m:
        raise ValueError(f"ell={ell} must be in [2, m={m}]")
    nbrs = out_neighbours(edges, m)
    adj = T.adjacency(edges, m)
    r = nbrs.shape[1]
    ctx = np.argsort(gen.random((n, m)), axis=1)[:, :ell]
    selected = gen.random((n, ell)) < rho
    order = np.argsort(gen.random((n, ell)), axis=1)
    rows = np.arange(n)
    for step in range(ell):
        p = order[:, step]
        src = ctx[rows, p]
        has = adj[src[:, None], ctx].any(axis=1)
        need = selected[rows, p] & ~has
        tgt = nbrs[src, gen.integers(0, r, size=n)]
        j = gen.integers(0, ell - 1, size=n)
        j = j + (j >= p)
        ctx[rows[need], j[need]] = tgt[need]
    return ctx


def balanced_loss(margin: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    """Eq. (30): z = alpha (S_max - tau); per context, the mean over its ell^2 pairs of
    softplus(-z) y w+ + softplus(z) (1 - y) with w+ = #negatives / #positives of that context (a
    context without positives has only the negative term); averaged over contexts, per replica.
    margin (R, n, ell, ell), y (R, n, ell, ell) bool."""
    z = alpha * margin
    yf = y.to(z.dtype)
    pos = yf.sum(dim=(2, 3), keepdim=True)
    w = (yf[0, 0].numel() - pos) / pos.clamp(min=1)
    per = F.softplus(-z) * yf * w + F.softplus(z) * (1 - yf)
    return per.mean(dim=(1, 2, 3))


class GroupedQK(torch.nn.Module):
    """R replicas of the max-over-heads model as one `models.HeadPaddedQK` per head count; the forward takes
    and returns tensors in the replicas' own order (R, ...)."""

    def __init__(self, d: int, specs, inits, device="cpu"):
        super().__init__()
        hs = sorted({h for h, _ in specs})
        self.index = [[i for i, (h, _) in enumerate(specs) if h == hh] for hh in hs]
        self.parts = torch.nn.ModuleList(HeadPaddedQK(d, [specs[i] for i in g], [inits[i] for i in g], device)
                                         for g in self.index)
        order = [i for g in self.index for i in g]
        self.register_buffer("order", torch.tensor(order, device=device))
        self.register_buffer("back", torch.argsort(torch.tensor(order, device=device)))

    @property
    def param_groups(self) -> list[list[torch.Tensor]]:
        """One parameter list per head-count group, in the concatenated (group) order."""
        return [[p.W_Q, p.W_K, p.tau] for p in self.parts]

    def grouped(self, Xc: torch.Tensor) -> torch.Tensor:
        """Xc in group order (Xc[order]) -> S_max - tau in group order."""
        out, a = [], 0
        for part in self.parts:
            out.append(part(Xc[a:a + part.R]))
            a += part.R
        return torch.cat(out)

    def forward(self, Xc: torch.Tensor) -> torch.Tensor:
        """Xc in replica order -> S_max - tau in replica order."""
        return self.grouped(Xc[self.order])[self.back]

    def tau(self) -> torch.Tensor:
        return torch.cat([p.tau[:, 0] for p in self.parts])[self.back]


def graph_data(m: int, d: int, r: int, seed: int, ell: int, rho: float, n_train: int, n_val: int, n_test: int) -> dict:
    """The embeddings (those of `models.seed_data` for (m, d, seed)), the r-regular graph and the
    train / validation / test contexts of one (m, d, r, seed), each stream seeded by its tags only."""
    X = T.gun_embeddings(m, d, T.rng(seed, "X", m, d))
    edges = T.regular_graph(m, r, T.rng(seed, "regular", m, r))
    out = {"X": X, "edges": edges, "adj": T.adjacency(edges, m)}
    for name, n in (("train", n_train), ("val", n_val), ("test", n_test)):
        out[name] = sample_graph_contexts(edges, m, n, ell, rho, T.rng(seed, "graph-contexts", name, m, r, ell))
    return out


def micro_f1(margin_fn, Xc: torch.Tensor, y: torch.Tensor, chunk: int = 250) -> torch.Tensor:
    """Micro-F1 per replica over all ordered pairs; Xc (R, n, ell, d), y (R, n, ell, ell)."""
    tp = fp = fn = 0
    with torch.no_grad():
        for a in range(0, Xc.shape[1], chunk):
            pred = margin_fn(Xc[:, a:a + chunk]) > 0
            yy = y[:, a:a + chunk]
            tp = tp + (pred & yy).sum(dim=(1, 2, 3))
            fp = fp + (pred & ~yy).sum(dim=(1, 2, 3))
            fn = fn + (~pred & yy).sum(dim=(1, 2, 3))
    tp, fp, fn = (v.double() for v in (tp, fp, fn))
    return torch.where(tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), torch.ones_like(tp))


def train_runs(runs: list[dict], *, steps: int, lr: float, ell: int = 16, rho: float = 0.5, alpha: float = 10.0,
               check_every: int = 500, patience: int = 5, stop_f1: float = 0.995, n_val: int = 500,
               n_test: int = 2000, device: str = "cpu", progress=None, checkpoint=None) -> list[dict]:
    """Train one replica per run (a dict with m, d, r, h, D_K, seed) in ONE tensor program, each
    on the data of its (m, d, r, seed) (embeddings zero-padded to the largest d), initial W_Q, W_K
    of `models.init_weights`. Per replica: test micro-F1, learned tau, steps trained, whether the
    early-stopping rule fired. `checkpoint`: resume from and save to it (`core.train.train_program`)."""
    dev = torch.device(device)
    D = max(q["d"] for q in runs)
    cache: dict[tuple, dict] = {}
    for q in runs:
        key = (q["m"], q["d"], q["r"], q["seed"])
        if key not in cache:
            data = graph_data(*key, ell, rho, steps, n_val, n_test)
            X = torch.zeros(q["m"], D, dtype=torch.float32)
            X[:, :q["d"]] = torch.tensor(data["X"], dtype=torch.float32)
            parts = {}
            for name in ("train", "val", "test"):
                parts[name] = (X[torch.as_tensor(data[name])],
                               torch.as_tensor(data["adj"][data[name][:, :, None], data[name][:, None, :]]))
            cache[key] = parts

    def stacked(name):
        keys = [(q["m"], q["d"], q["r"], q["seed"]) for q in runs]
        return tuple(torch.stack([cache[k][name][j] for k in keys]).to(dev) for j in range(2))

    model = GroupedQK(D, [(q["h"], q["D_K"]) for q in runs],
                      [models.init_weights(q["d"], q["h"], q["D_K"], q["m"], q["seed"]) for q in runs], dev)
    (Xtr, ytr), (Xva, yva) = stacked("train"), stacked("val")
    order = model.order
    Xtr_g, ytr_g, Xva_g, yva_g = Xtr[order], ytr[order], Xva[order], yva[order]  # group order, for training
    log = train_program(model.param_groups,
                        lambda s: balanced_loss(model.grouped(Xtr_g[:, s:s + 1]), ytr_g[:, s:s + 1], alpha), steps, lr,
                        validate=lambda: micro_f1(model.grouped, Xva_g, yva_g),
                        rule=Threshold(stop_f1, patience), check_every=check_every, progress=progress,
                        checkpoint=checkpoint)
    f1 = micro_f1(model, *stacked("test"))
    back = model.back.tolist()
    tau = model.tau().detach()
    return [{**{k: q[k] for k in ("m", "d", "r", "h", "D_K", "seed")}, "f1": float(f1[i]), "tau": float(tau[i]),
             "steps": log.steps[back[i]], "stopped": log.stopped[back[i]], "seconds": log.seconds / len(runs)}
            for i, q in enumerate(runs)]
