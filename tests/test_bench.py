"""The recorded sweep-throughput benchmark (python -m attnlab.bench): the record is current, not fast.

It has every workload the papers' `bench` modules define, with the configuration they would run now,
the machine and the load; its speedups are the ratios of its times. That each plain baseline computes
the same function as the replica-batched models it is timed against is tested beside it
(`lib/attnlab/papers/*/bench_test.py`).
"""

import json

import pytest

from attnlab import bench

RECORD = bench.RECORD


@pytest.fixture(scope="module")
def record():
    return json.loads(RECORD.read_text())


def test_record_has_every_workload_with_the_configuration_the_module_runs_now(record):
    now = bench.workloads()
    assert list(record["workloads"]) == list(now)
    assert record["repeats"] == bench.REPEATS
    for name, wl in now.items():
        w = record["workloads"][name]
        assert w["config"] == wl.config and w["describe"] == wl.describe, name
        assert w["models"] == 64 == len(wl.models) and w["steps"] == wl.config["steps"] and w["repeats"] == bench.REPEATS
        assert w["single_model"] == wl.models[wl.single]
        assert w["grouped_programs"] == len(wl.size_groups(bench.GROUP))


def test_every_paper_with_a_training_sweep_has_a_workload():
    assert {w.config["paper"] for w in bench.workloads().values()} == {"000", "001", "002", "003", "004"}


def test_record_states_the_machine_one_thread_and_the_load(record):
    m = record["machine"]
    assert record["clock"] == "process_time"  # CPU time: not inflated by other jobs on a shared machine
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
    profiled = {name for name, w in bench.workloads().items() if w.profiled}
    assert set(record["profiles"]) == profiled
    assert {bench.workloads()[name].config["paper"] for name in profiled} == {w.config["paper"] for w in
                                                                               bench.workloads().values()}
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


@pytest.mark.parametrize("name", list(bench.workloads(2)))
def test_workloads_run_both_ways(name):
    w = bench.workloads(2)[name]
    batches = w.batches(w.config, 2)
    assert w.train_batched(w.config, batches, 2, [0, 1]) > 0 and w.train_plain(w.config, batches, 2, w.models[0]) > 0
