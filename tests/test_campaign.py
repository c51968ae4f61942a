"""The paper-scale campaign (`attnlab campaign`, attnlab/campaign.py): the committed plan is current and
covers every full preset; the run needs only torch and numpy, stops at its budget, survives SIGKILL and
resumes to the same results as an uninterrupted run. Tested on CPU with CI presets (`--scale ci`) in a
temporary store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from attnlab import campaign
from attnlab.core.store import REPO_ROOT
from attnlab.papers import registry

CHAPTER = "004-memorization/fig3-aot-vs-mlp"  # two programs at CI scale (attention only, 1 head + MLP), ~5 s
BARE = textwrap.dedent('''
    """Imports of the Jupyter stack, matplotlib and transformers fail, as on a bare GPU machine."""
    import importlib.abc, sys
    BLOCK = {"papermill", "nbformat", "nbclient", "jupyter", "jupytext", "matplotlib", "IPython", "ipykernel",
             "transformers", "jupyter_book", "myst_nb"}
    class _Bare(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCK:
                raise ModuleNotFoundError(f"No module named {name!r} (a bare machine)", name=name)
    sys.meta_path.insert(0, _Bare())
''')


def test_the_committed_plan_is_current_and_covers_every_full_preset():
    """results/campaign.toml is what `attnlab campaign --write-plan` writes (`attnlab book` rewrites it)."""
    assert campaign.PLAN.read_text() == campaign.plan_toml(), \
        "results/campaign.toml is stale: run `attnlab campaign --write-plan` (or `attnlab book`)"
    plan = campaign.read_plan()
    assert {r["id"] for r in plan} == {e.id for e in registry().values() if "full" in e.presets}
    for r in plan:
        assert r["cpu_s"] > 0 and r["gpu_s"] > 0 and r["cpu_basis"] and r["gpu_basis"], r["id"]
        assert r["models"] >= 1 and r["steps"] >= 1 and r["batch"] >= 1, r["id"]
    headline = [r for r in plan if r["headline"] and r["unlocks"]]
    assert plan[:len(headline)] == headline, "the papers' headline figures come first"


def test_size_reads_the_grid_steps_and_programs():
    cfg = {"seeds": 5, "d_list": [3, 4, 5], "H_list": [1, 6], "c_list": [1.0, 2.0], "steps": 4096, "batch_size": 256,
           "chunk": 16}
    assert campaign.size(cfg) == {"models": 30, "steps": 4096, "batch": 256, "programs": 2}
    epochs = {"tasks": "cumsum,cummin", "seeds": 10, "epochs": 2000, "samples": 30000, "batch": 1000, "steps": None}
    assert campaign.size(epochs) == {"models": 20, "steps": 60000, "batch": 1000, "programs": 1}


def _campaign(store: Path, tmp: Path, *args: str, **popen) -> subprocess.Popen:
    """`attnlab campaign --device cpu --scale ci --no-bench ARGS` in a bare process, store in `store`."""
    (tmp / "bare").mkdir(exist_ok=True)
    (tmp / "bare" / "sitecustomize.py").write_text(BARE)
    env = {**os.environ, "ATTNLAB_STORE": str(store), "ATTNLAB_THREADS": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(tmp / "bare"), str(REPO_ROOT / "lib")])}
    code = "import sys; from attnlab.campaign import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen([sys.executable, "-c", code, "--device", "cpu", "--scale", "ci", "--no-bench", *args],
                            env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, **popen)


def _results(store: Path) -> dict[str, str]:
    """Every stored unit's result (by file name: the key's hash), as canonical JSON; not the store's temporary
    files (`.tmp-*`), which a running campaign may be writing at that moment."""
    return {p.name: json.dumps(json.loads(p.read_text())["result"], sort_keys=True)
            for p in sorted((store / "ci" / CHAPTER).glob("*.json")) if not p.name.startswith(".tmp-")}


def test_the_campaign_runs_bare_stops_at_its_budget_and_resumes_after_sigkill(tmp_path):
    # the whole chapter, uninterrupted, with only torch and numpy importable
    whole = _campaign(tmp_path / "whole", tmp_path, "--budget", "5", "--only", CHAPTER)
    out, _ = whole.communicate(timeout=120)
    assert whole.returncode == 0, out
    reference = _results(tmp_path / "whole")
    assert len(reference) >= 2, out

    # SIGKILL once the first program is stored, then the same command: the same results
    store = tmp_path / "killed"
    run = _campaign(store, tmp_path, "--budget", "5", "--only", CHAPTER)
    deadline = time.monotonic() + 90
    while not _results(store) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    assert 0 < len(_results(store)) < len(reference), "killed after its first program, before its last"
    again = _campaign(store, tmp_path, "--budget", "5", "--only", CHAPTER, "--archive", str(tmp_path / "r.tar.gz"))
    out, _ = again.communicate(timeout=120)
    assert again.returncode == 0, out
    assert _results(store) == reference
    import tarfile

    with tarfile.open(tmp_path / "r.tar.gz") as tar:  # what a window hands back: one file
        assert any(n.startswith("results/full/") for n in tar.getnames())

    # a stored chapter is skipped; a budget too short for the next one stops it: exit 75, work left
    stopped = _campaign(store, tmp_path, "--budget", "0.55", "--only", CHAPTER, "001-positional/ood-scale")
    out, _ = stopped.communicate(timeout=120)
    assert stopped.returncode == campaign.EXIT_MORE, out
    assert "1 of 2 presets to run" in out and "rerun the same command" in out


def test_dry_run_prints_every_preset_with_its_estimates():
    out = subprocess.run([sys.executable, "-m", "attnlab.campaign", "--dry-run", "--budget", "10"],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "lib")})
    assert out.returncode in (0, campaign.EXIT_MORE), out.stderr
    todo = [r for r in campaign.read_plan() if not campaign._done(r, "full")]
    for r in todo:
        assert r["id"] in out.stdout and "min (" in out.stdout
    assert out.stdout.splitlines()[0].startswith("campaign on cuda, budget 10 min")


def test_bad_arguments_get_one_line_errors():
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "lib")}
    for args, words in ((["--budget", "0"], "--budget 0"), (["--dry-run", "--only", "nope/x"], "--only nope/x")):
        out = subprocess.run([sys.executable, "-m", "attnlab.campaign", *args], capture_output=True, text=True, env=env)
        assert out.returncode != 0 and words in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_attnlab_list_runs_on_a_bare_machine(tmp_path):
    """`attnlab list` (status from the executed chapters read as JSON) needs no Jupyter package."""
    (tmp_path / "sitecustomize.py").write_text(BARE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO_ROOT / "lib")])}
    out = subprocess.run([sys.executable, "-m", "attnlab.cli", "list", "--paper", "004"], capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "004-memorization/fig1a-accuracy-vs-heads" in out.stdout
