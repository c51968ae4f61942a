"""Exact checks of the Theorem 1 (eps = 0) / Corollary 1 construction and Lemma 2 (App. A.1), float64."""

from __future__ import annotations

import os

import numpy as np
import pytest

from attnlab.papers.p004_memorization.constructions import (
    AoTWeights,
    aot_forward,
    attention_feature_rank,
    attention_pattern,
    build_memorizing_aot,
    circle_unembedding,
    corollary1_parameters,
    heads_needed,
    n_parameters,
    paper_parameter_count,
    random_association_task,
    residual_stream,
)

# (N, S, d, d_h, H) of our prototype table; S > d in the first four (outside Mahdavi et al.'s S <= d).
CONFIGS = [(20, 8, 4, 2, 6), (50, 16, 4, 3, 10), (10, 32, 2, 2, 20), (100, 64, 8, 4, 25), (50, 2, 10, 10, 31)]
EXACT = 1e-6  # max |residual - E| for an exact construction (claims 1, 6)
FAILED = 1e-3  # least-squares residual that shows the linear system has no solution (claims 2, 3)


def _build(N, S, d, d_h, H, T_0, qk="rank1", seed=0, **kw):
    tokens, targets = random_association_task(N, S, T_0, seed=seed)
    weights, report = build_memorizing_aot(tokens, targets, N, d, d_h, H, seed=seed + 1, qk=qk, **kw)
    return tokens, targets, weights, report


def _random_weights(N=7, S=5, d=4, d_h=3, H=3, r=3, seed=0):
    rng = np.random.default_rng(seed)
    return AoTWeights(
        e=rng.standard_normal((N, d)), pos=rng.standard_normal((S, d)),
        W_Q=rng.standard_normal((H, r, d)), W_K=rng.standard_normal((H, r, d)),
        W_V=rng.standard_normal((H, d_h, d)), W_O=rng.standard_normal((H, d, d_h)),
        W_U=rng.standard_normal((N, d)),
    )


# ----------------------------------------------------------------------------- forward pass, Eq. (2)


def test_forward_matches_eq2_written_per_sequence_and_head():
    w = _random_weights()
    tokens = np.random.default_rng(1).integers(0, w.N, size=(9, w.S))
    expected = []
    for t in tokens:
        x = np.stack([w.e[t[s]] + w.pos[s] for s in range(w.S)])  # x_s = e(t_s) + pos_s
        stream = x[-1].copy()  # skip connection x_S
        for h in range(w.H):
            W_QK = w.W_Q[h].T @ w.W_K[h]
            raw = np.array([x[-1] @ W_QK @ x[s] for s in range(w.S)])  # query = last position
            a = np.exp(raw - raw.max()) / np.exp(raw - raw.max()).sum()
            stream += w.W_O[h] @ w.W_V[h] @ (a @ x)
        expected.append(w.W_U @ stream)
    np.testing.assert_allclose(aot_forward(w, tokens), np.array(expected), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(aot_forward(w, tokens), residual_stream(w, tokens) @ w.W_U.T, rtol=1e-14)


def test_attention_uses_last_position_as_query():
    """Erratum 1 (errata page): Eq. (1) prints x_s^T W_QK x_s; only the query x_S makes the pattern depend
    on the last token. Changing the last token must change a^h for a generic W_QK."""
    w = _random_weights(seed=3)
    a = attention_pattern(w, np.array([[0, 1, 2, 3, 4], [0, 1, 2, 3, 5]]))
    np.testing.assert_allclose(a.sum(axis=-1), 1.0, rtol=1e-14)
    assert np.max(np.abs(a[0, :, :4] - a[1, :, :4])) > 1e-3


def test_weights_reject_inconsistent_shapes():
    w = _random_weights()
    with pytest.raises(ValueError, match=r"W_O.shape=\(3, 3, 4\) must be \(3, 4, 3\)"):
        AoTWeights(w.e, w.pos, w.W_Q, w.W_K, w.W_V, w.W_O.transpose(0, 2, 1), w.W_U)


# ------------------------------------------------------------------------- claims 1, 2, 6: exact memorization


@pytest.mark.parametrize("qk", ["rank1", "full"])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_memorizes_up_to_capacity_for_any_S(config, qk):
    N, S, d, d_h, H = config
    cap = H * d_h + d
    for T_0 in (cap - 1, cap):
        tokens, targets, weights, report = _build(N, S, d, d_h, H, T_0, qk=qk)
        assert report.capacity == cap
        assert report.rank_F == T_0 == min(T_0, cap)
        assert report.lstsq_residual < 1e-9
        assert report.cond_W_OV < 1e6
        assert report.max_residual_error < EXACT
        assert report.accuracy == 1.0
        # independent re-check on the built weights (plain Eq. 2)
        assert np.array_equal(np.argmax(aot_forward(weights, tokens), axis=1), targets)
        assert np.max(np.abs(residual_stream(weights, tokens) - report.E)) < EXACT


@pytest.mark.parametrize("config", CONFIGS[:4], ids=str)
def test_one_past_capacity_has_no_exact_solution(config):
    N, S, d, d_h, H = config
    cap = H * d_h + d
    *_, report = _build(N, S, d, d_h, H, cap + 1)
    assert report.rank_F == cap  # rank saturates at H d_h + d
    assert report.lstsq_residual > FAILED
    assert report.max_residual_error > FAILED


def test_targets_sit_on_the_circle_and_logit_margin_is_lam():
    """E(t) = lam (u_g, z): logits of the built AoT are lam cos(2 pi (j - g)/N) up to rounding."""
    N, lam = 20, 3.0
    tokens, targets, weights, report = _build(N, 8, 4, 2, 6, 16, lam=lam)
    j = np.arange(N)
    expected = lam * np.cos(2 * np.pi * (j[None, :] - targets[:, None]) / N)
    np.testing.assert_allclose(aot_forward(weights, tokens), expected, atol=EXACT)
    np.testing.assert_allclose(np.linalg.norm(report.E[:, :2], axis=1), lam, rtol=1e-14)


def test_skip_trick_preserves_attention_and_values():
    """Step 6: e -> W_OV e, W_QK -> W_OV^-T W_QK W_OV^-1, W_V -> W_V W_OV^-1 leaves a^h and W_V^h A^h
    unchanged, so the drawn network (same seed, skip_trick=False keeps it unconverted) has the same attention."""
    tokens, _, converted, _ = _build(20, 8, 4, 2, 6, 16)
    _, _, drawn, _ = _build(20, 8, 4, 2, 6, 16, skip_trick=False)
    a_converted, a_drawn = attention_pattern(converted, tokens), attention_pattern(drawn, tokens)
    np.testing.assert_allclose(a_converted, a_drawn, atol=1e-10)


def test_exhaustive_small_bigram_table():
    """All N^2 = 400 bigrams with N = 20, d = d_h = 4, H = 99: capacity 400 exactly."""
    tokens, targets, _, report = _build(20, 2, 4, 4, 99, 400)
    assert len(np.unique(tokens, axis=0)) == 400
    assert (report.rank_F, report.accuracy) == (400, 1.0)
    assert report.max_residual_error < EXACT


@pytest.mark.skipif(os.environ.get("ATTNLAB_SLOW_TESTS") != "1",
                    reason="2500 x 2500 least squares, 4-30 s on 2 shared cores; set ATTNLAB_SLOW_TESTS=1")
def test_exhaustive_all_2500_bigrams():
    """All 2500 bigrams of N = 50 with d = d_h = 10 and H = 249: H d_h + d = 2500."""
    tokens, targets, _, report = _build(50, 2, 10, 10, 249, 2500)
    assert (report.rank_F, report.accuracy) == (2500, 1.0)
    assert report.max_residual_error < EXACT
    assert report.cond_W_OV < 1e6


# ------------------------------------------------------------------------- claims 3, 4: where capacity comes from


@pytest.mark.parametrize("config", CONFIGS[:4], ids=str)
def test_no_skip_variant_has_capacity_H_dh(config):
    N, S, d, d_h, H = config
    *_, exact = _build(N, S, d, d_h, H, H * d_h, skip_trick=False)
    assert (exact.capacity, exact.rank_F, exact.accuracy) == (H * d_h, H * d_h, 1.0)
    assert exact.max_residual_error < EXACT
    *_, failed = _build(N, S, d, d_h, H, H * d_h + d, skip_trick=False)
    assert failed.rank_F == H * d_h
    assert failed.lstsq_residual > FAILED and failed.max_residual_error > FAILED
    assert np.isnan(failed.cond_W_OV)


def test_dh_larger_than_d_adds_no_capacity():
    """d = 2, d_h = 5, H = 20, all 100 bigrams of N = 10: rank H d + d = 42, not H d_h + d = 102."""
    tokens, targets = random_association_task(10, 2, 100, seed=0)
    with pytest.raises(ValueError, match=r"d_h=5 must satisfy 1 <= d_h <= d=2 \(footnote 1\)"):
        build_memorizing_aot(tokens, targets, 10, 2, 5, 20)
    _, report = build_memorizing_aot(tokens, targets, 10, 2, 5, 20, seed=1, allow_dh_gt_d=True)
    assert (report.rank_F, report.capacity) == (42, 42)
    assert report.lstsq_residual > FAILED and report.accuracy < 1.0


def test_zero_free_coordinates_make_W_OV_singular():
    """Step 4: with E(t) zero on coordinates 3..d, M = E F^+ has rank <= 2 < d, so W_OV is singular."""
    with pytest.raises(ValueError, match="W_OV is singular"):
        _build(20, 8, 4, 2, 6, 16, free_coords="zero")
    *_, report = _build(10, 32, 2, 2, 20, 42, free_coords="zero")  # d = 2: no free coordinates
    assert report.accuracy == 1.0


# ----------------------------------------------------------------------------- claim 5: Lemma 2


# (N, S, d, H, T_0) of our Lemma 2 prototype table
LEMMA2_CONFIGS = [(20, 8, 4, 5, 40), (20, 8, 4, 10, 40), (20, 12, 3, 10, 25), (50, 16, 4, 8, 100)]


@pytest.mark.parametrize("config", LEMMA2_CONFIGS, ids=str)
def test_lemma2_rank_is_min_T0_Hd(config):
    N, S, d, H, T_0 = config
    tokens, _ = random_association_task(N, S, T_0, seed=0)
    ratios = {}
    for qk in ("rank1", "full", "proof"):
        result = attention_feature_rank(tokens, N, d, H, qk=qk, seed=1)
        assert result.expected == min(T_0, H * d)
        assert result.singular_values.shape == (min(T_0, H * d),)
        if qk != "proof":
            assert result.rank == result.expected, qk
        ratios[qk] = result.ratio
    # the proof's (1,1)-only matrices are full rank in exact arithmetic but far worse conditioned
    assert ratios["proof"] < 1e-2 * min(ratios["rank1"], ratios["full"])


def test_lemma2_rank_is_capped_by_T0_and_by_Hd():
    tokens, _ = random_association_task(20, 8, 30, seed=0)
    assert attention_feature_rank(tokens, 20, 4, 5, seed=1).rank == 20  # Hd = 20 < T_0 = 30
    assert attention_feature_rank(tokens, 20, 4, 10, seed=1).rank == 30  # T_0 = 30 < Hd = 40


# ----------------------------------------------------------------------------- claim 7: parameter counts


PER_HEAD = {"full": lambda d_h: 4 * d_h, "rank1": lambda d_h: 2 * (d_h + 1)}  # Theorem 1, Remark 2


@pytest.mark.parametrize("qk", ["full", "rank1"])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_parameter_count_matches_built_tensors(config, qk):
    N, S, d, d_h, H = config
    _, _, weights, report = _build(N, S, d, d_h, H, H * d_h + d, qk=qk)
    sizes = sum(a.size for a in (weights.e, weights.pos, weights.W_Q, weights.W_K,
                                 weights.W_V, weights.W_O, weights.W_U))
    assert report.n_params == n_parameters(weights) == sizes == paper_parameter_count(N, S, d, d_h, H, qk)
    assert sizes == d * (S + 2 * N + PER_HEAD[qk](d_h) * H)
    assert weights.qk_rank1 == (qk == "rank1") and weights.W_QK.shape == (H, d, d)
    assert np.linalg.matrix_rank(weights.W_QK[0]) == (1 if qk == "rank1" else d_h)


def test_corollary1_parameter_count():
    """d = 2, T_0 = H d_h + 2: 2(S + 2N + 4(T_0 - 2)) = 2S + 4N + 8T_0 - 16 (section 7); the built AoT has it."""
    N, S, d_h, H = 10, 32, 2, 20
    T_0 = H * d_h + 2
    assert corollary1_parameters(S, N, T_0) == 2 * S + 4 * N + 8 * T_0 - 16 == 424
    *_, report = _build(N, S, 2, d_h, H, T_0, qk="full")
    assert report.n_params == corollary1_parameters(S, N, T_0)
    assert heads_needed(T_0, 2, d_h) == H and heads_needed(T_0 + 1, 2, d_h) == H + 1
    assert heads_needed(2, 2, d_h) == 0
    with pytest.raises(ValueError, match="T_0=1 must be >= 2"):
        corollary1_parameters(S, N, 1)


# ----------------------------------------------------------------------------- task, determinism, validation


def test_random_association_task_is_distinct_complete_and_deterministic():
    tokens, targets = random_association_task(50, 2, 2500, seed=0)
    assert tokens.shape == (2500, 2) and len(np.unique(tokens, axis=0)) == 2500  # all bigrams
    assert targets.min() >= 0 and targets.max() < 50
    tokens, targets = random_association_task(100, 64, 300, seed=4)  # N^S = 1e128: rejection path
    assert len(np.unique(tokens, axis=0)) == 300 and tokens.max() < 100
    again = random_association_task(100, 64, 300, seed=4)
    assert np.array_equal(tokens, again[0]) and np.array_equal(targets, again[1])
    with pytest.raises(ValueError, match=r"T_0=101 must satisfy 1 <= T_0 <= N\^S=100"):
        random_association_task(10, 2, 101)


def test_construction_is_deterministic_in_seed():
    _, _, w1, _ = _build(20, 8, 4, 2, 6, 16)
    _, _, w2, _ = _build(20, 8, 4, 2, 6, 16)
    _, _, w3, _ = _build(20, 8, 4, 2, 6, 16, seed=5)
    assert np.array_equal(w1.W_O, w2.W_O) and np.array_equal(w1.e, w2.e)
    assert not np.array_equal(w1.e, w3.e)


def test_circle_unembedding_rows():
    W_U = circle_unembedding(4, 3)
    np.testing.assert_allclose(W_U, [[1, 0, 0], [0, 1, 0], [-1, 0, 0], [0, -1, 0]], atol=1e-15)


@pytest.mark.parametrize("kwargs, message", [
    (dict(d=1), r"d=1 must be >= 2"),
    (dict(d_h=0), r"d_h=0 must satisfy 1 <= d_h <= d=4"),
    (dict(H=0), r"H=0 must be >= 1"),
    (dict(qk="diag"), r"qk='diag' must be one of \('rank1', 'full'\)"),
    (dict(lam=0.0), r"lam=0.0 must be a finite positive scale"),
    (dict(N=5), r"tokens must lie in \[0, N=5\)"),
])
def test_build_rejects_bad_parameters(kwargs, message):
    tokens, targets = random_association_task(20, 8, 10, seed=0)
    args = dict(N=20, d=4, d_h=2, H=6) | kwargs
    with pytest.raises(ValueError, match=message):
        build_memorizing_aot(tokens, targets, **args)


def test_build_rejects_duplicate_sequences_and_bad_targets():
    tokens, targets = random_association_task(20, 8, 10, seed=0)
    duplicated = np.concatenate([tokens, tokens[3:4]])
    with pytest.raises(ValueError, match=r"tokens must be distinct sequences; row 3 = .* appears 2 times"):
        build_memorizing_aot(duplicated, np.zeros(11, dtype=int), 20, 4, 2, 6)
    with pytest.raises(ValueError, match=r"targets must lie in \[0, N=20\); got min=0, max=20"):
        build_memorizing_aot(tokens, np.full(10, 20) * (np.arange(10) > 0), 20, 4, 2, 6)
