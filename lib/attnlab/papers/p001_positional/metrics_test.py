import numpy as np
import pytest

from . import metrics as MT
from .tasks import TASKS, targets


def test_rounding_all_or_nothing_and_half_steps_for_the_median():
    y = np.array([[1.0, 2.0, 3.0], [0.5, 1.0, 1.5]])
    assert MT.rounding_correct(y + 0.49, y, "cumsum")[0] and not MT.rounding_correct(y + 0.51, y, "cumsum")[0]
    assert MT.rounding_correct(np.array([[0.6, 0.9, 1.4]]), y[1:], "cummedian")[0]  # nearest 0.5
    assert not MT.rounding_correct(np.array([[0.6, 0.9, 1.4]]), y[1:], "cumsum")[0]
    z = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 4.0]])
    one_bad = z.copy()
    one_bad[0, 2] += 0.7
    assert list(MT.rounding_correct(one_bad, z, "sort")) == [False, True]


def test_closeness_modes():
    y = np.array([[10.0, 0.1]])
    assert MT.closeness_correct(y + [[0.5, 0.05]], y)[0]  # 0.5 <= 0.05 + 0.5; 0.05 <= 0.05 + 0.005
    assert not MT.closeness_correct(y + [[0.6, 0.0]], y)[0]
    assert not MT.closeness_correct(y + [[0.0, 0.05]], y, mode="both")[0]  # 0.05 > 5 % of 0.1
    assert MT.closeness_correct(y + [[0.04, 0.004]], y, mode="both")[0]
    with pytest.raises(ValueError):
        MT.closeness_correct(y, y, mode="and")


@pytest.mark.parametrize("c", [1.0, 3.0, 10.0])
def test_integer_lists_have_integer_targets(c):
    x = MT.integer_lists(np.random.default_rng(0), 2000, 8, c)
    assert np.all(x == np.rint(x)) and np.abs(x).max() <= 2 * c
    for t in TASKS:
        y = targets(t, x)
        step = 0.5 if t == "cummedian" else 1.0
        assert np.all(y / step == np.rint(y / step))
        assert MT.rounding_correct(y + 0.2 * step, y, t).all()  # a near-perfect model scores 1
        assert MT.closeness_correct(y, y).all()
