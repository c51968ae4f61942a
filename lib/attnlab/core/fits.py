"""Least-squares fits used by the scaling-law figures."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Fit:
    """y ~ a * x**power + b, with the sum of squared errors and R^2."""

    a: float
    b: float
    power: float
    sse: float
    r2: float

    def __call__(self, x):
        return self.a * np.asarray(x, dtype=float) ** self.power + self.b


def power_fit(x, y, power: float = 1.0) -> Fit:
    """Least-squares a, b in y = a x^power + b (power=1: linear; 2: the paper's 'quadratic' a d^2 + b)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 2:
        raise ValueError(f"power_fit needs at least 2 points; got {x.size}")
    X = np.stack([x ** power, np.ones_like(x)], axis=1)
    (a, b), *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - (a * x ** power + b)
    sse = float(resid @ resid)
    sst = float(((y - y.mean()) ** 2).sum())
    return Fit(float(a), float(b), power, sse, 1.0 - sse / sst if sst > 0 else 1.0)


def presaturation(y, threshold: float = 0.95) -> int:
    """Number of leading points used by the paper's fits: up to and including the first y > threshold."""
    y = np.asarray(y)
    above = np.nonzero(y > threshold)[0]
    return int(above[0]) + 1 if above.size else int(y.size)
