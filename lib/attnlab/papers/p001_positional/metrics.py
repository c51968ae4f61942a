"""App. D.1.10: accuracy-style metrics for the regression tasks (Figs. 27–28).

A list counts as correct only if every entry passes (all-or-nothing per list):

- **Rounding** (Fig. 27): the model is tested on *integer* lists (it was trained on reals) and
  its outputs are rounded to the nearest integer (nearest 0.5 for the median, whose targets are
  half-integers for even counts); correct iff the rounded list equals the target list.
- **Closeness** (Fig. 28): real lists; "within an absolute precision of 0.05 and a relative
  precision of 5 %". The authors' code tests this with `torch.isclose(out, y, rtol, atol)`, i.e.
  |out − y| ≤ atol + rtol·|y| (`mode="isclose"`, the default); `mode="both"` is the literal
  reading, |out − y| ≤ atol and |out − y| ≤ rtol·|y|.

Integer test lists at scale c: the §7 lists at scale c (App. E's rejection for c > 1) rounded to
the nearest integer, so entries are integers in [−2c, 2c] and every target is an integer (a
multiple of 0.5 for the median).
"""

from __future__ import annotations

import numpy as np

from .tasks import sample_lists

ATOL = 0.05  # App. D.1.10
RTOL = 0.05
MODES = ("isclose", "both")


def round_outputs(pred: np.ndarray, task: str) -> np.ndarray:
    """Round to the nearest integer, or to the nearest 0.5 for the (cumulative) median."""
    return np.rint(pred * 2) / 2 if task == "cummedian" else np.rint(pred)


def rounding_correct(pred: np.ndarray, target: np.ndarray, task: str) -> np.ndarray:
    """[..., B] bools: every rounded entry of the list equals its target (pred, target [..., B, n])."""
    return np.all(round_outputs(np.asarray(pred), task) == np.asarray(target), axis=-1)


def closeness_correct(pred: np.ndarray, target: np.ndarray, atol: float = ATOL, rtol: float = RTOL,
                      mode: str = "isclose") -> np.ndarray:
    """[..., B] bools: every entry within tolerance (see the module docstring for the two modes)."""
    err, scale = np.abs(np.asarray(pred) - target), np.abs(target)
    if mode == "isclose":
        ok = err <= atol + rtol * scale
    elif mode == "both":
        ok = (err <= atol) & (err <= rtol * scale)
    else:
        raise ValueError(f"mode {mode!r}: choose one of {', '.join(MODES)}")
    return np.all(ok, axis=-1)


def integer_lists(rng: np.random.Generator, samples: int, n: int, c: float) -> np.ndarray:
    """[samples, n] integer-valued lists at scale c: the §7 lists rounded to the nearest integer."""
    return np.rint(sample_lists(rng, samples, n, c))
