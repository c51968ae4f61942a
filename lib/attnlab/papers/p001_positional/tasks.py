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


# ---------------------------------------------------------------------------------------------
# The five targets of §7 (App. D.1): y = target(x), both [..., n], computed per list (last axis).

TASKS = ("cumsum", "cummin", "cummedian", "sort", "maxsub")
TASK_NAMES = {"cumsum": "cumulative sum", "cummin": "cumulative minimum", "cummedian": "cumulative median",
              "sort": "sorting", "maxsub": "cumulative maximum sum subarray"}


def _cummedian(x: np.ndarray) -> np.ndarray:
    """median{x_1..x_i} for every prefix; an even count takes the midpoint of the two middle values
    (the authors' torch.quantile(..., 0.5, interpolation='midpoint'); np.median does the same)."""
    out = np.empty_like(x)
    for i in range(x.shape[-1]):
        out[..., i] = np.median(x[..., : i + 1], axis=-1)
    return out


def _maxsub(x: np.ndarray) -> np.ndarray:
    """max over 1 ≤ j ≤ k ≤ i of x_j + ... + x_k (non-empty subarrays) for every prefix i: Kadane's
    recursion, vectorised over the lists (cur = best sum ending at i, best = best sum up to i)."""
    out = np.empty_like(x)
    cur = best = x[..., 0]
    out[..., 0] = best
    for i in range(1, x.shape[-1]):
        cur = np.maximum(x[..., i], cur + x[..., i])
        best = np.maximum(best, cur)
        out[..., i] = best
    return out


_TARGETS = {
    "cumsum": lambda x: np.cumsum(x, axis=-1),
    "cummin": lambda x: np.minimum.accumulate(x, axis=-1),
    "cummedian": _cummedian,
    "sort": lambda x: np.sort(x, axis=-1),  # ascending, not cumulative
    "maxsub": _maxsub,
}


def targets(task: str, x: np.ndarray) -> np.ndarray:
    """The target lists of `task` (one of TASKS) for inputs x [..., n] (numpy, float64 kept)."""
    if task not in _TARGETS:
        raise ValueError(f"task {task!r}: choose one of {', '.join(TASKS)}")
    x = np.asarray(x)
    if x.ndim == 0 or x.shape[-1] < 1:
        raise ValueError(f"inputs of shape {x.shape}: need lists along the last axis")
    return _TARGETS[task](x)
