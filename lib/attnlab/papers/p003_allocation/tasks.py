"""Tasks of paper 003: linear convolution targets on white-noise inputs (§4, §6.1).

    y_t = sum_{i >= 0} rho_i x_{t-i} + noise,   x_t ~ N(0, I_d) i.i.d., x_t = 0 for t < 0,

with scalar kernels rho_i I_d. The 4-gram task of Eq. (3) is rho = (0, 1, 1, 1, 1). Batches are
drawn from a generator seeded by (task config, seed) only.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterator, Sequence

import torch

from attnlab.core.replica import replica_generator

NGRAM4 = (0.0, 1.0, 1.0, 1.0, 1.0)  # Eq. (3): y_t = x_{t-1} + x_{t-2} + x_{t-3} + x_{t-4}


@dataclass(frozen=True)
class ConvTask:
    """Token dimension d, sequence length L, kernel rho (rho[i] multiplies x_{t-i}), noise std."""

    d: int
    L: int
    rho: tuple[float, ...] = NGRAM4
    noise: float = 0.01

    def __post_init__(self):
        if self.d < 1 or self.L < 1 or not self.rho:
            raise ValueError(f"ConvTask needs d >= 1, L >= 1 and a kernel; got {self}")

    @property
    def target_variance(self) -> float:
        """Per-coordinate variance of the noiseless target far from the start: sum rho_i^2."""
        return float(sum(r * r for r in self.rho))

    def key(self) -> dict:
        return {"task": "conv", **asdict(self), "rho": list(self.rho)}


def convolve(x: torch.Tensor, rho: Sequence[float]) -> torch.Tensor:
    """y_t = sum_i rho_i x_{t-i} along axis -2 of x [..., L, d], with zero padding."""
    L = x.shape[-2]
    y = torch.zeros_like(x)
    for i, r in enumerate(rho):
        if r != 0 and i < L:
            y[..., i:, :] += r * x[..., : L - i, :]
    return y


def sample(task: ConvTask, batch: int, gen: torch.Generator, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch: x [batch, L, d] white noise, y the noisy target."""
    x = torch.randn((batch, task.L, task.d), generator=gen, dtype=torch.float64)
    y = convolve(x, task.rho) + task.noise * torch.randn((batch, task.L, task.d), generator=gen, dtype=torch.float64)
    return x.to(dtype), y.to(dtype)


def batches(task: ConvTask, batch: int, seed: int, dtype=torch.float32) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """The endless training stream of (task, seed)."""
    gen = replica_generator(task.key(), seed)
    while True:
        yield sample(task, batch, gen, dtype)


def eval_set(task: ConvTask, n: int, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """A fixed evaluation set of n sequences (its own stream, shared by every replica)."""
    return sample(task, n, replica_generator({**task.key(), "split": "eval"}, 0), dtype)


# --- memory kernels for the Fig. 8 approximation (Jiang et al. 2025 define their own) ----------

def kernel(family: str, alpha: float, lags: int) -> tuple[float, ...]:
    """rho_1..rho_lags (rho_0 = 0) of a memory family, normalised to sum |rho_i| = 1:
    'exp': e^{-i/alpha}; 'poly': (1 + i)^{-alpha}; 'delta': 1{i = round(alpha)};
    'airy': an Airy-shaped oscillation Ai(-(i - 1)/alpha) (our stand-in)."""
    vals = []
    for i in range(1, lags + 1):
        if family == "exp":
            v = math.exp(-i / alpha)
        elif family == "poly":
            v = (1 + i) ** (-alpha)
        elif family == "delta":
            v = 1.0 if i == int(round(alpha)) else 0.0
        elif family == "airy":
            v = _airy(-(i - 1) / alpha)
        else:
            raise ValueError(f"family={family!r}: choose exp, poly, delta or airy")
        vals.append(v)
    s = sum(abs(v) for v in vals)
    if s == 0:
        raise ValueError(f"kernel {family}({alpha}) is zero on lags 1..{lags}")
    return (0.0, *(v / s for v in vals))


def _airy(x: float, terms: int = 80) -> float:
    """Ai(x) from its Maclaurin series (accurate for |x| <= 10)."""
    c1, c2 = 0.355028053887817, 0.258819403792807
    f = g = 0.0
    tf, tg = 1.0, x
    for k in range(terms):
        f += tf
        g += tg
        tf *= x ** 3 / ((3 * k + 2) * (3 * k + 3))
        tg *= x ** 3 / ((3 * k + 3) * (3 * k + 4))
    return c1 * f - c2 * g
