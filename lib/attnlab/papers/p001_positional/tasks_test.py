import numpy as np
import pytest

from .tasks import sample_lists


def test_bounds_and_rejection():
    rng = np.random.default_rng(0)
    x = sample_lists(rng, 5000, 8, 1.0)
    assert x.shape == (5000, 8) and np.abs(x).max() <= 2
    for c in (2.0, 10.0):
        x = sample_lists(rng, 5000, 8, c)
        assert np.abs(x).max() <= 2 * c
        inside = np.all(np.abs(x) <= 2, axis=1).mean()
        assert inside < (0.12 if c == 2 else 0.006)  # App. E: p_in ≤ 0.108 (c = 2), 0.0034 (c = 10) at n = 8


def test_seeded_and_validated():
    a = sample_lists(np.random.default_rng(1), 10, 4, 3.0)
    b = sample_lists(np.random.default_rng(1), 10, 4, 3.0)
    assert np.array_equal(a, b)
    with pytest.raises(ValueError):
        sample_lists(np.random.default_rng(0), 1, 4, 0.5)
