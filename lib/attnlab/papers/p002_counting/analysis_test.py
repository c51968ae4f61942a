import numpy as np
import pytest

from . import analysis as I
from . import constructions as C
from .reference import CountingWeights, forward, softmax
from .tasks import hist, sample_code


def _random(variant, T=5, L=4, d=6, p=3, seed=0):
    rng = np.random.default_rng(seed)
    Tp = T + variant.startswith("bos")
    kw = {"A": rng.normal(size=(L, L))} if variant.startswith("lin") else \
        {"W_Q": rng.normal(size=(d, d)), "W_K": rng.normal(size=(d, d))}
    return CountingWeights(variant=variant, emb=rng.normal(size=(Tp, d)), W1=rng.normal(size=(d, p)),
                           b1=rng.normal(size=p), W2=rng.normal(size=(p, L + 1)), b2=rng.normal(size=L + 1), **kw)


def test_overlaps_split_the_gram_matrix():
    w = _random("bos+sftm")
    ov = I.overlaps(w)
    E = w.emb
    assert np.allclose(ov["same"], (E[:5] ** 2).sum(1)) and len(ov["different"]) == 10
    assert np.isclose(ov["bos_bos"], E[5] @ E[5]) and np.allclose(ov["bos"], E[:5] @ E[5])
    assert np.all(np.abs(ov["cos_different"]) <= 1 + 1e-12)


def test_attention_matrix_matches_forward_and_bos_weights_group_by_count():
    w = _random("bos+sftm")
    seq = [1, 1, 2, 3]
    A = I.attention_matrix(w, seq)
    assert A.shape == (5, 5) and np.allclose(A.sum(1), 1)
    assert np.allclose(A[1:], forward(w, np.array([seq]))["mixing"][0])
    x = sample_code(300, 5, 4, seed=1)
    bw = I.bos_weight_by_count(w, x)
    a0 = forward(w, x)["mixing"][:, :, 0]
    k = bw["counts"][0]
    assert np.isclose(bw["mean"][0], a0[hist(x) == k].mean())


def test_bos_probe_is_the_mlp_on_the_mixed_vector():
    w = _random("bos+sftm")
    al = np.linspace(0, 1, 7)
    pred = I.bos_probe(w, 1, 2, al)
    v = al[:, None] * w.emb[5] + (1 - al[:, None]) * w.emb[1] + w.emb[2]
    logits = np.maximum(v @ w.W1 + w.b1, 0) @ w.W2 + w.b2
    assert np.array_equal(pred, 1 + logits[:, 1:].argmax(1))
    grid = I.bos_probe_grid(w, [1, 2], al)
    assert grid.shape == (2, 2, 7)


def test_probe_agreement_and_band_purity():
    P = np.array([[1, 2, 3], [1, 2, 3], [1, 3, 3]])
    ag = I.probe_agreement(P)
    assert ag["modal"] == pytest.approx(8 / 9) and ag["unanimous"] == pytest.approx(2 / 3)
    al = I.simplex_points(4)
    assert len(al) == 15 and np.allclose(al.sum(1), 1)
    assert I.band_purity(al, np.round(4 * al[:, 0]).astype(int), 0) == 1.0  # bands along alpha_0 levels
    assert I.band_purity(al, np.round(4 * al[:, 1]).astype(int), 0) < 1.0


def test_monotone_and_example_sequence():
    assert I.strictly_monotone([0.1, 0.2, 0.3]) == "increasing"
    assert I.strictly_monotone([0.3, 0.2, 0.1]) == "decreasing"
    assert I.strictly_monotone([0.1, 0.1, 0.3]) is None
    assert I.example_sequence(10) == [1, 1, 2, 1, 1, 1, 3, 4, 4, 4]
    assert len(I.example_sequence(6)) == 6


def test_lin_sftm_stats_and_linear_logits_of_the_construction():
    w = _random("lin+sftm", L=4)
    s = I.softmax_mixing_stats(w)
    A = softmax(w.A)
    assert s["row_sum_err"] < 1e-12 and np.isclose(s["diag"], np.diag(A).mean())
    # the A.3.1 lin construction: gamma = k / L exactly, so every logit is a line in the count
    T, L = 8, 6
    cw = C.build("lin+sftm", T, L).weights
    lv = I.logits_vs_count(cw, [0, 1, 2])
    assert np.allclose(I.linear_r2(lv["counts"], lv["gamma"]), 1)
    curves = np.swapaxes(lv["logits"][:, :, 1:], 1, 2)
    assert I.line_deviation(lv["counts"], curves).max() < 1e-9
    assert np.all(lv["prediction"] == lv["counts"][None])


def test_linear_r2():
    k = np.arange(1, 6)
    assert np.allclose(I.linear_r2(k, np.stack([2 * k + 1.0, np.ones(5)])), 1)
    assert I.linear_r2(k, (k - 3.0) ** 2) < 0.1
    assert I.blocks(5, 4, 2, 0).tolist() == [[2, 0, 0, 0], [2, 2, 0, 0], [2, 2, 2, 0]]


def test_overlap_stats_of_an_orthonormal_and_a_simplex_frame():
    ortho = I.overlap_stats(np.eye(5) * 3.0)  # scaled: the normalised overlaps do not see the scale
    np.testing.assert_allclose(ortho["same"], 1.0)
    assert ortho["spread_cos"] == pytest.approx(0.0) and ortho["coherence"] == pytest.approx(0.0)
    # regular simplex: T = d + 1 unit vectors with pairwise cosine -1/d
    d = 3
    V = np.eye(d + 1) - 1 / (d + 1)
    s = I.overlap_stats(V)
    np.testing.assert_allclose(s["cos_different"], -1 / d)
    assert s["coherence"] == pytest.approx(1 / d) and s["spread_cos"] == pytest.approx(0.0, abs=1e-12)
    assert len(s["different"]) == (d + 1) * d // 2


def test_confusion_counts_every_position_once():
    true = np.array([[1, 1, 2], [3, 3, 3]])
    pred = np.array([[1, 2, 2], [3, 3, 1]])
    m = I.confusion(pred, true, 4)
    assert m.sum() == true.size and m[1, 1] == 1 and m[1, 2] == 1 and m[2, 2] == 1 and m[3, 3] == 2 and m[3, 1] == 1


def test_drop_ratio_of_a_rank_T_matrix_is_large():
    T = 6
    rng = np.random.default_rng(0)
    W = rng.normal(size=(12, T)) @ rng.normal(size=(T, 10)) + 1e-3 * rng.normal(size=(12, 10))
    s = I.spectrum(W)
    assert np.all(np.diff(s) <= 0) and np.allclose(s, I.spectrum(W.T))
    assert I.drop_ratio(s, T) > 100
    with pytest.raises(ValueError):
        I.drop_ratio(s[:T], T)
