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


def test_every_workload_has_a_profile_of_the_program_and_of_the_plain_single_model(record):
    assert list(record["profiles"]) == list(bench.workloads())
    for name, prof in record["profiles"].items():
        ops = prof["top_ops [name, calls, self_ms, share]"]
        assert len(ops) >= 5 and all(0 <= op[3] <= 1 for op in ops)
        assert [op[2] for op in ops] == sorted((op[2] for op in ops), reverse=True)
        for part in (prof, prof["plain_one_model"]):
            total = next(v for k, v in part.items() if k.startswith("total_"))
            assert 0 < part["products_ms"] <= total, name
        products_listed = sum(op[2] for op in ops if bench.is_product(op[0]))
        assert products_listed <= prof["products_ms"] + 0.1, name  # the top ops' products are among all products


@pytest.mark.parametrize("op, product", [
    ("aten::mm", True), ("aten::bmm", True), ("aten::addmm", True), ("aten::baddbmm", True), ("aten::baddbmm_", True),
    ("aten::addbmm", True), ("aten::_addmm_activation", True), ("aten::_scaled_dot_product_flash_attention_for_cpu", True),
    ("aten::matmul", False), ("aten::linear", False), ("aten::mul", False), ("aten::_softmax", False),
    ("aten::scatter_add_", False), ("aten::_fused_adam_", False), ("aten::scaled_dot_product_attention", False),
    ("aten::mm_backward", False), ("MmBackward0", False)])
def test_matrix_products_are_the_kernels_not_their_wrappers(op, product):
    assert bench.is_product(op) is product


def test_time_split_is_the_arithmetic_of_the_profiles():
    rec = {"workloads": {"w": {"models": 64, "speedup": 8.0}},
           "profiles": {"w": {"total_self_cpu_ms": 1000.0, "products_ms": 400.0,
                              "plain_one_model": {"total_self_cpu_ms": 100.0, "products_ms": 10.0}}}}
    t = bench.time_split(rec, "w")
    assert t["products_share"] == pytest.approx(0.4) and t["ceiling"] == pytest.approx(20.0)
    assert t["products_gain"] == pytest.approx(64 * 10 / 400) and t["rest_gain"] == pytest.approx(64 * 90 / 600)
    assert bench.time_split({"workloads": {"w": {}}}, "w") is None
    assert "| w | 8.0× | 40 % | 1.6× | 9.6× | 20× |" in bench.performance_tables(rec | {
        "machine": {"cpu": "x", "torch": "t", "cores": 2}, "repeats": 3, "date": "d", "clock": "process_time",
        "load_average_start": [0, 0, 0], "load_average_end": [0, 0, 0],
        "workloads": {"w": {"models": 64, "speedup": 8.0, "batched_s": 1.0, "plain_s": 8.0, "grouped_s": 2.0,
                            "grouped_speedup": 4.0, "single_batched_s": 0.1, "single_plain_s": 0.1}}}, None)


def test_performance_table_has_one_row_per_workload_with_the_recorded_numbers(record):
    times, split = bench.performance_tables(record).split("Where the time goes")
    rows = [ln for ln in times.splitlines() if ln.startswith("| 00")]
    assert len(rows) == len(record["workloads"])
    for row, w in zip(rows, record["workloads"].values()):
        assert f"{w['speedup']:.1f}×" in row and f"{w['batched_s']:.2f} s" in row
    rows = [ln for ln in split.splitlines() if ln.startswith("| 00")]
    assert len(rows) == len(record["workloads"])
    for row, (name, w) in zip(rows, record["workloads"].items()):
        t = bench.time_split(record, name)
        assert row.startswith(f"| {name} | {w['speedup']:.1f}× | {100 * t['products_share']:.0f} % |")
        assert row.endswith(f"| {t['ceiling']:.0f}× |")


@pytest.mark.parametrize("name", list(bench.workloads(2)))
def test_workloads_run_both_ways(name):
    w = bench.workloads(2)[name]
    batches = w.batches(w.config, 2)
    assert w.train_batched(w.config, batches, 2, [0, 1]) > 0 and w.train_plain(w.config, batches, 2, w.models[0]) > 0


def test_a_sweep_widens_to_n_models_with_new_seeds():
    w = bench.workloads(2)["000 max-over-heads QK"]
    wide = w.with_models(150)
    rows = wide.models
    assert len(rows) == 150 and rows[:64] == w.models and rows[64][:-1] == w.models[0][:-1]
    assert rows[64][-1] == w.models[0][-1] + 1000 and rows[149][-1] == w.models[149 - 128][-1] + 2000
    assert len({tuple(r) for r in rows}) == 150 and wide.single == w.single
    assert w.models == w.config["models [h, D_K, seed]"] and len(w.models) == 64  # the original is untouched


def test_the_clock_is_cpu_time_on_the_cpu_and_batches_move_to_a_device():
    import time

    import torch

    from attnlab.core.benchmark import clock, to_device

    assert clock("cpu") is time.process_time
    batches = [(torch.zeros(2), {"a": torch.ones(1)}), [torch.zeros(1), 3]]
    moved = to_device(batches, "cpu")
    assert isinstance(moved[0], tuple) and isinstance(moved[1], list) and moved[1][1] == 3
    assert torch.equal(moved[0][1]["a"], torch.ones(1))


def test_plain_loop_sampled_on_k_models_is_scaled_to_all(monkeypatch):
    w = bench.workloads(2)["000 max-over-heads QK"]
    timed = []

    def fake_plain(cfg, batches, steps, row):
        timed.append(row)
        return 1.0

    w = w.with_models(100)
    from dataclasses import replace

    w = replace(w, train_plain=fake_plain)
    res = bench.run_workload(w, 2, 1, plain_sample=5)
    assert res["plain_timed_models"] == 5 and res["plain_s"] == 100.0 and res["models"] == 100
    assert w.models[0] in timed and w.models[-1] in timed and w.models[w.single] in timed


@pytest.mark.parametrize("argv, message", [
    (["--models", "1"], "at least 2 models"),
    (["--plain-sample", "0"], "at least 1 plain model"),
    (["--models", "128"], "give --out"),
    (["--only", "nope"], "unknown workload"),
    (["--device", "tpu"], "invalid choice"),
])
def test_cli_rejects_bad_arguments_with_a_clear_message(argv, message, capsys):
    with pytest.raises(SystemExit) as err:
        bench.main(argv)
    assert err.value.code == 2 and message in capsys.readouterr().err


def test_performance_page_shows_a_gpu_table_when_a_gpu_record_exists(record):
    gpu = json.loads(json.dumps(record))
    gpu["machine"]["device"] = "cuda: NVIDIA H100"
    gpu["clock"] = "wall_time_synchronized"
    for w in gpu["workloads"].values():
        w["models"], w["plain_timed_models"] = 1000, 32
    text = bench.performance_tables(record, gpu)
    assert "On a GPU" in text and "1000 models" in text and "(from 32 timed)" in text
    assert "wall time after a CUDA synchronize" in text and "throughput-cuda.json" in text
    if not bench.GPU_RECORD.exists():
        assert "No GPU record yet" in bench.performance_tables()


def test_the_benchmark_runs_headless_with_only_torch_and_numpy(tmp_path):
    """A bare GPU machine has torch and numpy, no Jupyter stack, no tqdm: the benchmark must not need them."""
    import subprocess
    import sys

    blocker = (
        "import importlib.util, sys, runpy\n"
        "class Block:  # found (torch probes optional packages with find_spec), but importing it fails\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in {'tqdm', 'nbformat', 'matplotlib', 'papermill', 'jupytext', 'IPython',\n"
        "                                  'transformers', 'ray', 'nbval'}:\n"
        "            return importlib.util.spec_from_loader(name, self)\n"
        "    def create_module(self, spec):\n"
        "        raise ModuleNotFoundError(f'No module named {spec.name!r} on a bare GPU machine', name=spec.name)\n"
        "    def exec_module(self, module):\n"
        "        pass\n"
        "sys.meta_path.insert(0, Block())\n"
        "sys.argv = ['attnlab.bench'] + sys.argv[1:]\n"
        "runpy.run_module('attnlab.bench', run_name='__main__')\n")
    out = tmp_path / "record.json"
    run = subprocess.run([sys.executable, "-c", blocker, "--quick", "--only", "001 positional Transformers",
                          "--models", "3", "--plain-sample", "1", "--out", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    rec = json.loads(out.read_text())
    assert rec["workloads"]["001 positional Transformers"]["models"] == 3


def _gpu_record_problems(rec: dict) -> list[str]:
    """What is inconsistent in a GPU record (results/bench/throughput-cuda.json): its device and clock,
    each workload's configuration (the module's, widened to its model count) and its ratios."""
    problems = []
    if rec.get("clock") != "wall_time_synchronized" or not rec["machine"].get("device", "").startswith("cuda"):
        problems.append("not a CUDA record timed in synchronized wall time")
    now = bench.workloads()
    for name, w in rec["workloads"].items():
        if name not in now:
            problems.append(f"{name}: no such workload now")
            continue
        wl = now[name] if w["models"] == 64 else now[name].with_models(w["models"])
        if w["config"] != wl.config or w["single_model"] != wl.models[wl.single]:
            problems.append(f"{name}: configuration differs from the module's")
        if not 1 <= w.get("plain_timed_models", w["models"]) <= w["models"]:
            problems.append(f"{name}: plain_timed_models out of range")
        if abs(w["speedup"] - w["plain_s"] / w["batched_s"]) > 0.01 * w["speedup"] + 0.01:
            problems.append(f"{name}: speedup is not plain_s / batched_s")
    return problems


def test_a_gpu_record_is_checked_for_device_clock_configuration_and_ratios(record):
    """Checked on a GPU record made from the CPU one (no GPU was lent yet), and on the real one when it exists."""
    gpu = json.loads(json.dumps(record))
    gpu["machine"]["device"], gpu["clock"] = "cuda: NVIDIA H100", "wall_time_synchronized"
    name = "000 max-over-heads QK"
    w = gpu["workloads"][name]
    w["config"] = bench.workloads()[name].with_models(1000).config
    w["models"], w["plain_timed_models"] = 1000, 32
    w["single_model"] = w["config"]["models [h, D_K, seed]"][bench.workloads()[name].single]
    assert _gpu_record_problems(gpu) == []
    w["speedup"] *= 2
    assert _gpu_record_problems(gpu) == [f"{name}: speedup is not plain_s / batched_s"]
    assert _gpu_record_problems(record) == ["not a CUDA record timed in synchronized wall time"]
    if bench.GPU_RECORD.exists():
        assert _gpu_record_problems(json.loads(bench.GPU_RECORD.read_text())) == []
