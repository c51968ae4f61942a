import pytest

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
