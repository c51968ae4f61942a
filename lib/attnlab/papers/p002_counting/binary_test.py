"""Tests of the App. B.3.1 binary-code softmax construction (float64, exact checks)."""

import math

import numpy as np
import pytest

from . import binary as B
from . import bounds, tasks


def test_codes_dimension_and_epsilon():
    for T in (3, 7, 8, 31, 32, 63, 64):
        V = B.binary_codes(T)
        assert V.shape == (T, math.ceil(math.log2(T + 1)))
        assert np.allclose(np.linalg.norm(V, axis=1), 1)
        assert len({tuple(r) for r in np.round(V, 12)}) == T  # distinct codes
        assert B.epsilon(V) >= B.paper_epsilon(T) - 1e-12  # eq. 78 bounds the overlaps
        assert B.min_overlap(V) >= 0
    assert B.code_dim(32) == 6 and B.model_dim(32) == 8 and B.model_dim(32, "d'+1") == 7
    assert B.model_dim(31) == 7 == bounds.min_d_formula("softmax_binary", 31, 10)
    assert B.model_dim(32) == bounds.min_d_formula("softmax_binary", 32, 10)
    assert abs(B.epsilon(B.binary_codes(32)) - (1 - math.sqrt(0.8))) < 1e-12


def test_circle_frame_epsilon():
    for T in (8, 32, 64):
        V = B.circle_frame(T)
        # ε -> 1/(2T²) (the text says rate 1/T); the largest overlap is between adjacent middle
        # tokens, close to but not exactly sqrt(T² - 1)/T
        assert 0 < B.epsilon(V) / B.circle_epsilon_approx(T) - 1 < 1.5 / T
        assert B.epsilon(V) * T < 0.1


def test_kappa_threshold_eq92():
    assert abs(B.kappa_threshold(B.paper_epsilon(32), 10) - 25.218) < 0.01
    assert abs(B.kappa_threshold(B.epsilon(B.circle_frame(32)), 10) - 4494.4) < 1.0
    for eps, L in ((0.1, 10), (0.05, 15), (0.3, 4)):
        k = B.kappa_threshold(eps, L)
        assert B.separation(k * (1 + 1e-6), eps, L, 0.01) > 0 > B.separation(k * (1 - 1e-6), eps, L, 0.01)
    with pytest.raises(ValueError):
        B.kappa_threshold(0.0, 10)


@pytest.mark.parametrize("variant", B.VARIANTS)
def test_exhaustive_small(variant):
    T, L = 5, 5
    x = tasks.all_sequences(T, L)
    ks = B.kappa_threshold(B.epsilon(B.binary_codes(T)), L)
    r = B.check(B.build(T, L, 1.01 * ks, variant=variant), x)
    assert r["accuracy"] == 1.0 and r["inside_ranges"] and r["separated"]
    assert r["gamma_minus_bos_weight"] < 1e-12
    assert r["counts"] == list(range(1, L + 1))
    # below the threshold the two-token extremes overlap: no readout is exact
    r = B.check(B.build(T, L, 0.99 * ks, variant=variant), x)
    assert not r["separated"] and r["accuracy"] < 1.0


@pytest.mark.parametrize("variant", B.VARIANTS)
def test_T32_L10(variant):
    T, L = 32, 10
    x = np.concatenate([tasks.sample_code(2000, T, L, 0), tasks.two_token_sequences(T, L)])
    for kappa in (25.22, 50.0, 200.0):
        r = B.check(B.build(T, L, kappa, variant=variant), x)
        assert r["accuracy"] == 1.0 and r["inside_ranges"] and r["separated"]
    assert B.check(B.build(T, L, 10.0, variant=variant), x)["accuracy"] < 0.7


def test_circle_frame_and_float32():
    T, L = 32, 10
    x = np.concatenate([tasks.sample_code(1000, T, L, 0), tasks.two_token_sequences(T, L, 200, 0)])
    c = B.build(T, L, 30000.0, alpha=1e-5, kind="circle")
    assert c.weights.d == 4
    assert B.check(c, x)["accuracy"] == 1.0 and B.accuracy_float32(c, x) == 1.0
    assert B.check(B.build(T, L, 3000.0, alpha=1e-5, kind="circle"), x)["accuracy"] < 0.8
