"""The trainable max-over-heads QK model of §3 / §6 / App. A.1, replica-batched.

R replicas share the frozen embeddings X of one seed and differ in (h, D_K): W_Q, W_K in
R^{d x D_K} (padded to the largest D_K), split into h column blocks of width d_k = D_K/h, and a
scalar threshold tau. Head scores S^(k) = (X_C W_Q^(k)) (X_C W_K^(k))^T, no scaling, no softmax, no
value path; S_max = max over the replica's heads; an edge p -> q iff S_max(p, q) > tau.
Training (`train_seed`): the weighted logistic loss of App. A.1 on one context per step, Adam
(= AdamW with weight decay 0), validation micro-F1 every `check_every` steps and the early-stopping
rule "stop after `patience` consecutive checks above `stop_f1`", which *freezes* a replica
(core.train.train_program with the Threshold rule: its parameters and moments stop changing).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

from attnlab.core.checkpoint import Checkpoint
from attnlab.core.replica import ReplicaModule, replica_generator
from attnlab.core.train import Threshold, train_program

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
        # The forward computes every replica's heads in ONE batched matmul over "sub-slots" of width w:
        # a head of width d_k = D_K / h takes ceil(d_k / w) sub-slots (zero-padded columns add nothing
        # to a dot product), the sub-slot scores are summed into head scores (index_add) and the max
        # over a replica's heads is taken over a padded [R, H_max] layout (-inf for missing heads). The
        # scores cost ell^2 (sum of padded widths) per context, about ell^2 sum_r D_K,r, not
        # ell^2 D_K H per replica as a contraction with `assign` does. w minimises the padded width
        # plus the per-sub-slot traffic (a single spec: w = d_k, no gather at all).
        dks = [D_K // h for h, D_K in specs]
        w_sub = min(sorted(set(dks)), key=lambda w: sum(h * -(-dk // w) * (w + 8) for (h, _), dk in zip(specs, dks)))
        cols, sub2head, head_idx = [], [], []
        first, extra, extra_head = [], [], []  # the same sub-slots head-first, for the fused loss (below)
        n_heads = 0
        for r, ((h, D_K), dk) in enumerate(zip(specs, dks)):
            for k in range(h):
                for j in range(-(-dk // w_sub)):
                    rows = [r * D + k * dk + j * w_sub + t if j * w_sub + t < dk else self.R * D for t in range(w_sub)]
                    cols += rows
                    sub2head.append(n_heads + k)
                    if j == 0:
                        first.append(rows)
                    else:
                        extra.append(rows)
                        extra_head.append(n_heads + k)
            head_idx += [n_heads + k for k in range(h)] + [-1] * (H - h)
            n_heads += h
        self._w_sub, self._n_heads, self._H = w_sub, n_heads, H
        self._cols_identity = cols == list(range(self.R * D))
        self._sub_is_head = sub2head == list(range(n_heads))
        self._heads_identity = head_idx == list(range(self.R * H))
        self.register_buffer("_cols", torch.tensor(cols, device=self.device), persistent=False)
        self.register_buffer("_sub2head", torch.tensor(sub2head, device=self.device), persistent=False)
        self.register_buffer("_head_idx", torch.tensor([i if i >= 0 else n_heads for i in head_idx], device=self.device),
                             persistent=False)
        # The fused training loss (`loss`, `_MaxQKLoss`) lays the same sub-slots out head-first: sub-slot
        # i < n_heads is head i's first one, the others follow (summed into their head in place); its
        # rows index the per-column projections [Q rows (R D) | zero row | K rows (R D) | zero row].
        q_rows = [i for rows in first + extra for i in rows]
        RD, C = self.R * D, len(q_rows)
        self.register_buffer("_qk_rows", torch.tensor(q_rows + [i + RD + 1 for i in q_rows], device=self.device),
                             persistent=False)
        # and back: the sub-slot row of each (Q or K, replica, column), 2 C (a zero row) for padded columns
        back = [2 * C] * RD
        for i, row in enumerate(q_rows):
            if row < RD:
                back[row] = i
        self.register_buffer("_qk_back", torch.tensor(back + [i + C if i < 2 * C else i for i in back],
                                                      device=self.device), persistent=False)
        self.register_buffer("_extra_head", torch.tensor(extra_head, dtype=torch.long, device=self.device),
                             persistent=False)
        self.register_buffer("_sub_head", torch.tensor(list(range(n_heads)) + extra_head, device=self.device),
                             persistent=False)
        self.register_buffer("_head_rep", torch.tensor([r for r, (h, _) in enumerate(specs) for _ in range(h)],
                                                       device=self.device), persistent=False)
        self._loss_coefs: dict = {}

    def _sub_weights(self, name: str) -> torch.Tensor:
        """(d, n_sub * w): the replicas' head columns in sub-slot order, zero columns as padding."""
        W = self.w(name)
        R, d, D = W.shape
        flat = W.permute(1, 0, 2).reshape(d, R * D)
        if self._cols_identity:
            return flat
        return torch.cat([flat, flat.new_zeros(d, 1)], 1).index_select(1, self._cols)

    def forward(self, Xc: torch.Tensor) -> torch.Tensor:
        """Xc: (n, ell, d) context embeddings -> S_max - tau, (R, n, ell, ell)."""
        n, ell, d = Xc.shape
        X2 = Xc.reshape(n * ell, d)
        w = self._w_sub
        Q = (X2 @ self._sub_weights("W_Q")).view(n, ell, -1, w).transpose(1, 2)  # (n, n_sub, ell, w)
        K = (X2 @ self._sub_weights("W_K")).view(n, ell, -1, w).transpose(1, 2)
        S = Q @ K.transpose(-1, -2)  # (n, n_sub, ell, ell)
        if not self._sub_is_head:  # sub-slot scores summed into head scores
            S = S.new_zeros(n, self._n_heads, ell, ell).index_add(1, self._sub2head, S)
        if not self._heads_identity:  # into (n, R * H) slots, -inf where a replica has fewer heads
            S = torch.cat([S, S.new_full((n, 1, ell, ell), float("-inf"))], 1).index_select(1, self._head_idx)
        S = S.view(n, self.R, self._H, ell, ell).amax(dim=2).transpose(0, 1)
        return S - self.w("tau").view(-1, 1, 1, 1)

    def loss(self, Xc: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
        """`rgr_loss(self(Xc), y, alpha)` (App. A.1) per replica, (R,), as one autograd node with its
        gradient written out (`_MaxQKLoss`); y: (n, ell, ell) bool labels. The same function up to
        float rounding: with s = 1 - 2y (+-1) and a = 1 + (ell - 2) y, the pair term
        softplus(-z) y (ell - 1) + softplus(z) (1 - y) is a softplus(s z) (y is 0 or 1). It reads only the
        replicas' real columns of W_Q, W_K (never the padding), so it needs no mask."""
        n, ell, d = Xc.shape
        if y.dtype != torch.bool:
            raise TypeError(f"MaxOverHeadsQK.loss: labels must be bool (0/1), got {y.dtype}")
        key = (float(alpha), n, ell, self.W_Q.dtype, self.W_Q.device)
        if key not in self._loss_coefs:  # per pair, for y = 1 and y = 0: alpha s, a / L, alpha s a / L
            L = n * ell * ell
            self._loss_coefs[key] = (
                torch.tensor([[-alpha], [(ell - 1) / L], [-alpha * (ell - 1) / L]], dtype=self.W_Q.dtype, device=self.W_Q.device),
                torch.tensor([[alpha], [1 / L], [alpha / L]], dtype=self.W_Q.dtype, device=self.W_Q.device))
        zsign, weight, coef = torch.where(y.reshape(1, -1), *self._loss_coefs[key])
        return _MaxQKLoss.apply(self.W_Q, self.W_K, self.tau, Xc.reshape(n * ell, d), zsign, weight, coef, (self, n, ell))


class _MaxQKLoss(torch.autograd.Function):
    """The App. A.1 loss of `MaxOverHeadsQK` per replica, forward and backward written out.

    Forward (per replica r, L = n ell^2 pairs): the per-column projections Q^T = W_Q^T X^T, K^T (one
    batched matmul each, the replica's columns as rows), gathered into sub-slots of width w (zero rows
    as padding); sub-slot scores Q_s K_s^T summed into head scores S_g; M = max over the replica's
    heads (scatter_reduce amax); z_s = alpha s (M - tau); loss_r = sum_pairs a / L softplus(z_s).
    Backward: dloss_r/dM = (alpha s a / L) sigmoid(z_s) (times the incoming gradient of loss_r);
    dtau_r = -sum_pairs dloss_r/dM; the max routes dM to the head(s) attaining it, split evenly
    among ties exactly as torch's amax backward does ((grad / count) * [S_g = M]); a sub-slot gets its
    head's gradient; dQ_s = G_s K_s, dK_s = G_s^T Q_s; dW = X^T dQ per replica (padded columns, never
    read, get exactly 0). softplus uses threshold 40 (x above it returns x): log1p(exp(x)) - x <
    e^-40, below half an ulp of x in float32 and float64, so it is the correctly rounded softplus in both."""

    @staticmethod
    def forward(ctx, W_Q, W_K, tau, X2, zsign, weight, coef, plan):
        model, n, ell = plan
        R, d, D = W_Q.shape
        nl, RD, w = X2.shape[0], R * D, model._w_sub
        n_heads = model._n_heads
        XT = X2.t().expand(R, d, nl)
        QK = W_Q.new_empty(2, RD + 1, nl)
        torch.bmm(W_Q.transpose(1, 2), XT, out=QK[0, :RD].view(R, D, nl))
        torch.bmm(W_K.transpose(1, 2), XT, out=QK[1, :RD].view(R, D, nl))
        QK[:, RD].zero_()
        QKt = QK.view(2 * (RD + 1), nl).index_select(0, model._qk_rows)  # (2 n_sub w, nl)
        n_sub = QKt.shape[0] // (2 * w)
        Qt, Kt = QKt.view(2, n_sub, w, n, ell).permute(0, 1, 3, 2, 4).unbind(0)  # (n_sub, n, w, ell)
        if n == 1:
            S = torch.bmm(Qt[:, 0].transpose(1, 2), Kt[:, 0]).view(n_sub, ell * ell)
        else:
            S = torch.matmul(Qt.transpose(-1, -2), Kt).view(n_sub, n * ell * ell)
        Sh = S[:n_heads]
        if n_sub > n_heads:  # a head's further sub-slots summed into its first
            Sh.index_add_(0, model._extra_head, S[n_heads:])
        h2r = model._head_rep
        M = Sh.new_empty(R, Sh.shape[1]).scatter_reduce_(0, h2r[:, None].expand_as(Sh), Sh, "amax",
                                                          include_self=False)
        mask = torch.eq(Sh, M.index_select(0, h2r), out=torch.empty_like(Sh))  # float 0/1: the argmax heads
        zs = (M - tau).mul_(zsign)
        loss = F.softplus(zs, threshold=40.0) @ weight
        ctx.save_for_backward(QKt, X2, mask, zs.sigmoid_(), coef)
        ctx.plan = (model, n, ell, R, D, n_sub)
        return loss

    @staticmethod
    @once_differentiable
    def backward(ctx, gout):
        QKt, X2, mask, sig, coef = ctx.saved_tensors
        model, n, ell, R, D, n_sub = ctx.plan
        w, n_heads, h2r = model._w_sub, model._n_heads, model._head_rep
        nl, C = X2.shape[0], n_sub * w
        Gm = (sig * coef).mul_(gout[:, None])  # dloss/dM, (R, L)
        dtau = Gm.sum(1, keepdim=True).neg_()
        if Gm.is_cuda or float(mask.sum()) > Gm.numel():  # ties: split evenly, as amax's backward (no sync on a GPU)
            Gm = Gm / mask.new_zeros(Gm.shape).index_add_(0, h2r, mask)
        Gh = Gm.index_select(0, h2r).mul_(mask)  # (n_heads, L)
        G = (Gh.index_select(0, model._sub_head) if n_sub > n_heads else Gh).view(n_sub, n, ell, ell)
        Qt, Kt = QKt.view(2, n_sub, w, n, ell).permute(0, 1, 3, 2, 4).unbind(0)  # (n_sub, n, w, ell)
        dQKt = QKt.new_empty(2 * C + 1, nl)  # dQ^T rows, dK^T rows, a zero row
        if n == 1:
            torch.bmm(Kt[:, 0], G[:, 0].transpose(1, 2), out=dQKt[:C].view(n_sub, w, ell))
            torch.bmm(Qt[:, 0], G[:, 0], out=dQKt[C:2 * C].view(n_sub, w, ell))
        else:
            dQKt[:C].view(n_sub, w, n, ell).copy_(torch.matmul(Kt, G.transpose(-1, -2)).transpose(1, 2))
            dQKt[C:2 * C].view(n_sub, w, n, ell).copy_(torch.matmul(Qt, G).transpose(1, 2))
        dQKt[2 * C].zero_()
        dQK = dQKt.index_select(0, model._qk_back).view(2 * R, D, nl)  # per (Q or K, replica, column)
        dW = torch.bmm(X2.t().expand(2 * R, X2.shape[1], nl), dQK.transpose(1, 2))  # X^T dQ, (2 R, d, D)
        return dW[:R], dW[R:], dtau, None, None, None, None, None


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
               progress=None, checkpoint: Checkpoint | None = None) -> list[dict]:
    """Train one replica per (h, D_K) in `specs` on the data of `seed`; returns per replica the test
    micro-F1, the learned tau, the steps trained and whether the early-stopping rule fired.
    `checkpoint`: resume from and save to it (`core.train.train_program`; step s reads context s only)."""
    data = seed_data(m, d, seed, ell, rho, steps, n_val, n_test)
    dev = torch.device(device)
    X = torch.tensor(data["X"], dtype=torch.float32, device=dev)

    def emb(ctx):
        return X[torch.as_tensor(ctx, device=dev)]

    def labels(ctx):
        return torch.as_tensor(C.context_labels(ctx, data["perm"]), device=dev)

    model = MaxOverHeadsQK(d, specs, [init_weights(d, h, D, m, seed) for h, D in specs], dev)
    Xtr, ytr = emb(data["train"]), labels(data["train"])
    Xval, yval = emb(data["val"]), labels(data["val"])
    log = train_program([model.W_Q, model.W_K, model.tau], lambda s: model.loss(Xtr[s:s + 1], ytr[s:s + 1], alpha),
                        steps, lr, validate=lambda: micro_f1(model, Xval, yval), rule=Threshold(stop_f1, patience),
                        check_every=check_every, progress=progress, checkpoint=checkpoint)
    f1_test = micro_f1(model, emb(data["test"]), labels(data["test"]))
    R = len(specs)
    return [{"h": h, "D_K": D_K, "seed": seed, "f1": float(f1_test[r]), "tau": float(model.tau[r, 0].detach()),
             "steps": log.steps[r], "stopped": log.stopped[r], "seconds": log.seconds / R}
            for r, (h, D_K) in enumerate(specs)]


class HeadPaddedQK(ReplicaModule):
    """The max-over-heads QK model with each head in its own slot: W_Q, W_K in R^{d x H x dk}
    (replica r uses heads [:h_r] and columns [:d_k,r] of each), so the scores cost ell^2 H dk per
    context instead of ell^2 D_K H (the column-assignment contraction of `MaxOverHeadsQK`). The same
    function: head k of a replica is its columns k d_k .. (k + 1) d_k of the (d x D_K) weights.
    Used by `train_grid`, one instance per head count (so H dk is that group's largest D_K)."""

    def __init__(self, d: int, specs: list[tuple[int, int]], inits: list[tuple[torch.Tensor, torch.Tensor]],
                 device: str | torch.device = "cpu"):
        super().__init__(len(specs), torch.float32, device)
        H = max(h for h, _ in specs)
        dk = max(D_K // h for h, D_K in specs)
        self.add("W_Q", (d, H, dk))
        self.add("W_K", (d, H, dk))
        self.add("tau", (1,))
        head_ok = torch.zeros(self.R, H, dtype=torch.bool)
        for r, ((h, D_K), (wq, wk)) in enumerate(zip(specs, inits)):
            if D_K % h:
                raise ValueError(f"replica {r}: h = {h} does not divide D_K = {D_K}")
            self.place("W_Q", r, wq.reshape(wq.shape[0], h, D_K // h))
            self.place("W_K", r, wk.reshape(wk.shape[0], h, D_K // h))
            self.place("tau", r, torch.zeros(1))
            head_ok[r, :h] = True
        self.register_buffer("head_ok", head_ok.to(self.device))
        self.all_heads = bool(head_ok.all())  # no head slot to mask (one head count per model)

    def forward(self, Xc: torch.Tensor) -> torch.Tensor:
        """Xc: (R, n, ell, d) one batch per replica -> S_max - tau, (R, n, ell, ell)."""
        Q = torch.einsum("rnpd,rdhc->rnhpc", Xc, self.w("W_Q"))
        K = torch.einsum("rnpd,rdhc->rnhpc", Xc, self.w("W_K"))
        S = Q @ K.transpose(-1, -2)
        if not self.all_heads:
            S = S.masked_fill(~self.head_ok[:, None, :, None, None], float("-inf"))
        return S.amax(dim=2) - self.w("tau").view(-1, 1, 1, 1)


def train_grid(runs: list[dict], *, steps: int, lr: float, ell: int = 16, rho: float = 0.5, alpha: float = 10.0,
               check_every: int = 500, patience: int = 5, stop_f1: float = 0.995, n_val: int = 500,
               n_test: int = 2000, device: str = "cpu", progress=None, chunk: int = 100,
               checkpoint: Checkpoint | None = None) -> list[dict]:
    """`train_seed` for replicas of different (m, d, seed) in ONE tensor program. `runs`: one dict per
    replica with keys m, d, h, D_K, seed and optionally `steps` (its own cutoff, Table 2; at most
    `steps`). Each (m, d, seed) draws its data exactly as `train_seed` does (`seed_data`, with
    n_train = `steps`), embeddings zero-padded to the largest d, so a replica's function, loss and
    gradients are its own: the same replica trained alone (here or by `train_seed`) follows the same
    trajectory up to float summation order. A replica freezes when the early-stopping rule fires or
    its own step cutoff is reached; the program ends when every replica is frozen. `checkpoint`: resume
    from and save to it (step s reads context s only, so the resumed program ends bit for bit as an
    uninterrupted one)."""
    dev = torch.device(device)
    sets = sorted({(r["m"], r["d"], r["seed"]) for r in runs})
    D = max(r["d"] for r in runs)
    M_ = max(r["m"] for r in runs)
    X = torch.zeros(len(sets), M_, D, dtype=torch.float32)
    ctxs = {name: [] for name in ("train", "val", "test")}
    ys = {name: [] for name in ("train", "val", "test")}
    for u, (m, d, seed) in enumerate(sets):
        data = seed_data(m, d, seed, ell, rho, steps, n_val, n_test)
        X[u, :m, :d] = torch.tensor(data["X"], dtype=torch.float32)
        for name in ctxs:
            ctxs[name].append(torch.as_tensor(data[name]))
            ys[name].append(torch.as_tensor(C.context_labels(data[name], data["perm"])))
    X = X.to(dev)
    ctx = {k: torch.stack(v).to(dev) for k, v in ctxs.items()}  # (U, n, ell)
    y = {k: torch.stack(v).to(dev) for k, v in ys.items()}  # (U, n, ell, ell)
    which = torch.tensor([sets.index((r["m"], r["d"], r["seed"])) for r in runs], device=dev)
    uidx = torch.arange(len(sets), device=dev)[:, None, None]

    def emb(name, a, b):  # (R, b - a, ell, D) embeddings, (R, b - a, ell, ell) labels of contexts a..b
        return X[uidx, ctx[name][:, a:b]][which], y[name][:, a:b][which]

    R = len(runs)
    # one model per head count (measured faster than one padded model even for tiny CI grids)
    groups = [[i for i in range(R) if runs[i]["h"] == h] for h in sorted({r["h"] for r in runs})]
    order = torch.tensor([i for g in groups for i in g], device=dev)
    back = torch.argsort(order)  # model outputs are concatenated group by group; back to `runs` order
    models = [HeadPaddedQK(D, [(runs[i]["h"], runs[i]["D_K"]) for i in g],
                           [init_weights(runs[i]["d"], runs[i]["h"], runs[i]["D_K"], runs[i]["m"], runs[i]["seed"])
                            for i in g], dev) for g in groups]
    gidx = [torch.tensor(g, device=dev) for g in groups]

    def model(Xc):  # (R, n, ell, D) in `runs` order -> (R, n, ell, ell)
        return torch.cat([mm(Xc[g]) for mm, g in zip(models, gidx)])[back]
    cutoff = torch.tensor([min(r.get("steps", steps), steps) for r in runs], device=dev)

    def f1(name):
        tp = fp = fn = 0
        n = ctx[name].shape[1]
        with torch.no_grad():
            for a in range(0, n, chunk):
                Xc, yy = emb(name, a, min(a + chunk, n))
                pred = model(Xc) > 0
                tp = tp + (pred & yy).sum(dim=(1, 2, 3))
                fp = fp + (pred & ~yy).sum(dim=(1, 2, 3))
                fn = fn + (~pred & yy).sum(dim=(1, 2, 3))
        tp, fp, fn = (v.double() for v in (tp, fp, fn))
        return torch.where(tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), torch.ones_like(tp))

    def loss_at(step):  # in group order (the program's replica order: one MaskedAdam per group)
        Xc, yy = emb("train", step, step + 1)
        z = alpha * model(Xc)
        yf = yy.to(z.dtype)
        return (F.softplus(-z) * yf * (ell - 1) + F.softplus(z) * (1 - yf)).mean(dim=(1, 2, 3))[order]

    log = train_program([[mm.W_Q, mm.W_K, mm.tau] for mm in models], loss_at, steps, lr,
                        validate=lambda: f1("val")[order], rule=Threshold(stop_f1, patience), check_every=check_every,
                        max_steps=cutoff[order], progress=progress, checkpoint=checkpoint)
    f1_test = f1("test")
    taus = torch.cat([mm.tau[:, 0].detach() for mm in models])[back]
    return [{**{k: r[k] for k in ("m", "d", "h", "D_K", "seed")}, "f1": float(f1_test[i]),
             "tau": float(taus[i]), "steps": log.steps[j], "stopped": log.stopped[j],
             "seconds": log.seconds / R} for i, (r, j) in enumerate(zip(runs, back.tolist()))]
