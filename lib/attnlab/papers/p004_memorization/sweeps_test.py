"""The sweep's programs do not depend on what is already stored: a sweep interrupted after some
points of a program were stored, then resumed, stores exactly (bit for bit) what an uninterrupted
sweep stores."""

import json

import torch

from attnlab.core.experiment import Context
from attnlab.core.store import ResultStore
from attnlab.papers import get

from .sweeps import train_points

CFG = {"N": 6, "steps": 600, "batch_size": 0, "n_batches": 1, "lr_start": 1e-2, "lr_end": 5e-4, "task_seed": 0,
       "chunk": 4, "scale": "ci", "device": "cpu"}
POINTS = [{"d": 2, "d_h": 2, "H": h, "seed": s} for h in (1, 2, 3) for s in (0, 1)]


def _ctx(root) -> Context:
    exp = get("004-memorization/fig4-small-dimension")
    return Context(exp, dict(CFG), ResultStore(root, exp.id), torch.device("cpu"), progress=False)


def _stored(ctx) -> dict[str, str]:
    return {p.name: json.dumps(json.loads(p.read_text())["result"], sort_keys=True) for p in ctx.store.dir.glob("*.json")}


def test_a_resumed_sweep_trains_the_programs_of_an_uninterrupted_one(tmp_path):
    whole = _ctx(tmp_path / "whole")
    rows = train_points(whole, POINTS, "sweep")
    reference = _stored(whole)
    assert len(reference) == len(POINTS)
    resumed = _ctx(tmp_path / "resumed")
    resumed.store.dir.mkdir(parents=True)
    first = sorted(reference)[:3]  # a stop after three stored points: one program is partly stored
    for name in first:
        (resumed.store.dir / name).write_bytes((whole.store.dir / name).read_bytes())
    again = train_points(resumed, POINTS, "sweep")
    assert _stored(resumed) == reference
    assert [r["accuracy"] for r in again] == [r["accuracy"] for r in rows]
    assert resumed.store.computed == len(POINTS) - len(first)


def test_a_sweep_stopped_at_its_time_limit_killed_and_resumed_stores_what_an_uninterrupted_one_does(tmp_path):
    """The headless CLI on a tiny Fig. 4 sweep (the authors' sampled batches, two programs): exit 75 at
    the time limit, SIGKILL mid-program, then to the end; the stored units equal, bit for bit, those
    of an uninterrupted run without checkpoints."""
    from attnlab.core.checkpoint_test import stop_kill_resume

    tiny = {"N": 6, "d": 2, "d_h_list": "2", "H_list": "1,3", "seeds": 1, "steps": 400, "batch_size": 8,
            "n_batches": 3, "chunk": 1, "checkpoint_every": 100}
    resumed, reference = stop_kill_resume(get("004-memorization/fig4-small-dimension"), tiny, tmp_path, kill_at=200)
    assert len(reference) == 2 and resumed == reference
