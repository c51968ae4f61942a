"""Theorem 2 (corrected) checked like a proof: float64, every sequence, our reference table."""

import math

import numpy as np
import pytest

from attnlab.papers.p004_memorization import theorem2 as t2

# (N, d, eta_max): the configurations of our earlier evaluation of the corrected bound (other random draws).
TABLE = [(10, 400, 0.1), (10, 400, 0.001), (1000, 256, 0.1), (1000, 256, 0.01), (2000, 512, 0.01)]


def _case(N, d, eta, seed=0):
    W = t2.near_orthogonal_unembedding(N, d, seed)
    g, pi = t2.noisy_lookup(N, eta, seed=seed)
    H = t2.entropy(pi)
    lam, res = t2.solve_lambda(W, g, H)
    return W, g, pi, H, lam, res


@pytest.mark.parametrize("N,d,eta_max", TABLE)
def test_kl_below_bound_every_sequence(N, d, eta_max):
    eta = np.random.default_rng(7).uniform(0, eta_max, 100)
    W, g, pi, H, lam, res = _case(N, d, eta)
    C = t2.coherence(W)
    assert C < 0.5
    kl = t2.construction_kl(W, g, pi, lam)
    bound = t2.per_sequence_bound(pi, g, C)
    assert np.all(kl > 0) and np.all(kl <= bound), (kl / bound).max()
    assert np.all(lam <= t2.lambda_bound(H, N, C) * (1 + 1e-12))  # the λ bound of App. A.3
    assert t2.simplified_bound(pi, g, C) >= kl.mean()
    assert res.max() < 1e-12


def test_exact_kl_equals_direct_kl():
    W, g, pi, H, lam, _ = _case(50, 300, np.linspace(1e-4, 0.6, 40))
    np.testing.assert_allclose(t2.construction_kl(W, g, pi, lam), t2.direct_kl(W, g, pi, lam), rtol=1e-9, atol=1e-14)


def test_lambda_solves_the_corrected_equation():
    W, g, pi, H, lam, res = _case(200, 100, np.geomspace(1e-8, 0.9, 60))
    a = t2.gaps(W, g)
    direct = np.log(np.exp(lam[:, None] * a).sum(1))  # no log1p tricks
    np.testing.assert_allclose(direct, H, rtol=1e-10, atol=1e-14)
    assert res.max() < 1e-12


def test_bound_goes_to_zero_with_eta():
    etas = np.geomspace(1e-9, 0.3, 12)
    W = t2.near_orthogonal_unembedding(1000, 256)
    C = t2.coherence(W)
    means = []
    for e in etas:
        g, pi = t2.noisy_lookup(1000, np.full(50, e))
        means.append(t2.per_sequence_bound(pi, g, C).mean())
    assert np.all(np.diff(means) > 0) and means[0] < 1e-6
    g, pi = t2.noisy_lookup(1000, np.zeros(5))  # a look-up table: λ = inf, KL = bound = 0
    lam, _ = t2.solve_lambda(W, g, t2.entropy(pi))
    assert np.all(np.isinf(lam))
    assert np.all(t2.construction_kl(W, g, pi, lam) == 0) and np.all(t2.per_sequence_bound(pi, g, C) == 0)


def test_bound_is_zero_for_uniform():
    N = 30
    W = t2.near_orthogonal_unembedding(N, 400)
    g = np.arange(5)
    pi = np.full((5, N), 1.0 / N)
    H = t2.entropy(pi)
    assert np.allclose(H, math.log(N))  # + log N, not − log N as printed
    lam, _ = t2.solve_lambda(W, g, H)
    assert np.abs(lam).max() < 1e-12  # 0 up to the rounding of H = log N
    assert np.abs(t2.construction_kl(W, g, pi, lam)).max() < 1e-12
    assert np.abs(t2.per_sequence_bound(pi, g, t2.coherence(W))).max() < 1e-12


def test_printed_sign_has_no_solution():
    W, g, pi, H, lam, _ = _case(20, 400, np.full(10, 0.05))
    p = t2.printed_sign_check(W, g, pi)
    assert p["min_rhs"] >= 0 > p["max_printed_target"] and not p["printed_has_solution"]
    assert p["max_printed_log_argument"] < 0 < p["corrected_log_argument_min"]


def test_coherence_and_jl_constant():
    W = t2.near_orthogonal_unembedding(1000, 256)
    C = t2.coherence(W)
    G = W @ W.T - np.eye(1000)
    assert C == pytest.approx(np.abs(G).max(), rel=1e-15)
    assert C <= t2.c_jl(1000, 256)
    assert t2.c_jl(50, 504) < 0.5 < t2.c_jl(50, 500)  # d > 128 log(N+1) = 503.3
    with pytest.raises(ValueError, match="1/2"):
        t2.per_sequence_bound(*t2.noisy_lookup(10, [0.1])[::-1], C=t2.c_jl(1000, 256))


def test_bound_can_fail_when_the_proof_is_bypassed():
    """The test can fail: with C understated (C = 0 while W is far from orthogonal), the bound breaks."""
    W, g, pi, H, lam, _ = _case(1000, 64, np.full(50, 0.1))
    kl = t2.construction_kl(W, g, pi, lam)
    assert np.any(kl > t2.per_sequence_bound(pi, g, 0.0))


def test_noisy_lookup_is_a_distribution():
    g, pi = t2.noisy_lookup(7, np.array([0.0, 0.2, 1.0]), alpha=0.5, seed=3)
    np.testing.assert_allclose(pi.sum(1), 1.0, rtol=0, atol=1e-15)
    assert pi[0, g[0]] == 1.0 and pi[1, g[1]] == 0.8 and pi[2, g[2]] == 0.0
    with pytest.raises(ValueError, match="eta"):
        t2.noisy_lookup(7, [1.5])
