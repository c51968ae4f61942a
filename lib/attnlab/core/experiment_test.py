"""Context.units with a plan: the groups (one program each) run in the plan's order, each unit is
stored as it arrives, a resumed batch plans only what is missing, a bad plan or a group that
yields a foreign unit is refused, and a non-local backend gets exactly the planned groups."""

from __future__ import annotations

import pytest

from .experiment import Context, Experiment
from .store import ResultStore

EXP = Experiment(id="test/units", label="", title="", params=(), presets={"ci": {}}, compute=lambda ctx: {})


def _ctx(tmp_path, backend=None) -> Context:
    return Context(EXP, {"scale": "ci", "device": "cpu"}, ResultStore(tmp_path, EXP.id), "cpu", progress=False,
                   backend=backend)


KEYS = [{"u": i} for i in range(7)]


def pairs(missing):
    """Groups of two, largest index first (an order the store lookup would not give)."""
    todo = sorted(missing, reverse=True)
    return [todo[j:j + 2] for j in range(0, len(todo), 2)]


def test_groups_run_in_plan_order_one_call_each_and_every_unit_is_stored(tmp_path):
    ctx, calls = _ctx(tmp_path), []

    def compute(group):
        calls.append(list(group))
        for i in group:
            yield i, {"square": i * i}, 0.5

    got = ctx.units(KEYS, compute, pairs)
    assert calls == [[6, 5], [4, 3], [2, 1], [0]]
    assert got == [{"square": i * i} for i in range(7)]
    assert ctx.store.computed == 7 and len(ctx.store.entries()) == 7


def test_a_resumed_batch_plans_only_the_missing_units(tmp_path):
    ctx = _ctx(tmp_path)
    for i in (1, 4, 5):
        ctx.store.put(KEYS[i], {"square": i * i})
    seen = []

    def plan(missing):
        seen.append(list(missing))
        return pairs(missing)

    def compute(group):
        for i in group:
            yield i, {"square": i * i}, 0.0

    assert ctx.units(KEYS, compute, plan) == [{"square": i * i} for i in range(7)]
    assert seen == [[0, 2, 3, 6]] and ctx.store.computed == 4 and ctx.store.hits == 3
    assert ctx.units(KEYS, compute, lambda m: pytest.fail("nothing is missing: no plan")) is not None


def test_without_a_plan_all_missing_units_are_one_call(tmp_path):
    ctx, calls = _ctx(tmp_path), []

    def compute(missing):
        calls.append(list(missing))
        for i in missing:
            yield i, i, 0.0

    assert ctx.units(KEYS, compute) == list(range(7)) and calls == [list(range(7))]


@pytest.mark.parametrize("bad", [
    lambda m: [m[:2], m[1:]],          # a unit in two groups
    lambda m: [m[:-1]],                # a unit in none
    lambda m: [m, [99]],               # a unit that is not missing
    lambda m: [m, []],                 # an empty group
])
def test_a_plan_that_is_not_a_partition_of_the_missing_units_is_refused(tmp_path, bad):
    ctx = _ctx(tmp_path)
    with pytest.raises(ValueError, match="a plan must split"):
        ctx.units(KEYS, lambda g: iter(()), bad)
    assert ctx.store.entries() == []


def test_a_group_that_yields_a_unit_of_another_group_is_refused(tmp_path):
    def compute(group):
        yield group[0], 0, 0.0
        yield 0 if 0 not in group else 6, 0, 0.0

    with pytest.raises(ValueError, match="not in its group"):
        _ctx(tmp_path).units(KEYS, compute, pairs)


class Recorder:
    """A stand-in backend: records the groups it is given and computes them in order."""

    def __init__(self):
        self.groups = None

    def run_groups(self, ctx, keys, compute, groups, desc=""):
        self.groups = groups
        return {i: r for g in groups for i, r, _ in compute(g)}


def test_a_non_local_backend_gets_the_planned_groups_and_unplanned_batches_stay_local(tmp_path):
    rec = Recorder()
    with Context.using(rec):
        ctx = _ctx(tmp_path)
        assert ctx.backend is rec
        got = ctx.units(KEYS, lambda g: ((i, -i, 0.0) for i in g), pairs)
        assert rec.groups == [[6, 5], [4, 3], [2, 1], [0]] and got == [-i for i in range(7)]
        rec.groups = None
        assert _ctx(tmp_path / "b").units(KEYS, lambda m: ((i, i, 0.0) for i in m)) == list(range(7))
        assert rec.groups is None  # no plan: computed in this process, as before
    assert Context.default_backend == "local" and _ctx(tmp_path).backend == "local"


def test_a_stored_run_that_predates_a_knob_counts_with_the_value_it_had():
    from attnlab.core.params import SEEDS
    exp = Experiment(id="test/added", label="", title="", params=(SEEDS,), presets={"full": {"seeds": 1}},
                     compute=lambda ctx: {}, added_since_stored={"seeds": 1})
    assert exp.differs_from_preset({"scale": "full", "device": "auto"}) == []
    assert exp.differs_from_preset({"scale": "full", "device": "auto", "seeds": 3}) == ["seeds"]
    older = Experiment(id="test/plain", label="", title="", params=(SEEDS,), presets={"full": {"seeds": 1}},
                       compute=lambda ctx: {})
    assert older.differs_from_preset({"scale": "full", "device": "auto"}) == ["seeds"]
