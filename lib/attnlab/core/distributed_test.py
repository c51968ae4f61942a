"""The Ray backend's parts that need no running Ray: task payloads (a closure's context replaced
by the worker's), the worker's store, where checkpoints go, and the message when Ray is missing.
The backend itself, on a local Ray instance, is tested in tests/test_ray.py."""

from __future__ import annotations

import sys

import pytest

from . import distributed
from .distributed import RayUnavailable, WorkerStore, loads_task, worker_folder
from .experiment import Context, Experiment
from .store import ResultStore

EXP = Experiment(id="test/dist", label="", title="", params=(), presets={"ci": {}}, compute=lambda ctx: {})


def _sweep(ctx: Context):
    """A sweep's closure, as sweeps.py builds them: it reads the context's config and device."""
    cfg, keys = ctx.config, [{"u": i} for i in range(4)]

    def compute(group):
        for i in group:
            yield i, {"key": keys[i], "device": str(ctx.device), "scale": cfg["scale"], "store": str(ctx.store.dir)}, 0.0

    return compute


def test_a_task_payload_carries_the_closure_and_the_worker_context_replaces_the_drivers(tmp_path):
    pytest.importorskip("ray", reason="Ray is an optional extra (pip install -e .[ray])")
    driver = Context(EXP, {"scale": "ci", "device": "cpu"}, ResultStore(tmp_path / "driver", EXP.id), "driver-device")
    payload = distributed.dumps_task(driver, _sweep(driver), [3, 1])
    assert b"driver-device" not in payload and str(tmp_path).encode() not in payload  # the context stays behind
    worker = Context(EXP, {"scale": "ci", "device": "cpu"}, WorkerStore(tmp_path / "worker"), "worker-device")
    compute, group = loads_task(payload, worker)
    rows = list(compute(group))
    assert [i for i, _, _ in rows] == [3, 1]
    assert rows[0][1] == {"key": {"u": 3}, "device": "worker-device", "scale": "ci", "store": str(tmp_path / "worker")}


def test_the_worker_store_refuses_units_and_keeps_a_folder_for_checkpoints(tmp_path):
    store = WorkerStore(tmp_path / "x")
    assert store.dir == tmp_path / "x"
    with pytest.raises(RuntimeError, match="driver"):
        store.get({"a": 1})
    with pytest.raises(RuntimeError, match="driver"):
        store.put({"a": 1}, 2)


def test_checkpoints_go_to_the_drivers_folder_when_writable_else_to_a_temporary_folder(tmp_path, monkeypatch):
    folder = tmp_path / "results" / "full" / "paper" / "result"
    assert worker_folder(str(folder), "paper/result") == folder
    monkeypatch.setattr(distributed.os, "access", lambda path, mode: False)
    elsewhere = worker_folder(str(folder), "paper/result")
    assert elsewhere != folder and elsewhere.parts[-3:] == ("attnlab-ray", "paper", "result")


def test_without_ray_the_backend_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    with pytest.raises(RayUnavailable, match=r"pip install -e \.\[ray\]"):
        distributed.RayBackend().start()


def test_a_task_error_is_unwrapped_to_the_exception_the_task_raised():
    class Wrapped(Exception):
        cause = KeyError("x")

    assert isinstance(distributed._cause(Wrapped()), KeyError)
    plain = ValueError("y")
    assert distributed._cause(plain) is plain
