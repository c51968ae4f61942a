"""The language model of Figs. 5, 6 and 9: a GPT-style decoder, replica-batched.

Per replica (App. F: learned token and position embeddings, RMSNorm, SwiGLU, causal attention,
weight-tied output, d_model = heads x head_dim; pre-norm as in GPT-2 and Llama):

    h_0 = E[x_t] + P_t                                         (E: [V, D], P: [context, D])
    h   = h + MHA(RMS(h; g_1)) W_O                             (H causal heads of dimension K; D = H K)
    h   = h + (silu(RMS(h; g_2) W_1) * (RMS(h; g_2) W_3)) W_2   (SwiGLU, hidden width F)
    logits_t = RMS(h; g_f) E^T                                 (tied output)

with RMS(x; g) = x / sqrt(mean(x^2) + eps) * g and head h's attention
softmax_causal((a W_Q^h)(a W_K^h)^T / sqrt(K)) (a W_V^h), W_Q^h = W_Q[:, hK:(h+1)K]. Matrices act
on row vectors (y = x W). Initialisation as nanoGPT: N(0, 0.02) for embeddings and matrices,
N(0, 0.02 / sqrt(2 layers)) for the residual projections W_O and W_2, norm gains 1; no biases.

Replicas of one program share the vocabulary, the context length and the number of layers; they
may differ in heads, head dimension, FFN width and seed. Every parameter is padded to the largest
d_model (and FFN width) with masks (`ReplicaModule`): padded coordinates stay exactly 0, RMSNorm
divides by each replica's own d_model, and the first H K query/key/value coordinates of a replica
are its heads, so replicas with the same (H, K) attend together (one fused attention call per
distinct shape). Padding costs the small replicas the large one's width: the chapters put replicas
of one d_model in one program.

Training (`train`): AdamW (decoupled weight decay on the matrices and embeddings, not the norm
gains, as torch.optim.AdamW: p <- p (1 - lr wd) before the Adam step), per-replica gradient
clipping, linear warm-up then cosine decay, optional dropout on the residual branches drawn from
per-replica generators (so replicas stay independent). With a `core.checkpoint.Checkpoint` the loop
saves its whole state (parameters, Adam moments and step counts, dropout generators, the batch
position, the loss curve) as the checkpoint says and stops past its deadline; the same call resumes
from the file and gives bit for bit the uninterrupted result (lm_test.py).
"""

from __future__ import annotations

import base64
import math
import time
from dataclasses import asdict, dataclass
from typing import Callable, Iterator

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.core.checkpoint import Checkpoint
from attnlab.core.progress import tqdm
from attnlab.core.replica import ReplicaModule, replica_generator
from attnlab.core.hashing import derive_seed
from attnlab.core.train import MaskedAdam
from attnlab.papers.p003_allocation import text as T

EPS = 1e-6  # RMSNorm epsilon
INIT_STD = 0.02


@dataclass(frozen=True)
class LMConfig:
    """Vocabulary size, heads, head dimension, layers, context length, SwiGLU width multiple, seed."""

    vocab: int
    heads: int
    head_dim: int
    layers: int = 6
    context: int = 64
    ffn_mult: float = 8 / 3
    seed: int = 0

    def __post_init__(self):
        if min(self.vocab, self.heads, self.head_dim, self.layers, self.context) < 1 or self.ffn_mult <= 0:
            raise ValueError(f"LMConfig needs vocab, heads, head_dim, layers, context >= 1 and ffn_mult > 0; got {self}")

    @property
    def d_model(self) -> int:
        return self.heads * self.head_dim

    @property
    def ffn(self) -> int:
        """SwiGLU hidden width: round(ffn_mult d_model) (8/3: a 4D MLP's parameter count, as Llama)."""
        return max(1, int(round(self.ffn_mult * self.d_model)))

    @property
    def n_params(self) -> int:
        """Trainable parameters (the output is tied to the token embedding)."""
        D, F_ = self.d_model, self.ffn
        return self.vocab * D + self.context * D + self.layers * (4 * D * D + 3 * D * F_ + 2 * D) + D

    def seed_config(self) -> dict:
        return {"model": "gpt-lm", **{k: v for k, v in asdict(self).items() if k != "seed"}}

    def key(self) -> dict:
        return asdict(self)


def rms_norm(x: torch.Tensor, g: torch.Tensor, dims: torch.Tensor | float) -> torch.Tensor:
    """x / sqrt(sum(x^2) / dims + eps) * g (dims: each replica's d_model; padded entries are 0)."""
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) / dims + EPS) * g


class ReplicaLM(ReplicaModule):
    """R decoders. forward(tokens [B, L] or [R, B, L]) -> logits [R, B, L, V]."""

    MATRICES = ("tok", "pos", "Wq", "Wk", "Wv", "Wo", "W1", "W3", "W2")  # weight-decayed
    GAINS = ("n1", "n2", "nf")

    def __init__(self, configs: list[LMConfig], dropout: float = 0.0, dtype=torch.float32, device="cpu"):
        super().__init__(len(configs), dtype, device)
        shared = {(c.vocab, c.context, c.layers) for c in configs}
        if len(shared) != 1:
            raise ValueError(f"replicas of one program must share vocab, context and layers; got {sorted(shared)}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout {dropout}: need 0 <= dropout < 1")
        self.configs = list(configs)
        V, C, nL = next(iter(shared))
        self.V, self.C, self.nL, self.dropout = V, C, nL, dropout
        self.Dm = max(c.d_model for c in configs)
        self.Fm = max(c.ffn for c in configs)
        Dm, Fm = self.Dm, self.Fm
        for name, shape in [("tok", (V, Dm)), ("pos", (C, Dm)), ("n1", (nL, Dm)), ("Wq", (nL, Dm, Dm)),
                            ("Wk", (nL, Dm, Dm)), ("Wv", (nL, Dm, Dm)), ("Wo", (nL, Dm, Dm)), ("n2", (nL, Dm)),
                            ("W1", (nL, Dm, Fm)), ("W3", (nL, Dm, Fm)), ("W2", (nL, Fm, Dm)), ("nf", (Dm,))]:
            self.add(name, shape)
        self.register_buffer("dims", torch.tensor([float(c.d_model) for c in configs], dtype=dtype,
                                                  device=self.device).view(-1, 1, 1))
        # the replicas of each (heads, head_dim): index buffers, so that .to(device) moves them with the model
        self._shapes = sorted({(c.heads, c.head_dim) for c in configs})
        for g, (H, K) in enumerate(self._shapes):
            self.register_buffer(f"group{g}", torch.tensor([r for r, c in enumerate(configs)
                                                            if (c.heads, c.head_dim) == (H, K)], device=self.device),
                                 persistent=False)
        order = torch.cat([idx for _, idx in self.groups])
        self.register_buffer("unpermute", torch.argsort(order))
        self._dropout_seeds = [derive_seed({"what": "dropout", **c.seed_config()}, c.seed) for c in configs]
        self._generators: dict[torch.device, list[torch.Generator]] = {}
        for r, c in enumerate(configs):
            self.init_replica(r, c)

    @property
    def groups(self) -> list[tuple[tuple[int, int], torch.Tensor]]:
        """((H, K), the indices of the replicas with H heads of dimension K) for each distinct shape."""
        return [(HK, getattr(self, f"group{g}")) for g, HK in enumerate(self._shapes)]

    def generators(self, device: torch.device) -> list[torch.Generator]:
        """Each replica's dropout generator on `device` (torch generators do not move with .to():
        one set per device, each seeded by (config, seed) when first used there)."""
        device = torch.device(device)
        if device not in self._generators:
            self._generators[device] = [torch.Generator(device=device).manual_seed(s) for s in self._dropout_seeds]
        return self._generators[device]

    def init_replica(self, r: int, c: LMConfig) -> None:
        """nanoGPT's initialisation, drawn in float64 from a generator seeded by (config, seed) alone."""
        gen = replica_generator(c.seed_config(), c.seed)
        D, F_, nL = c.d_model, c.ffn, c.layers

        def normal(shape, std=INIT_STD):
            return torch.randn(shape, generator=gen, dtype=torch.float64) * std

        resid = INIT_STD / math.sqrt(2 * nL)
        self.place("tok", r, normal((c.vocab, D)))
        self.place("pos", r, normal((c.context, D)))
        for name, shape, std in [("Wq", (nL, D, D), INIT_STD), ("Wk", (nL, D, D), INIT_STD),
                                 ("Wv", (nL, D, D), INIT_STD), ("Wo", (nL, D, D), resid),
                                 ("W1", (nL, D, F_), INIT_STD), ("W3", (nL, D, F_), INIT_STD),
                                 ("W2", (nL, F_, D), resid)]:
            self.place(name, r, normal(shape, std))
        for name, shape in [("n1", (nL, D)), ("n2", (nL, D)), ("nf", (D,))]:
            self.place(name, r, torch.ones(shape, dtype=torch.float64))

    def _drop(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.dropout == 0.0:
            return x
        # each replica's mask covers its own d_model only, so its draws do not depend on the padding
        keep = torch.stack([F.pad(torch.rand((*x.shape[1:-1], c.d_model), generator=g, device=x.device,
                                             dtype=x.dtype), (0, self.Dm - c.d_model))
                            for g, c in zip(self.generators(x.device), self.configs)]) >= self.dropout
        return x * keep / (1 - self.dropout)

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Causal multi-head attention of each replica: q, k, v [R, B, L, Dm] -> [R, B, L, Dm]."""
        R, B, L, Dm = q.shape
        outs = []
        for (H, K), idx in self.groups:
            one = len(self.groups) == 1

            def heads(t):
                t = t if one else t.index_select(0, idx)
                return t[..., :H * K].reshape(len(idx) * B, L, H, K).transpose(1, 2)  # [Rg B, H, L, K]

            o = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
            o = o.transpose(1, 2).reshape(len(idx), B, L, H * K)
            outs.append(F.pad(o, (0, Dm - H * K)) if H * K < Dm else o)
        return outs[0] if len(outs) == 1 else torch.cat(outs, 0).index_select(0, self.unpermute)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        R = self.R
        if tokens.dim() == 2:
            tokens = tokens.unsqueeze(0).expand(R, -1, -1)
        B, L = tokens.shape[1:]
        if L > self.C:
            raise ValueError(f"sequence length {L} exceeds the context {self.C}")
        w = {name: self.w(name) for name in self._names}
        Dm, dims = self.Dm, self.dims
        offset = (torch.arange(R, device=tokens.device) * self.V).view(R, 1, 1)
        h = F.embedding(tokens + offset, w["tok"].reshape(R * self.V, Dm)) + w["pos"][:, None, :L]
        h = self._drop(h).reshape(R, B * L, Dm)

        def lin(x, W):
            return torch.bmm(x, W)

        for l in range(self.nL):
            a = rms_norm(h, w["n1"][:, l].unsqueeze(1), dims)
            qkv = lin(a, torch.cat([w["Wq"][:, l], w["Wk"][:, l], w["Wv"][:, l]], -1)).view(R, B, L, 3 * Dm)
            q, k, v = qkv.split(Dm, -1)
            o = self.attention(q, k, v).reshape(R, B * L, Dm)
            h = h + self._drop(lin(o, w["Wo"][:, l]))
            f = rms_norm(h, w["n2"][:, l].unsqueeze(1), dims)
            gu = lin(f, torch.cat([w["W1"][:, l], w["W3"][:, l]], -1))
            g, u = gu.split(self.Fm, -1)
            h = h + self._drop(lin(F.silu(g) * u, w["W2"][:, l]))
        h = rms_norm(h, w["nf"].unsqueeze(1), dims)
        return torch.bmm(h, w["tok"].transpose(1, 2)).view(R, B, L, self.V)


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy (nats) of each replica: logits [R, B, L, V], targets [R, B, L] -> [R]."""
    R, V = logits.shape[0], logits.shape[-1]
    ce = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), reduction="none")
    return ce.view(R, -1).mean(1)


def schedule(step: int, steps: int, warmup: int) -> float:
    """Learning-rate factor: linear warm-up over `warmup` steps, then cosine decay to 0."""
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


def clip_per_replica(params: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scale each replica's gradient (over all parameters) to norm <= max_norm; returns the norms [R]."""
    grads = [p.grad for p in params]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.flatten(1), dim=1) for g in grads]), dim=0)
    scale = (max_norm / (norm + 1e-6)).clamp(max=1.0)
    torch._foreach_mul_(grads, [scale.view((-1,) + (1,) * (g.dim() - 1)) for g in grads])
    return norm


@torch.no_grad()
def evaluate(model: ReplicaLM, inputs: torch.Tensor, targets: torch.Tensor, chunk: int = 64) -> torch.Tensor:
    """Mean cross-entropy [R] (float64) of every replica on the same windows (inputs, targets [n, L])."""
    was = model.training
    model.eval()
    total = torch.zeros(model.R, dtype=torch.float64)
    dev = model.dims.device
    for i in range(0, len(inputs), chunk):
        x, y = inputs[i:i + chunk].to(dev), targets[i:i + chunk].to(dev)
        logits = model(x)
        ce = F.cross_entropy(logits.reshape(-1, model.V), y.expand(model.R, -1, -1).reshape(-1), reduction="none")
        total += ce.view(model.R, -1).sum(1).double().cpu()
    model.train(was)
    return total / inputs.numel()


@dataclass(frozen=True)
class TrainSpec:
    """The optimisation protocol shared by the replicas of one program."""

    steps: int
    batch: int
    lr: float
    warmup: int = 0
    weight_decay: float = 0.1
    clip: float = 1.0
    dropout: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)

    def key(self) -> dict:
        d = asdict(self)
        d["betas"] = list(self.betas)
        return d


def unit_key(cfg: LMConfig, spec: TrainSpec, data_key: dict, n_eval: int) -> dict:
    """The store key of one trained language model."""
    return {"what": "gpt-lm", "model": cfg.key(), "train": spec.key(), "data": data_key, "n_eval": n_eval}


def fit(model: ReplicaLM, spec: TrainSpec, train_ids: np.ndarray, progress: bool = True, curve_every: int = 25,
        desc: str = "train", checkpoint: Checkpoint | None = None) -> tuple[list[list[float]], torch.Tensor]:
    """Train `model` in place for `spec.steps` batches of its context length: each replica's batches
    come from the stream of its seed (`text.batches`). Returns the training-loss curve
    ([step, loss of each replica...] every `curve_every` steps) and the last batch's losses [R].
    `checkpoint`: resume from its saved state if there is one; save every `checkpoint.every` steps
    (or at its deadline) and raise `Incomplete` after a save past the deadline."""
    L = model.C
    dev, dtype = model.dims.device, model.dtype
    model.train()
    params = list(model.parameters())
    decayed = [p for p, name in zip(params, model._names) if name in ReplicaLM.MATRICES]
    opt = MaskedAdam(params, betas=spec.betas)
    R = model.R
    active = torch.ones(R, dtype=torch.bool, device=dev)
    seeds = sorted({c.seed for c in model.configs})
    streams = {s: T.batches(train_ids, L, spec.batch, s) for s in seeds}
    pick = torch.tensor([seeds.index(c.seed) for c in model.configs], device=dev)
    curve, loss = [], torch.zeros(R)
    first = 0
    state = checkpoint.load(dev) if checkpoint is not None else None
    if state is not None:
        with torch.no_grad():
            for p, v in zip(params, state["params"], strict=True):
                p.copy_(v)
        opt.load_state_dict(state["opt"])
        for g, st in zip(model.generators(dev), state["dropout"], strict=True):
            g.set_state(st.cpu())  # a generator's state is a CPU byte tensor, whatever its device
        first, curve, loss = state["step"], [list(c) for c in state["curve"]], state["loss"]
        for _ in range(first):  # the batch streams: replay their draws (cheap: indices only)
            for s in seeds:
                next(streams[s])
    for step in tqdm(range(first, spec.steps), desc=desc, disable=not progress, mininterval=5.0, leave=False,
                     initial=first, total=spec.steps):
        data = [next(streams[s]) for s in seeds]
        x = torch.stack([d[0] for d in data]).to(dev).index_select(0, pick)
        y = torch.stack([d[1] for d in data]).to(dev).index_select(0, pick)
        loss = cross_entropy(model(x), y)
        if step % curve_every == 0 or step == spec.steps - 1:
            curve.append([step, *loss.detach().cpu().tolist()])
        for p in params:
            p.grad = None
        loss.sum().backward()
        if spec.clip > 0:
            clip_per_replica(params, spec.clip)
        lr = spec.lr * schedule(step, spec.steps, spec.warmup)
        if spec.weight_decay > 0:
            with torch.no_grad():
                torch._foreach_mul_(decayed, 1 - lr * spec.weight_decay)
        opt.step(torch.full((R,), lr, dtype=dtype, device=dev), active)
        if checkpoint is not None and step + 1 < spec.steps and checkpoint.due(step + 1):
            checkpoint.save({"params": [p.detach() for p in params], "opt": opt.state_dict(),
                             "dropout": [g.get_state() for g in model.generators(dev)], "step": step + 1,
                             "curve": curve, "loss": loss.detach()})
            checkpoint.stop_if_late(step + 1, spec.steps, desc)
    return curve, loss.detach()


def train(configs: list[LMConfig], spec: TrainSpec, train_ids: np.ndarray, valid_ids: np.ndarray, n_eval: int,
          device="cpu", dtype=torch.float32, progress: bool = True, curve_every: int = 25,
          keep_state: Callable[[int], bool] = lambda r: False, desc: str = "train",
          checkpoint: Checkpoint | None = None) -> Iterator[tuple[int, dict, float]]:
    """Train the replicas together (`fit`); yields (i, result, seconds) per replica at the end. result:
    `valid_ce` (mean next-token cross-entropy in nats on `n_eval` fixed validation windows),
    `train_loss` (the last batch), `curve` ([step, training loss] every `curve_every` steps),
    `n_params`, and `state` (`encode_state`) for the replicas where keep_state(i). `checkpoint`: as `fit`."""
    start = time.perf_counter()
    model = ReplicaLM(configs, dropout=spec.dropout, dtype=dtype, device=device)
    curve, loss = fit(model, spec, train_ids, progress, curve_every, desc, checkpoint)
    xe, ye = T.eval_windows(valid_ids, model.C, n_eval)
    ce = evaluate(model, xe, ye)
    seconds = (time.perf_counter() - start) / len(configs)
    for r, c in enumerate(configs):
        out = {"valid_ce": float(ce[r]), "train_loss": float(loss[r]), "n_params": c.n_params,
               "curve": [[int(p[0]), float(p[1 + r])] for p in curve]}
        if keep_state(r):
            out["state"] = encode_state(model.replica_state(r))
        yield r, out, seconds


# --- one model's weights as JSON, and a plain forward of them -------------------------------------

def encode_state(state: dict[str, torch.Tensor]) -> dict:
    """Weights as JSON: name -> {shape, float32 little-endian bytes in base64}."""
    out = {}
    for k, v in state.items():
        a = v.detach().cpu().numpy().astype("<f4")
        out[k] = {"shape": list(a.shape), "f32": base64.b64encode(a.tobytes()).decode("ascii")}
    return out


def decode_state(blob: dict, dtype=torch.float64) -> dict[str, torch.Tensor]:
    """The inverse of `encode_state` (ValueError on a size mismatch)."""
    out = {}
    for k, v in blob.items():
        a = np.frombuffer(base64.b64decode(v["f32"]), dtype="<f4")
        if a.size != int(np.prod(v["shape"])):
            raise ValueError(f"state entry {k!r}: {a.size} values for shape {v['shape']}")
        out[k] = torch.from_numpy(a.reshape(v["shape"]).copy()).to(dtype)
    return out


def head_qk(state: dict[str, torch.Tensor], cfg: LMConfig, layer: int, head: int) -> tuple[torch.Tensor, torch.Tensor]:
    """W_Q^h, W_K^h [D, K] of one head (logits (a W_Q^h)(a W_K^h)^T / sqrt(K))."""
    K = cfg.head_dim
    sl = slice(head * K, (head + 1) * K)
    return state["Wq"][layer][:, sl], state["Wk"][layer][:, sl]


def plain_forward(state: dict[str, torch.Tensor], cfg: LMConfig, tokens: torch.Tensor,
                  override: Callable[[int, int, torch.Tensor, torch.Tensor], torch.Tensor | None] | None = None,
                  capture: dict | None = None) -> torch.Tensor:
    """The decoder of one replica's weights, written out plainly (explicit softmax, one head at a
    time): tokens [B, L] -> logits [B, L, V]. `override(layer, head, a, probs)` may return new
    attention probabilities [B, L, L] for a head (a: the normalised layer input [B, L, D]);
    `capture[(layer, "a")]` and `capture[(layer, head)]` receive the layer inputs and probabilities."""
    B, L = tokens.shape
    D, H, K = cfg.d_model, cfg.heads, cfg.head_dim
    s = state
    h = s["tok"][tokens] + s["pos"][:L]
    mask = torch.ones(L, L, dtype=torch.bool, device=tokens.device).tril()

    def rms(x, g):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + EPS) * g

    for l in range(cfg.layers):
        a = rms(h, s["n1"][l])
        if capture is not None:
            capture[(l, "a")] = a
        q, k, v = a @ s["Wq"][l], a @ s["Wk"][l], a @ s["Wv"][l]
        heads = []
        for j in range(H):
            sl = slice(j * K, (j + 1) * K)
            z = (q[..., sl] @ k[..., sl].transpose(-1, -2)) / math.sqrt(K)
            p = torch.softmax(z.masked_fill(~mask, float("-inf")), -1)
            if override is not None:
                new = override(l, j, a, p)
                p = p if new is None else new
            if capture is not None:
                capture[(l, j)] = p
            heads.append(p @ v[..., sl])
        h = h + torch.cat(heads, -1) @ s["Wo"][l]
        f = rms(h, s["n2"][l])
        h = h + (F.silu(f @ s["W1"][l]) * (f @ s["W3"][l])) @ s["W2"][l]
    return rms(h, s["nf"]) @ s["tok"].T
