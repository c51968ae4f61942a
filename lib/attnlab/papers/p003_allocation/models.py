"""The trainable model of Fig. 2: a one-layer Transformer encoder, replica-batched.

Per replica (the pre-norm layer of torch's nn.TransformerEncoderLayer(norm_first=True), with a
linear embedding of the d-dimensional input and a linear readout back to R^d):

    h_0 = W_E x_t + b_E + PE_t                           (sinusoidal PE, Vaswani et al.)
    h_1 = h_0 + W_out MHA(LN_1(h_0)) + b_out             (H heads of dimension D / H, causal mask)
    h_2 = h_1 + W_2 ReLU(W_1 LN_2(h_1) + b_1) + b_2
    y_t = W_R h_2 + b_R

Replicas share D and the sequence length (one residual width per program); they may differ in
the head count H, the FFN width and the seed. Heads are a partition of the D query/key/value
coordinates, so replicas with the same H are attended together, one group per distinct H.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

from attnlab.core.replica import ReplicaModule, replica_generator, uniform_init


@dataclass(frozen=True)
class EncoderConfig:
    """Input dimension d, model dimension D, heads H (dividing D), FFN width, seed."""

    d: int
    D: int
    H: int
    ffn: int
    seed: int = 0
    causal: bool = True

    def __post_init__(self):
        if min(self.d, self.D, self.H) < 1 or self.ffn < 0:
            raise ValueError(f"EncoderConfig needs d, D, H >= 1 and ffn >= 0; got {self}")
        if self.D % self.H:
            raise ValueError(f"EncoderConfig: H={self.H} heads must divide D={self.D}")

    @property
    def head_dim(self) -> int:
        return self.D // self.H

    def seed_config(self) -> dict:
        return {"model": "encoder1", **{k: v for k, v in asdict(self).items() if k != "seed"}}


def sinusoidal(L: int, D: int, dtype=torch.float32) -> torch.Tensor:
    """PE[t, 2i] = sin(t / 10000^{2i/D}), PE[t, 2i+1] = cos(...)  ([L, D])."""
    pos = torch.arange(L, dtype=torch.float64).unsqueeze(1)
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, D, 2, dtype=torch.float64) / D)
    pe = torch.zeros(L, D, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)[:, : D // 2]
    return pe.to(dtype)


def _layer_norm(x: torch.Tensor, g: torch.Tensor, b: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm over the last axis with a per-replica gain g and bias b (broadcast against x)."""
    return torch.addcmul(b, F.layer_norm(x, x.shape[-1:], eps=eps), g)


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """softmax(q k^T / sqrt(K) + bias) v for q, k, v [N, L, K] (bias [L, L]: 0 or -inf, or None).

    For the short sequences of these tasks (L <= 64) two batched matmuls and a softmax are several
    times faster on a CPU than scaled_dot_product_attention's blocked kernel, forward and backward.
    Heads of dimension K = 1 (64 heads in D = 64) take no matmul: the scores are the outer product
    q k^T and the output the sum over keys of softmax * v^T (forward and backward 31 against 57 ms
    for 16 replicas of batch 32, L = 16, on an AMD EPYC; the same function, tested in float64)."""
    if q.shape[-1] == 1:
        s = q * k.transpose(1, 2) if bias is None else torch.addcmul(bias, q, k.transpose(1, 2))
        return (torch.softmax(s, dim=-1) * v.transpose(1, 2)).sum(-1, keepdim=True)
    scale = 1.0 / math.sqrt(q.shape[-1])
    if bias is None:
        s = torch.bmm(q, k.transpose(1, 2)) * scale
    else:
        s = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=scale)
    return torch.bmm(torch.softmax(s, dim=-1), v)


# activations (of width D) per piece of the forward: measured on the bench's 64-encoder sweep
# (B L = 512, D = 64), pieces of 4 replicas take 15-18% less CPU time than one piece of 64
PIECE = 1 << 17


class ReplicaEncoder(ReplicaModule):
    """R one-layer encoders. forward(x [R, B, L, d]) -> [R, B, L, d]."""

    def __init__(self, configs: list[EncoderConfig], L: int, dtype=torch.float32, device="cpu"):
        super().__init__(len(configs), dtype, device)
        shared = {(c.d, c.D, c.causal) for c in configs}
        if len(shared) != 1:
            raise ValueError(f"replicas of one program must share d, D and causal; got {sorted(shared)}")
        self.configs = list(configs)
        d, D, self.causal = next(iter(shared))
        F = max(1, max(c.ffn for c in configs))
        for name, shape in [("W_E", (D, d)), ("b_E", (D,)), ("ln1_g", (D,)), ("ln1_b", (D,)), ("W_in", (3 * D, D)),
                            ("b_in", (3 * D,)), ("W_out", (D, D)), ("b_out", (D,)), ("ln2_g", (D,)), ("ln2_b", (D,)),
                            ("W_1", (F, D)), ("b_1", (F,)), ("W_2", (D, F)), ("b_2", (D,)), ("W_R", (d, D)), ("b_R", (d,))]:
            self.add(name, shape)
        self.register_buffer("pe", sinusoidal(L, D, dtype).to(self.device))
        # the replicas of each head count: index buffers, so that .to(device) moves them with the model
        self._heads = sorted({c.H for c in configs})
        for g, H in enumerate(self._heads):
            self.register_buffer(f"group{g}", torch.tensor([r for r, c in enumerate(configs) if c.H == H],
                                                            device=self.device), persistent=False)
        order = torch.cat([idx for _, idx in self.groups])
        self.register_buffer("unpermute", torch.argsort(order))
        # replicas sorted by H (a sweep's usual order): each group is a contiguous slice, no gathers
        self._sorted = bool((order == torch.arange(self.R, device=self.device)).all())
        self._spans = [(int(idx[0]), len(idx)) for _, idx in self.groups]
        self.register_buffer("causal_bias", torch.full((L, L), float("-inf"), dtype=dtype).triu(1).to(self.device),
                             persistent=False)  # derived from L: not part of the state
        for r, c in enumerate(configs):
            self.init_replica(r, c)
        # parameters whose mask is all ones (no replica padded) are read without the mask product
        self._full = {name: bool(getattr(self, name + "_mask").all()) for name in self._names}

    @property
    def groups(self) -> list[tuple[int, torch.Tensor]]:
        """(H, the indices of the replicas with H heads) for each distinct H, ascending."""
        return [(H, getattr(self, f"group{g}")) for g, H in enumerate(self._heads)]

    def _w(self, name: str) -> torch.Tensor:
        """`w(name)`, skipping the product with an all-ones mask (the same values and gradients)."""
        return getattr(self, name) if self._full[name] else self.w(name)

    def init_replica(self, r: int, c: EncoderConfig) -> None:
        """torch's defaults, drawn from (config, seed) alone: Linear weights and biases
        U(+-1/sqrt(fan_in)); the attention in-projection Xavier-uniform with zero biases; LN 1, 0."""
        gen = replica_generator(c.seed_config(), c.seed)
        d, D, F = c.d, c.D, c.ffn
        self.place("W_E", r, uniform_init(gen, (D, d), d))
        self.place("b_E", r, uniform_init(gen, (D,), d))
        bound = math.sqrt(6.0 / (D + 3 * D))
        self.place("W_in", r, (torch.rand((3 * D, D), generator=gen, dtype=torch.float64) * 2 - 1) * bound)
        self.place("b_in", r, torch.zeros(3 * D, dtype=torch.float64))
        self.place("W_out", r, uniform_init(gen, (D, D), D))
        self.place("b_out", r, torch.zeros(D, dtype=torch.float64))
        for n in ("ln1", "ln2"):
            self.place(n + "_g", r, torch.ones(D, dtype=torch.float64))
            self.place(n + "_b", r, torch.zeros(D, dtype=torch.float64))
        if F:
            self.place("W_1", r, uniform_init(gen, (F, D), D))
            self.place("b_1", r, uniform_init(gen, (F,), D))
            self.place("W_2", r, uniform_init(gen, (D, F), F))
        self.place("b_2", r, uniform_init(gen, (D,), max(F, 1)) if F else torch.zeros(D, dtype=torch.float64))
        self.place("W_R", r, uniform_init(gen, (d, D), D))
        self.place("b_R", r, uniform_init(gen, (d,), D))

    @staticmethod
    def _lin(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """x [R, B, L, i] @ W[r]^T + b[r] -> [R, B, L, o]."""
        R, B, L, i = x.shape
        return torch.baddbmm(b.unsqueeze(1), x.reshape(R, B * L, i), W.transpose(1, 2)).view(R, B, L, -1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [R, B, L, d] -> [R, B, L, d]. Computed piece by piece: each piece is replicas of one head
        count (a slice when replicas are sorted by H, else gathered), at most about 2^19 activations
        of width D each, so that one piece's activations stay in cache from one operation to the
        next, forward and backward (autograd runs the pieces' backward graphs one after another)."""
        R, B, L, _ = x.shape
        per = max(1, PIECE // (B * L * self.pe.shape[1]))
        outs = []
        for (H, idx), (r0, n) in zip(self.groups, self._spans):
            for a in range(0, n, per):
                m = min(per, n - a)
                if self._sorted:
                    take = (lambda t, r=r0 + a, m=m: t.narrow(0, r, m))
                else:
                    sub = idx[a:a + m]
                    take = (lambda t, sub=sub: t.index_select(0, sub))
                outs.append(self._piece(take(x), lambda name, take=take: take(self._w(name)), H))
        o = outs[0] if len(outs) == 1 else torch.cat(outs, 0)
        return o if self._sorted else o.index_select(0, self.unpermute)

    def _piece(self, x: torch.Tensor, w, H: int) -> torch.Tensor:
        """The layer on replicas that share the head count H; w(name) gives their parameters."""
        R, B, L, _ = x.shape
        h = self._lin(x, w("W_E"), w("b_E")) + self.pe[:L]
        a = _layer_norm(h, w("ln1_g").view(R, 1, 1, -1), w("ln1_b").view(R, 1, 1, -1))
        q, k, v = self._lin(a, w("W_in"), w("b_in")).chunk(3, dim=-1)
        D = q.shape[-1]
        K = D // H

        def split(t):
            return t.reshape(R * B, L, H, K).transpose(1, 2).reshape(R * B * H, L, K)
        o = _attend(split(q), split(k), split(v), self.causal_bias[:L, :L] if self.causal else None)
        o = o.view(R * B, H, L, K).transpose(1, 2).reshape(R, B, L, D)
        h = h + self._lin(o, w("W_out"), w("b_out"))
        f = _layer_norm(h, w("ln2_g").view(R, 1, 1, -1), w("ln2_b").view(R, 1, 1, -1))
        h = h + self._lin(torch.relu(self._lin(f, w("W_1"), w("b_1"))), w("W_2"), w("b_2"))
        return self._lin(h, w("W_R"), w("b_R"))
