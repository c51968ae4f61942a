"""The recorded sweep-throughput benchmark (python -m attnlab.bench): the record is current, not fast.

It has every workload the module defines, with the configuration the module would run now, the
machine and the load; its speedups are the ratios of its times; and the plain baselines compute the
same function as the replica-batched models they are timed against.
"""

import json

import numpy as np
import pytest
import torch

from attnlab import bench

RECORD = bench.RECORD


@pytest.fixture(scope="module")
def record():
    return json.loads(RECORD.read_text())


def test_record_has_every_workload_with_the_configuration_the_module_runs_now(record):
    now = bench.workloads()
    assert list(record["workloads"]) == list(now)
    assert record["repeats"] == bench.REPEATS
    for name, cfg in now.items():
        w = record["workloads"][name]
        assert w["config"] == {**cfg, "steps": bench.STEPS}, name
        assert w["models"] == 64 and w["steps"] == bench.STEPS and w["repeats"] == bench.REPEATS
        assert w["single_model"] == bench._models(cfg)[bench.SINGLE[name]]
        assert w["grouped_programs"] == len(bench.size_groups(cfg))


def test_record_states_the_machine_one_thread_and_the_load(record):
    m = record["machine"]
    assert m["threads"] == 1 and m["torch"] and m["cpu"] and m["platform"]
    assert len(record["load_average_start"]) == 3 and len(record["load_average_end"]) == 3
    assert all(len(w["load_average"]) == 3 for w in record["workloads"].values())


def test_speedups_are_the_ratios_of_the_recorded_times(record):
    for name, w in record["workloads"].items():
        for ratio, num, den in (("speedup", "plain_s", "batched_s"), ("single_speedup", "single_plain_s",
                                                                     "single_batched_s"),
                                ("grouped_speedup", "plain_s", "grouped_s")):
            assert w[ratio] == pytest.approx(w[num] / w[den], rel=0.01, abs=0.01), (name, ratio)


def test_profiles_of_one_sweep_per_paper_are_recorded(record):
    assert set(record["profiles"]) == set(bench.PROFILED)
    papers = {bench.workloads()[name]["paper"] for name in bench.PROFILED}
    assert papers == {"002", "004"}
    for prof in record["profiles"].values():
        ops = prof["top_ops [name, calls, self_ms, share]"]
        assert len(ops) >= 5 and all(0 <= op[3] <= 1 for op in ops)
        assert [op[2] for op in ops] == sorted((op[2] for op in ops), reverse=True)


def test_readme_table_has_one_row_per_workload_with_the_recorded_numbers(record):
    table = bench.readme_table(record)
    rows = [ln for ln in table.splitlines() if ln.startswith("| 00")]
    assert len(rows) == len(record["workloads"])
    for row, w in zip(rows, record["workloads"].values()):
        assert f"{w['speedup']:.1f}×" in row and f"{w['batched_s']:.2f} s" in row


@pytest.mark.parametrize("variant", ["dot", "lin+sftm", "dot+sftm", "lin"])
def test_plain_counting_model_computes_the_replica_models_function(variant):
    from attnlab.papers.p002_counting.models import CountingConfig, ReplicaCounting

    cfgs = [CountingConfig(variant, 8, 6, d, p, 0) for d, p in ((3, 5), (6, 2))]
    model = ReplicaCounting(cfgs)
    x = torch.randint(0, 8, (32, 6), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = model(x)
        for r, c in enumerate(cfgs):
            w = model.weights(r)
            plain = bench.PlainCounting(variant, 8, 6, c.d, c.p)
            plain.emb.weight.copy_(torch.from_numpy(w.emb))
            if variant.startswith("lin"):
                plain.A.copy_(torch.from_numpy(w.A))
            else:
                plain.W_Q.weight.copy_(torch.from_numpy(w.W_Q.T))
                plain.W_K.weight.copy_(torch.from_numpy(w.W_K.T))
            plain.W1.weight.copy_(torch.from_numpy(w.W1.T))
            plain.W1.bias.copy_(torch.from_numpy(w.b1))
            plain.W2.weight.copy_(torch.from_numpy(w.W2.T))
            plain.W2.bias.copy_(torch.from_numpy(w.b2))
            np.testing.assert_allclose(plain(x).numpy(), want[r].numpy(), rtol=1e-4, atol=1e-4)


def test_plain_aot_computes_the_replica_models_function():
    from attnlab.papers.p004_memorization.models import AoTConfig, ReplicaAoT
    from attnlab.papers.p004_memorization.tasks import lookup_table_task

    cfgs = [AoTConfig(10, 2, d, d_h, H, s) for s, (d, d_h, H) in enumerate(((4, 4, 1), (6, 3, 5)))]
    model = ReplicaAoT(cfgs)
    tokens, _ = lookup_table_task(10)
    with torch.no_grad():
        want = model(tokens)
        for r, c in enumerate(cfgs):
            st = model.replica_state(r)
            plain = bench.PlainAoT(10, 2, c.d, c.d_h, c.H)
            plain.E.weight.copy_(st["E"])
            plain.W_U.weight.copy_(st["W_U"])
            for name in ("P", "W_Q", "W_K", "W_V", "W_O"):
                getattr(plain, name).copy_(st[name])
            np.testing.assert_allclose(plain(tokens).numpy(), want[r].numpy(), rtol=1e-4, atol=1e-4)
