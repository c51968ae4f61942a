"""The positional and the standard Transformer of App. D.1.1, replica-batched.

Eq. (1) layer: F(X) = Φ( (⊕_h A_h X W_V^h) W_O ⊕ X ), the residual *concatenated*, Φ a 2-layer
ReLU MLP (2E → hidden → E) whose output replaces X. Attention (with 1/√d_k scaling, as the
authors' code; the theory absorbs it into W_Q):
  positional (Eq. 3): A_h = softmax((P W_Q^h + b_Q)(P W_K^h + b_K)^T / √d_k), P = one-hot of the
  n + 1 nodes (n inputs and one scratchpad node holding 0), the same in every layer, so A does
  not depend on the input;
  standard (Eq. 2): the same with X in place of P, and P concatenated to the input value.
A linear encoder (input → E) and decoder (E → 1 per node) surround the L = ⌈log₂ n⌉ + 1 layers;
the scratchpad's output is dropped. Per-head q/k dimension: d_P = n + 1 (positional) or E
(standard), as in the authors' code (the paper says "n"); value dimension E/H per head.

Variants (App. D.1.5–D.1.7; every option defaults to the model above, bit for bit):
  pe: the encoding P (`encodings.py`): one-hot (default), binary, sinusoidal, or none;
  features: what the encoder reads per node: the value ("value", positional default), the value
    and P concatenated ("value+pe", standard default), or Diag(X) ("diag": node i's input is x_i e_i,
    D.1.7 variant 2);
  kind "hybrid": Q/K read the layer input and P concatenated, [h, P] (D.1.7 variant 5,
    "input-regularised standard");
  rope: rotate every head's q and k by RoPE before the scores (D.1.6, D.1.7 variant 7);
  hidden, layers: the compact standard models of D.1.5.
The seven ablation variants of D.1.7 are `ABLATIONS` below.

Replicas (leading axis R) share n, kind, layers and heads, and may differ in E, hidden, q/k
dimension, seed, and (unless Diag(X)) in pe, features and rope: replicas with different
encodings get one zero-padded P per replica (P has a replica axis then; the input reads its own
copy, zero for replicas whose features are "value"), RoPE leaves the replicas without it
unrotated (cos 1, sin 0); padded entries are masked (`ReplicaModule`), so a replica computes exactly what it
computes alone. Initialisation as the authors' code: Xavier-uniform Q/K/V/O weights with zero
biases, PyTorch's default U(±1/√fan_in) for the encoder, decoder and MLP.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

from attnlab.core.replica import ReplicaModule, replica_generator, uniform_init

from . import encodings

KINDS = ("positional", "standard", "hybrid")
FEATURES = ("value", "value+pe", "diag")


@dataclass(frozen=True)
class ModelConfig:
    n: int = 8  # input length (the paper: 8)
    kind: str = "positional"  # positional (Q/K from P) | standard (Q/K from h) | hybrid (Q/K from [h, P])
    heads: int = 2
    embed: int = 64  # E, the encoder's output and every layer's width
    hidden: int = 64  # the MLP's hidden width
    layers: int | None = None  # None: ⌈log₂ n⌉ + 1 (App. D.1.1)
    qk_dim: int | None = None  # per-head q/k dimension; None: d_P (positional) or E (standard, hybrid)
    pe: str = "onehot"  # positional encoding P: onehot | binary | sinusoidal | none (encodings.py)
    features: str | None = None  # encoder input: value | value+pe | diag; None: value+pe if standard with a PE
    rope: bool = False  # rotate q and k by RoPE (encodings.rope)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind {self.kind!r}: choose one of {KINDS}")
        if self.embed % self.heads:
            raise ValueError(f"embed {self.embed} must be a multiple of heads {self.heads}")
        if self.pe not in encodings.ENCODINGS:
            raise ValueError(f"pe {self.pe!r}: choose one of {encodings.ENCODINGS}")
        if self.features is not None and self.features not in FEATURES:
            raise ValueError(f"features {self.features!r}: choose one of {FEATURES}")
        if self.pe == "none" and (self.kind != "standard" or self.input_features == "value+pe"):
            raise ValueError(f"pe 'none' leaves a {self.kind} model with features {self.input_features!r} no "
                             "positions to read: use kind='standard' with features 'value' or 'diag'")
        if self.rope and self.d_k % 2:
            raise ValueError(f"RoPE rotates pairs: the per-head q/k dimension {self.d_k} must be even")

    def seed_key(self) -> dict:
        """The dict that seeds a replica's initialisation: the fields, without the variant options
        that are at their defaults (so the models of the first chapters keep their initial weights)."""
        d = asdict(self)
        for name, default in (("pe", "onehot"), ("features", None), ("rope", False)):
            if d[name] == default:
                del d[name]
        return d

    @property
    def nodes(self) -> int:
        return self.n + 1  # the inputs and one scratchpad node

    @property
    def depth(self) -> int:
        return self.layers if self.layers is not None else math.ceil(math.log2(self.n)) + 1

    @property
    def d_pe(self) -> int:
        """Columns of P."""
        return encodings.width(self.pe, self.n)

    @property
    def input_features(self) -> str:
        if self.features is not None:
            return self.features
        return "value+pe" if self.kind == "standard" and self.pe != "none" else "value"

    @property
    def d_in(self) -> int:
        return {"value": 1, "value+pe": 1 + self.d_pe, "diag": self.nodes}[self.input_features]

    @property
    def d_qk_in(self) -> int:
        return {"positional": self.d_pe, "standard": self.embed, "hybrid": self.embed + self.d_pe}[self.kind]

    @property
    def d_k(self) -> int:
        if self.qk_dim is not None:
            return self.qk_dim
        return self.d_pe if self.kind == "positional" else self.embed

    @property
    def d_v(self) -> int:
        return self.embed // self.heads


def parameter_count(c: ModelConfig) -> int:
    """Closed form: encoder (d_in E + E), decoder (E + 1), and per layer Q/K (d_qk_in·2H d_k + 2H d_k),
    V (E·E + E), O (E·E + E), MLP (2E·hidden + hidden + hidden·E + E)."""
    E, Hd, H = c.embed, c.hidden, c.heads
    per_layer = (c.d_qk_in * 2 * H * c.d_k + 2 * H * c.d_k + 2 * (E * E + E) + 2 * E * Hd + Hd + Hd * E + E)
    return c.d_in * E + E + E + 1 + c.depth * per_layer


def _xavier(gen: torch.Generator, shape: tuple[int, ...], fan_in: int, fan_out: int) -> torch.Tensor:
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    return (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound


class Transformer(ReplicaModule):
    """R replicas of the App. D.1.1 model. forward(x [B, n]) → predictions [R, B, n]."""

    def __init__(self, configs: list[ModelConfig], seeds: list[int], dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu"):
        super().__init__(len(configs), dtype, device)
        c0 = configs[0]
        shared = ("n", "kind", "heads", "depth")
        for c in configs:
            if any(getattr(c, a) != getattr(c0, a) for a in shared) or (
                    (c.input_features == "diag") != (c0.input_features == "diag")):
                raise ValueError(f"replicas must share {shared} (and Diag(X) input or not); got {c} and {c0}")
        self.mixed = len({(c.pe, c.input_features) for c in configs}) > 1  # one P per replica
        self.configs, self.seeds = list(configs), list(seeds)
        self.kind, self.n, self.H, self.L = c0.kind, c0.n, c0.heads, c0.depth
        self.dk = max(c.d_k for c in configs)
        E = max(c.embed for c in configs)
        Hd = max(c.hidden for c in configs)
        dv = max(c.d_v for c in configs)
        d_pe = max(c.d_pe for c in configs)
        d_in = 1 + d_pe if self.mixed else c0.d_in
        d_qk = d_pe if c0.kind == "positional" else E
        self.add("enc_W", (d_in, E)); self.add("enc_b", (E,))
        self.add("dec_W", (E, 1)); self.add("dec_b", (1,))
        for l in range(self.L):
            for nm, shape in (("q_W", (self.H, d_qk, self.dk)), ("q_b", (self.H, self.dk)),
                              ("k_W", (self.H, d_qk, self.dk)), ("k_b", (self.H, self.dk)),
                              ("v_W", (self.H, E, dv)), ("v_b", (self.H, dv)),
                              ("o_W", (self.H, dv, E)), ("o_b", (E,)),
                              ("m1a_W", (E, Hd)), ("m1h_W", (E, Hd)), ("m1_b", (Hd,)), ("m2_W", (Hd, E)), ("m2_b", (E,))):
                self.add(f"{nm}{l}", shape)
            if self.kind == "hybrid":  # the P part of the Q/K maps of [h, P]
                self.add(f"qP_W{l}", (self.H, d_pe, self.dk)); self.add(f"kP_W{l}", (self.H, d_pe, self.dk))
        self.features, self.use_rope = c0.input_features, any(c.rope for c in configs)
        if not self.mixed:
            self.register_buffer("P", encodings.matrix(c0.pe, c0.n).to(dtype=dtype, device=self.device))
        else:  # [R, nodes, max d_P], zero-padded; the input's copy is zero where features = value
            self.features = "value+pe"
            P = torch.zeros(self.R, c0.nodes, d_pe, dtype=torch.float64)
            P_in = torch.zeros_like(P)
            for r, c in enumerate(configs):
                P[r, :, : c.d_pe] = encodings.matrix(c.pe, c.n)
                if c.input_features == "value+pe":
                    P_in[r] = P[r]
            self.register_buffer("P", P.to(dtype=dtype, device=self.device))
            self.register_buffer("P_in", P_in.to(dtype=dtype, device=self.device))
        if self.use_rope:  # per-replica tables (θ_i depends on the replica's d_k); padded columns: no rotation
            cos = torch.ones(self.R, c0.nodes, self.dk, dtype=torch.float64)
            sin = torch.zeros(self.R, c0.nodes, self.dk, dtype=torch.float64)
            for r, c in enumerate(configs):
                if c.rope:
                    cos[r, :, : c.d_k], sin[r, :, : c.d_k] = encodings.rope_tables(c.nodes, c.d_k)
            self.register_buffer("rope_cos", cos.to(dtype=dtype, device=self.device))
            self.register_buffer("rope_sin", sin.to(dtype=dtype, device=self.device))
        self.register_buffer("qk_scale", torch.tensor([1 / math.sqrt(c.d_k) for c in configs], dtype=dtype,
                                                      device=self.device))
        for r, (c, s) in enumerate(zip(configs, seeds)):
            self._init_replica(r, c, s)

    def _init_replica(self, r: int, c: ModelConfig, seed: int) -> None:
        g = replica_generator(c.seed_key(), seed)
        E, Hd, H, dk, dv = c.embed, c.hidden, c.heads, c.d_k, c.d_v
        self.place("enc_W", r, uniform_init(g, (c.d_in, E), c.d_in))
        self.place("enc_b", r, uniform_init(g, (E,), c.d_in))
        for l in range(c.depth):
            qk = _xavier(g, (c.d_qk_in, 2 * H * dk), c.d_qk_in, 2 * H * dk)  # one fused Q/K map, as the code
            q_full = qk[:, : H * dk].reshape(c.d_qk_in, H, dk).transpose(0, 1)
            k_full = qk[:, H * dk:].reshape(c.d_qk_in, H, dk).transpose(0, 1)
            if c.kind == "hybrid":  # rows of h first, then rows of P
                self.place(f"qP_W{l}", r, q_full[:, E:]); self.place(f"kP_W{l}", r, k_full[:, E:])
                q_full, k_full = q_full[:, :E], k_full[:, :E]
            self.place(f"q_W{l}", r, q_full)
            self.place(f"k_W{l}", r, k_full)
            self.place(f"q_b{l}", r, torch.zeros(H, dk)); self.place(f"k_b{l}", r, torch.zeros(H, dk))
            v = _xavier(g, (E, E), E, E)
            self.place(f"v_W{l}", r, v.reshape(E, H, dv).transpose(0, 1)); self.place(f"v_b{l}", r, torch.zeros(H, dv))
            o = _xavier(g, (E, E), E, E)
            self.place(f"o_W{l}", r, o.reshape(H, dv, E)); self.place(f"o_b{l}", r, torch.zeros(E))
            m1 = uniform_init(g, (2 * E, Hd), 2 * E)  # one Linear(2E, hidden), stored as its two halves
            self.place(f"m1a_W{l}", r, m1[:E]); self.place(f"m1h_W{l}", r, m1[E:])
            self.place(f"m1_b{l}", r, uniform_init(g, (Hd,), 2 * E))
            self.place(f"m2_W{l}", r, uniform_init(g, (Hd, E), Hd))
            self.place(f"m2_b{l}", r, uniform_init(g, (E,), Hd))
        self.place("dec_W", r, uniform_init(g, (E, 1), E))
        self.place("dec_b", r, uniform_init(g, (1,), E))

    def _embed(self, x: torch.Tensor) -> torch.Tensor:
        """Values [B, n] → node features [B, n + 1, d_in] (scratchpad 0; P appended for value+pe;
        Diag(X) for diag). Values [R, B, n] (one batch per replica) → [R, B, n + 1, d_in]."""
        B = x.shape[-2]
        v = torch.cat([x.to(self.dtype), torch.zeros(x.shape[:-1] + (1,), dtype=self.dtype, device=x.device)], dim=-1)
        if self.features == "diag":
            return torch.diag_embed(v)
        v = v.unsqueeze(-1)
        if self.mixed:  # [R, B, nodes, 1 + max d_P]
            return torch.cat([v.expand(self.R, -1, -1, -1), self.P_in[:, None].expand(-1, B, -1, -1)], dim=-1)
        if self.features == "value+pe":
            v = torch.cat([v, self.P.expand(v.shape[:-2] + self.P.shape)], dim=-1)
        return v

    def _from_P(self, W: torch.Tensor) -> torch.Tensor:
        """P W per replica and head: W [R, H, d_P, d_k] → [R, H, nodes, d_k]."""
        return torch.einsum("rnp,rhpk->rhnk" if self.mixed else "np,rhpk->rhnk", self.P, W)

    def attention(self, l: int, h: torch.Tensor | None = None) -> torch.Tensor:
        """Layer l's attention: [R, H, nodes, nodes] (positional, input-free) or [R, B, H, nodes, nodes]."""
        qW, qb, kW, kb = (self.w(f"{nm}{l}") for nm in ("q_W", "q_b", "k_W", "k_b"))
        if self.kind == "positional":
            q = self._from_P(qW) + qb.unsqueeze(2)
            k = self._from_P(kW) + kb.unsqueeze(2)
            if self.use_rope:
                q, k = (encodings.rope(t, self.rope_cos[:, None], self.rope_sin[:, None]) for t in (q, k))
            return torch.softmax(q @ k.transpose(-1, -2) * self.qk_scale.view(-1, 1, 1, 1), dim=-1)
        q = torch.einsum("rbne,rhek->rbhnk", h, qW) + qb[:, None, :, None, :]
        k = torch.einsum("rbne,rhek->rbhnk", h, kW) + kb[:, None, :, None, :]
        if self.kind == "hybrid":
            q = q + self._from_P(self.w(f"qP_W{l}")).unsqueeze(1)
            k = k + self._from_P(self.w(f"kP_W{l}")).unsqueeze(1)
        if self.use_rope:
            q, k = (encodings.rope(t, self.rope_cos[:, None, None], self.rope_sin[:, None, None]) for t in (q, k))
        return torch.softmax(q @ k.transpose(-1, -2) * self.qk_scale.view(-1, 1, 1, 1, 1), dim=-1)

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        """Predictions [R, B, n] (and the attention maps [R, H, nodes, nodes] or [R, B, H, nodes, nodes]
        per layer); the positional kind takes the node-major path `_forward_positional`."""
        if self.kind == "positional":
            return self._forward_positional(x, return_attention)
        return self._forward_general(x, return_attention)

    def _forward_positional(self, x: torch.Tensor, return_attention: bool = False):
        """The positional model's forward, node-major (h as [R, nodes·B, E], one matrix per replica).

        The attention A_h [nodes, nodes] does not depend on the input and its rows sum to 1, so Eq. (1)'s
        layer Φ(attn ⊕ h), attn = Σ_h A_h (h W_V^h + b_V^h) W_O^h + b_O, has the first MLP pre-activation
            h W1h + Σ_h (A_h h) (W_V^h W_O^h W1a) + ((Σ_h b_V^h W_O^h + b_O) W1a + b1),
        computed as one product A·h over the node axis for all heads and H + 1 accumulated products,
        without forming attn (the same function as `_forward_general`, equal to it in float64:
        models_test.py). Far fewer, larger operations: a single model is faster than the plain loop."""
        X = self._embed(x)  # [B, nodes, d_in], or [R, B, nodes, d_in] with one P per replica
        R, H = self.R, self.H
        B, nodes = X.shape[-3], X.shape[-2]
        Xn = X.transpose(-3, -2).reshape(-1, nodes * B, X.shape[-1]).expand(R, -1, -1)  # [R, nodes·B, d_in]
        # products accumulate in place (a broadcast bias in baddbmm costs a copy of the whole output)
        h = torch.bmm(Xn, self.w("enc_W")).add_(self.w("enc_b")[:, None, :])  # [R, nodes·B, E]
        E = h.shape[-1]
        maps = []
        for l in range(self.L):
            A = self.attention(l)  # [R, H, nodes, nodes]
            oW, W1a = self.w(f"o_W{l}"), self.w(f"m1a_W{l}")
            N = self.w(f"v_W{l}") @ oW @ W1a.unsqueeze(1)  # W_V^h W_O^h W1a: [R, H, E, hidden]
            c = (self.w(f"v_b{l}").unsqueeze(2) @ oW).sum(1) + self.w(f"o_b{l}")[:, None, :]  # [R, 1, E]
            bias = torch.baddbmm(self.w(f"m1_b{l}")[:, None, :], c, W1a)  # [R, 1, hidden]
            Y = torch.bmm(A.reshape(R, H * nodes, nodes), h.view(R, nodes, B * E)).view(R, H, nodes * B, E)
            pre = torch.bmm(h, self.w(f"m1h_W{l}"))
            for Y_h, N_h in zip(Y.unbind(1), N.unbind(1)):  # (unbind: one stack in backward, not H slices)
                pre.baddbmm_(Y_h, N_h)
            hid = torch.relu_(pre.add_(bias))
            h = torch.bmm(hid, self.w(f"m2_W{l}")).add_(self.w(f"m2_b{l}")[:, None, :])
            maps.append(A)
        y = torch.bmm(h, self.w("dec_W")).add_(self.w("dec_b")[:, None, :]).view(R, nodes, B)
        y = y[:, : self.n].transpose(1, 2).contiguous()  # drop the scratchpad: [R, B, n]
        return (y, maps) if return_attention else y

    def _forward_general(self, x: torch.Tensor, return_attention: bool = False):
        """Any kind (attention from the input, or not): batch-major, attn formed per head."""
        X = self._embed(x)  # [B, nodes, d_in], or [R, B, nodes, d_in] with one P per replica
        h = (torch.einsum("rbnd,rde->rbne" if X.dim() == 4 else "bnd,rde->rbne", X, self.w("enc_W"))
             + self.w("enc_b")[:, None, None, :])
        maps = []
        for l in range(self.L):
            A = self.attention(l, h)
            v = torch.einsum("rbne,rhed->rbhnd", h, self.w(f"v_W{l}")) + self.w(f"v_b{l}")[:, None, :, None, :]
            heads = (A.unsqueeze(1) if A.dim() == 4 else A) @ v  # [R, B, H, nodes, dv]
            attn = torch.einsum("rbhnd,rhde->rbne", heads, self.w(f"o_W{l}")) + self.w(f"o_b{l}")[:, None, None, :]
            # Eq. (1): Φ(attn ⊕ h), the residual concatenated; [attn, h] @ W1 = attn @ W1a + h @ W1h
            hid = torch.relu(attn @ self.w(f"m1a_W{l}").unsqueeze(1) + h @ self.w(f"m1h_W{l}").unsqueeze(1)
                             + self.w(f"m1_b{l}")[:, None, None, :])
            h = hid @ self.w(f"m2_W{l}").unsqueeze(1) + self.w(f"m2_b{l}")[:, None, None, :]
            maps.append(A)
        y = (h @ self.w("dec_W").unsqueeze(1)).squeeze(-1) + self.w("dec_b")[:, None, :]
        y = y[:, :, : self.n]  # drop the scratchpad
        return (y, maps) if return_attention else y

    def n_params(self, r: int) -> int:
        """Replica r's parameter count (unpadded entries)."""
        return int(sum(getattr(self, nm + "_mask")[r].sum().item() for nm in self._names))

    def value_names(self) -> list[str]:
        """The names of the W_V matrices of every layer (App. D.1.8 fine-tunes these only)."""
        return [f"v_W{l}" for l in range(self.L)]


# App. D.1.7's seven architectures, by the paper's numbering (one-hot P unless said otherwise)
ABLATIONS: dict[int, tuple[str, dict]] = {
    1: ("standard", dict(kind="standard")),
    2: ("standard, input Diag(X), no PE", dict(kind="standard", pe="none", features="diag")),
    3: ("positional", dict(kind="positional")),
    4: ("misaligned positional (PE also in the input)", dict(kind="positional", features="value+pe")),
    5: ("input-regularised standard (PE only in Q, K)", dict(kind="hybrid")),
    6: ("no PE", dict(kind="standard", pe="none")),
    7: ("RoPE only (no absolute PE)", dict(kind="standard", pe="none", rope=True)),
}


def ablation_config(variant: int, **sizes) -> ModelConfig:
    """App. D.1.7 variant 1–7 as a ModelConfig (sizes: n, embed, hidden, ... as ModelConfig)."""
    if variant not in ABLATIONS:
        raise ValueError(f"ablation variant {variant}: choose one of {sorted(ABLATIONS)}")
    return ModelConfig(**{**sizes, **ABLATIONS[variant][1]})


def replica_mse(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error of each replica: pred [R, B, n], target [B, n] → [R]."""
    return ((pred - target.unsqueeze(0)) ** 2).mean(dim=(1, 2))


def to_reference(model: Transformer, r: int):
    """Replica r of a positional model as float64 Eq.-(1) weights for `reference.forward`:
    (P, layers, (enc_W, enc_b), (dec_W, dec_b)); the 1/√d_k scale is folded into W_Q. Needs zero
    Q/K/V/O biases (as initialised); raises otherwise."""
    import numpy as np

    from .reference import Layer

    if model.kind != "positional":
        raise ValueError("only positional models have input-free attention to export")
    st = {k: v.detach().cpu().double().numpy() for k, v in model.replica_state(r).items()}
    c = model.configs[r]
    for l in range(c.depth):
        if any(np.abs(st[f"{nm}{l}"]).max() > 0 for nm in ("q_b", "k_b", "v_b", "o_b")):
            raise ValueError("to_reference needs zero Q/K/V/O biases (the reference Eq. 1 has none)")
    layers = []
    for l in range(c.depth):
        W_O = np.concatenate([st[f"o_W{l}"][h] for h in range(c.heads)], axis=0)
        W1 = np.concatenate([st[f"m1a_W{l}"], st[f"m1h_W{l}"]], axis=0)
        layers.append(Layer(st[f"q_W{l}"] / math.sqrt(c.d_k), st[f"k_W{l}"], st[f"v_W{l}"], W_O,
                            ((W1, st[f"m1_b{l}"]), (st[f"m2_W{l}"], st[f"m2_b{l}"]))))
    return (model.P[r] if model.mixed else model.P).detach().cpu().double().numpy(), layers, (st["enc_W"], st["enc_b"]), (st["dec_W"], st["dec_b"])
