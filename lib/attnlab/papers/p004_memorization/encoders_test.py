"""Checks of the sequence encoders of Propositions 1-3 (float64; the closed form of App. A.5 and the rank bottleneck d ≥ N − 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlab.papers.p004_memorization import encoders as en


def _pi(T=20, N=5, seed=0, zipf=None):
    prior = en.uniform_prior(T) if zipf is None else en.zipf_prior(T, zipf, seed)
    return prior, en.dirichlet_conditionals(T, N, 1.0, seed)


def test_generators_are_seeded_probabilities():
    a, b, c = (en.dirichlet_conditionals(30, 6, 0.5, s) for s in (0, 0, 1))
    assert a.dtype == torch.float64 and a.shape == (30, 6)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert float(a.min()) > 0 and torch.allclose(a.sum(1), torch.ones(30, dtype=torch.float64), atol=1e-14)
    p = en.zipf_prior(50, 1.5, seed=3)
    assert abs(float(p.sum()) - 1) < 1e-14
    ranks = torch.sort(p, descending=True).values
    ref = torch.arange(1, 51, dtype=torch.float64) ** -1.5
    assert torch.allclose(ranks, ref / ref.sum(), rtol=1e-13)
    assert not torch.equal(p, torch.sort(p, descending=True).values)  # shuffled
    assert torch.allclose(en.zipf_prior(10, 0.0), en.uniform_prior(10))
    with pytest.raises(ValueError, match="alpha"):
        en.dirichlet_conditionals(3, 4, -1.0)


def test_kl_objective_matches_its_definition():
    prior, cond = _pi(T=7, N=4, zipf=1.0)
    logits = torch.randn(7, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    q = torch.softmax(logits, 1)
    manual = sum(float(prior[t]) * sum(float(cond[t, j] * (cond[t, j] / q[t, j]).log()) for j in range(4))
                 for t in range(7))
    assert abs(float(en.kl_of_logits(prior, cond, logits)) - manual) < 1e-14
    assert abs(float(en.kl_of_logits(prior, cond, cond.log() + 3.0))) < 1e-14  # shift-invariant, zero at pi
    assert torch.all(en.kl_per_sequence(cond, logits) > 0)


@pytest.mark.parametrize("N, extra", [(5, 0), (5, 2), (8, 0)])
def test_prop2_exact_encoder_for_d_at_least_N_minus_1(N, extra):
    prior, cond = _pi(T=40, N=N, zipf=1.2)
    d = N - 1 + extra
    W, E = en.exact_encoder(cond, d)
    assert W.shape == (N, d) and E.shape == (40, d)
    assert torch.linalg.matrix_rank(E @ W.T) <= d
    assert abs(en.encoder_kl(prior, cond, W, E)) < 1e-13
    W, E = en.svd_init(prior, cond, d)
    assert abs(en.encoder_kl(prior, cond, W, E)) < 1e-13
    with pytest.raises(ValueError, match="N - 1"):
        en.exact_encoder(cond, N - 2)


def test_prop2_min_kl_is_positive_below_N_minus_1_and_non_increasing():
    prior, cond = _pi(T=25, N=6, seed=1)
    fits = en.min_kl_curve(prior, cond, [1, 2, 3, 4, 5], restarts=2, max_iter=300)
    kl = [f.kl for f in fits]
    assert all(b <= a + 1e-9 for a, b in zip(kl, kl[1:])), kl
    assert min(kl[:4]) > 1e-3 and abs(kl[4]) < 1e-10  # d = N - 1 = 5: exact
    for f in fits:  # the fit is a rank-d encoder and its reported KL is its own
        assert f.W.shape == (6, f.d) and f.E.shape == (25, f.d)
        assert abs(en.encoder_kl(prior, cond, f.W, f.E) - f.kl) < 1e-12
        assert len(f.kl_restarts) == 2 and f.kl == min(f.kl_restarts)


def test_prop1_fitted_encoder_beats_random_and_perturbed_encoders():
    prior, cond = _pi(T=30, N=6, zipf=1.5)
    fit = en.fit_encoder(prior, cond, 2, restarts=2, max_iter=500)
    g = torch.Generator().manual_seed(1)
    W, E = torch.as_tensor(fit.W), torch.as_tensor(fit.E)
    for _ in range(20):  # a local minimum: small perturbations never do better
        dW = 1e-3 * torch.randn(W.shape, generator=g, dtype=torch.float64)
        dE = 1e-3 * torch.randn(E.shape, generator=g, dtype=torch.float64)
        assert en.encoder_kl(prior, cond, W + dW, E + dE) >= fit.kl - 1e-12
        Wr = torch.randn(W.shape, generator=g, dtype=torch.float64)
        Er = torch.randn(E.shape, generator=g, dtype=torch.float64)
        assert en.encoder_kl(prior, cond, Wr, Er) > fit.kl


def test_lbfgs_from_random_start_reaches_zero_at_d_equal_N_minus_1():
    prior, cond = _pi(T=16, N=4, seed=2)
    f = en.fit_encoder(prior, cond, 3, restarts=2, max_iter=3000)
    assert f.kl_restarts[1] < 1e-5  # the random-start run, not only the exact SVD start


def test_prop3_circle_closed_form_equals_direct_evaluation():
    lam = np.geomspace(0.1, 300, 40)
    for N in (2, 3, 10, 50):
        closed = en.circle_kl_closed_form(N, lam)
        targets = np.random.default_rng(N).integers(0, N, size=37)
        direct = en.circle_kl_direct(N, lam, targets)
        assert np.allclose(closed, direct, rtol=1e-10, atol=1e-13)
        assert np.all(np.diff(closed) < 0)  # strictly decreasing in lambda
        assert abs(en.circle_kl_closed_form(N, 0.0) - math.log(N)) < 1e-14  # lambda = 0: uniform guess
    # the value does not depend on the targets or the prior (every sequence has the same KL)
    other = en.circle_kl_direct(10, lam, np.zeros(5, int), prior=torch.tensor([0.1, 0.2, 0.3, 0.2, 0.2], dtype=torch.float64))
    assert np.allclose(other, en.circle_kl_closed_form(10, lam), rtol=1e-10, atol=1e-13)
    assert abs(en.circle_kl_closed_form(10, 10.0) - 0.2610) < 0.01 * 0.2610
    assert en.circle_kl_closed_form(10, 100.0) < 1.05e-8


def test_circle_encoder_is_a_rank_2_encoder_with_zero_kl_in_the_limit():
    N, T = 12, 40
    g = np.random.default_rng(0).integers(0, N, T)
    cond = torch.zeros(T, N, dtype=torch.float64)
    cond[torch.arange(T), torch.as_tensor(g)] = 1.0
    W = torch.as_tensor(en.circle_unembedding(N))
    E = W[torch.as_tensor(g)]
    kl = [en.encoder_kl(en.uniform_prior(T), cond, lam * W, E) for lam in (1.0, 10.0, 100.0, 1000.0)]
    assert all(b < a for a, b in zip(kl, kl[1:])) and kl[-1] < 1e-12
