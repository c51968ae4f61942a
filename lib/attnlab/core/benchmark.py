"""What a paper's throughput workload declares (`papers/<paper>/bench.py`; `python -m attnlab.bench` runs them).

A workload is one of the paper's training sweeps, 64 models, trained two ways on the same batches for
the same steps: as one replica-batched program (the library's way) and as what a user writes by
hand, a plain `nn.Module` of the same math trained one model at a time with `torch.optim.Adam`. Both
functions return the seconds of training only (the batches are made before the clock starts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Workload:
    """name: "<paper id> <what>"; config: JSON-serialisable, with "paper", "steps" and one key starting
    with "models " (one row per model, its last entry the seed); describe: one line for the README;
    single: the index of the model also timed alone; batches(config, steps) -> the batches;
    train_batched(config, batches, steps, idx or None) -> seconds (the models at idx, or all, as one
    program); train_plain(config, batches, steps, row) -> seconds (one plain model)."""

    name: str
    config: dict
    describe: str
    single: int
    batches: Callable[[dict, int], list]
    train_batched: Callable[[dict, list, int, list[int] | None], float]
    train_plain: Callable[[dict, list, int, list], float]
    profiled: bool = False

    @property
    def models(self) -> list:
        return next(v for k, v in self.config.items() if k.startswith("models "))

    def size_groups(self, size: int = 16) -> list[list[int]]:
        """The models as programs of `size`, sorted by their largest size (as the sweeps plan them): less padding."""
        rows = self.models
        order = sorted(range(len(rows)), key=lambda i: (max(rows[i][:-1]), tuple(rows[i])))
        return [order[j:j + size] for j in range(0, len(order), size)]
