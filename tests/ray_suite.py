"""Issue 17: paper-scale sweeps on Ray (`attnlab run ... --headless --backend ray`), on a local Ray
instance with 2 CPUs started once for the module.

- A real sweep (Fig. 4 of paper 004, shrunk to 6 one-seed models trained two per program) run by
  the CLI on Ray stores, byte for byte, the entries and the result of the in-process backend; two
  drivers at once on one store (this process and a CLI process that joins the cluster with
  `--address`) lose and corrupt nothing.
- A worker killed inside its task (`os._exit` on the first attempt) loses nothing and does
  nothing twice: Ray retries that task, every unit is stored once, equal to the in-process values.
- An interrupted driver resumes from the store: only the missing groups are planned and run.
- `--backend ray` without `--headless`, or without Ray installed, is a usage error (exit 2).

Run by tests/test_ray.py in a loopback-only network namespace. If Ray is not installed or cannot
start here, the Ray tests skip and say why (`make test` installs
it from requirements-ray.txt; under CI=true a missing Ray fails instead of skipping).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from attnlab.core.experiment import Context, Experiment, Incomplete
from attnlab.core.hashing import canonical_json
from attnlab.core.store import ResultStore
from conftest import REPO

SWEEP = "004-memorization/fig4-small-dimension"
TINY = {"seeds": 1, "H_list": [1, 5, 9, 13, 17, 21], "d_h_list": [2], "steps": 100, "chunk": 2}
ARGS = ["run", SWEEP, "--headless", "-q"] + [a for k, v in TINY.items() for a in ("-p", k, json.dumps(v))]
UNITS = 6


@pytest.fixture(scope="module")
def cluster():
    """A local Ray instance with 2 CPUs (this process is its first driver): (backend, address)."""
    try:
        import ray
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("Ray is not installed on the CI machine: `make test` installs requirements-ray.txt")
        pytest.skip("Ray is not installed (an optional extra): pip install -r requirements-ray.txt")
    from attnlab.core.distributed import RayBackend

    os.environ.setdefault("ATTNLAB_THREADS", "1")  # the workers inherit it: one torch thread each
    backend = RayBackend(num_cpus=2)
    try:
        backend.start()
    except Exception as err:  # noqa: BLE001 - any failure to start means: cannot run here
        pytest.skip(f"Ray cannot start on this machine: {type(err).__name__}: {err}")
    yield backend, ray.get_runtime_context().gcs_address
    backend.close()


def _entries(root: Path, result_id: str) -> dict[str, dict]:
    """Every entry of `result_id` under the store `root`, by file name, all valid (a warning fails)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        valid = ResultStore(root, result_id).entries()
    names = sorted(p.name for p in (root / result_id).glob("*.json"))
    assert len(valid) == len(names), f"{len(names) - len(valid)} corrupt entries"
    assert not list((root / result_id).glob(".tmp-*"))
    return {name: json.loads((root / result_id / name).read_text()) for name in names}


def _same(a: dict[str, dict], b: dict[str, dict]):
    """Equal names, configs and results, byte for byte in canonical JSON (provenance differs)."""
    assert sorted(a) == sorted(b)
    for name in a:
        for part in ("config", "result", "checksum"):
            assert canonical_json(a[name][part]) == canonical_json(b[name][part]), (name, part)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The sweep run in-process (local backend): its store entries and result."""
    from attnlab.papers import get

    exp = get(SWEEP)
    root = tmp_path_factory.mktemp("local") / "ci"
    result = exp.run(exp.config("ci", **TINY), store_root=root, progress=False)
    assert result["meta"]["computed"] == UNITS
    return _entries(root, SWEEP), result


def _cli(address: str, store: Path, out: Path) -> subprocess.Popen:
    """`attnlab run ... --backend ray --address ADDRESS` in a new process: a second driver that joins the cluster."""
    env = {**os.environ, "ATTNLAB_THREADS": "1", "OMP_NUM_THREADS": "1", "ATTNLAB_STORE": str(store),
           "RAY_AUTH_MODE": os.environ.get("RAY_AUTH_MODE", "token")}  # a local instance asks for its token
    return subprocess.Popen([sys.executable, "-m", "attnlab.cli", *ARGS, "--backend", "ray", "--address", address,
                             "--out", str(out)], env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_a_sweep_run_by_the_cli_on_ray_stores_exactly_what_the_in_process_run_stores(cluster, reference, tmp_path,
                                                                                      monkeypatch, capsys):
    from attnlab.cli import main

    _, address = cluster  # this process is connected already: the CLI's backend uses that connection
    monkeypatch.setenv("ATTNLAB_STORE", str(tmp_path / "store"))
    assert main([*ARGS, "--backend", "ray", "--address", address, "--out", str(tmp_path / "out")]) == 0
    assert "on Ray, 1 node, 2 CPUs" in capsys.readouterr().err
    entries = _entries(tmp_path / "store" / "ci", SWEEP)
    ref_entries, ref_result = reference
    _same(entries, ref_entries)
    assert all(e["provenance"]["device"].endswith("(ray)") for e in entries.values())  # trained by Ray tasks
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert result["meta"]["computed"] == UNITS
    for key in ("points", "analysis"):
        assert canonical_json(result[key]) == canonical_json(ref_result[key]), key


def test_two_drivers_on_one_sweep_and_store_lose_and_corrupt_nothing(cluster, reference, tmp_path):
    """Two drivers started together on one sweep and store: a CLI process that joins the cluster
    (`--address`) and this process."""
    from attnlab.papers import get

    backend, address = cluster
    exp = get(SWEEP)
    proc = _cli(address, tmp_path / "store", tmp_path / "out")
    with Context.using(backend):
        mine = exp.run(exp.config("ci", **TINY), store_root=tmp_path / "store" / "ci", progress=False)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "corrupt" not in err, err
    ref_entries, ref_result = reference
    _same(_entries(tmp_path / "store" / "ci", SWEEP), ref_entries)
    other = json.loads((tmp_path / "out" / "result.json").read_text())
    assert UNITS <= mine["meta"]["computed"] + other["meta"]["computed"] <= 2 * UNITS
    for result in (mine, other):
        assert canonical_json(result["points"]) == canonical_json(ref_result["points"])


# ------------------------------------------------------------------ a sweep whose worker dies

def _value(i: int) -> dict:
    import torch

    gen = torch.Generator().manual_seed(i)
    x = torch.randn(64, 64, generator=gen, dtype=torch.float64)
    return {"trace": float((x @ x.T).trace()), "norm": float(torch.linalg.matrix_norm(x, 2))}


def _crash_sweep(ctx: Context) -> dict:
    """Eight units in groups of three, largest index first ([7, 6, 5], [4, 3, 2], [1, 0]); the
    group holding unit 0 kills its worker process on its first attempt (a marker file says
    whether it was tried); with `stop`, the group holding unit 7 stops at its time limit. Each
    attempt at a group appends a line to attempts.txt."""
    folder = Path(ctx.config["folder"])
    keys = [{"unit": i} for i in range(8)]

    def plan(missing):
        todo = sorted(missing, reverse=True)
        return [todo[j:j + 3] for j in range(0, len(todo), 3)]

    def compute(group):
        with open(folder / "attempts.txt", "a") as f:
            f.write(json.dumps({"group": group, "pid": os.getpid()}) + "\n")
        marker = folder / "killed"
        if 0 in group and ctx.config["kill"] and not marker.exists():
            marker.write_text(str(os.getpid()))
            os._exit(1)  # the worker dies mid-task, as in a node failure or an OOM kill
        if 7 in group and ctx.config["stop"]:
            raise Incomplete("time limit reached (a test)")
        time.sleep(0.3)
        for i in group:
            yield i, _value(i), 0.3

    return {"rows": ctx.units(keys, compute, plan, "crash sweep")}


def _crash_experiment():
    from attnlab.core.params import Param

    params = (Param("folder", "str", "scratch folder"), Param("kill", "bool", "kill a worker once"),
              Param("stop", "bool", "a group raises Incomplete"))
    return Experiment(id="test/crash", label="", title="", params=params,
                      presets={"ci": {"folder": "", "kill": False, "stop": False}}, compute=_crash_sweep)


@pytest.fixture
def by_value():
    """Ship this module's functions to the workers by value (they cannot import tests/)."""
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _attempts(folder: Path) -> list[list[int]]:
    return [json.loads(line)["group"] for line in (folder / "attempts.txt").read_text().splitlines()]


def test_a_worker_killed_mid_sweep_is_retried_and_nothing_is_lost_or_done_twice(cluster, by_value, tmp_path):
    backend, _ = cluster
    exp = _crash_experiment()
    (tmp_path / "ray").mkdir()
    with Context.using(backend):
        got = exp.run(exp.config("ci", folder=str(tmp_path / "ray"), kill=True), store_root=tmp_path / "s", progress=False)
    assert (tmp_path / "ray" / "killed").exists(), "no worker was killed"
    attempts = _attempts(tmp_path / "ray")
    assert sorted(map(tuple, attempts)) == [(1, 0), (1, 0), (4, 3, 2), (7, 6, 5)]  # only the killed group twice
    assert got["meta"]["computed"] == 8 and got["rows"] == [_value(i) for i in range(8)]
    entries = _entries(tmp_path / "s", exp.id)
    assert len(entries) == 8 and all(e["provenance"]["device"].endswith("(ray)") for e in entries.values())

    (tmp_path / "local").mkdir()  # the in-process backend stores the same entries
    local = exp.run(exp.config("ci", folder=str(tmp_path / "local"), kill=False), store_root=tmp_path / "l",
                    progress=False)
    assert local["rows"] == got["rows"]
    _same(entries, _entries(tmp_path / "l", exp.id))


def test_an_interrupted_ray_driver_resumes_from_the_store(cluster, by_value, tmp_path):
    backend, _ = cluster
    exp = _crash_experiment()
    (tmp_path / "ray").mkdir()
    cfg = exp.config("ci", folder=str(tmp_path / "ray"), kill=False)
    store = ResultStore(tmp_path / "s", exp.id)
    for i in (7, 6, 5, 0):  # what an interrupted driver had stored: one whole group and parts of two
        store.put({"unit": i}, _value(i))
    with Context.using(backend):
        got = exp.run(cfg, store_root=tmp_path / "s", progress=False)
    assert sorted(map(tuple, _attempts(tmp_path / "ray"))) == [(1,), (4, 3, 2)]  # planned from the missing only
    assert got["meta"]["computed"] == 4 and got["meta"]["store_hits"] == 4
    assert got["rows"] == [_value(i) for i in range(8)] and len(_entries(tmp_path / "s", exp.id)) == 8


def test_a_task_that_stops_at_its_time_limit_stops_the_sweep_after_the_running_tasks_are_stored(
        cluster, by_value, tmp_path):
    backend, _ = cluster
    exp = _crash_experiment()
    (tmp_path / "ray").mkdir()
    with Context.using(backend), pytest.raises(Incomplete, match="time limit"):
        exp.run(exp.config("ci", folder=str(tmp_path / "ray"), stop=True), store_root=tmp_path / "s", progress=False)
    stored = sorted(e["config"]["unit"] for e in _entries(tmp_path / "s", exp.id).values())
    assert not {7, 6, 5} & set(stored)  # the stopped program stores nothing (its checkpoint resumes it)
    assert stored in ([], [2, 3, 4], [0, 1], [0, 1, 2, 3, 4]), stored  # whole programs only
    with Context.using(backend):  # the rerun resumes: only what is missing
        got = exp.run(exp.config("ci", folder=str(tmp_path / "ray")), store_root=tmp_path / "s", progress=False)
    assert got["meta"]["computed"] == 8 - len(stored) and got["rows"] == [_value(i) for i in range(8)]


# ------------------------------------------------------------------ usage errors (no Ray needed)

def test_backend_ray_without_headless_is_a_usage_error(store, monkeypatch, capsys):
    from attnlab.cli import main

    monkeypatch.setenv("ATTNLAB_STORE", store["ATTNLAB_STORE"])
    assert main(ARGS[:2] + ["--backend", "ray"]) == 2
    err = capsys.readouterr().err
    assert "--headless" in err and len(err.strip().splitlines()) == 1
    assert main(ARGS + ["--address", "auto"]) == 2 and "--backend ray" in capsys.readouterr().err


def test_backend_ray_without_ray_installed_is_a_usage_error_that_says_how_to_install_it(store, monkeypatch, capsys):
    from attnlab.cli import main

    monkeypatch.setenv("ATTNLAB_STORE", store["ATTNLAB_STORE"])
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    assert main(ARGS + ["--backend", "ray"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "attnlab: error: --backend ray needs Ray, which is not installed: pip install -e .[ray]"]
