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
