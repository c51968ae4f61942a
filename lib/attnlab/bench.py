"""Benchmark: 16 AoT replicas of different sizes trained as one program vs one after another.

    python -m attnlab.bench [--steps 300] [--out results/bench/replica_batching.json]

One torch thread, minimum over 3 repeats. Both ways run the same number of Adam steps on the same batches; the
replicas differ in d, d_h and H (paper 004's model). Writes a JSON record with the timings.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from attnlab.core.device import set_threads
from attnlab.core.store import REPO_ROOT
from attnlab.core.train import linear_lr, train_replicas
from attnlab.papers.p004_memorization.models import AoTConfig, ReplicaAoT
from attnlab.papers.p004_memorization.tasks import full_batches, lookup_table_task, paper_batches

N = 50
CONFIGS = [AoTConfig(N, 2, d, d_h, H, seed) for seed, (d, d_h, H) in enumerate(
    [(4, 4, 1), (4, 2, 3), (5, 5, 2), (5, 3, 6), (6, 6, 1), (6, 4, 4), (7, 7, 3), (7, 5, 8),
     (8, 8, 2), (8, 6, 5), (9, 9, 1), (9, 4, 7), (10, 10, 4), (10, 8, 6), (10, 5, 8), (10, 10, 8)])]


# Experiment 6's sweep (Fig. 4): N = 10, d = d_h = 2, H in {1, 5, ..., 21}, several seeds.
EXP6 = [AoTConfig(10, 2, 2, 2, H, seed) for seed in range(3) for H in (1, 5, 9, 13, 17, 21)][:16]


def _time(configs, batches_fn, steps):
    model = ReplicaAoT(configs)
    start = time.perf_counter()
    train_replicas(model, batches_fn(), steps, linear_lr(1e-2, 5e-4, steps), progress=False)
    return time.perf_counter() - start


def run(steps: int, batch_size: int, configs=CONFIGS, repeats: int = 3) -> dict:
    set_threads(1)
    tokens, targets = lookup_table_task(configs[0].N)
    if batch_size:
        batches = lambda: paper_batches(tokens, targets, batch_size, 64)
    else:
        batches = lambda: full_batches(tokens, targets)
    _time(configs[:2], batches, 5)  # warm-up
    batched, sequential = float("inf"), float("inf")
    for _ in range(repeats):  # the minimum over repeats is the least noisy estimate (as timeit does)
        batched = min(batched, _time(configs, batches, steps))
        sequential = min(sequential, sum(_time([c], batches, steps) for c in configs))
    return {"replicas": len(configs), "N": configs[0].N, "sizes [d, d_h, H]": [[c.d, c.d_h, c.H] for c in configs],
            "steps": steps, "batch_size": batch_size or configs[0].N ** 2, "repeats": repeats,
            "batched_s": round(batched, 2), "sequential_s": round(sequential, 2),
            "speedup": round(sequential / batched, 2)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--out", default=str(REPO_ROOT / "results" / "bench" / "replica_batching.json"))
    args = parser.parse_args(argv)
    record = {"threads": 1, "torch": torch.__version__,
              "machine": platform.processor() or platform.machine(), "date": time.strftime("%Y-%m-%d"),
              "exp6_sweep_minibatch": run(args.steps, 256, EXP6),
              "mixed_sizes_minibatch": run(args.steps, 256), "mixed_sizes_full_batch": run(args.steps // 4, 0)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
