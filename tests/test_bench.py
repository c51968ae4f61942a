"""The recorded benchmark of replica-batched training (python -m attnlab.bench)."""

import json

from conftest import REPO

RECORD = REPO / "results" / "bench" / "replica_batching.json"


def test_benchmark_record_shows_16_replicas_of_different_sizes_on_one_thread():
    rec = json.loads(RECORD.read_text())
    assert rec["threads"] == 1
    for name in ("exp6_sweep_minibatch", "mixed_sizes_minibatch", "mixed_sizes_full_batch"):
        run = rec[name]
        assert run["replicas"] == 16 and len({tuple(s) for s in run["sizes [d, d_h, H]"]}) > 1
        assert abs(run["speedup"] - run["sequential_s"] / run["batched_s"]) < 0.02 * run["speedup"]


def test_batched_training_is_at_least_5x_faster_on_the_paper_sweep():
    assert json.loads(RECORD.read_text())["exp6_sweep_minibatch"]["speedup"] >= 5.0
