"""Tests of the coherence bounds and the App. B.2 constructions (float64, exact where possible)."""

import math

import numpy as np
import pytest

from attnlab.papers.p002_counting import bounds as b


def test_paper_numbers_and_other_pairs():
    rows = {(r["T"], r["L"]): r for r in b.min_d_table()}
    r = rows[(32, 10)]
    assert (r["lin"], r["dot_p1"], r["dot_pT"], r["softmax_binary"]) == (29, 30, 12, 8)
    assert tuple(rows[(64, 10)][m] for m in b.MODELS) == (53, 54, 14, 9)
    assert tuple(rows[(32, 15)][m] for m in b.MODELS) == (31, 32, 15, 8)
    assert tuple(rows[(64, 15)][m] for m in b.MODELS) == (59, 60, 20, 9)
    assert tuple(rows[(16, 8)][m] for m in b.MODELS) == (15, 16, 8, 7)
    assert tuple(rows[(8, 6)][m] for m in b.MODELS) == (8, 9, 5, 6)


@pytest.mark.parametrize("T", [4, 8, 16, 32, 33, 64, 100])
@pytest.mark.parametrize("L", [3, 4, 6, 10, 15])
def test_closed_forms_are_the_welch_search(T, L):
    """The strict Welch search gives floor(x) + 1; the paper's ceil(x) agrees except when x is an
    integer (then W(T, ceil x) equals the threshold and the margin of eq. 37 is zero)."""
    c = 2 * L - 3
    for model, q, extra in (("lin", c * c, 0), ("dot_p1", c * c, 1), ("dot_pT", c, 0)):
        x = T * q / (T - 1 + q)
        search = b.min_d_welch(T, b.coherence_threshold(model, L), extra=extra)
        assert search == b.min_d_strict(model, T, L)
        assert search == min(math.floor(x) + 1, T) + extra
        if x != int(x):
            assert b.min_d_formula(model, T, L) == search
        else:
            assert b.min_d_formula(model, T, L) == search - 1
            assert b.welch(T, int(x)) == pytest.approx(b.coherence_threshold(model, L), rel=1e-12)
    d = b.min_d_formula("lin", T, L)
    if 1 < d <= T:  # one less violates the threshold
        assert b.welch(T, d - 1) >= b.coherence_threshold("lin", L)


def test_integer_edge_case_example():
    # T = 16, L = 4: x = 16 * 25 / 40 = 10 exactly; eq. 50 prints 10, the strict bound is 11
    assert b.min_d_formula("lin", 16, 4) == 10 and b.min_d_strict("lin", 16, 4) == 11


def test_welch_values():
    assert b.welch(32, 12) == pytest.approx(0.23187, abs=1e-5)
    assert b.welch(32, 16) == pytest.approx(0.1796, abs=1e-4)
    assert b.welch(32, 29) == pytest.approx(0.05777, abs=1e-5)
    assert b.welch(32, 32) == 0.0
    for d in (2, 5, 31):
        assert b.welch(d + 1, d) == pytest.approx(1 / d, rel=1e-12)
    assert b.coherence_threshold("lin", 10) == pytest.approx(0.05882, abs=1e-5)
    assert b.coherence_threshold("dot_pT", 10) == pytest.approx(0.24254, abs=1e-5)
    with pytest.raises(ValueError, match="model"):
        b.coherence_threshold("softmax_binary", 10)


def test_real_etf_condition():
    assert b.welch_attainable_real(6, 3)  # the 6 diagonals of the icosahedron
    assert not b.welch_attainable_real(7, 3)
    assert not b.welch_attainable_real(32, 29)  # complement in R^3 would need 32 <= 6


@pytest.mark.parametrize("d", [1, 2, 3, 7, 31])
def test_simplex_attains_welch(d):
    V = b.simplex_frame(d)
    assert V.shape == (d + 1, d)
    G = V @ V.T
    assert np.allclose(np.diag(G), 1, atol=1e-12)
    assert np.allclose(G[~np.eye(d + 1, dtype=bool)], -1 / d, atol=1e-12)
    assert b.mutual_coherence(V) == pytest.approx(b.welch(d + 1, d), abs=1e-12)


def test_coherence_definition():
    E = np.array([[1.0, 0], [0, 2.0], [1, 1]])
    assert b.mutual_coherence(E) == pytest.approx(1 / math.sqrt(2))
    assert b.mutual_coherence(np.eye(4)) == 0.0
    with pytest.raises(ValueError, match="zero row"):
        b.mutual_coherence(np.zeros((3, 2)))


def test_optimiser_respects_welch_and_is_seeded():
    f = b.optimise_frame(12, 4, steps=400, restarts=2, seed=1)
    assert np.allclose(np.linalg.norm(f.frame, axis=1), 1)
    assert f.coherence >= f.welch - 1e-12
    assert f.coherence < 1.25 * f.welch  # far below a random frame
    g = b.optimise_frame(12, 4, steps=400, restarts=2, seed=1)
    assert f.coherences == g.coherences
    # restarts are independent of the batch: restart 0 alone equals restart 0 in a batch of 2
    h = b.optimise_frame(12, 4, steps=400, restarts=1, seed=1)
    assert h.coherences[0] == pytest.approx(f.coherences[0], abs=1e-12)
    rand = np.random.default_rng(0).normal(size=(12, 4))
    assert f.coherence < b.mutual_coherence(rand)


def test_sampler_and_two_token_set():
    X = b.sample_sequences(32, 10, 500, seed=0)
    y = b.hist(X)
    assert X.min() >= 0 and X.max() < 32
    assert y.max() <= 9  # never a single token
    X2 = b.two_token_sequences(5, 4)
    assert X2.shape == (5 * 4 * 3, 4)
    assert set(np.unique(b.hist(X2))) == {1, 2, 3}


@pytest.mark.parametrize("model", ["lin", "dot_pT", "dot_p1"])
def test_orthogonal_frame_is_exact(model):
    T, L = 8, 6
    c = b.frame_construction(model, np.eye(T), L, alpha=0.1)
    X = np.concatenate([b.sample_sequences(T, L, 300, 0), b.two_token_sequences(T, L)])
    g, y = c.gamma(X), b.hist(X)
    expected = {"lin": y / L, "dot_pT": y / L, "dot_p1": y * (1 + 0.01) + (L - y) * 0.01 + 1}[model]
    assert np.allclose(g, expected, atol=1e-12)
    r = b.evaluate(model, np.eye(T), L, b.sample_sequences(T, L, 300, 0), alpha=0.1)
    assert r["acc_paper_sample"] == r["acc_paper_two_token"] == 1.0
    assert r["inside_paper_ranges"]


def test_readout_lines_bucket_gamma():
    beta = np.array([1.5, 2.5, 3.5])
    g = np.array([0.0, 1.49, 1.51, 3.0, 10.0])
    assert b.readout_logits(g, beta).argmax(-1).tolist() == [1, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="increase"):
        b.readout_logits(g, np.array([2.0, 1.0]))


def _frame_with_coherence(T, d, seed):
    return b.optimise_frame(T, d, steps=600, restarts=2, seed=seed).frame


@pytest.mark.parametrize("model,T,d,L", [("dot_pT", 16, 10, 6), ("lin", 12, 11, 4), ("dot_p1", 12, 11, 4)])
def test_theorem_below_threshold(model, T, d, L):
    """Below the coherence threshold the paper's ranges hold (every gamma inside) and separate, so
    the construction with the paper's readout is exact on the exhaustive extremal set."""
    V = _frame_with_coherence(T, d, 0)
    M = b.mutual_coherence(V)
    assert M < b.coherence_threshold(model, L), (model, M)
    X = b.sample_sequences(T, L, 500, 0)
    r = b.evaluate(model, V, L, X, alpha=0.05)
    assert r["inside_paper_ranges"]
    c = b.frame_construction(model, V, L, alpha=0.05)
    lo, up = c.paper_ranges(M)
    assert np.all(up[:-1] < lo[1:])  # eq. 37 from the bound
    assert r["acc_paper_two_token"] == 1.0 and r["acc_paper_sample"] == 1.0
    assert r["margin"] > 0
    assert r.get("wrong_active", 0) == 0


def test_lin_fails_above_threshold_with_mixed_overlaps():
    """Overlaps of both signs at M = 0.2 >= 1/(2L-3) = 1/7: the ranges of k = 1, 2 overlap (eq. 37
    fails) and no readout is exact; with equal overlaps gamma would depend on k only."""
    T, L, M = 4, 5, 0.2
    S = np.array([[0, 1, -1, 1], [1, 0, 1, -1], [-1, 1, 0, 1], [1, -1, 1, 0]], dtype=float)
    V = np.linalg.cholesky(np.eye(T) + M * S)
    assert b.mutual_coherence(V) == pytest.approx(M)
    r = b.evaluate("lin", V, L, b.sample_sequences(T, L, 500, 0))
    assert r["margin"] < 0
    assert r["acc_calibrated_two_token"] < 1.0
    E = np.linalg.cholesky(np.full((T, T), M) + (1 - M) * np.eye(T))  # all overlaps +M
    assert b.evaluate("lin", E, L, b.sample_sequences(T, L, 500, 0))["margin"] > 0


def test_simplex_beats_the_lin_bound():
    """T = d + 1: gamma depends only on k, so lin is exact (calibrated readout) with M = 1/7 > 1/9."""
    V = b.simplex_frame(7)
    assert b.mutual_coherence(V) > b.coherence_threshold("lin", 6)
    r = b.evaluate("lin", V, 6, b.sample_sequences(8, 6, 1000, 0))
    assert r["acc_calibrated_sample"] == r["acc_calibrated_two_token"] == 1.0
    assert r["acc_paper_two_token"] < 1.0  # the paper's symmetric boundaries do not fit


def test_dot_pT_one_sided_range():
    """gamma(k) >= k/L always (squared overlaps), tighter than eq. 69."""
    V = _frame_with_coherence(16, 6, 0)
    c = b.frame_construction("dot_pT", V, 6)
    X = b.two_token_sequences(16, 6)
    g, y = c.gamma(X), b.hist(X)
    assert np.all(g >= y / 6 - 1e-12)
    M = b.mutual_coherence(V)
    assert np.all(g <= (y + M * M * (6 - y)) / 6 + 1e-12)


def test_alpha_validation():
    with pytest.raises(ValueError, match="alpha"):
        b.frame_construction("dot_p1", np.eye(4), 10, alpha=0.5)


def test_theory_bounds_are_the_papers_numbers_at_T32_L10():
    assert b.theory_bounds("lin", 32, 10) == {"eq. 50 (p = T)": (29, 32)}
    assert b.theory_bounds("dot", 32, 10) == {"eq. 62 (p = 1)": 30, "eq. 72 (p = T)": (12, 32)}
    assert b.theory_bounds("bos+sftm", 32, 10) == {"eq. 93 (p = 1)": 8}
    assert b.theory_bounds("dot+sftm", 32, 10) == {"eq. 93 (p = T)": (8, 32)}
