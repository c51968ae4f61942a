import time
from types import SimpleNamespace

import pytest
import torch

from attnlab.core.checkpoint import Checkpoint, Deadline, deadline_of, program_checkpoint
from attnlab.core.experiment import Incomplete


def test_deadline_zero_is_no_limit_and_a_past_one_raises_incomplete():
    assert not Deadline(0) and not Deadline(None).passed()
    Deadline(0).check()
    late = Deadline(1.0, start=time.time() - 61)
    assert late and late.passed()
    with pytest.raises(Incomplete, match="time limit of 1 minutes"):
        late.check("before the next program")


def test_save_is_atomic_and_load_gives_the_same_bits(tmp_path):
    ck = Checkpoint(tmp_path / "a" / "b.pt", every=3)
    assert ck.load() is None
    x = torch.randn(5, dtype=torch.float64)
    ck.save({"x": x, "step": 3, "curve": [[0.5, 0.25]], "m": [x * 2]})
    got = ck.load()
    assert torch.equal(got["x"], x) and got["step"] == 3 and got["curve"] == [[0.5, 0.25]]
    assert [p.name for p in ck.path.parent.iterdir()] == ["b.pt"]  # no temporary file left
    assert ck.due(6) and not ck.due(7)
    late = Deadline(1.0, start=0.0)
    assert not Checkpoint(ck.path, every=3, deadline=late).due(7)  # with `every`, at the next checkpoint
    assert Checkpoint(ck.path, every=0, deadline=late).due(7) and not Checkpoint(ck.path).due(7)
    ck.remove()
    assert ck.load() is None


def test_a_program_checkpoint_lives_under_the_store_root_and_only_when_asked_for(tmp_path):
    def ctx(**cfg):
        exp = SimpleNamespace(id="004-x/fig-y")
        return SimpleNamespace(experiment=exp, config=cfg, store=SimpleNamespace(dir=tmp_path / "ci" / "004-x" / "fig-y"))

    assert program_checkpoint(ctx(), [{"a": 1}]) is None
    assert program_checkpoint(ctx(checkpoint_every=0, time_limit=0.0), [{"a": 1}]) is None
    ck = program_checkpoint(ctx(checkpoint_every=10), [{"a": 1}])
    assert ck.path.parent == tmp_path / "ci" / "checkpoints" / "004-x" / "fig-y" and ck.every == 10
    assert ck.path != program_checkpoint(ctx(checkpoint_every=10), [{"a": 2}]).path
    c = ctx(time_limit=5.0)
    assert deadline_of(c) is deadline_of(c) and program_checkpoint(c, [{"a": 1}]).deadline is deadline_of(c)


def test_past_the_deadline_a_run_stops_before_its_second_program_not_its_first():
    late = Deadline(1.0, start=time.time() - 61)
    late.next_program()  # the first program of the run always starts: every call makes progress
    with pytest.raises(Incomplete, match="before the next program"):
        late.next_program("before the next program")
    on_time = Deadline(10.0)
    for _ in range(3):
        on_time.next_program()


# ------------------------------------------------------------------ the drill every paper's sweeps pass

def _untimed(x):
    """`x` without its "seconds" entries (a unit's wall time, which no two runs share)."""
    if isinstance(x, dict):
        return {k: _untimed(v) for k, v in x.items() if k != "seconds"}
    return [_untimed(v) for v in x] if isinstance(x, list) else x


def _stored(folder) -> dict:
    """{entry file: its result, untimed} of one result folder of a store."""
    import json

    return {p.name: _untimed(json.loads(p.read_text())["result"]) for p in sorted(folder.glob("[0-9a-f]*.json"))}


def _checkpoint_steps(folder) -> list[int]:
    """The step of every (complete) checkpoint in `folder`."""
    steps = []
    for p in folder.glob("*.pt") if folder.is_dir() else []:
        if p.name.startswith("."):
            continue  # a temporary file being written
        try:
            steps.append(int(torch.load(p, weights_only=True)["step"]))
        except (OSError, RuntimeError, EOFError, KeyError):  # replaced while being read
            pass
    return steps


def stop_kill_resume(exp, overrides: dict, tmp_path, kill_at: int) -> tuple[dict, dict]:
    """The stop-and-resume drill of a chapter (`exp`, an Experiment) at CI scale with `overrides` (including checkpoint_every),
    through the headless CLI with its store in a temporary folder (ATTNLAB_STORE): (1) with
    `-p time_limit 1e-9`: it must exit with 75, leaving a checkpoint; (2) again without a limit, killed
    with SIGKILL as soon as a checkpoint of step >= `kill_at` is written; (3) again: it must finish
    and leave no checkpoint. Returns the units it stored and those of an uninterrupted run of the
    same config without checkpoints (in this process), without their "seconds", for the caller to
    compare."""
    import os
    import signal
    import subprocess
    import sys

    result_id = exp.id
    config = exp.config("ci", **{**overrides, "checkpoint_every": 0, "time_limit": 0.0, "device": "cpu"})
    exp.run(config, store_root=tmp_path / "reference", progress=False)
    store = tmp_path / "store"
    env = {**os.environ, "ATTNLAB_STORE": str(store), "ATTNLAB_THREADS": "1"}
    args = [sys.executable, "-m", "attnlab.cli", "run", result_id, "--headless", "-q", "-p", "device", "cpu"]
    for k, v in overrides.items():
        args += ["-p", k, str(v)]
    checkpoints = store / "ci" / "checkpoints" / result_id

    first = subprocess.run(args + ["-p", "time_limit", "1e-9"], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 75 and "incomplete" in first.stderr, first.stderr[-2000:]
    assert _checkpoint_steps(checkpoints), "a run stopped at its time limit leaves its checkpoint"

    run = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        give_up = time.time() + 300
        while max(_checkpoint_steps(checkpoints), default=0) < kill_at:
            assert run.poll() is None, f"the run ended (code {run.returncode}) before a checkpoint at {kill_at}"
            assert time.time() < give_up
            time.sleep(0.005)
        run.send_signal(signal.SIGKILL)
    finally:
        run.kill()
        run.wait()
    assert run.returncode == -signal.SIGKILL

    last = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert last.returncode in (0, 1) and "Traceback" not in last.stderr, last.stderr[-2000:]  # 1: a claim failed
    assert not _checkpoint_steps(checkpoints), "a finished program removes its checkpoint"
    return _stored(store / "ci" / result_id), _stored(tmp_path / "reference" / result_id)
