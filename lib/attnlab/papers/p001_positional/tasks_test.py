import numpy as np
import pytest

from .tasks import TASKS, sample_lists, targets


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


def _brute(task, row):
    n = len(row)
    out = []
    for i in range(n):
        pre = list(row[: i + 1])
        if task == "cumsum":
            out.append(sum(pre))
        elif task == "cummin":
            out.append(min(pre))
        elif task == "cummedian":
            s = sorted(pre)
            m = len(s)
            out.append(s[m // 2] if m % 2 else (s[m // 2 - 1] + s[m // 2]) / 2)
        elif task == "maxsub":
            out.append(max(sum(pre[j: k + 1]) for j in range(len(pre)) for k in range(j, len(pre))))
    return sorted(row) if task == "sort" else out


@pytest.mark.parametrize("task", TASKS)
def test_targets_equal_brute_force(task):
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 8):
        x = np.concatenate([sample_lists(rng, 40, n, 1.0), sample_lists(rng, 40, n, 10.0),
                            rng.integers(-3, 4, size=(40, n)).astype(float)])  # ties and all-negative lists
        y = targets(task, x)
        assert y.shape == x.shape
        ref = np.array([_brute(task, list(r)) for r in x])
        np.testing.assert_allclose(y, ref, rtol=0, atol=1e-12)


def test_target_examples_and_errors():
    x = np.array([[3.0, -1.0, 2.0, -5.0, 4.0]])
    assert targets("cumsum", x).tolist() == [[3, 2, 4, -1, 3]]
    assert targets("cummin", x).tolist() == [[3, -1, -1, -5, -5]]
    assert targets("cummedian", x).tolist() == [[3, 1, 2, 0.5, 2]]  # even counts: the midpoint
    assert targets("sort", x).tolist() == [[-5, -1, 2, 3, 4]]
    assert targets("maxsub", x).tolist() == [[3, 3, 4, 4, 4]]
    assert targets("maxsub", np.array([[-2.0, -1.0, -3.0]])).tolist() == [[-2, -1, -1]]  # non-empty subarrays
    y3 = targets("cummedian", np.arange(24.0).reshape(2, 3, 4))  # any leading axes
    assert y3.shape == (2, 3, 4) and y3[1, 2].tolist() == [20, 20.5, 21, 21.5]
    with pytest.raises(ValueError, match="choose one of"):
        targets("cumprod", x)
