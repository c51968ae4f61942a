"""Checks of Theorem 1 with eps >= 0 (App. A.2, Eqs. 13-14), float64."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.papers.p004_memorization import approx as ap
from attnlab.papers.p004_memorization import encoders as en
from attnlab.papers.p004_memorization.constructions import aot_forward, residual_stream


@pytest.fixture(scope="module")
def problem():
    """N = 5, S = 2 (T = 25 sequences), Zipf prior, Dirichlet conditionals, an optimal d = 3 encoder."""
    N, S, d = 5, 2, 3
    tokens = ap.all_sequences(N, S)
    prior = en.zipf_prior(len(tokens), 1.5, seed=0)
    cond = en.dirichlet_conditionals(len(tokens), N, 1.0, seed=0)
    fit = en.fit_encoder(prior, cond, d, restarts=1, max_iter=500)
    return tokens, prior.numpy(), cond.numpy(), fit


def test_all_sequences():
    t = ap.all_sequences(3, 4)
    assert t.shape == (81, 4) and len(np.unique(t, axis=0)) == 81 and t.min() == 0 and t.max() == 2
    assert t[5].tolist() == [0, 0, 1, 2]


def test_numpy_kl_equals_torch_kl(problem):
    tokens, prior, cond, fit = problem
    logits = np.random.default_rng(0).standard_normal(cond.shape)
    assert abs(float(prior @ ap.kl_numpy(cond, logits)) - float(en.kl_of_logits(prior, cond, logits))) < 1e-13


@pytest.mark.parametrize("qk", ["rank1", "full"])
def test_eps_zero_reproduces_the_encoder_exactly(problem, qk):
    tokens, prior, cond, fit = problem
    T, d, d_h = len(tokens), 3, 3
    H = ap.heads_for_exact(T, d, d_h)
    assert H * d_h + d >= T > (H - 1) * d_h + d
    w, r = ap.build_distribution_aot(tokens, prior, cond, fit.W, fit.E, d_h, H, seed=1, qk=qk)
    assert r.eps == 0 and r.rank_F == T
    assert np.abs(residual_stream(w, tokens) - fit.E).max() < 1e-6  # the residual stream is E(t) ...
    assert np.abs(aot_forward(w, tokens) - fit.E @ fit.W.T).max() < 1e-6  # ... so the logits are f(t)
    assert abs(r.kl_aot - fit.kl) < 1e-9 and abs(r.kl_encoder - fit.kl) < 1e-12
    assert r.eq13_inf < 1e-8 and r.eq14_app == 0


@pytest.mark.parametrize("qk", ["rank1", "full"])
@pytest.mark.parametrize("H, seed", [(1, 0), (2, 1), (4, 2), (6, 3), (7, 5)])
def test_eps_positive_interpolates_S1_and_the_bound_chain_holds(problem, H, seed, qk):
    tokens, prior, cond, fit = problem
    d, d_h = 3, 3
    w, r = ap.build_distribution_aot(tokens, prior, cond, fit.W, fit.E, d_h, H, seed=seed, qk=qk)
    K = H * d_h + d
    order = np.argsort(-prior, kind="stable")
    assert r.K == K and abs(r.eps - prior[order[K:]].sum()) < 1e-15 and r.eps > 0
    S1 = order[:K]
    assert np.abs(residual_stream(w, tokens[S1]) - fit.E[S1]).max() < 1e-6  # exact on the T_eps most likely
    assert r.max_fit_error < 1e-6
    gap = abs(r.kl_aot - r.kl_encoder)
    assert gap <= r.eq13_inf + 1e-12  # Eq. (13), first step
    assert r.eq13_inf <= r.eq13 + 1e-12  # ||I - 1 pi^T||_{2,inf} <= 2
    assert r.eq13 <= r.eq14_app * (1 + 1e-9) + 1e-12  # Eq. (14), App. constant
    assert r.C_app <= r.C_main * (1 + 1e-12)  # the main text's constant is larger
    assert r.kl_aot >= fit.kl - 1e-9  # Prop. 1 (the fit is a local optimum; no AoT beats it here)


def test_constants_match_the_papers_svd_notation(problem):
    """C_app uses F_1^+ F_2; the paper writes (P_1 V P_1^T)^{-1} P_1 V P_2^T with W_V A' = U Sigma P_1 V,
    and W_O = E P_1^T (P_1 V P_1^T)^{-1} Sigma^{-1} U^T. Both are checked against the paper's form."""
    tokens, prior, cond, fit = problem
    d, d_h, H = 3, 3, 4
    K = H * d_h + d
    drawn = ap._generic_draw(5, 2, d, d_h, H, 5, "rank1", fit.W)
    F = ap.features(drawn, tokens)
    order = np.argsort(-prior, kind="stable")
    S1, S2 = order[:K], order[K:]
    U, s, Vr = np.linalg.svd(F, full_matrices=False)  # F = U diag(s) Vr, Vr [K, T] = "P_1 V"
    B1, B2 = Vr[:, S1], Vr[:, S2]  # P_1 V P_1^T and P_1 V P_2^T
    W_O_paper = fit.E[S1].T @ np.linalg.inv(B1) @ np.diag(1 / s) @ U.T
    assert np.allclose(W_O_paper, fit.E[S1].T @ np.linalg.pinv(F[:, S1]), rtol=1e-8, atol=1e-8)
    lhs = np.linalg.norm(np.linalg.inv(B1) @ B2, 2)
    rhs = np.linalg.norm(np.linalg.pinv(F[:, S1]) @ F[:, S2], 2)
    assert abs(lhs - rhs) < 1e-8 * max(1, rhs)
    _, r = ap.build_distribution_aot(tokens, prior, cond, fit.W, fit.E, d_h, H, seed=5)
    assert abs(r.C_app - np.sqrt(1 + rhs**2)) < 1e-8 * r.C_app
    assert abs(r.C_main - np.sqrt(1 + np.linalg.norm(np.linalg.inv(B1), 2) ** 2)) < 1e-8 * r.C_main


def test_weighted_variant_is_not_exact_on_S1_but_bounded(problem):
    tokens, prior, cond, fit = problem
    _, r = ap.build_distribution_aot(tokens, prior, cond, fit.W, fit.E, 3, 4, seed=0, solve="weighted")
    assert r.max_fit_error > 1e-3
    assert abs(r.kl_aot - r.kl_encoder) <= r.eq13_inf + 1e-12 <= r.eq13 + 2e-12


def test_no_heads_cannot_separate_sequences_with_the_same_last_token():
    """H = 0: the AoT is x_S only, a function of t_S; two of the K = d most likely sequences that end
    in the same token make F_1 singular, and the skip block cannot be inverted."""
    tokens = ap.all_sequences(3, 2)  # (0,0), (0,1), ... : rows 0 and 3 both end in token 0
    prior = np.array([0.3, 0.01, 0.01, 0.3, 0.01, 0.01, 0.3, 0.03, 0.03])
    cond = en.dirichlet_conditionals(9, 3).numpy()
    W, E = np.random.default_rng(0).standard_normal((3, 2)), np.random.default_rng(1).standard_normal((9, 2))
    with pytest.raises(ValueError, match="singular"):
        ap.build_distribution_aot(tokens, prior, cond, W, E, 1, 0)


def test_bad_arguments_fail_with_the_value():
    tokens = ap.all_sequences(3, 2)
    prior, cond = en.uniform_prior(9).numpy(), en.dirichlet_conditionals(9, 3).numpy()
    W, E = np.ones((3, 2)), np.ones((9, 2))
    with pytest.raises(ValueError, match="d_h=3"):
        ap.build_distribution_aot(tokens, prior, cond, W, E, 3, 1)
    with pytest.raises(ValueError, match="solve"):
        ap.build_distribution_aot(tokens, prior, cond, W, E, 1, 1, solve="lsq")
    with pytest.raises(ValueError, match="shapes"):
        ap.build_distribution_aot(tokens, prior, cond, W, E[:5], 1, 1)
