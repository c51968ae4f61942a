import math

import pytest
import torch

from attnlab.papers.p003_allocation import tasks as T


def test_convolve_is_the_4gram_sum_with_zero_padding():
    x = torch.randn(3, 10, 2, dtype=torch.float64)
    y = T.convolve(x, T.NGRAM4)
    for t in range(10):
        want = sum(x[:, t - i] for i in range(1, 5) if t - i >= 0) if t > 0 else torch.zeros(3, 2, dtype=torch.float64)
        assert torch.equal(y[:, t], want) or torch.allclose(y[:, t], want, atol=0, rtol=0)


def test_stream_depends_on_task_and_seed_only():
    task = T.ConvTask(d=4, L=8)
    a, b = next(T.batches(task, 5, 0)), next(T.batches(task, 5, 0))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    c = next(T.batches(task, 5, 1))
    assert not torch.equal(a[0], c[0])
    x, y = T.sample(T.ConvTask(d=4, L=8, noise=0.0), 5, torch.Generator().manual_seed(0), torch.float64)
    assert torch.allclose(y, T.convolve(x, T.NGRAM4), atol=1e-15)
    assert task.target_variance == 4.0


def test_kernels():
    for fam, a in (("exp", 2.0), ("poly", 1.5), ("delta", 3), ("airy", 2.0)):
        k = T.kernel(fam, a, 16)
        assert k[0] == 0.0 and sum(abs(v) for v in k) == pytest.approx(1.0)
    assert T.kernel("delta", 3, 8)[3] == 1.0
    assert T._airy(0.0) == pytest.approx(0.355028053887817)
    assert T._airy(-2.338107410459767) == pytest.approx(0.0, abs=1e-9)  # first zero of Ai
    with pytest.raises(ValueError):
        T.kernel("nope", 1.0, 4)
