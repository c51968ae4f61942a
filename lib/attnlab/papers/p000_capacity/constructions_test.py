"""Constructions I-IV and Algorithm 2, tested exactly in float64 on small inputs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from attnlab.papers.p000_capacity import bounds
from attnlab.papers.p000_capacity import constructions as C
from attnlab.papers.p000_capacity import tasks as T


def _all_permutations(m):
    return [np.array(p) for p in itertools.permutations(range(m))]


def test_one_hot_rademacher_scores_are_exact_inner_products():
    """Construction I: S = W_sig[pi] W_sig^T, so S_{i,pi(i)} = d_k exactly, for every permutation of 5 items."""
    g = T.rng(0, "test")
    for perm in _all_permutations(5):
        W = C.rademacher_signatures(5, 12, g)
        c = C.one_hot(perm, W, C.rademacher_tau(12))
        S = C.max_scores(c, None)
        assert np.array_equal(S, W[perm] @ W.T)
        assert np.all(S[np.arange(5), perm] == 12)
        assert c.h == 1 and c.D_K == 12 and c.tau == 6


def test_one_hot_with_orthogonal_signatures_recovers_every_permutation_exactly():
    """With d_k = m and Hadamard rows as signatures, off-target scores are 0 < tau = d_k/2 < d_k:
    exact recovery of every permutation of 4 items (exhaustive), also in every context."""
    H = np.array([[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]], dtype=float)
    for perm in _all_permutations(4):
        c = C.one_hot(perm, H, 2.0)
        S = C.max_scores(c, None)
        sep = C.separation(S, perm, c.tau)
        assert sep["exact"] and sep["min_true"] == 4 and sep["max_false"] == 0
        for ell in (2, 3, 4):
            for ctx in itertools.permutations(range(4), ell):
                ctx = np.array([ctx])
                pred = S[ctx[:, :, None], ctx[:, None, :]] > c.tau
                assert np.array_equal(pred, C.context_labels(ctx, perm))


def test_one_hot_bernoulli_threshold_and_binomial_law():
    """Algorithm 3: true scores are ||k_pi(i)||^2 = row sums ~ Bin(d_k, p); tau = (p + p^2) d_k / 2."""
    g = T.rng(1, "test")
    perm = T.random_permutation(50, g)
    W = C.bernoulli_signatures(50, 40, 0.25, g)
    c = C.one_hot(perm, W, C.bernoulli_tau(40, 0.25))
    S = C.max_scores(c, None)
    assert np.array_equal(S[np.arange(50), perm], W[perm].sum(axis=1))
    assert c.tau == pytest.approx((0.25 + 0.0625) / 2 * 40)


def test_separation_counts_and_strictness():
    S = np.array([[3.0, 1.0], [2.0, 2.0]])
    sep = C.separation(S, np.array([0, 1]), 2.0)
    assert sep == {"min_true": 2.0, "max_false": 2.0, "false_pos": 1, "false_neg": 1, "exact": False, "gap": 0.0}
    assert C.separation(S, np.array([0, 1]), 1.5)["false_pos"] == 1


def test_compressive_with_orthonormal_embeddings_is_construction_one():
    """If X has orthonormal rows (d = m), X^T is an exact inverse: Construction II reduces to
    Construction I head by head, and max over heads gives exactly W_sig[pi] W_sig^T on owned pairs."""
    m, d_k = 8, 16
    g = T.rng(2, "test")
    Q, _ = np.linalg.qr(g.standard_normal((m, m)))
    perm = T.random_permutation(m, g)
    W = C.rademacher_signatures(m, d_k, g)
    for h in (1, 2, 4, 8):
        c = C.compressive(perm, Q, h, W)
        assert c.W_Q.shape == (h, m, d_k)
        for k in range(h):
            Sk = C.head_scores(c, Q, k)
            V, Tk = c.sources[k], c.targets[k]
            expect = np.zeros((m, m))
            expect[np.ix_(V, Tk)] = W[perm[V]] @ W[Tk].T
            np.testing.assert_allclose(Sk, expect, atol=1e-10)
        S = C.max_scores(c, Q)
        np.testing.assert_allclose(S[np.arange(m), perm], d_k, atol=1e-10)


def test_compressive_weights_are_de_embedded_templates():
    """Algorithm 1 step 5: W_Q^(k) = X^T W'_Q^(k) with W'_Q rows w_pi(i) on V_k, zero elsewhere."""
    m, d, d_k, h = 12, 5, 7, 3
    g = T.rng(3, "test")
    X = T.gun_embeddings(m, d, g)
    perm = T.random_permutation(m, g)
    W = C.rademacher_signatures(m, d_k, g)
    c = C.compressive(perm, X, h, W)
    for k, V in enumerate(C.blocks(m, h)):
        WQ = np.zeros((m, d_k)); WQ[V] = W[perm[V]]
        WK = np.zeros((m, d_k)); WK[perm[V]] = W[perm[V]]
        np.testing.assert_allclose(c.W_Q[k], X.T @ WQ, atol=1e-12)
        np.testing.assert_allclose(c.W_K[k], X.T @ WK, atol=1e-12)
    assert c.n_params == 2 * d * h * d_k + 1


def test_theorem_41_multi_head_separates_where_one_head_does_not():
    """Theorem 4.1 / §5 at (m, d) = (256, 256): with h = 4 heads of d_k = 256 (blocks of 64) every pair
    is separated at tau = d_k/2, and the normalised margin beats one head of the same D_K = 1024."""
    m, d = 256, 256
    g = T.rng(4, "test")
    X = T.gun_embeddings(m, d, g)
    perm = T.random_permutation(m, g)
    gaps = {}
    for h in (1, 4):
        d_k = 1024 // h
        c = C.compressive(perm, X, h, C.rademacher_signatures(m, d_k, T.rng(4, "sig", h)))
        sep = C.separation(C.max_scores(c, X), perm, c.tau)
        gaps[h] = sep["gap"] / d_k
        if h == 4:
            assert sep["exact"]
    assert gaps[4] > gaps[1] + 0.05


def test_edge_colouring_is_proper_with_delta_colours():
    """Konig: every bipartite multigraph-free digraph is Delta-edge-colourable; checked on random graphs."""
    for seed in range(5):
        g = T.rng(seed, "colour")
        m = 20
        edges = np.array(sorted({(int(a), int(b)) for a, b in g.integers(0, m, size=(70, 2))}))
        colour = C.edge_colouring(edges, m)
        out_deg, in_deg = T.degrees(edges, m)
        delta = max(out_deg.max(), in_deg.max())
        assert colour.min() >= 0 and colour.max() < delta
        for c in range(delta):
            sel = edges[colour == c]
            assert len(set(sel[:, 0])) == len(sel) and len(set(sel[:, 1])) == len(sel)


def test_matchings_lemma_b8_and_equalised_corollary_b10():
    g = T.rng(5, "test")
    m, d = 40, 8
    edges = T.regular_graph(m, 3, g)
    parts = C.matchings(edges, m, d)
    assert len(parts) <= bounds.heads_general(len(edges), d, 3)
    assert sorted(np.concatenate(parts).tolist()) == list(range(len(edges)))
    for p in parts:
        assert len(p) <= d
        assert len(set(edges[p, 0])) == len(p) and len(set(edges[p, 1])) == len(p)
    k = math.ceil(len(edges) / d)  # 15 >= Delta = 3: Corollary B.10's head count
    eq = C.matchings(edges, m, d, equal_heads=k)
    assert len(eq) == k and max(len(p) for p in eq) - min(len(p) for p in eq) <= 1
    for p in eq:
        assert len(set(edges[p, 0])) == len(p) and len(set(edges[p, 1])) == len(p)


def test_general_graph_with_orthonormal_embeddings_is_exact():
    """Algorithm 5 with an exact inverse (orthonormal X) and Hadamard-like signatures: every edge
    scores d_k and every non-edge at most the signature cross-talk; exhaustive over all pairs."""
    m = 16
    g = T.rng(6, "test")
    Q, _ = np.linalg.qr(g.standard_normal((m, m)))
    edges = T.regular_graph(m, 2, g)
    H = np.array([[1.0]])
    for _ in range(4):
        H = np.block([[H, H], [H, -H]])  # 16 x 16 Sylvester-Hadamard: orthogonal rows
    c = C.general_graph(edges, Q[:, :m], H, tau=8.0)
    S = C.max_scores(c, Q)
    sep = C.separation(S, T.adjacency(edges, m), c.tau)
    assert sep["exact"]
    np.testing.assert_allclose(sep["min_true"], 16, atol=1e-9)
    assert sep["max_false"] < 1e-9


def test_softmax_sum_rows_sum_to_h_and_background_mean():
    m, d, h = 64, 32, 4
    g = T.rng(7, "test")
    X = T.gun_embeddings(m, d, g)
    perm = T.random_permutation(m, g)
    c = C.compressive(perm, X, h, C.rademacher_signatures(m, 64, g), tau=0.5)
    ctxs = T.sample_contexts(perm, 20, 8, 0.5, g)
    A, P = C.softmax_sum(c, X, ctxs)
    np.testing.assert_allclose(A.sum(axis=2), h, atol=1e-12)
    np.testing.assert_allclose(P.sum(axis=3), 1.0, atol=1e-12)
    own = C.owner_head(c, m)[ctxs]
    owner = np.take_along_axis(P, own[None, :, :, None], axis=0)[0]
    np.testing.assert_allclose((A - owner).mean(axis=2), (h - 1) / 8, atol=1e-12)


def test_micro_f1():
    y = np.array([[True, False], [False, True]])
    assert C.micro_f1(y, y) == 1.0
    assert C.micro_f1(~y, y) == 0.0
    assert C.micro_f1(np.ones_like(y), y) == pytest.approx(2 * 2 / (2 * 2 + 2))
