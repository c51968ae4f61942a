import math

import numpy as np
import pytest

from attnlab.papers.p003_allocation import constructions as C, expsums as E, reference as R


def test_reference_alibi_head_is_an_exponential_average():
    d, D, L, beta = 2, 4, 6, 0.7
    rng = np.random.default_rng(0)
    X = rng.normal(size=(d, L))
    W_E = np.zeros((D, d)); W_E[:d] = np.eye(d)
    W_V = np.zeros((d, D)); W_V[:, :d] = np.eye(d)
    head = R.Head(np.zeros((1, D)), np.zeros((1, D)), W_V, beta)
    model = R.OneLayer(W_E, np.zeros(D), [head], np.vstack([np.zeros((d, d)), np.eye(d)]), np.hstack([np.zeros((d, d)), np.eye(d)]))
    Y = R.forward(model, X)
    for t in range(L):
        w = np.exp(-beta * np.arange(t + 1))
        assert Y[:, t] == pytest.approx((X[:, t::-1] * w).sum(1) / w.sum(), abs=1e-14)


def test_exact_when_fits_are_exact_and_padding_long():
    # with d_m = d, a fit error ~1e-12 and a long zero padding, the construction is exact
    d, D, L = 3, 12, 10
    rng = np.random.default_rng(1)
    groups = ((3, 3), (4, 3))
    fits = [E.vandermonde_delta(1, 3, 0.2), E.vandermonde_delta(2, 4, 0.2)]
    P = [C.random_projection(3, d, rng) for _ in groups]
    rho = [np.eye(d), 2 * np.eye(d)]
    model = C.build(fits, groups, rho, d, D, P)
    X = rng.normal(size=(d, L))
    err = C.error_per_position(model, X, rho, pad=400)
    bound = C.deterministic_bound(X, fits, P, rho, pad=400)
    assert np.all(err <= bound + 1e-10)
    kern = [C.realised_kernel(f, L - 1, 400) for f in fits]
    want = sum(rho[m] @ sum(k[s] * X[:, L - 1 - s] for s in range(L)) for m, k in enumerate(kern))
    out = R.forward(model, np.concatenate([np.zeros((d, 400)), X], 1))[:, -1]
    assert out == pytest.approx(want, abs=1e-9)


def test_deterministic_bound_holds_with_compression_and_truncation():
    d, D, L = 6, 40, 12
    rng = np.random.default_rng(2)
    groups = ((4, 2), (3, 3))
    fits = [E.fit_delta(1, 4, max_coef=1e3), E.fit_delta(2, 3, max_coef=1e3)]
    P = [C.random_projection(dm, d, rng) for _, dm in groups]
    rho = [np.eye(d), np.eye(d), 0.5 * np.eye(d)]   # lag 3 is truncated
    model = C.build(fits, groups, rho[:2], d, D, P)
    for pad in (0, 3, 50):
        X = rng.normal(size=(d, L))
        assert np.all(C.error_per_position(model, X, rho, pad) <= C.deterministic_bound(X, fits, P, rho, pad) + 1e-10)


def test_projection_and_overlap_check():
    rng = np.random.default_rng(3)
    P = C.random_projection(3, 5, rng)
    assert P @ P.T == pytest.approx(np.eye(3), abs=1e-12)
    with pytest.raises(ValueError):
        C.build([E.fit_delta(1, 2)], ((2, 4),), [np.eye(4)], 4, 7, [C.random_projection(4, 4, rng)])


def test_projection_residual_mean_matches_lemma_b2():
    rng = np.random.default_rng(4)
    r = C.projection_residuals(32, 8, 400, rng)
    assert abs(r.mean() - math.sqrt(1 - 8 / 32)) < 0.02
    assert np.all(r <= 1 + 1e-12)
    assert C.projection_residuals(8, 8, 5, rng) == pytest.approx(np.zeros(5), abs=1e-12)
