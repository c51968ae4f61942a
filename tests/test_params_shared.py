"""Shared knobs are declared once (issue 25): a chapter's `seeds`, `seed`, `steps`, `lr`, `batch`, `n_test`,
`chunk`, `checkpoint_every` and `time_limit` are core.params' declarations (`SHARED`), with the chapter's own
description at most, so sibling chapters accept the same values and refuse the same ones."""

from dataclasses import replace

import pytest

from attnlab.core.params import SHARED
from attnlab.papers import registry

DECLARED = [(eid, p) for eid, exp in registry().items() for p in exp.params if p.name in SHARED]


def test_every_chapter_that_trains_uses_the_shared_knobs():
    assert {p.name for _, p in DECLARED} >= {"seeds", "seed", "steps", "lr", "batch", "time_limit"}


@pytest.mark.parametrize("eid,param", DECLARED, ids=[f"{e}:{p.name}" for e, p in DECLARED])
def test_a_shared_knob_keeps_its_kind_and_bounds(eid, param):
    shared = SHARED[param.name]
    assert replace(param, doc=shared.doc, nullable=shared.nullable) == shared, (
        f"{eid} declares its own {param.name!r} ({param.kind}, {param.min}..{param.max}); use "
        f"core.params.{param.name.upper()}.described(...)")
