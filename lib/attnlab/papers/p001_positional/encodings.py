"""Positional encodings of App. D.1.1 and D.1.6: one-hot, binary, sinusoidal, and RoPE.

Every encoding is a matrix P with one row per node: the n input positions 0 … n − 1 and the
scratchpad node (position n) that App. D.1.1 appends to every list.

  one-hot (D.1.1): P = I_{n+1} (the scratchpad gets its own row, as in the authors' code).
  binary (D.1.6): ⌈log₂ n⌉ columns; row i is the binary code of i (most significant bit first)
    with 0 written as −1. The paper counts only the n inputs; the scratchpad, whose index n may
    not fit in ⌈log₂ n⌉ bits (n = 8), gets the zero row, which no ±1 code equals.
  sinusoidal (D.1.6, Vaswani et al. 2017): ⌈n/2⌉ columns, P[p, 2i] = sin(p / 10000^{2i/d}),
    P[p, 2i + 1] = cos(p / 10000^{2i/d}) for positions p = 0 … n (the scratchpad is position n).
  RoPE (Su et al. 2024; D.1.6, D.1.7): no matrix; the query and key of node p are rotated, pair
    of coordinates (2i, 2i + 1) by the angle p·θ_i, θ_i = base^{−2i/d} (base 10000, interleaved
    pairs, as torchtune's RotaryPositionalEmbeddings that the authors used). Since rotations
    compose, ⟨R_p q, R_s k⟩ = ⟨q, R_{s−p} k⟩ depends on the positions only through s − p.
"""

from __future__ import annotations

import math

import torch

ENCODINGS = ("onehot", "binary", "sinusoidal", "none")
ROPE_BASE = 10000.0


def binary_bits(n: int) -> int:
    """⌈log₂ n⌉, the width of the binary encoding (D.1.6)."""
    if n < 2:
        raise ValueError(f"binary encoding of n = {n} positions: needs n >= 2")
    return math.ceil(math.log2(n))


def width(pe: str, n: int) -> int:
    """Columns of the encoding of n inputs plus the scratchpad."""
    if pe == "onehot":
        return n + 1
    if pe == "binary":
        return binary_bits(n)
    if pe == "sinusoidal":
        return math.ceil(n / 2)
    if pe == "none":
        return 0
    raise ValueError(f"positional encoding {pe!r}: choose one of {ENCODINGS}")


def binary(n: int) -> torch.Tensor:
    """[n + 1, ⌈log₂ n⌉] float64: ±1 bits of the indices 0 … n − 1, MSB first; the scratchpad row is 0."""
    b = binary_bits(n)
    idx = torch.arange(n, dtype=torch.long)
    bits = (idx[:, None] >> torch.arange(b - 1, -1, -1)[None, :]) & 1
    return torch.cat([bits.to(torch.float64) * 2 - 1, torch.zeros(1, b, dtype=torch.float64)])


def sinusoidal(positions: int, dim: int, base: float = 10000.0) -> torch.Tensor:
    """[positions, dim] float64: Vaswani et al.'s encoding of positions 0 … positions − 1."""
    p = torch.arange(positions, dtype=torch.float64)[:, None]
    i = torch.arange(dim, dtype=torch.float64)[None, :]
    angle = p / base ** ((2 * torch.div(i, 2, rounding_mode="floor")) / dim)
    return torch.where(i.long() % 2 == 0, torch.sin(angle), torch.cos(angle))


def matrix(pe: str, n: int) -> torch.Tensor:
    """P for n inputs and the scratchpad: [n + 1, width(pe, n)] float64."""
    if pe == "onehot":
        return torch.eye(n + 1, dtype=torch.float64)
    if pe == "binary":
        return binary(n)
    if pe == "sinusoidal":
        return sinusoidal(n + 1, width(pe, n))
    if pe == "none":
        return torch.zeros(n + 1, 0, dtype=torch.float64)
    raise ValueError(f"positional encoding {pe!r}: choose one of {ENCODINGS}")


def rope_tables(positions: int, dim: int, base: float = ROPE_BASE) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of p·θ_i for p < positions, repeated per pair: two [positions, dim] float64 tables
    (dim even; coordinates 2i and 2i + 1 share the angle p·θ_i, θ_i = base^{−2i/dim})."""
    if dim % 2:
        raise ValueError(f"RoPE rotates pairs of coordinates: dimension {dim} must be even")
    theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    ang = torch.arange(positions, dtype=torch.float64)[:, None] * theta[None, :]
    return torch.repeat_interleave(torch.cos(ang), 2, dim=1), torch.repeat_interleave(torch.sin(ang), 2, dim=1)


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate x [..., positions, dim] by the tables of `rope_tables` (broadcast over leading axes):
    (x_{2i}, x_{2i+1}) ↦ (x_{2i} cos − x_{2i+1} sin, x_{2i} sin + x_{2i+1} cos)."""
    pairs = x.unflatten(-1, (-1, 2))
    swapped = torch.stack([-pairs[..., 1], pairs[..., 0]], dim=-1).flatten(-2)
    return x * cos + swapped * sin
