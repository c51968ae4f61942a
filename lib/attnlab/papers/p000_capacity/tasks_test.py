"""RGR data: embeddings, graphs and the context sampler."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.papers.p000_capacity import tasks as T


def test_rng_depends_on_seed_and_tags_only():
    a = T.rng(3, "X", 5).random(4)
    T.rng(9, "other").random(100)
    assert np.array_equal(a, T.rng(3, "X", 5).random(4))
    assert not np.array_equal(a, T.rng(3, "X", 6).random(4))


def test_gun_rows_unit_norm_and_rbce_binary():
    X = T.gun_embeddings(50, 8, T.rng(0))
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-14)
    B = T.rbce_embeddings(50, 8, 0.05, T.rng(0))
    assert set(np.unique(B)) <= {0.0, 1.0} and B.any(axis=1).all()


def test_permutation_and_derangement():
    for s in range(20):
        p = T.random_permutation(7, T.rng(s), derangement=True)
        assert sorted(p.tolist()) == list(range(7)) and not (p == np.arange(7)).any()


def test_regular_graph_degrees_no_loops_no_repeats():
    e = T.regular_graph(30, 4, T.rng(1))
    out_deg, in_deg = T.degrees(e, 30)
    assert (out_deg == 4).all() and (in_deg == 4).all()
    assert not (e[:, 0] == e[:, 1]).any() and len({tuple(r) for r in e.tolist()}) == len(e)


def test_hub_graph_has_the_hub_degree():
    e = T.hub_graph(30, 2, 12, T.rng(2))
    out_deg, _ = T.degrees(e, 30)
    assert out_deg[0] == 12 and (out_deg[1:] == 2).all()


def test_contexts_distinct_and_rate():
    perm = T.random_permutation(256, T.rng(0))
    ctx = T.sample_contexts(perm, 2000, 16, 0.5, T.rng(1))
    assert ctx.shape == (2000, 16)
    assert all(len(set(r)) == 16 for r in ctx.tolist())
    src_with_target = (perm[ctx][:, :, None] == ctx[:, None, :]).any(axis=2).mean()
    # rho = 0.5 placements, minus later overwrites, plus chance hits: a little under one half
    assert 0.3 < src_with_target < 0.55
    assert T.sample_contexts(perm, 5, 16, 0.0, T.rng(2)).shape == (5, 16)
    with pytest.raises(ValueError):
        T.sample_contexts(perm, 5, 1, 0.5, T.rng(2))
