"""Tests of the histogram task (§4) and its samplers (App. C and the authors' code): label marginals and invariants."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.papers.p002_counting.tasks import (
    all_sequences, count_marginal, empirical_marginal, hist, majority_baseline, sample, sample_code,
    sample_paper, two_token_sequences,
)


def test_hist_matches_the_paper_example():
    # x = [A, B, D, D, B, B] -> y = [1, 3, 2, 2, 3, 3] (§4)
    assert hist(np.array([[0, 1, 3, 3, 1, 1]])).tolist() == [[1, 3, 2, 2, 3, 3]]


def _hist_loop(x):
    return np.array([[sum(int(a == b) for b in row) for a in row] for row in x])


@pytest.mark.parametrize("sampler", ["code", "paper"])
@pytest.mark.parametrize("T,L", [(32, 10), (8, 6), (5, 5), (3, 7)])
def test_sampler_invariants(sampler, T, L):
    x = sample(sampler, 2000, T, L, seed=3)
    assert x.shape == (2000, L) and x.dtype == np.int64
    assert x.min() >= 0 and x.max() < T
    assert np.array_equal(hist(x[:200]), _hist_loop(x[:200]))
    distinct = np.array([len(set(r)) for r in x])
    assert distinct.max() <= T
    if sampler == "code":
        assert distinct.min() >= 2  # never a single token: count L never occurs
        assert hist(x).max() <= L - 1


def test_samplers_are_seeded_and_differ_by_seed():
    assert np.array_equal(sample_code(50, 32, 10, 1), sample_code(50, 32, 10, 1))
    assert not np.array_equal(sample_code(50, 32, 10, 1), sample_code(50, 32, 10, 2))
    assert not np.array_equal(sample_code(50, 32, 10, 1), sample_paper(50, 32, 10, 1))


@pytest.mark.parametrize("L", [2, 5, 6, 10, 15])
def test_exact_marginals_closed_forms(L):
    code, paper = count_marginal("code", L), count_marginal("paper", L)
    assert code.sum() == pytest.approx(1) and paper.sum() == pytest.approx(1)
    assert code[1] == pytest.approx(2 / L) and code[L] == 0 and code[0] == 0
    assert np.allclose(code[2:L], 1 / L)
    assert np.allclose(paper[1:], 1 / L)
    assert majority_baseline(code) == (1, pytest.approx(2 / L))


@pytest.mark.parametrize("sampler", ["code", "paper"])
@pytest.mark.parametrize("L", [5, 10, 15])
def test_empirical_marginals_match_exact(sampler, L):
    emp = empirical_marginal(sample(sampler, 20000, 32, L, seed=0))
    assert np.abs(emp - count_marginal(sampler, L)).max() < 0.01


def test_merging_when_more_parts_than_tokens():
    x = sample_code(3000, 2, 8, 0)  # L > T: trailing parts merge, still two tokens at most
    assert set(np.unique(x)) <= {0, 1}
    assert all(len(set(r)) == 2 for r in x)
    with pytest.raises(ValueError):
        count_marginal("code", 8, T=2)


def test_exhaustive_and_two_token_sets():
    xs = all_sequences(3, 4)
    assert xs.shape == (81, 4) and len({tuple(r) for r in xs}) == 81
    tt = two_token_sequences(4, 3)
    assert tt.shape == (4 * 3 * 3, 3)
    assert sorted(np.unique(hist(tt)).tolist()) == [1, 2, 3]
    assert two_token_sequences(32, 10, n_pairs=50).shape == (500, 10)


def test_bad_sampler_name():
    with pytest.raises(ValueError, match="sampler"):
        sample("literal", 1, 4, 4)
