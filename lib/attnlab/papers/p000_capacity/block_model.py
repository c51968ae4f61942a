"""The full pre-LN Transformer block of §7.3 on frozen token embeddings, replica-batched, and its
permutation -> matching retrieval task.

Task (§7.3): a fixed random permutation pi of the m items; an example draws a query q with
s = pi(q) != q, 2 ell - 1 further distinct items (distinct from s and q), groups them with s into
ell disjoint pairs (a random perfect matching M) and asks for y = M(s). The input is
[x_1, ..., x_ell, E[NULL], E[q]] with the superposed slots x_i = E[a_i] + E[b_i], no positions;
only the last position is read out, over the m + 1 rows of the frozen table E (tied unembedding).

Model (§7.3): one GPT-style pre-LN block, h_last = x + MHA(LN1(x)) at the query position, then
h_last + MLP(LN2(h_last)) with a 2-layer GELU MLP of width d_ff; logits = LN_f(h) E^T (GPT-2's final
layer norm). W_Q, W_K in R^{D x D_K} split into h heads of d_k = D_K / h, scores / sqrt(d_k), a
softmax over the ell + 2 positions; W_V, W_O with d_v = D / h per head, no attention biases; layer
norms with gains and biases. Only the query position's output is computed (causal masking would
not change it: the last position sees every position). Replicas with the same h share one
`PreLNBlock`; `train_runs` groups them by h.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.core.replica import ReplicaModule, replica_generator

from . import tasks as T
from attnlab.core.train import train_program


def sample_examples(perm: np.ndarray, n: int, ell: int, gen: np.random.Generator) -> dict:
    """n examples of the task: pairs (n, ell, 2) item ids, q (n,), s (n,) = pi(q), y (n,) = M(s)."""
    m = len(perm)
    movable = np.flatnonzero(perm != np.arange(m))
    if len(movable) == 0 or 2 * ell + 1 > m:
        raise ValueError(f"need a permutation with a non-fixed point and 2 ell + 1 = {2 * ell + 1} <= m = {m}")
    q = movable[gen.integers(0, len(movable), size=n)]
    s = perm[q]
    keys = gen.random((n, m))
    rows = np.arange(n)
    keys[rows, q] = np.inf
    keys[rows, s] = np.inf
    others = np.argsort(keys, axis=1)[:, :2 * ell - 1]
    items = np.concatenate([s[:, None], others], axis=1)          # s first, then 2 ell - 1 distractors
    order = np.argsort(gen.random((n, 2 * ell)), axis=1)          # a random perfect matching:
    shuffled = items[rows[:, None], order]                        # consecutive items of a random order
    pairs = shuffled.reshape(n, ell, 2)
    where = np.argmax(shuffled == s[:, None], axis=1)             # position of s; its partner is y
    y = shuffled[rows, where ^ 1]
    return {"pairs": pairs, "q": q, "s": s, "y": y}


def inputs(E: torch.Tensor, ex: dict, device) -> torch.Tensor:
    """The sequences [x_1..x_ell, E[NULL], E[q]], (n, ell + 2, D); E has m + 1 rows (NULL last)."""
    pairs = torch.as_tensor(ex["pairs"], device=device)
    slots = E[pairs[..., 0]] + E[pairs[..., 1]]
    n = slots.shape[0]
    null = E[-1].expand(n, 1, -1)
    q = E[torch.as_tensor(ex["q"], device=device)][:, None]
    return torch.cat([slots, null, q], dim=1)


def _layer_norm(x: torch.Tensor, g: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:]) * g + b


class PreLNBlock(ReplicaModule):
    """R replicas with the same head count h and D_K's of their own (W_Q, W_K padded per head to the
    largest d_k); E (m + 1, D) the frozen tied embedding table (a buffer)."""

    def __init__(self, E: torch.Tensor, h: int, dks: list[int], d_ff: int, inits: list[dict], device="cpu"):
        super().__init__(len(dks), torch.float32, device)
        D = E.shape[1]
        if D % h:
            raise ValueError(f"h = {h} must divide d_model = {D} (d_v = d_model / h)")
        self.h, dv = h, D // h
        dk_max = max(D_K // h for D_K in dks)
        for name, shape in (("W_Q", (D, h, dk_max)), ("W_K", (D, h, dk_max)), ("W_V", (h, D, dv)), ("W_O", (h, dv, D)),
                            ("W_1", (D, d_ff)), ("b_1", (d_ff,)), ("W_2", (d_ff, D)), ("b_2", (D,)),
                            ("g_1", (D,)), ("c_1", (D,)), ("g_2", (D,)), ("c_2", (D,)), ("g_f", (D,)), ("c_f", (D,))):
            self.add(name, shape)
        dk = torch.zeros(self.R)
        for r, (D_K, init) in enumerate(zip(dks, inits)):
            if D_K % h:
                raise ValueError(f"replica {r}: h = {h} does not divide D_K = {D_K}")
            for name, value in init.items():
                self.place(name, r, value)
            dk[r] = D_K // h
        self.register_buffer("dk", dk.to(self.device))
        self.register_buffer("E", E.to(self.device, torch.float32))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """X: (n, L, D) input sequences, or (R, n, L, D) one batch per replica -> logits (R, n, m + 1) at
        the last position."""
        X = X[None] if X.dim() == 3 else X
        a = _layer_norm(X, self.w("g_1")[:, None, None], self.w("c_1")[:, None, None])   # (R, n, L, D)
        K = torch.einsum("rnld,rdhc->rnhlc", a, self.w("W_K"))
        q = torch.einsum("rnd,rdhc->rnhc", a[:, :, -1], self.w("W_Q"))
        s = torch.einsum("rnhc,rnhlc->rnhl", q, K) / self.dk.sqrt().view(-1, 1, 1, 1)
        P = torch.softmax(s, dim=-1)
        z = torch.einsum("rnhl,rnld->rnhd", P, a)                # mix the normalised inputs, then project
        o = torch.einsum("rnhd,rhde->rnhe", z, self.w("W_V"))
        x = X[:, :, -1] + torch.einsum("rnhe,rhef->rnf", o, self.w("W_O"))
        u = _layer_norm(x, self.w("g_2")[:, None], self.w("c_2")[:, None])
        x = x + torch.einsum("rnf,rfd->rnd", F.gelu(torch.einsum("rnd,rdf->rnf", u, self.w("W_1"))
                                                       + self.w("b_1")[:, None]), self.w("W_2")) + self.w("b_2")[:, None]
        return _layer_norm(x, self.w("g_f")[:, None], self.w("c_f")[:, None]) @ self.E.T


def init_block(D: int, h: int, D_K: int, d_ff: int, m: int, seed: int, std: float = 0.02) -> dict:
    """GPT-2's initialisation, seeded by (the replica's config, seed) only: weights N(0, 0.02), the two
    residual projections (W_O, W_2) N(0, 0.02 / sqrt(2)), biases 0, layer-norm gains 1."""
    g = replica_generator({"model": "preln-block", "m": m, "D": D, "h": h, "D_K": D_K, "d_ff": d_ff}, seed)

    def n(*shape, s=std):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * s

    dk, dv = D_K // h, D // h
    out = {"W_Q": n(D, h, dk), "W_K": n(D, h, dk), "W_V": n(h, D, dv), "W_O": n(h, dv, D, s=std / math.sqrt(2)),
           "W_1": n(D, d_ff), "b_1": torch.zeros(d_ff), "W_2": n(d_ff, D, s=std / math.sqrt(2)), "b_2": torch.zeros(D)}
    for k in ("1", "2", "f"):
        out["g_" + k], out["c_" + k] = torch.ones(D), torch.zeros(D)
    return out


def train_runs(E: np.ndarray, runs: list[dict], *, steps: int, lr: float, batch: int, ell: int = 16, d_ff: int = 16,
               weight_decay: float = 0.01, check_every: int = 250, n_val: int = 500, n_test: int = 1000,
               device: str = "cpu", progress=None) -> list[dict]:
    """Train one block per run (a dict with h, D_K, seed; the runs of a seed share its permutation
    and data, each seed its own) in ONE tensor program on the frozen table E (m + 1 rows, NULL last)
    with AdamW (constant lr, decoupled weight decay), cross-entropy at the query position. Every
    `check_every` steps the validation accuracy is measured; the test accuracy is taken at the best
    validation check (§7.3). Per replica: that test accuracy, the best validation accuracy, the
    fractions of test predictions equal to s = pi(q) and to NULL at that check, the final training
    loss and the mean loss of the last 10% of steps. A replica's data, initialisation, loss and
    gradients are those of its seed alone, whatever other seeds share the program."""
    seeds = sorted({r["seed"] for r in runs})
    dev = torch.device(device)
    m = E.shape[0] - 1
    Et = torch.tensor(E, dtype=torch.float32, device=dev)
    perms = [T.random_permutation(m, T.rng(seed, "block-perm", m)) for seed in seeds]
    data = [{name: sample_examples(perm, n, ell, T.rng(seed, "block-data", name, m, ell))
             for name, n in (("val", n_val), ("test", n_test))} for seed, perm in zip(seeds, perms)]
    Xval = torch.stack([inputs(Et, dd["val"], dev) for dd in data])   # (S, n, L, D)
    Xte = torch.stack([inputs(Et, dd["test"], dev) for dd in data])

    def per_seed(name, key):
        return torch.stack([torch.as_tensor(dd[name][key], device=dev) for dd in data])  # (S, n)
    hs = sorted({r["h"] for r in runs})
    index = [[i for i, r in enumerate(runs) if r["h"] == h] for h in hs]
    D = E.shape[1]
    parts = [PreLNBlock(Et, h, [runs[i]["D_K"] for i in g], d_ff,
                        [init_block(D, h, runs[i]["D_K"], d_ff, m, runs[i]["seed"]) for i in g], dev)
             for h, g in zip(hs, index)]
    order = [i for g in index for i in g]
    back = np.argsort(order)
    which = [torch.tensor([seeds.index(runs[i]["seed"]) for i in g], device=dev) for g in index]  # seed of each replica
    seed_of = torch.cat(which)  # in group order

    def logits(X):  # X (S, n, L, D), one batch per seed -> (R, n, m + 1) in group order
        return torch.cat([p(X[w]) for p, w in zip(parts, which)])

    R = len(runs)
    best_val = torch.full((R,), -1.0, dtype=torch.float64)
    at_best = {k: torch.zeros(R, dtype=torch.float64) for k in ("test", "pred_s", "pred_null")}
    losses: list[torch.Tensor] = []

    @torch.no_grad()
    def accuracy(X, y, chunk=250):  # y (S, n)
        pred = torch.cat([logits(X[:, a:a + chunk]).argmax(-1) for a in range(0, X.shape[1], chunk)], dim=1)
        return pred, (pred == y[seed_of]).double().mean(1).cpu()

    def check():
        _, acc = accuracy(Xval, per_seed("val", "y"))
        better = acc > best_val
        if better.any():
            pred, test = accuracy(Xte, per_seed("test", "y"))
            pred_s = (pred == per_seed("test", "s")[seed_of]).double().mean(1).cpu()
            pred_null = (pred == m).double().mean(1).cpu()
            for k, v in (("test", test), ("pred_s", pred_s), ("pred_null", pred_null)):
                at_best[k] = torch.where(better, v, at_best[k])
            best_val.copy_(torch.where(better, acc, best_val))
        return acc

    def loss_at(step):
        exs = [sample_examples(perm, batch, ell, T.rng(seed, "block-train", m, ell, step))  # on the fly
               for seed, perm in zip(seeds, perms)]
        out = logits(torch.stack([inputs(Et, ex, dev) for ex in exs]))
        y = torch.stack([torch.as_tensor(ex["y"], device=dev) for ex in exs])[seed_of]
        loss = F.cross_entropy(out.transpose(1, 2), y, reduction="none").mean(1)
        losses.append(loss.detach())
        return loss

    log = train_program([[getattr(p, name) for name in p._names] for p in parts], loss_at, steps, lr, validate=check,
                        check_every=check_every, weight_decay=weight_decay, progress=progress)
    if steps % check_every:
        check()
    tail = torch.stack(losses[-max(1, steps // 10):]).mean(0).cpu()
    return [{"h": r["h"], "D_K": r["D_K"], "seed": r["seed"], "test_acc": float(at_best["test"][back[i]]),
             "val_acc": float(best_val[back[i]]), "pred_s": float(at_best["pred_s"][back[i]]),
             "pred_null": float(at_best["pred_null"][back[i]]), "final_loss": float(log.final_loss[back[i]]),
             "tail_loss": float(tail[back[i]]), "steps": log.steps[back[i]], "seconds": log.seconds / R}
            for i, r in enumerate(runs)]
