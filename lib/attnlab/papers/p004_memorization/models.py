"""The attention-only Transformer (AoT) of paper 004, replica-batched.

One layer, H heads of inner dimension d_h, skip connection, no MLP, output at the last
position (Eqs. 1-2):  T(t) = W_U ( x_S + sum_h W_O^h W_V^h A^h(t) ),  x_s = e(t_s) + pos_s,
with A^h the softmax average of the x_s under the query x_S. Each head has its own
W_Q^h, W_K^h, W_V^h in R^{d_h x d} and W_O^h in R^{d x d_h} (the paper's per-head
parametrization). Scores carry a 1/sqrt(d_h) factor, as in the authors' code; the paper
absorbs it in W_QK.

Replicas may differ in d, d_h, H and seed (N and S are the task's, shared); see
`attnlab.core.replica` for the padding and masking.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

from attnlab.core.attention import heads_to_replicas, last_query_attention
from attnlab.core.replica import ReplicaModule, replica_generator


@dataclass(frozen=True)
class AoTConfig:
    """One replica: vocabulary N, context S, embedding d, head dim d_h, heads H, seed."""

    N: int
    S: int
    d: int
    d_h: int
    H: int
    seed: int = 0

    def __post_init__(self):
        for name in ("N", "S", "d", "d_h", "H"):
            if getattr(self, name) < 1:
                raise ValueError(f"AoTConfig.{name}={getattr(self, name)} must be >= 1")

    @property
    def n_parameters(self) -> int:
        """Token and positional embeddings, 4 d d_h per head, unembedding: d(S + 2N + 4 d_h H)."""
        return self.d * (self.S + 2 * self.N + 4 * self.d_h * self.H)


def _uniform(gen: torch.Generator, shape: tuple[int, ...], fan_in: int) -> torch.Tensor:
    bound = 1 / math.sqrt(fan_in)
    return (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound


class ReplicaAoT(ReplicaModule):
    """R one-layer AoTs in one program. forward(tokens [B,S]) -> logits [R,B,N]."""

    def __init__(self, configs: list[AoTConfig], dtype: torch.dtype = torch.float32, device="cpu"):
        super().__init__(len(configs), dtype, device)
        N, S = configs[0].N, configs[0].S
        if any((c.N, c.S) != (N, S) for c in configs):
            raise ValueError(f"all replicas must share the task's N and S; got {[(c.N, c.S) for c in configs]}")
        self.configs = list(configs)
        D = max(c.d for c in configs)
        K = max(c.d_h for c in configs)
        H = max(c.H for c in configs)
        for name, shape in [("E", (N, D)), ("P", (S, D)), ("W_Q", (H, K, D)), ("W_K", (H, K, D)),
                            ("W_V", (H, K, D)), ("W_O", (H, D, K)), ("W_U", (N, D))]:
            self.add(name, shape)
        # Heads of all replicas packed on one axis: row r * H_max + h of the padded weights.
        head_rows = [r * H + h for r, c in enumerate(configs) for h in range(c.H)]
        self.register_buffer("head_rows", torch.tensor(head_rows, device=self.device))
        self.register_buffer("head_replica", torch.tensor([r for r, c in enumerate(configs) for _ in range(c.H)],
                                                          device=self.device))
        self.register_buffer("head_scale", torch.tensor([1 / math.sqrt(c.d_h) for c in configs for _ in range(c.H)],
                                                        dtype=dtype, device=self.device))
        for r, c in enumerate(configs):
            self.init_replica(r, c)

    def init_replica(self, r: int, c: AoTConfig) -> None:
        """Embeddings ~ N(0, 1); linear maps ~ U(+-1/sqrt(fan_in)), drawn from (config, seed) alone."""
        config = {k: v for k, v in asdict(c).items() if k != "seed"}
        gen = replica_generator({"model": "aot", **config}, c.seed)
        self.place("E", r, torch.randn((c.N, c.d), generator=gen, dtype=torch.float64))
        self.place("P", r, torch.randn((c.S, c.d), generator=gen, dtype=torch.float64))
        for name in ("W_Q", "W_K", "W_V"):
            self.place(name, r, _uniform(gen, (c.H, c.d_h, c.d), c.d))
        self.place("W_O", r, _uniform(gen, (c.H, c.d, c.d_h), c.d_h))
        self.place("W_U", r, _uniform(gen, (c.N, c.d), c.d))

    def residual_db(self, tokens: torch.Tensor) -> torch.Tensor:
        """x_S + sum_h W_O^h W_V^h A^h(t), batch axis last: [R,D,B]."""
        x_tab = self.w("P")[:, :, None] + self.w("E")[:, None]  # [R,S,N,D]
        heads = [self.w(n).flatten(0, 1)[self.head_rows] for n in ("W_Q", "W_K", "W_V", "W_O")]
        out = last_query_attention(x_tab[self.head_replica], tokens, *heads, self.head_scale)
        return x_tab[:, -1, tokens[:, -1]].transpose(1, 2) + heads_to_replicas(out, self.head_replica, self.R)

    def residual(self, tokens: torch.Tensor) -> torch.Tensor:
        """The residual stream at the last position, [R,B,D]."""
        return self.residual_db(tokens).transpose(1, 2)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits [R,B,N] (a view of a [R,N,B] tensor: see `replica_cross_entropy`)."""
        return torch.bmm(self.w("W_U"), self.residual_db(tokens)).transpose(1, 2)
