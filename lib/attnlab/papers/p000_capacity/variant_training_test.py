"""`fit`: a resumed fit (from a checkpoint, after a stop at the deadline or a kill) ends bit for bit as
an uninterrupted one, the early-stopping rule's state included."""

import pytest
import torch

from attnlab.core.checkpoint import Checkpoint, Deadline
from attnlab.core.experiment import Incomplete

from .variant_training import fit, Plateau, Threshold


def _fit(rule, checkpoint=None, kill_at=None, steps=60):
    torch.manual_seed(0)
    W = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    V = torch.randn(2, 2, dtype=torch.float64, requires_grad=True)  # a second group of 2 replicas

    def loss_at(s):
        if s == kill_at:
            raise KeyboardInterrupt  # stands in for SIGKILL: nothing saved at the stop
        g = torch.Generator().manual_seed(s)
        t = torch.randn(4, generator=g, dtype=torch.float64)
        return torch.cat([((W - t) ** 2).mean(1), ((V - t[:2]) ** 4).mean(1)])

    def validate():
        with torch.no_grad():
            return torch.cat([(W ** 2).mean(1), (V ** 2).mean(1)])

    log = fit([[W], [V]], loss_at, steps, 0.05, validate=validate, rule=rule, check_every=4, weight_decay=0.01,
              checkpoint=checkpoint)
    return W.detach(), V.detach(), (log.steps, log.stopped, log.final_loss)


@pytest.mark.parametrize("rule", [lambda: Plateau(patience=2, rel=0.05), lambda: Threshold(level=0.3, patience=2)])
def test_a_fit_stopped_or_killed_and_resumed_ends_bit_for_bit_as_an_uninterrupted_one(rule, tmp_path):
    whole = _fit(rule())
    assert any(whole[2][1]) and not all(whole[2][1])  # the rule froze some replicas, not all
    ck = Checkpoint(tmp_path / "a.pt", every=0, deadline=Deadline(1.0, start=0.0))
    for calls in range(1, 100):
        try:
            resumed = _fit(rule(), ck)
            break
        except Incomplete:
            pass
    assert calls > 5
    assert all(torch.equal(a, b) for a, b in zip(resumed[:2], whole[:2])) and resumed[2] == whole[2]
    ck = Checkpoint(tmp_path / "b.pt", every=9)
    with pytest.raises(KeyboardInterrupt):
        _fit(rule(), ck, kill_at=21)
    assert torch.load(ck.path, weights_only=True)["step"] == 18
    resumed = _fit(rule(), ck)
    assert all(torch.equal(a, b) for a, b in zip(resumed[:2], whole[:2])) and resumed[2] == whole[2]
