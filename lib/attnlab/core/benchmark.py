"""What a paper's throughput workload declares (`papers/<paper>/bench.py`; `python -m attnlab.bench` runs them).

A workload is one of the paper's training sweeps, 64 models, trained two ways on the same batches for
the same steps: as one replica-batched program (the library's way) and as what a user writes by
hand, a plain `nn.Module` of the same math trained one model at a time with `torch.optim.Adam`. Both
functions return the seconds of training only (the batches are made before the clock starts).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable

import torch


@dataclass(frozen=True)
class Workload:
    """name: "<paper id> <what>"; config: JSON-serialisable, with "paper", "steps" and one key starting
    with "models " (one row per model, its last entry the seed), and "device" when the runner sets one
    (absent: the CPU; the functions build their models there and time with `clock`); describe: one line
    for the Performance page's table;
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

    @property
    def models(self) -> list:
        return next(v for k, v in self.config.items() if k.startswith("models "))

    def size_groups(self, size: int = 16) -> list[list[int]]:
        """The models as programs of `size`, sorted by their largest size (as the sweeps plan them): less padding."""
        rows = self.models
        order = sorted(range(len(rows)), key=lambda i: (max(rows[i][:-1]), tuple(rows[i])))
        return [order[j:j + size] for j in range(0, len(order), size)]

    def with_models(self, n: int) -> "Workload":
        """The workload with n models (a GPU sweep of 1,000 replicas from the 64-model grid): the rows
        cycled, each further pass over them with its seeds shifted by 1000 × the pass."""
        key = next(k for k in self.config if k.startswith("models "))
        rows = self.config[key]
        wide = [[*rows[i % len(rows)][:-1], rows[i % len(rows)][-1] + 1000 * (i // len(rows))] for i in range(n)]
        return replace(self, config={**self.config, key: wide}, single=self.single % n)


def clock(device: str | torch.device = "cpu") -> Callable[[], float]:
    """The benchmark's clock in seconds. On a CPU the process's CPU time: with one torch thread it is
    the compute the training did, and other jobs on the machine do not inflate it. On a GPU wall time
    read after `torch.cuda.synchronize()` (kernels run asynchronously: the work queued so far is done)."""
    if torch.device(device).type != "cuda":
        return time.process_time

    def now() -> float:
        torch.cuda.synchronize()
        return time.perf_counter()

    return now


def to_device(batches: Any, device: str | torch.device) -> Any:
    """The batches with every tensor on `device` (lists, tuples and dicts of tensors, nested)."""
    if isinstance(batches, torch.Tensor):
        return batches.to(device)
    if isinstance(batches, (list, tuple)):
        return type(batches)(to_device(b, device) for b in batches)
    if isinstance(batches, dict):
        return {k: to_device(v, device) for k, v in batches.items()}
    return batches
