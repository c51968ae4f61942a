"""Closed-form bounds: checked against direct evaluation and exact enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from attnlab.papers.p000_capacity import bounds


def test_chernoff_constants_match_the_tails():
    for p in (0.05, 0.25, 0.4):
        c1, c2 = bounds.chernoff_constants(p)
        for d_k in (10, 100):
            assert bounds.chernoff_tail_true(d_k, p) == pytest.approx(math.exp(-c1 * d_k))
            assert bounds.chernoff_tail_false(d_k, p) == pytest.approx(math.exp(-c2 * d_k))


def test_chernoff_tails_bound_the_exact_binomial_tails():
    for p in (0.1, 0.25, 0.4):
        for d_k in (20, 80, 200):
            tau = (p + p * p) / 2 * d_k
            exact_false = bounds.binom_tail_ge(d_k, p * p, tau)
            exact_true_low = 1 - bounds.binom_tail_ge(d_k, p, math.floor(tau) + 1)  # P(Bin(d_k, p) <= tau)
            assert exact_false <= bounds.chernoff_tail_false(d_k, p) + 1e-15
            assert exact_true_low <= bounds.chernoff_tail_true(d_k, p) + 1e-15


def test_theorem_b1_constant_rule():
    """The stated rule C > max{3/c1, 2/c2} does not give m^-3; max{4/c1, 5/c2} gives <= 2 m^-3."""
    c1, c2 = bounds.chernoff_constants(0.25)
    Cs = bounds.theorem_b1_C(0.25)
    assert Cs["paper"] == pytest.approx(3 / c1) and Cs["needed"] == pytest.approx(4 / c1)
    for m in (16, 64, 1024):
        assert bounds.theorem_b1_failure(m, int(Cs["paper"] * math.log(m)) + 1, 0.25) > m ** -3.0
        assert bounds.theorem_b1_failure(m, Cs["needed"] * math.log(m), 0.25) <= 2 * m ** -3.0 * (1 + 1e-9)


def test_hoeffding_dk_is_the_smallest_width():
    for m in (64, 1024):
        d = bounds.hoeffding_dk(m, 0.1)
        assert bounds.hoeffding_failure(m, d) <= 0.1 < bounds.hoeffding_failure(m, d - 1)


def test_rademacher_tail_below_hoeffding_exactly():
    """P(<w_a, w_b> >= d_k/2) for d_k Rademacher products: exact binomial vs exp(-d_k/8)."""
    for d_k in (8, 32, 64, 128):
        exact = bounds.binom_tail_ge(d_k, 0.5, 3 * d_k / 4)  # sum >= d_k/2 <=> (# +1) >= 3 d_k / 4
        assert exact <= math.exp(-d_k / 8)


def test_log2_binom_exact_on_small_numbers():
    for n, k in ((10, 3), (56, 8), (240, 16)):
        assert bounds.log2_binom(n, k) == pytest.approx(math.log2(math.comb(n, k)), rel=1e-12)


def test_bit_budget_counts_labelings():
    """Exhaustive: with the floor value, 2^(b(2 d D_K + 1)) >= C(m(m-1), m') holds with equality at the floor."""
    m, mp, d, b = 8, 8, 2, 4
    dk = bounds.bit_budget_dk(m, mp, d, b)
    assert b * (2 * d * dk + 1) == pytest.approx(math.log2(math.comb(m * (m - 1), mp)))
    assert bounds.asymptotic_shape(m, m, d) == pytest.approx(m * math.log2(m) / d)


def test_lemma82_exhaustive_grid():
    """Lemma 8.2 on a grid of logit vectors: softmax(z)* >= 1/(1 + (ell-1) e^{-(a-b)})."""
    vals = np.linspace(-3, 3, 7)
    for ell in (2, 3, 4):
        for z in itertools.product(vals, repeat=ell):
            z = np.array(z)
            p = np.exp(z - z.max()); p /= p.sum()
            assert p[0] >= bounds.lemma82_bound(z[0], z[1:].max(), ell) - 1e-15


def test_lipschitz_of_max_and_sum_decisions():
    g = np.random.default_rng(0)
    for _ in range(500):
        d, h, dk = 3, 4, 2
        U, V = g.standard_normal((d, h * dk)), g.standard_normal((d, h * dk))
        U /= np.linalg.norm(U); V /= np.linalg.norm(V)
        dU, dV = 1e-3 * g.standard_normal(U.shape), 1e-3 * g.standard_normal(V.shape)
        U2, V2 = U + dU, V + dV
        U2 /= max(1, np.linalg.norm(U2)); V2 /= max(1, np.linalg.norm(V2))
        x = g.standard_normal((2, d)); x /= np.linalg.norm(x, axis=1, keepdims=True)
        dist = np.linalg.norm(U2 - U) + np.linalg.norm(V2 - V)
        for agg in ("max", "sum"):
            diff = abs(bounds.decision(U, V, 0.1, x[0], x[1], h, agg) - bounds.decision(U2, V2, 0.1, x[0], x[1], h, agg))
            assert diff <= dist + 1e-12


def test_budgets_ratio_and_footprint():
    assert bounds.budget_single(1024, 64) / bounds.budget_multi(1024, 64) == pytest.approx(16)
    f = bounds.footprint(16, 32, 4, 8)
    assert f == {"h": 4, "d_k": 8, "D_K": 32, "qk_macs": 2 * 16 * 32 * 32, "score_macs": 16 * 16 * 32,
                 "params": 2 * 32 * 32}
    assert bounds.heads_general(100, 8, 5) == 13 + 5
    assert bounds.skew_ok(100, 400, 10, 40) and not bounds.skew_ok(100, 400, 10, 41)
