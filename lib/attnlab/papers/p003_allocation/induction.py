"""Fig. 7 (App. E.1): the induction-head task and a replica-batched two-layer Transformer.

The task (the paper gives only "sequences of length 128 with 10 unique tokens and embedded 5-token
repeating patterns, 10,000 sequences, 80/20"; the generator and the target are ours):

    tokens uniform on {0..V-1}; one pattern of P uniform tokens per sequence, written at `repeats`
    non-overlapping places (one at a uniform offset inside each of `repeats` equal segments);
    target at position t: the one-hot of token t+1 (next-token prediction), loss = MSE over
    positions 0..L-2 and the V outputs (the paper reports a validation MSE).

Only some next tokens are predictable: inside a repeated occurrence (the 2nd, 3rd, ...) of the
pattern, the tokens after its first one follow from the earlier occurrence: that is what an
induction head copies. `induction_mask` marks those positions; the accuracy there is the
induction accuracy (chance: about 1/V).

The model (per replica; replicas share d_model, L, V and the FFN width, differ in heads, seed and
learning rate): learned token and position embeddings, `layers` pre-norm blocks
h += W_O MHA(LN h) (causal, H heads of dimension d_model / H) and h += W_2 GELU(W_1 LN h), then a
two-layer MLP output head W_b GELU(W_a LN h) -> R^V. Training: AdamW (core.train.MaskedAdam with
decoupled weight decay), per-replica gradient clipping, cosine schedule.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Iterator

import torch
import torch.nn.functional as F

from attnlab.core.checkpoint import Checkpoint
from attnlab.core.replica import ReplicaModule, replica_generator, uniform_init
from attnlab.core.train import MaskedAdam


@dataclass(frozen=True)
class InductionTask:
    """Vocabulary V, length L, pattern length P, occurrences per sequence, dataset size and split."""

    V: int = 10
    L: int = 128
    P: int = 5
    repeats: int = 2
    n: int = 10000
    train_frac: float = 0.8

    def __post_init__(self):
        if self.V < 2 or self.P < 2 or self.repeats < 2 or self.n < 2:
            raise ValueError(f"InductionTask needs V, P, repeats, n >= 2; got {self}")
        if self.L // self.repeats < self.P:
            raise ValueError(f"InductionTask: {self.repeats} occurrences of {self.P} tokens do not fit in L = {self.L}")

    @property
    def n_train(self) -> int:
        return int(round(self.n * self.train_frac))

    def key(self) -> dict:
        return {"task": "induction", **asdict(self)}


def generate(task: InductionTask, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The dataset: tokens [n, L] (int64) and the start of each occurrence [n, repeats], from a
    generator seeded by (task, seed) only; vectorised."""
    gen = replica_generator(task.key(), seed)
    n, L, P, r = task.n, task.L, task.P, task.repeats
    x = torch.randint(0, task.V, (n, L), generator=gen)
    pattern = torch.randint(0, task.V, (n, P), generator=gen)
    seg = L // r
    offs = torch.randint(0, seg - P + 1, (n, r), generator=gen)
    starts = offs + torch.arange(r) * seg
    rows = torch.arange(n)[:, None]
    for j in range(P):
        x[rows, starts + j] = pattern[:, j:j + 1].expand(n, r)
    return x, starts


def induction_mask(task: InductionTask, starts: torch.Tensor) -> torch.Tensor:
    """[n, L - 1] bools: position t predicts token t + 1, which sits at offset 1..P-1 of a repeated
    (not the first) occurrence."""
    n = starts.shape[0]
    m = torch.zeros(n, task.L - 1, dtype=torch.bool)
    rows = torch.arange(n)[:, None]
    for j in range(task.P - 1):  # t = start + j predicts start + j + 1
        m[rows, starts[:, 1:] + j] = True
    return m


def targets(x: torch.Tensor, V: int, dtype=torch.float32) -> torch.Tensor:
    """One-hot next tokens [n, L - 1, V]."""
    return F.one_hot(x[:, 1:], V).to(dtype)


@dataclass(frozen=True)
class IHConfig:
    """d_model, heads H (dividing d_model), blocks, FFN width, output-head width, seed."""

    V: int
    L: int
    d_model: int
    H: int
    layers: int = 2
    ffn: int = 0  # 0: 4 d_model
    head_hidden: int = 0  # 0: d_model
    seed: int = 0

    def __post_init__(self):
        if self.d_model % self.H:
            raise ValueError(f"IHConfig: H = {self.H} heads must divide d_model = {self.d_model}")

    @property
    def F(self) -> int:
        return self.ffn or 4 * self.d_model

    @property
    def K(self) -> int:
        return self.head_hidden or self.d_model

    def seed_config(self) -> dict:
        return {"model": "induction2", **{k: v for k, v in asdict(self).items() if k != "seed"}}


def _ln(x, g, b, eps=1e-5):
    """LayerNorm over the last axis with a per-replica gain g and bias b (broadcast against x)."""
    return torch.addcmul(b, F.layer_norm(x, x.shape[-1:], eps=eps), g)


def _causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T / sqrt(K) + causal mask) v for q, k, v [N, H, L, K]. On a GPU torch's
    scaled_dot_product_attention; on a CPU two batched matmuls and a softmax, several times faster
    for these short sequences and small heads (the same function; forward and backward)."""
    if q.device.type != "cpu":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    N, H, L, K = q.shape
    bias = torch.full((L, L), float("-inf"), dtype=q.dtype, device=q.device).triu(1)
    s = torch.baddbmm(bias, q.reshape(N * H, L, K), k.reshape(N * H, L, K).transpose(1, 2), alpha=1.0 / math.sqrt(K))
    return torch.bmm(torch.softmax(s, dim=-1), v.reshape(N * H, L, K)).view(N, H, L, K)


class ReplicaIH(ReplicaModule):
    """R two-layer Transformers. forward(tokens [B, L] shared, or [R, B, L]) -> [R, B, L, V]."""

    def __init__(self, configs: list[IHConfig], dtype=torch.float32, device="cpu"):
        super().__init__(len(configs), dtype, device)
        shared = {(c.V, c.L, c.d_model, c.layers, c.F, c.K) for c in configs}
        if len(shared) != 1:
            raise ValueError(f"replicas of one program must share V, L, d_model, layers, FFN and head widths; got {shared}")
        self.configs = list(configs)
        V, L, D, nl, Fw, K = next(iter(shared))
        self.nl = nl
        self.add("tok", (V, D))
        self.add("pos", (L, D))
        for l in range(nl):
            for name, shape in [("ln1_g", (D,)), ("ln1_b", (D,)), ("W_in", (D, 3 * D)), ("b_in", (3 * D,)),
                                ("W_o", (D, D)), ("b_o", (D,)), ("ln2_g", (D,)), ("ln2_b", (D,)), ("W_1", (D, Fw)),
                                ("b_1", (Fw,)), ("W_2", (Fw, D)), ("b_2", (D,))]:
                self.add(f"{name}{l}", shape)
        for name, shape in [("lnf_g", (D,)), ("lnf_b", (D,)), ("W_a", (D, K)), ("b_a", (K,)), ("W_b", (K, V)), ("b_b", (V,))]:
            self.add(name, shape)
        # the replicas of each head count: index buffers, so that .to(device) moves them with the model
        self._heads = sorted({c.H for c in configs})
        for g, H in enumerate(self._heads):
            self.register_buffer(f"group{g}", torch.tensor([r for r, c in enumerate(configs) if c.H == H],
                                                            device=self.device), persistent=False)
        self.register_buffer("unpermute", torch.argsort(torch.cat([i for _, i in self.groups])))
        for r, c in enumerate(configs):
            self.init_replica(r, c)

    @property
    def groups(self) -> list[tuple[int, torch.Tensor]]:
        """(H, the indices of the replicas with H heads) for each distinct H, ascending."""
        return [(H, getattr(self, f"group{g}")) for g, H in enumerate(self._heads)]

    def init_replica(self, r: int, c: IHConfig) -> None:
        """Embeddings N(0, 0.02^2) (GPT-2 style); Linear weights U(+-1/sqrt(fan_in)), biases 0; LN 1, 0.
        Drawn from (config, seed) alone."""
        gen = replica_generator(c.seed_config(), c.seed)
        D, Fw, K, V, L = c.d_model, c.F, c.K, c.V, c.L
        self.place("tok", r, torch.randn((V, D), generator=gen, dtype=torch.float64) * 0.02)
        self.place("pos", r, torch.randn((L, D), generator=gen, dtype=torch.float64) * 0.02)
        z, o = (lambda n: torch.zeros(n, dtype=torch.float64)), (lambda n: torch.ones(n, dtype=torch.float64))
        for l in range(c.layers):
            self.place(f"ln1_g{l}", r, o(D))
            self.place(f"ln1_b{l}", r, z(D))
            self.place(f"W_in{l}", r, uniform_init(gen, (D, 3 * D), D))
            self.place(f"b_in{l}", r, z(3 * D))
            self.place(f"W_o{l}", r, uniform_init(gen, (D, D), D))
            self.place(f"b_o{l}", r, z(D))
            self.place(f"ln2_g{l}", r, o(D))
            self.place(f"ln2_b{l}", r, z(D))
            self.place(f"W_1{l}", r, uniform_init(gen, (D, Fw), D))
            self.place(f"b_1{l}", r, z(Fw))
            self.place(f"W_2{l}", r, uniform_init(gen, (Fw, D), Fw))
            self.place(f"b_2{l}", r, z(D))
        self.place("lnf_g", r, o(D))
        self.place("lnf_b", r, z(D))
        self.place("W_a", r, uniform_init(gen, (D, K), D))
        self.place("b_a", r, z(K))
        self.place("W_b", r, uniform_init(gen, (K, V), K))
        self.place("b_b", r, z(V))

    def _lin(self, x, name_w, name_b):
        R, B, L, i = x.shape
        return (torch.bmm(x.reshape(R, B * L, i), self.w(name_w)) + self.w(name_b).unsqueeze(1)).view(R, B, L, -1)

    def _norm(self, x, g, b):
        R = x.shape[0]
        return _ln(x, self.w(g).view(R, 1, 1, -1), self.w(b).view(R, 1, 1, -1))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        R = self.R
        if tokens.dim() == 2:
            tokens = tokens.expand(R, -1, -1)
        _, B, L = tokens.shape
        tok = self.w("tok")
        h = torch.gather(tok, 1, tokens.reshape(R, B * L, 1).expand(-1, -1, tok.shape[-1])).view(R, B, L, -1)
        h = h + self.w("pos")[:, None, :L]
        D = h.shape[-1]
        for l in range(self.nl):
            a = self._norm(h, f"ln1_g{l}", f"ln1_b{l}")
            q, k, v = self._lin(a, f"W_in{l}", f"b_in{l}").chunk(3, dim=-1)
            outs = []
            for H, idx in self.groups:
                K = D // H

                def split(t):
                    return t.index_select(0, idx).reshape(len(idx) * B, L, H, K).transpose(1, 2)

                o = _causal_attention(split(q), split(k), split(v))
                outs.append(o.transpose(1, 2).reshape(len(idx), B, L, D))
            o = torch.cat(outs, 0).index_select(0, self.unpermute)
            h = h + self._lin(o, f"W_o{l}", f"b_o{l}")
            f = self._norm(h, f"ln2_g{l}", f"ln2_b{l}")
            h = h + self._lin(F.gelu(self._lin(f, f"W_1{l}", f"b_1{l}")), f"W_2{l}", f"b_2{l}")
        f = self._norm(h, "lnf_g", "lnf_b")
        return self._lin(F.gelu(self._lin(f, "W_a", "b_a")), "W_b", "b_b")


def cosine(step: int, steps: int) -> float:
    """Cosine decay from 1 to 0 over `steps`."""
    return 0.5 * (1 + math.cos(math.pi * step / max(1, steps)))


def clip_per_replica(params: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scale each replica's gradient (over all parameters) to norm <= max_norm; returns the norms [R]."""
    sq = sum(p.grad.flatten(1).pow(2).sum(1) for p in params)
    norm = sq.sqrt()
    scale = (max_norm / (norm + 1e-6)).clamp(max=1.0)
    for p in params:
        p.grad.mul_(scale.view((-1,) + (1,) * (p.dim() - 1)))
    return norm


def evaluate(model: ReplicaIH, x: torch.Tensor, mask: torch.Tensor, V: int, chunk: int = 256) -> dict[str, torch.Tensor]:
    """Per replica: MSE over (positions 0..L-2, V outputs), and the argmax accuracy on all positions
    and on the induction positions (`mask`)."""
    R, dev = model.R, model.unpermute.device  # accumulated on the model's device, like x and mask
    se = torch.zeros(R, dtype=torch.float64, device=dev)
    hit_all = torch.zeros(R, dtype=torch.float64, device=dev)
    hit_ind = torch.zeros(R, dtype=torch.float64, device=dev)
    with torch.no_grad():
        for i in range(0, len(x), chunk):
            xb, mb = x[i:i + chunk], mask[i:i + chunk]
            out = model(xb[:, :-1])
            y = targets(xb, V, out.dtype)
            se += ((out - y) ** 2).sum(dim=(1, 2, 3)).double()
            hit = (out.argmax(-1) == xb[:, 1:]).double()
            hit_all += hit.sum(dim=(1, 2))
            hit_ind += (hit * mb).sum(dim=(1, 2))
    n = len(x)
    return {"mse": (se / (n * (x.shape[1] - 1) * V)).cpu(), "acc": (hit_all / (n * (x.shape[1] - 1))).cpu(),
            "ind_acc": (hit_ind / mask.sum().clamp(min=1)).cpu()}


def unit_key(task: InductionTask, cfg: IHConfig, lr: float, wd: float, epochs: int, batch: int, clip: float,
             data_seed: int = 0) -> dict:
    """The store key of one trained replica (`data_seed`, the dataset's seed, named only when not 0:
    the keys of runs on the seed-0 dataset are those from before it could move)."""
    return {"what": "induction-2layer", **task.key(), "model": asdict(cfg), "lr": lr, "wd": wd, "epochs": epochs,
            "batch": batch, "clip": clip, **({"data_seed": data_seed} if data_seed else {})}


def train(task: InductionTask, configs: list[IHConfig], lrs: list[float], wd: float, epochs: int, batch: int,
          clip: float = 1.0, device="cpu", dtype=torch.float32, progress=None, evals: int = 5,
          data_seed: int = 0, checkpoint: Checkpoint | None = None) -> Iterator[tuple[int, dict, float]]:
    """Train the replicas (configs[i] with learning rate lrs[i]) together on the training split of
    the dataset `generate(task, data_seed)` (one dataset per run, as the paper's 10,000 sequences),
    every replica on its own seed's shuffling; yields (i, result, seconds) per replica at
    the end. result: final validation MSE, accuracy and induction accuracy, the untrained
    validation MSE, the curve [[epoch, train MSE (mean over the epoch), val MSE, val induction
    accuracy]] at `evals` evenly spaced epochs, and the best validation MSE among them.

    With `checkpoint` (`core.checkpoint.Checkpoint`), a saved state is loaded first (parameters,
    Adam's state, the step, the epoch's running loss, the curve and the untrained MSE; the shuffles
    of the epochs done are drawn again to move each seed's generator on), and the state is saved as
    `checkpoint.due` says (after a step, or at an epoch's end after its evaluation); past its deadline
    `Incomplete` is raised after the save. The resumed program ends bit for bit as an uninterrupted one."""
    start = time.perf_counter()
    x, starts = generate(task, data_seed)
    mask = induction_mask(task, starts)
    nt = task.n_train
    xt, xv, mv = x[:nt].to(device), x[nt:].to(device), mask[nt:].to(device)
    model = ReplicaIH(configs, dtype=dtype, device=device)
    params = list(model.parameters())
    opt = MaskedAdam(params)
    R = len(configs)
    active = torch.ones(R, dtype=torch.bool, device=device)
    base = torch.tensor(lrs, dtype=dtype, device=device)
    seeds = sorted({c.seed for c in configs})
    pick = torch.tensor([seeds.index(c.seed) for c in configs], device=device)
    gens = {s: replica_generator({**task.key(), "shuffle": True}, s) for s in seeds}
    per_epoch = max(1, nt // batch)
    steps = epochs * per_epoch
    at = sorted({max(1, round(epochs * (i + 1) / evals)) for i in range(evals)})
    untrained, curve, first, before, saved_run = None, [], 0, 0.0, None
    if checkpoint is not None:
        state = checkpoint.load(device)
        if state is not None:
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            untrained, curve, first, before = state["untrained"].cpu(), state["curve"], state["step"], state["seconds"]
            saved_run = state["run"].cpu()
    if untrained is None:
        untrained = evaluate(model, xv, mv, task.V)["mse"]
    e0, b0 = divmod(first, per_epoch)
    for _ in range(e0):  # the shuffles of the epochs done: each seed's generator where it was
        for s in seeds:
            torch.randperm(nt, generator=gens[s])

    def save_if_due(run):
        if checkpoint is not None and step < steps and checkpoint.due(step):
            checkpoint.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "run": run,
                             "curve": curve, "untrained": untrained, "seconds": before + time.perf_counter() - start})
            checkpoint.stop_if_late(step, steps, f"{R} replicas")

    step, ev = first, None
    bar = range(e0, epochs) if progress is None else progress(range(e0, epochs))
    for epoch in bar:
        perms = torch.stack([torch.randperm(nt, generator=gens[s])[: per_epoch * batch] for s in seeds]).to(device)
        perms = perms.index_select(0, pick)  # [R, per_epoch * batch]
        run = saved_run if epoch == e0 and b0 > 0 else torch.zeros(R, dtype=torch.float64)
        for b in range(b0 if epoch == e0 else 0, per_epoch):
            idx = perms[:, b * batch:(b + 1) * batch]
            xb = xt[idx]  # [R, batch, L]
            out = model(xb[..., :-1])
            y = F.one_hot(xb[..., 1:], task.V).to(out.dtype)
            loss = ((out - y) ** 2).mean(dim=(1, 2, 3))
            for p in params:
                p.grad = None
            loss.sum().backward()
            if clip > 0:
                clip_per_replica(params, clip)
            lr = base * cosine(step, steps)
            if wd > 0:
                with torch.no_grad():
                    for p in params:
                        p.mul_((1 - lr * wd).view((-1,) + (1,) * (p.dim() - 1)))
            opt.step(lr, active)
            run += loss.detach().double().cpu()
            step += 1
            if b < per_epoch - 1:  # an epoch's last step saves after the epoch's evaluation
                save_if_due(run)
        if epoch + 1 in at:
            ev = evaluate(model, xv, mv, task.V)
            curve.append([epoch + 1, (run / per_epoch).tolist(), ev["mse"].tolist(), ev["ind_acc"].tolist()])
        save_if_due(run)
    # the last epoch is always evaluated (`at` ends at `epochs`): the final evaluation is that one
    final = ev if curve and curve[-1][0] == epochs else evaluate(model, xv, mv, task.V)
    seconds = (before + time.perf_counter() - start) / R
    for r in range(R):
        rows = [[c[0], c[1][r], c[2][r], c[3][r]] for c in curve]
        yield r, {"val_mse": float(final["mse"][r]), "val_acc": float(final["acc"][r]),
                  "ind_acc": float(final["ind_acc"][r]), "untrained_mse": float(untrained[r]),
                  "best_val_mse": min([float(final["mse"][r])] + [c[2] for c in rows]), "curve": rows}, seconds


def chance_mse(V: int) -> float:
    """The MSE of the constant prediction 1/V against a one-hot target: (1/V)(1 - 1/V)."""
    return (1 / V) * (1 - 1 / V)


def perfect_head_mse(x: torch.Tensor, mask: torch.Tensor, V: int) -> float:
    """The validation MSE of a perfect induction head, measured on tokens x [n, L] with their
    `induction_mask` [n, L - 1]: the one-hot of the true next token at the induction positions and the
    constant 1/V elsewhere (nothing else in the sequence is predictable). It equals
    chance_mse(V) (1 - the fraction of induction positions): an MSE no model can beat on average."""
    y = targets(x, V, torch.float64)
    pred = torch.where(mask.unsqueeze(-1), y, torch.full_like(y, 1 / V))
    return float(((pred - y) ** 2).mean())
