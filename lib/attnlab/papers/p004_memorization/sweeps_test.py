"""The sweep's programs do not depend on what is already stored: a sweep interrupted after some
points of a program were stored, then resumed, stores exactly (bit for bit) what an uninterrupted
sweep stores."""

import json

from attnlab.core.experiment import Context
from attnlab.core.store import ResultStore
from attnlab.papers import get

from .sweeps import train_points

CFG = {"N": 6, "steps": 600, "batch_size": 0, "n_batches": 1, "lr_start": 1e-2, "lr_end": 5e-4, "task_seed": 0,
       "chunk": 4, "scale": "ci", "device": "cpu"}
POINTS = [{"d": 2, "d_h": 2, "H": h, "seed": s} for h in (1, 2, 3) for s in (0, 1)]


def _ctx(root) -> Context:
    exp = get("004-memorization/fig4-small-dimension")
    return Context(exp, dict(CFG), ResultStore(root, exp.id), "cpu", progress=False)


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
