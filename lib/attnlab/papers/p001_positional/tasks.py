"""The numeric data of §7 / App. D.1.1 (the trained experiments add their targets on top).

Training lists: bounds γ_l ≤ γ_u uniform in [−2, 2], then n entries uniform in [γ_l, γ_u].
Test lists at scale c > 1: the same in [−2c, 2c], keeping only pairs with γ_l < −2 or γ_u > 2
(the rejection step of App. E); c = 1 is the in-distribution test (no rejection).
"""

from __future__ import annotations

import numpy as np


def sample_lists(rng: np.random.Generator, samples: int, n: int, c: float = 1.0, reject: bool = True) -> np.ndarray:
    """[samples, n] lists at scale c (§7); reject=True applies App. E's rejection step when c > 1."""
    if c < 1:
        raise ValueError(f"scale c = {c}: must be >= 1")
    out = np.empty((0, 2))
    while len(out) < samples:
        g = np.sort(rng.uniform(-2 * c, 2 * c, size=(2 * samples, 2)), axis=1)
        if reject and c > 1:
            g = g[(g[:, 0] < -2) | (g[:, 1] > 2)]
        out = np.concatenate([out, g])
    g = out[:samples]
    return g[:, :1] + (g[:, 1:] - g[:, :1]) * rng.uniform(size=(samples, n))
