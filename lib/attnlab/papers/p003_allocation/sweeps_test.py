import pytest
import torch

from attnlab.papers.p003_allocation import sweeps, tasks as T
from attnlab.papers.p003_allocation.models import EncoderConfig


def test_cosine():
    assert sweeps.cosine(0, 10) == 1.0
    assert sweeps.cosine(5, 10) == pytest.approx(0.5)
    assert sweeps.cosine(10, 10) == pytest.approx(0.0)
    assert sweeps.cosine(0, 10, warmup=2) == 0.5


def test_train_is_deterministic_and_learns():
    task = T.ConvTask(d=2, L=8)
    cfgs = [EncoderConfig(2, 8, 2, 8, 0), EncoderConfig(2, 8, 8, 8, 0)]
    a = list(sweeps.train(task, cfgs, [1e-2, 1e-2], 40, 16, 64, progress=False))
    b = list(sweeps.train(task, cfgs[:1], [1e-2], 40, 16, 64, progress=False))
    assert a[0][1]["eval_mse"] == pytest.approx(b[0][1]["eval_mse"], rel=1e-5)
    assert all(r["eval_mse"] < task.target_variance for _, r, _ in a)
    assert a[0][1]["curve"][-1][1] < a[0][1]["curve"][0][1]


def test_a_program_stopped_and_resumed_ends_bit_for_bit_as_an_uninterrupted_one(tmp_path):
    """Checkpointed every few steps past a long-passed time limit: each call trains to the next
    checkpoint, saves and raises Incomplete; the resumed program equals the uninterrupted one exactly."""
    from attnlab.core.checkpoint import Checkpoint, Deadline
    from attnlab.core.experiment import Incomplete

    task = T.ConvTask(d=2, L=8)
    cfgs = [EncoderConfig(2, 8, 2, 8, 0), EncoderConfig(2, 8, 8, 8, 1)]
    run = lambda ck=None: [r for _, r, _ in sweeps.train(task, cfgs, [1e-2, 3e-3], 10, 8, 32, progress=False,  # noqa: E731
                                                          curve_every=3, checkpoint=ck)]
    whole = run()
    for every in (4, 0):  # every 4 steps; with 0, a save at each step once the deadline has passed
        ck = Checkpoint(tmp_path / f"p{every}.pt", every=every, deadline=Deadline(1.0, start=0.0))
        stops = []
        while True:
            try:
                resumed = run(ck)
                break
            except Incomplete:
                stops.append(torch.load(ck.path, weights_only=True)["step"])
        assert stops == ([4, 8] if every else list(range(1, 10)))
        assert resumed == whole  # eval MSE, final loss and the curve, bit for bit
    assert run(Checkpoint(tmp_path / "none.pt", every=5)) == whole  # no deadline: saves and goes on
