"""The attention-only Transformer (AoT) of paper 004, replica-batched, and its two variants.

One layer, H heads of inner dimension d_h, skip connection, no MLP, output at the last
position (Eqs. 1-2):  T(t) = W_U ( x_S + sum_h W_O^h W_V^h A^h(t) ),  x_s = e(t_s) + pos_s,
with A^h the softmax average of the x_s under the query x_S. Each head has its own
W_Q^h, W_K^h, W_V^h in R^{d_h x d} and W_O^h in R^{d x d_h} (the paper's per-head
parametrization, `param="paper"`). Scores carry a 1/sqrt(d_h) factor, as in the authors'
code; the paper absorbs it in W_QK.

Variants (fields of `AoTConfig`, defaults = the model above):

* `param="repo"`: the authors' released parametrization (their `models.py`; not in the paper). One shared
  "compress" map C: R^d -> R^{d_h}, a positional embedding of dimension d_h added after it,
  H single-head attentions inside R^{d_h} (W_Q, W_K, W_V, W_O in R^{d_h x d_h}, scale
  1/sqrt(d_h)), their outputs summed, one shared "decompress" map D: R^{d_h} -> R^d; the
  skip stream carries e(t_S) only:
      y_s = C e(t_s) + p_s,   T(t) = W_U ( e(t_S) + D sum_h W_O^h W_V^h sum_s a^h_s y_s ).
  When d = d_h there is no C and no D (identities). In the packed-head form this is Eq. (1)
  with the token table y in place of x and every head's output taken in R^{d_h}; D is applied
  once to the sum. All heads' outputs lie in the d_h-dimensional range of D: the difference
  from Eq. (1) that the Fig. 1b / 2a chapters measure (erratum 12 on the errata page).
* `mlp_width=w > 0`: Exp. 5's MLP-based Transformer (section 5.2),
      T(t) = W_U (W_2 GELU(W_1 z + b_1) + z),   z = attention + skip,
  W_1 with a bias, W_2 without (as in the authors' code); Exp. 5 uses one head with d_h = d.

Replicas may differ in d, d_h, H, mlp_width and seed (N and S are the task's, shared; `param`
is shared within one program); see `attnlab.core.replica` for the padding and masking.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

from attnlab.core.replica import replica_generator, ReplicaModule, uniform_init
from .heads import PackedHeads

PARAMS = ("paper", "repo")
MASKED = ("C", "Dec")  # parameters the forward reads masked (ReplicaAoT.w)


@dataclass(frozen=True)
class AoTConfig:
    """One replica: vocabulary N, context S, embedding d, head dim d_h, heads H, seed;
    param ("paper" | "repo", module docstring) and mlp_width (0 = attention only)."""

    N: int
    S: int
    d: int
    d_h: int
    H: int
    seed: int = 0
    param: str = "paper"
    mlp_width: int = 0

    def __post_init__(self):
        for name in ("N", "S", "d", "d_h", "H"):
            if getattr(self, name) < 1:
                raise ValueError(f"AoTConfig.{name}={getattr(self, name)} must be >= 1")
        if self.param not in PARAMS:
            raise ValueError(f"AoTConfig.param={self.param!r} must be one of {PARAMS}")
        if self.mlp_width < 0:
            raise ValueError(f"AoTConfig.mlp_width={self.mlp_width} must be >= 0")

    @property
    def compressed(self) -> bool:
        """The repo parametrization has compress/decompress maps unless d = d_h."""
        return self.param == "repo" and self.d != self.d_h

    @property
    def n_parameters(self) -> int:
        """Number of trained scalars (the tensors of `ReplicaAoT.replica_state`).

        paper: d(S + 2N + 4 d_h H), the count of Theorem 1;
        repo:  2Nd + S d_h + 4 d_h^2 H (+ 2 d d_h for compress/decompress when d != d_h);
        MLP:   + 2 d w + w (W_1, b_1, W_2).
        """
        if self.param == "paper":
            n = self.d * (self.S + 2 * self.N + 4 * self.d_h * self.H)
        else:
            n = 2 * self.N * self.d + self.S * self.d_h + 4 * self.d_h ** 2 * self.H
            n += 2 * self.d * self.d_h if self.compressed else 0
        return n + 2 * self.d * self.mlp_width + self.mlp_width

    def seed_config(self) -> dict:
        """What the replica's generator is seeded by (besides the seed): the config, with the
        variant fields left out at their defaults so that plain AoTs keep their draws."""
        c = {k: v for k, v in asdict(self).items() if k != "seed"}
        if c["param"] == "paper":
            del c["param"]
        if c["mlp_width"] == 0:
            del c["mlp_width"]
        return c


def distinct_sequences(tokens: torch.Tensor, N: int, most: float = 0.75):
    """The distinct rows of tokens [B,S] (values < N) and each row's index among them, ([U,S], [B]),
    or None when U > most * B (or N^S does not fit an int64 code): rows are coded t_0 N^{S-1} + ... + t_{S-1}."""
    B, S = tokens.shape
    if N ** S >= 2 ** 62:
        return None
    code = tokens[:, 0].clone()
    for s in range(1, S):
        code = code * N + tokens[:, s]
    codes, inverse = torch.unique(code, sorted=True, return_inverse=True)
    if codes.numel() > most * B:
        return None
    seqs = torch.stack([codes // N ** (S - 1 - s) % N for s in range(S)], dim=1)
    return seqs, inverse


def fig3_parameter_axis(d: int, H: int, N: int) -> int:
    """The x-axis of Fig. 3 (Exp. 5): 4 d^2 H + d(2N + 1), used for both the H-head AoT and the
    1-head + MLP model of width w = 2d(H - 1) (the authors' `EXP_5.py` plots both against this axis; §5.2
    compares them "with equal number of parameters"). It counts the weight matrices
    (4 d^2 per head, 2 d w = 4 d^2 (H - 1) for the MLP, 2Nd for embedding and unembedding)
    plus d; the exact counts (`AoTConfig.n_parameters`) add S d positional entries and, for
    the MLP, its w biases."""
    return 4 * d * d * H + d * (2 * N + 1)


def fig7_parameter_axis(d: int, H: int, N: int) -> int:
    """The x-axis of Fig. 7 (App. B.1): 4 d^2 H + 2d(N + 1), d more than Fig. 3's (the authors' `EXP_dim.py`)."""
    return 4 * d * d * H + 2 * d * (N + 1)


def matched_mlp_width(d: int, H: int) -> int:
    """Width of the 1-head MLP model with the weight count of an H-head AoT: w = 2d(H - 1)."""
    return 2 * d * (H - 1)


class ReplicaAoT(ReplicaModule):
    """R one-layer AoTs in one program. forward(tokens [B,S]) -> logits [R,B,N]."""

    def __init__(self, configs: list[AoTConfig], dtype: torch.dtype = torch.float32, device="cpu"):
        super().__init__(len(configs), dtype, device)
        N, S = configs[0].N, configs[0].S
        if any((c.N, c.S) != (N, S) for c in configs):
            raise ValueError(f"all replicas must share the task's N and S; got {[(c.N, c.S) for c in configs]}")
        params = sorted({c.param for c in configs})
        if len(params) != 1:
            raise ValueError(f"all replicas of one program must share `param`; got {params}")
        self.param = params[0]
        self.configs = list(configs)
        D = max(c.d for c in configs)
        K = max(c.d_h for c in configs)
        H = max(c.H for c in configs)
        W = max(c.mlp_width for c in configs)
        if self.param == "paper":
            shapes = [("E", (N, D)), ("P", (S, D)), ("W_Q", (H, K, D)), ("W_K", (H, K, D)),
                      ("W_V", (H, K, D)), ("W_O", (H, D, K)), ("W_U", (N, D))]
        else:
            shapes = [("E", (N, D)), ("P", (S, K)), ("C", (K, D)), ("Dec", (D, K)), ("W_Q", (H, K, K)),
                      ("W_K", (H, K, K)), ("W_V", (H, K, K)), ("W_O", (H, K, K)), ("W_U", (N, D))]
            # d = d_h replicas: C and Dec are fixed identities (a buffer, not trained).
            eye = torch.zeros(self.R, K, D, dtype=dtype, device=self.device)
            for r, c in enumerate(configs):
                if not c.compressed:
                    eye[r, :c.d, :c.d] = torch.eye(c.d, dtype=dtype)
            self.register_buffer("C_fixed", eye)
            self.register_buffer("Dec_fixed", eye.transpose(1, 2).contiguous())
        if W > 0:
            shapes += [("W_1", (W, D)), ("b_1", (W,)), ("W_2", (D, W))]
        for name, shape in shapes:
            self.add(name, shape)
        self.has_mlp = W > 0
        # Heads of all replicas on exactly packed rows (heads.py); index maps, not state.
        E_heads = D if self.param == "paper" else K  # the space the heads read and write
        self.packed = PackedHeads([(c.H, c.d_h, c.d if self.param == "paper" else c.d_h) for c in configs],
                                  H, K, E_heads, dtype, self.device)
        for r, c in enumerate(configs):
            self.init_replica(r, c)

    def init_replica(self, r: int, c: AoTConfig) -> None:
        """Drawn from (config, seed) alone. paper: embeddings ~ N(0, 1), linear maps ~ U(+-1/sqrt(fan_in)).

        repo: torch's default inits of the authors' modules: the embeddings are weights of
        bias-free Linear layers, E ~ U(+-1/sqrt(d)) and P ~ U(+-1/sqrt(d_h)); C, D, W_O, W_U,
        ~ U(+-1/sqrt(fan_in)); W_Q, W_K, W_V ~ U(+-sqrt(6 / (4 d_h))), the Xavier-uniform init
        of the stacked in-projection of torch's MultiheadAttention."""
        gen = replica_generator({"model": "aot", **c.seed_config()}, c.seed)
        if c.param == "paper":
            self.place("E", r, torch.randn((c.N, c.d), generator=gen, dtype=torch.float64))
            self.place("P", r, torch.randn((c.S, c.d), generator=gen, dtype=torch.float64))
            for name in ("W_Q", "W_K", "W_V"):
                self.place(name, r, uniform_init(gen, (c.H, c.d_h, c.d), c.d))
            self.place("W_O", r, uniform_init(gen, (c.H, c.d, c.d_h), c.d_h))
        else:
            self.place("E", r, uniform_init(gen, (c.N, c.d), c.d))
            self.place("P", r, uniform_init(gen, (c.S, c.d_h), c.d_h))
            if c.compressed:
                self.place("C", r, uniform_init(gen, (c.d_h, c.d), c.d))
                self.place("Dec", r, uniform_init(gen, (c.d, c.d_h), c.d_h))
            for name in ("W_Q", "W_K", "W_V"):
                self.place(name, r, uniform_init(gen, (c.H, c.d_h, c.d_h), 4 * c.d_h / 6))
            self.place("W_O", r, uniform_init(gen, (c.H, c.d_h, c.d_h), c.d_h))
        self.place("W_U", r, uniform_init(gen, (c.N, c.d), c.d))
        if c.mlp_width:
            self.place("W_1", r, uniform_init(gen, (c.mlp_width, c.d), c.d))
            self.place("b_1", r, uniform_init(gen, (c.mlp_width,), c.d))
            self.place("W_2", r, uniform_init(gen, (c.d, c.mlp_width), c.mlp_width))

    def w(self, name: str) -> torch.Tensor:
        """Parameter `name` as the forward reads it: the parameter itself, except C and Dec (masked, `ReplicaModule.w`).

        Multiplying by the 0/1 mask changes nothing here, so it is skipped: the padded entries are zero
        at initialisation (`add`, `place`) and their gradient is exactly zero, since each of them meets
        only zero weights, zero inputs (padded dimensions of x and of the residual) or table rows that no
        packed head reads, so Adam leaves them zero (m = v = 0, step 0) and training is bit for bit the
        masked model's (models_test.py). C and Dec stay masked: a d = d_h replica trains none of their
        entries (fixed identities stand in) although its gradient there is not zero."""
        return super().w(name) if name in MASKED else getattr(self, name)

    def _heads(self, x_tab: torch.Tensor, tokens: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        """skip [R*E,B] + the sum over each replica's heads of W_O^h W_V^h A^h over the token table
        x_tab [R,S,N,E] (E = D for paper, K for repo): [R,E,B]. See `heads.last_query_heads`."""
        return self.packed(x_tab, tokens, skip, *(self.w(n) for n in ("W_Q", "W_K", "W_V", "W_O")))

    @staticmethod
    def _rows_at(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """table [R,N,E] read at tokens index [B], as [R*E,B] (a gather along the last axis of a 2-D tensor)."""
        R, N, E = table.shape
        return table.transpose(1, 2).reshape(R * E, N).index_select(1, index)

    def residual_db(self, tokens: torch.Tensor) -> torch.Tensor:
        """The residual stream after attention (before any MLP), batch axis last: [R,D,B].

        paper: x_S + sum_h W_O^h W_V^h A^h(t); repo: e(t_S) + D sum_h W_O^h W_V^h A^h(y).
        It is a function of the sequence alone: when the batch holds at most 3/4 B distinct
        sequences (e.g. N^S < B), it is computed once per distinct sequence and read per row."""
        distinct = distinct_sequences(tokens, self.configs[0].N)
        if distinct is None:
            return self._residual_db(tokens)
        seqs, inverse = distinct
        z = self._residual_db(seqs)  # [R,D,U]
        R, D, U = z.shape
        return z.reshape(R * D, U).index_select(1, inverse).view(R, D, -1)

    def _residual_db(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.param == "paper":
            x_tab = self.w("P")[:, :, None] + self.w("E")[:, None]  # [R,S,N,D]
            return self._heads(x_tab, tokens, self._rows_at(x_tab[:, -1], tokens[:, -1]))
        C = self.w("C") + self.C_fixed  # [R,K,D]
        Dec = self.w("Dec") + self.Dec_fixed  # [R,D,K]
        E = self.w("E")
        y_tab = self.w("P")[:, :, None] + torch.bmm(E, C.transpose(1, 2))[:, None]  # [R,S,N,K]
        R, K = y_tab.shape[0], y_tab.shape[-1]
        heads = self._heads(y_tab, tokens, y_tab.new_zeros(R * K, tokens.shape[0]))
        return self._rows_at(E, tokens[:, -1]).view(R, -1, tokens.shape[0]) + torch.bmm(Dec, heads)

    def stream_db(self, tokens: torch.Tensor) -> torch.Tensor:
        """What the unembedding reads, [R,D,B]: the residual, then z + W_2 GELU(W_1 z + b_1) if an MLP."""
        z = self.residual_db(tokens)
        if not self.has_mlp:
            return z
        hidden = F.gelu(torch.bmm(self.w("W_1"), z) + self.w("b_1")[:, :, None])  # padded units: GELU(0) = 0
        return z + torch.bmm(self.w("W_2"), hidden)

    def residual(self, tokens: torch.Tensor) -> torch.Tensor:
        """The residual stream at the last position after attention, [R,B,D]."""
        return self.residual_db(tokens).transpose(1, 2)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits [R,B,N] (a view of a [R,N,B] tensor: see `replica_cross_entropy`)."""
        return torch.bmm(self.w("W_U"), self.stream_db(tokens)).transpose(1, 2)
