"""The App. A constructions tested like proofs (float64, exhaustive where small): 100 % accuracy (App. A.2-A.3),
the exact internal values (eqs. 17-18, 27, 30-31, 33-36) and the softmax argument of §5.1."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.papers.p002_counting.constructions import (
    build, check, dot_sftm_count, embedding_gram_values, gamma_closed_form, paper_dot_readout, readout,
    readout_margin, softmax_counter_direction,
)
from attnlab.papers.p002_counting.reference import VARIANTS, forward
from attnlab.papers.p002_counting.tasks import all_sequences, hist, sample_code, two_token_sequences

BUILDS = [(v, lv) for v in VARIANTS for lv in (("appendix", "main") if v.startswith("lin") else ("appendix",))]
EXACT = 1e-9


@pytest.mark.parametrize("variant,lin_version", BUILDS)
def test_exhaustive_T5_L5(variant, lin_version):
    c = build(variant, 5, 5, lin_version=lin_version)
    rep = check(c, all_sequences(5, 5))
    assert rep["accuracy"] == 1.0 and rep["counts_seen"] == [1, 2, 3, 4, 5]
    assert rep["max_gamma_error"] < EXACT
    assert rep["max_active_units"] == 1 == rep["min_active_units"]  # one active hidden unit


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("T,L,d", [(32, 10, 32), (8, 6, 8), (64, 15, 64), (8, 6, 11)])
def test_sampled_and_two_token(variant, T, L, d):
    c = build(variant, T, L, d=d, rotation_seed=T + d)
    for x in (sample_code(2000, T, L, 0), two_token_sequences(T, L, n_pairs=200)):
        rep = check(c, x)
        assert rep["accuracy"] == 1.0 and rep["max_gamma_error"] < 1e-8


def test_claim5_dot_internal_values():
    T, L = 32, 10
    c = build("dot", T, L)
    assert embedding_gram_values(c) == [T + 2.0, T + 3.0]
    x = sample_code(1000, T, L, 1)
    out = forward(c.weights, x)
    assert np.abs(out["mixing"] - np.where(x[:, :, None] == x[:, None, :], T + 3, T + 2)).max() < EXACT  # eq. 18
    assert np.abs(out["gamma"] - hist(x)).max() < EXACT  # gamma == hist, an integer


def test_claim5_bos_sftm_gamma_strictly_decreasing():
    T, L = 32, 10
    k = np.arange(1, L + 1)
    g = gamma_closed_form("bos+sftm", T, L, k)
    a = np.e / ((k + 1) * np.e + L - k)
    assert np.allclose(g, a * (T - 1) + 1) and np.all(np.diff(g) < 0)
    c = build("bos+sftm", T, L)
    x = two_token_sequences(T, L, n_pairs=50)
    out = forward(c.weights, x)
    # weight on BOS is a; on equal tokens a; on others b = 1/((k+1)e + L - k)
    aa = np.e / ((hist(x) + 1) * np.e + L - hist(x))
    bos_col = np.concatenate([np.zeros((x.shape[0], L, 1)), out["mixing"]], 2)[:, :, 1]
    assert np.abs(out["mixing"][:, :, 0] - aa).max() < EXACT
    assert np.abs(out["gamma"] - (aa * (T - 1) + 1)).max() < EXACT
    assert bos_col.shape == (x.shape[0], L)


def test_claim5_dot_sftm_gamma_and_inversion():
    T, L = 32, 10
    c = build("dot+sftm", T, L)
    x = sample_code(1000, T, L, 2)
    out = forward(c.weights, x)
    k = hist(x)
    assert np.abs(out["gamma"] - k * np.e / (k * np.e + L - k)).max() < EXACT
    assert np.abs(dot_sftm_count(out["gamma"], L) - k).max() < 1e-9  # eq. 36


def test_claim5_lin_single_active_unit():
    T, L = 32, 10
    c = build("lin", T, L)
    x = sample_code(1000, T, L, 3)
    out = forward(c.weights, x)
    act = np.maximum(out["z"], 0)
    assert np.all((act > 0).sum(-1) == 1)
    assert np.array_equal(act.argmax(-1), x)  # the unit of the position's own token
    assert np.abs(act.max(-1) - hist(x) / L).max() < EXACT


def test_claim6_softmax_removes_the_counter_signal():
    T, L = 32, 10
    x = np.concatenate([sample_code(1000, T, L, 4), two_token_sequences(T, L, n_pairs=30)])
    r = softmax_counter_direction(T, L, x)
    assert r["softmax_spread"] < EXACT and abs(r["softmax_values_min"] - (T + 1)) < EXACT
    assert r["no_softmax_error"] < 1e-8
    assert r["accuracy_without"] == 1.0 and r["accuracy_with_softmax"] < 0.5


def test_paper_readout_recursion_boundaries():
    L = 10
    r = paper_dot_readout(L)
    assert np.allclose(r.w[1:], -1 + np.arange(1, L + 1) / (L + 1)) and r.b[1] == 0
    # class k wins exactly on (k - 1/2, k + 1/2)
    g = np.linspace(0.51, L + 0.49, 4001)
    g = g[np.abs(g - np.round(g - 0.5) - 0.5) > 1e-6]  # off the boundaries themselves
    pred = r.classify(g)
    assert np.array_equal(pred, np.clip(np.round(g), 1, L).astype(int))
    assert readout_margin(r, np.arange(1, L + 1)) > 0


@pytest.mark.parametrize("gammas", [np.arange(1, 11) / 10, 1 - np.arange(1, 8) / 9, np.array([0.1, 0.5, 0.55, 2.0])])
def test_generic_readout_intervals(gammas):
    r = readout(gammas)
    assert np.array_equal(r.classify(gammas), np.arange(1, len(gammas) + 1))
    assert readout_margin(r, gammas) > 0
    gs = np.sort(gammas)
    between = (gs[:-1] + gs[1:]) / 2
    left, right = r.classify(between - 1e-9), r.classify(between + 1e-9)
    assert np.all(left != right)  # the boundaries are where they were put


def test_readout_rejects_ties_and_perturbation_breaks_the_construction():
    with pytest.raises(ValueError):
        readout(np.array([0.1, 0.1, 0.3]))
    c = build("dot", 8, 6)
    x = all_sequences(4, 6) % 8
    w = c.weights
    from dataclasses import replace
    broken = replace(w, b1=w.b1 + 0.6)  # shifts gamma by more than the half-unit margin
    assert check(c, x)["accuracy"] == 1.0
    assert forward(broken, x)["prediction"].tolist() != hist(x).tolist()


def test_d_smaller_than_T_is_refused():
    with pytest.raises(ValueError, match="d >= T"):
        build("dot", 8, 6, d=7)
