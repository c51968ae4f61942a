import itertools

import numpy as np
import pytest

from . import constructions as C
from . import reference as R


def _perms(n):
    if n <= 7:
        return np.array(list(itertools.permutations(range(n))), dtype=np.float64)
    return np.random.default_rng(0).permuted(np.tile(np.arange(float(n)), (3000, 1)), axis=1)


@pytest.mark.parametrize("n", [2, 3, 5, 8, 32])
def test_lemma_b3_bound_holds_and_exact_error_formula(n):
    rng = np.random.default_rng(n)
    for _ in range(5):
        A_bar = C.pattern_matrix(rng.integers(0, n, size=n), n)  # any unique pattern, not only permutations
        for eps in (1e-1, 1e-3, 1e-6, 1e-12):
            T = C.temperature_for(n, eps)
            P, W_Q, W_K = C.lemma_b3_weights(A_bar, T)
            A = R.softmax(P @ W_Q @ W_K.T @ P.T)
            err = np.abs(A - A_bar).max()
            assert err <= eps * (1 + 1e-9) + 4e-16
            assert err <= C.lemma_b3_bound(n, T) * (1 + 1e-9) + 4e-16
            assert err == pytest.approx(C.lemma_b3_exact_error(n, T), rel=1e-9, abs=4e-16)


def test_lemma_b3_rejects_non_unique_patterns():
    with pytest.raises(ValueError):
        C.lemma_b3_weights(np.array([[1.0, 1.0], [0.0, 1.0]]), 1.0)


def test_remark_b6_realises_any_softmax_pattern():
    rng = np.random.default_rng(3)
    for n in (2, 5, 9):
        B = rng.dirichlet(np.ones(n), size=n)
        P = rng.normal(size=(n, n))
        W_Q, W_K = C.softmax_pattern_weights(B, P)
        assert np.abs(R.softmax(P @ W_Q @ W_K.T @ P.T) - B).max() < 1e-10


def test_relu_min_max_exact_on_integers_and_close_on_reals():
    a, b = np.meshgrid(np.arange(-50, 51.0), np.arange(-50, 51.0))
    assert np.array_equal(C.relu_min(a, b), np.minimum(a, b))
    assert np.array_equal(C.relu_max(a, b), np.maximum(a, b))
    x = np.random.default_rng(4).normal(size=(2, 10000)) * 10.0 ** np.random.default_rng(5).integers(-3, 9, 10000)
    scale = np.abs(x).max(0)
    assert np.all(np.abs(C.relu_min(*x) - np.minimum(*x)) <= 1e-15 * 4 * scale)
    assert np.all(np.abs(C.relu_max(*x) - np.maximum(*x)) <= 1e-15 * 4 * scale)


@pytest.mark.parametrize("n", range(1, 9))
def test_hand_built_models_exact_on_every_permutation(n):
    X = _perms(n)
    for scale in (1.0, 1e3, 1e9):  # integers stay exact in float64 at every scale used here
        x = X * scale
        for op, ref in (("sum", np.cumsum(x, 1)), ("min", np.minimum.accumulate(x, 1))):
            P, layers = C.scan_model(n, op)
            assert len(layers) == C.rounds_for(n) and layers[0].heads == 2
            assert np.array_equal(C.decode(R.forward(C.encode(x), P, layers, "hardmax")), ref)
        P, layers = C.tree_min_model(n)
        assert np.array_equal(C.decode(R.forward(C.encode(x), P, layers, "hardmax"))[:, -1], x.min(1))
        P, layers = C.oets_model(n)
        assert len(layers) == n + 1
        assert np.array_equal(C.decode(R.forward(C.encode(x, 2), P, layers, "hardmax")), np.sort(x, 1))


def test_odd_even_sort_needs_n_rounds_not_n_minus_1():
    for n in range(3, 9):
        X = _perms(n)
        assert not np.all(C.oets_reference(X, n - 1) == np.sort(X, 1))  # App. A.3's n − 1 rounds fail
        assert np.all(C.oets_reference(X, n) == np.sort(X, 1))
        P, layers = C.oets_model(n, rounds=n - 1)
        assert not np.array_equal(C.decode(R.forward(C.encode(X, 2), P, layers, "hardmax")), np.sort(X, 1))
    assert C.oets_reference(np.array([3.0, 2.0, 1.0]), 2).tolist() == [2.0, 1.0, 3.0]
    assert np.all(C.oets_reference(_perms(2), 1) == np.sort(_perms(2), 1))  # n = 2: one round suffices


@pytest.mark.parametrize("op", ["sum", "min"])
def test_softmax_error_within_derived_bound_and_linear_in_scale(op):
    x = np.random.default_rng(6).uniform(-1, 1, size=(200, 8))
    ref = np.cumsum if op == "sum" else np.minimum.accumulate
    for T in (5.0, 10.0, 20.0):
        P, layers = C.scan_model(8, op, T=T)
        errs = []
        for c in (1.0, 10.0, 100.0):
            err = np.abs(C.decode(R.forward(C.encode(c * x), P, layers)) - ref(c * x, 1)).max()
            assert err <= C.softmax_error_bound(8, len(layers), T, c * np.abs(x).max(), op) + 1e-12 * c
            errs.append(err)
        if T < 20:
            assert errs[2] / errs[0] == pytest.approx(100.0, rel=1e-6)  # the error scales with the input
