import math

import numpy as np
import pytest

from attnlab.papers.p003_allocation import bounds, expsums as E


def test_l1_error_exact_and_tail_bound():
    alpha, beta = [2.0, -1.0], [0.5, 1.5]
    s = np.arange(5000)
    brute = np.abs((s == 2) - (2 * np.exp(-0.5 * s) - np.exp(-1.5 * s))).sum()
    assert E.l1_error(alpha, beta, 2, S=5000) == pytest.approx(brute, abs=1e-12)
    assert E.l1_error(alpha, beta, 2, S=40) >= brute - 1e-15  # the tail bound can only add
    assert E.l1_error([0.0], [1.0], 3) == 1.0


def test_two_term_closed_form():
    f = E.two_term_delta1(0.01, 0.005)
    assert f(0) == pytest.approx(0.0, abs=1e-12) and f(1) == pytest.approx(1.0)
    assert f.l1 < 0.016 and E.two_term_delta1(0.001, 0.0005).l1 < f.l1


def test_vandermonde_exact_on_first_lags():
    for T in (1, 2, 3):
        f = E.vandermonde_delta(T, T + 1, 0.01)
        assert f(np.arange(T + 1)) == pytest.approx((np.arange(T + 1) == T).astype(float), abs=1e-9)
        assert E.vandermonde_delta(T, T + 1, 0.001).l1 < f.l1
    with pytest.raises(ValueError):
        E.vandermonde_delta(3, 3, 0.01)


def test_fit_beats_bound_when_m_exceeds_T_and_respects_cap():
    for T, m in ((1, 2), (2, 4), (3, 8)):
        f = E.fit_delta(T, m)
        assert f.l1 <= bounds.attention_term(T, m)
        assert f.l1 == pytest.approx(E.l1_error(f.alpha, f.beta, T, 4096), abs=1e-9)
    g = E.fit_delta(2, 4, max_coef=10.0)
    assert max(abs(a) for a in g.alpha) <= 10.0


def test_one_term_cannot_beat_zero():
    # m = 1, T = 1: error = |a| (1 + r^2/(1-r)) + |1 - a r| >= 1 (its derivative in a is >= 1 - r + r^2/(1-r) > 0)
    for r in np.linspace(0.01, 0.99, 50):
        for a in np.linspace(-5, 5, 101):
            assert E.l1_error([a], [-math.log(r)], 1, S=4000) >= 1 - 1e-9


def test_best_two_terms_is_exact_regression():
    rates = np.array([[0.3, 0.6], [0.01, 0.02]])
    best = E.best_l1_two_terms(1, rates, S=20)
    # T = 1 with tiny rates: near 0 (the closed form); and never above the zero function
    assert best[1] < 0.05 and np.all(best <= 1.0)
    # brute-force check of the first pair on a coefficient grid
    s = np.arange(20)
    A = rates[0][None, :] ** s[:, None]
    grid = np.linspace(-30, 30, 121)
    errs = [np.abs((s == 1) - A @ [a, b]).sum() for a in grid for b in grid]
    assert best[0] <= min(errs) + 1e-12
