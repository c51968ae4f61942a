import math

import numpy as np
import pytest

from . import bounds as Bd


def test_theorem_5_1_is_lemma_b2_after_lemma_b1():
    for R in (1, 2, 5):
        for N in (2, 3, 8, 100, 1024):
            for s in (1, 4, 16):
                t = Bd.theorem_5_1(R, N, s)
                assert t == Bd.compose_b1_b2(R, N, s)
                assert t == {"nodes": N + 1, "layers": 2 * R * math.ceil(math.log2(N)), "heads": 2 * s}


def test_lemma_c6_on_random_pairs():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(10000, 7)) * 10.0 ** rng.integers(-3, 3, size=(10000, 1))
    y = x + rng.normal(size=x.shape) * 10.0 ** rng.integers(-4, 2, size=(10000, 1))
    assert Bd.lemma_c6_ratio(x, y).max() <= 2.0


def test_lemma_c8_optimum_and_the_printed_a1_is_infeasible():
    rng = np.random.default_rng(1)
    for _ in range(50):
        a, b, eps = rng.uniform(0.1, 5, 4), rng.uniform(0.1, 5, 4), rng.uniform(0.01, 1)
        val, e = Bd.lemma_c8(a, b, eps)
        assert np.sum(b * e) == pytest.approx(eps, rel=1e-12)
        assert np.sum(a / e ** 2) == pytest.approx(val, rel=1e-10)
        for _ in range(20):  # feasible perturbations never do better
            d = rng.normal(size=4) * 0.05 * e
            d -= b * (b @ d) / (b @ b)
            if np.all(e + d > 0):
                assert np.sum(a / (e + d) ** 2) >= val * (1 - 1e-12)
        nu = np.sum(a ** (1 / 3) * b ** (2 / 3))
        printed = eps * (a[0] / b) ** (1 / 3) / nu
        assert abs(np.sum(b * printed) - eps) > 1e-6 or np.allclose(a, a[0])


def test_app_e_printed_values():
    assert Bd.p_in_bound(8, 10) == pytest.approx(0.0034, abs=5e-5)
    assert Bd.p_in_eq28_loose(2) == pytest.approx(0.4375, abs=1e-12)
    assert Bd.chernoff(1000, 0.0625) == pytest.approx(0.99960, abs=1e-5)
    assert Bd.chernoff(1000, 0.0466) == pytest.approx(0.9870, abs=1e-4)
    assert Bd.p_event_a(3) + Bd.p_event_b(3) == pytest.approx(1.0)


def test_app_e_bounds_against_monte_carlo():
    rng = np.random.default_rng(2)
    M = 200_000
    for n, c in ((3, 2), (4, 5), (8, 3), (16, 2)):
        p = Bd.p_in_monte_carlo(n, c, M, rng)
        assert p <= Bd.p_in_bound(n, c) + 4 * math.sqrt(p * (1 - p) / M) + 1e-4
        assert Bd.p_in_bound(n, c) <= Bd.p_in_eq27_simple(n, c) + 1e-12
    for c in (3, 5, 10):  # n = 2: the printed Eq. 28 is below the truth, the corrected bound is not
        p = Bd.p_in_monte_carlo(2, c, M, rng)
        se = math.sqrt(p * (1 - p) / M)
        assert p > Bd.p_in_bound(2, c, printed=True) + 5 * se
        assert p <= Bd.p_in_bound(2, c) + 4 * se


def test_p_b2_in_matches_numerical_integration():
    for n in (2, 3, 5):
        for c in (2.0, 7.0):
            s = np.linspace(-c, -1, 200001)
            f = (1 / (1 - s) ** (n - 1) - 1 / (c - s) ** (n - 1))
            integral = np.trapezoid(f, s) * 2 ** n / ((c - 1) ** 2 * (n - 1))
            assert Bd.p_b2_in(n, c) == pytest.approx(integral, rel=1e-6)


def test_app_g_probabilities():
    assert Bd.p_all_samples(64, 3, 64 ** 2) * Bd.p_all_samples(64, 4, 64 ** 2) == pytest.approx(0.9948, abs=1e-4)
    for n in (4, 16):
        assert Bd.p_extremes_present(n, 3) <= Bd.p_extremes_exact(n, 3)
    rng = np.random.default_rng(3)
    assert Bd.discrepancy_lower_bound(rng, 256, 3, 1, 200) == pytest.approx(1.0, abs=1e-9)
    x = rng.integers(0, 4, size=(200000, 5))
    emp = np.mean((x.min(1) == 0) & (x.max(1) == 3))
    assert emp == pytest.approx(Bd.p_extremes_exact(5, 3), abs=0.005)
