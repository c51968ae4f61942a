"""Deeper Transformers of paper 004, App. B.2 (Figs. 8-10), replica-batched.

L layers on a residual stream over all S positions, x_s^(0) = e(t_s) + pos_s. Layer l:

    x <- x + sum_h W_O^{l,h} W_V^{l,h} sum_{s' <= s} softmax_{s'}((W_Q^{l,h} x_s)^T (W_K^{l,h} x_s') / sqrt(d_h)) x_s'
    x <- x + W_2^l GELU(W_1^l x + b_1^l)           (only when the MLP width w > 0)

with causal self-attention at every position, H heads per layer of inner dimension d_h <= d
(each head its own W_Q, W_K, W_V in R^{d_h x d} and W_O in R^{d x d_h}, Eq. 1), and the output
read at the last position: T(t) = W_U x_S^(L). With L = 1 and w = 0 this is the one-layer AoT
of `models.py` (Eq. 2); with H = 1 and w > 0 it is the "1 head + MLP" Transformer of Exp. 5
(W_1 with a bias, W_2 without, as in the authors' code). No layer norm, no other biases.

Replicas may differ in d, d_h, H, w and seed (N, S and L are shared); padded entries are masked
(see `attnlab.core.replica`). Unlike the one-layer model, every position's residual stream is a
function of the whole prefix, so there are no token tables to exploit. The layer is computed per
replica with its heads padded to the largest H and folded into W_QK^h = W_Q^hT W_K^h and
W_OV^h = W_O^h W_V^h (d x d): then all heads of a replica share one matrix product with the residual
stream ([H d x d] @ [d, S B]), and the sum over heads is the inner dimension of a second one
([d x H d] @ [H d, S B]). Packing heads on one axis (core.attention.causal_attention) would gather
the stream once per head and sum heads back with a 0/1 product as costly as the heads themselves;
the test checks this layer against causal_attention head by head. Padded heads have W_QK = W_OV = 0:
they attend uniformly and add exactly zero.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

from attnlab.core.replica import replica_generator, ReplicaModule, uniform_init


@dataclass(frozen=True)
class DeepConfig:
    """One replica: vocabulary N, context S, layers L, embedding d, head dim d_h, heads per layer H,
    MLP width w per layer (0 = attention only), seed."""

    N: int
    S: int
    L: int
    d: int
    d_h: int
    H: int
    w: int = 0
    seed: int = 0

    def __post_init__(self):
        for name in ("N", "S", "L", "d", "d_h", "H"):
            if getattr(self, name) < 1:
                raise ValueError(f"DeepConfig.{name}={getattr(self, name)} must be >= 1")
        if self.w < 0:
            raise ValueError(f"DeepConfig.w={self.w} must be >= 0")
        if self.d_h > self.d:
            raise ValueError(f"DeepConfig.d_h={self.d_h} must be <= d={self.d} (paper 004, footnote 1)")

    @property
    def n_parameters(self) -> int:
        """Embeddings and unembedding d(S + 2N), per layer 4 d d_h H for the heads and 2 d w + w for the MLP."""
        return self.d * (self.S + 2 * self.N) + self.L * (4 * self.d * self.d_h * self.H + 2 * self.d * self.w + self.w)


class ReplicaDeep(ReplicaModule):
    """R L-layer Transformers in one program. forward(tokens [B,S]) -> logits [R,B,N]."""

    def __init__(self, configs: list[DeepConfig], dtype: torch.dtype = torch.float32, device="cpu"):
        super().__init__(len(configs), dtype, device)
        N, S, L = configs[0].N, configs[0].S, configs[0].L
        if any((c.N, c.S, c.L) != (N, S, L) for c in configs):
            raise ValueError(f"all replicas must share N, S and L; got {[(c.N, c.S, c.L) for c in configs]}")
        self.configs, self.L = list(configs), L
        D, K = max(c.d for c in configs), max(c.d_h for c in configs)
        H, W = max(c.H for c in configs), max(c.w for c in configs)
        for name, shape in [("E", (N, D)), ("P", (S, D)), ("W_Q", (L, H, K, D)), ("W_K", (L, H, K, D)),
                            ("W_V", (L, H, K, D)), ("W_O", (L, H, D, K)), ("W_U", (N, D))]:
            self.add(name, shape)
        # MLP parameters exist only when some replica has an MLP (unused ones would get no gradient), and
        # the MLP runs only on those replicas: their rows of the [R,...] parameters are gathered.
        self.has_mlp = W > 0
        if self.has_mlp:
            for name, shape in [("W_1", (L, W, D)), ("b_1", (L, W)), ("W_2", (L, D, W))]:
                self.add(name, shape)
        self.register_buffer("mlp_replica", torch.tensor([r for r, c in enumerate(configs) if c.w > 0],
                                                         dtype=torch.long, device=self.device))
        self.register_buffer("scale", torch.tensor([1 / math.sqrt(c.d_h) for c in configs], dtype=dtype,
                                                   device=self.device))
        for r, c in enumerate(configs):
            self.init_replica(r, c)

    def init_replica(self, r: int, c: DeepConfig) -> None:
        """Embeddings ~ N(0, 1); linear maps and b_1 ~ U(+-1/sqrt(fan_in)) (torch's Linear default),
        drawn from (config, seed) alone."""
        config = {k: v for k, v in asdict(c).items() if k != "seed"}
        gen = replica_generator({"model": "deep", **config}, c.seed)
        self.place("E", r, torch.randn((c.N, c.d), generator=gen, dtype=torch.float64))
        self.place("P", r, torch.randn((c.S, c.d), generator=gen, dtype=torch.float64))
        for name in ("W_Q", "W_K", "W_V"):
            self.place(name, r, uniform_init(gen, (c.L, c.H, c.d_h, c.d), c.d))
        self.place("W_O", r, uniform_init(gen, (c.L, c.H, c.d, c.d_h), c.d_h))
        if c.w > 0:
            self.place("W_1", r, uniform_init(gen, (c.L, c.w, c.d), c.d))
            self.place("b_1", r, uniform_init(gen, (c.L, c.w), c.d))
            self.place("W_2", r, uniform_init(gen, (c.L, c.d, c.w), c.w))
        self.place("W_U", r, uniform_init(gen, (c.N, c.d), c.d))

    def shapes(self, c: DeepConfig) -> dict[str, tuple[int, ...]]:
        """Replica c's unpadded parameter shapes (no MLP entries when w = 0)."""
        out = {"E": (c.N, c.d), "P": (c.S, c.d), "W_Q": (c.L, c.H, c.d_h, c.d), "W_K": (c.L, c.H, c.d_h, c.d),
               "W_V": (c.L, c.H, c.d_h, c.d), "W_O": (c.L, c.H, c.d, c.d_h)}
        if c.w > 0:
            out.update(W_1=(c.L, c.w, c.d), b_1=(c.L, c.w), W_2=(c.L, c.d, c.w))
        return {**out, "W_U": (c.N, c.d)}

    def replica_state(self, r: int) -> dict[str, torch.Tensor]:
        """Replica r's parameters with padding removed (by its config's shapes: the base class reads
        extents from the masks, which fails on a zero-width MLP)."""
        return {name: getattr(self, name)[r][tuple(slice(0, n) for n in shape)].detach().clone()
                for name, shape in self.shapes(self.configs[r]).items()}

    def residual_db(self, tokens: torch.Tensor) -> torch.Tensor:
        """The residual stream after the last layer, batch axis last: [R,D,S,B]. In the last layer only
        the last position is needed, and only it is computed there ([R,D,1,B])."""
        S, B = tokens.shape[1], tokens.shape[0]
        x = (self.w("E")[:, tokens.T] + self.w("P")[:, :, None]).permute(0, 3, 1, 2)  # [R,D,S,B]
        W_Q, W_K, W_V, W_O = (self.w(n) for n in ("W_Q", "W_K", "W_V", "W_O"))
        QK = torch.einsum("rlhkd,rlhke->rlhde", W_Q, W_K) * self.scale.view(-1, 1, 1, 1, 1)  # [R,L,H,D,D]
        OV = W_O @ W_V  # [R,L,H,D,D]
        if self.has_mlp:
            W_1, b_1, W_2 = (self.w(n)[self.mlp_replica] for n in ("W_1", "b_1", "W_2"))
        for l in range(self.L):
            first = S - 1 if l == self.L - 1 else 0
            x = x[:, :, first:] + folded_causal_attention(x, QK[:, l], OV[:, l], first)
            if self.has_mlp:
                R_m, (_, D, S_, _) = len(self.mlp_replica), x.shape
                flat = x[self.mlp_replica].reshape(R_m, D, S_ * B)
                hidden = F.gelu(torch.baddbmm(b_1[:, l, :, None], W_1[:, l], flat))  # [R_mlp,W,S'B]
                x = x.index_add(0, self.mlp_replica, torch.bmm(W_2[:, l], hidden).view(R_m, D, S_, B))
        return x

    def residual(self, tokens: torch.Tensor) -> torch.Tensor:
        """The residual stream at the last position after the last layer, [R,B,D]."""
        return self.residual_db(tokens)[:, :, -1].transpose(1, 2)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits at the last position [R,B,N] (a view of a [R,N,B] tensor: see `replica_cross_entropy`)."""
        return torch.bmm(self.w("W_U"), self.residual_db(tokens)[:, :, -1]).transpose(1, 2)


def folded_causal_attention(x: torch.Tensor, QK: torch.Tensor, OV: torch.Tensor, first: int = 0) -> torch.Tensor:
    """Sum over heads of causal self-attention, batch axis last, heads folded (see the module docstring).

    out_t = sum_h OV^h sum_{s<=t} softmax_s(x_t^T QK^h x_s) x_s for the query positions t = first..S-1.
    x: [R,D,S,B]; QK, OV: [R,H,D,D] (QK carries the 1/sqrt(d_h) scale). Returns [R,D,S-first,B].
    Every elementwise op runs over the long contiguous batch axis (CPU kernels do not vectorize over
    S = 2 or D = 6), and the causal mask is a loop over query positions: no masked score is formed.
    """
    R, D, S, B = x.shape
    H = QK.shape[1]
    # z^h_t = QK^hT x_t for every head at once: [R, H*D, D] @ [R, D, S'B].
    z = torch.bmm(QK.transpose(2, 3).reshape(R, H * D, D), x[:, :, first:].reshape(R, D, -1))
    z = z.view(R, H, D, S - first, B)
    averages = []
    for t in range(first, S):
        if t == 0:  # the first position attends to itself only
            averages.append(x[:, None, :, 0].expand(R, H, D, B))
            continue
        if t == 1:  # two keys: the softmax is a sigmoid of the score difference (half the full-size ops)
            diff = (x[:, :, 1] - x[:, :, 0]).unsqueeze(1)  # [R,1,D,B]
            a1 = torch.sigmoid((z[:, :, :, 1 - first] * diff).sum(2, keepdim=True))  # [R,H,1,B]
            averages.append(x[:, None, :, 0] + a1 * diff)
            continue
        keys = x[:, None, :, :t + 1]  # [R,1,D,t+1,B]
        a = torch.softmax((z[:, :, :, t - first, None] * keys).sum(2), dim=2)  # [R,H,t+1,B]
        averages.append((a.unsqueeze(2) * keys).sum(3))  # [R,H,D,B]
    A = torch.stack(averages, dim=3).reshape(R, H * D, -1)  # [R, H*D, S'B]
    # sum_h OV^h A^h: the head sum is the inner dimension of one product.
    return torch.bmm(OV.permute(0, 2, 1, 3).reshape(R, D, H * D), A).view(R, D, S - first, B)
