"""Tests of the counting model's forward pass (eqs. 1-6) against a per-sequence loop."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.core.params import ParameterError
from attnlab.papers.p002_counting.reference import (VARIANTS, CountingWeights, forward, has_bos, n_params,
                                                      parse_variants)


def _random(variant, T=6, L=5, d=4, p=3, seed=0):
    rng = np.random.default_rng(seed)
    kw = dict(A=rng.standard_normal((L, L))) if variant.startswith("lin") else dict(
        W_Q=rng.standard_normal((d, d)), W_K=rng.standard_normal((d, d)))
    return CountingWeights(variant, rng.standard_normal((T + has_bos(variant), d)), rng.standard_normal((d, p)),
                           rng.standard_normal(p), rng.standard_normal((p, L + 1)), rng.standard_normal(L + 1), **kw)


def _loop(w, seq):
    toks = ([w.T] if has_bos(w.variant) else []) + list(seq)
    X = np.stack([w.emb[t] for t in toks])
    n = len(toks)
    if w.variant.startswith("lin"):
        A = w.A.copy()
    else:
        A = np.array([[X[i] @ w.W_Q @ w.W_K.T @ X[j] / np.sqrt(w.d) for j in range(n)] for i in range(n)])
    if w.variant.endswith("+sftm"):
        A = np.exp(A) / np.exp(A).sum(1, keepdims=True)
    out = []
    for i in range(1 if has_bos(w.variant) else 0, n):
        xm = X[i] + sum(A[i, j] * X[j] for j in range(n))
        out.append(np.maximum(xm @ w.W1 + w.b1, 0) @ w.W2 + w.b2)
    return np.array(out)


@pytest.mark.parametrize("variant", VARIANTS)
def test_forward_matches_loop(variant):
    w = _random(variant)
    x = np.random.default_rng(1).integers(0, w.T, size=(7, w.L))
    out = forward(w, x)
    assert out["logits"].shape == (7, w.L, w.L + 1)
    for i in range(7):
        assert np.allclose(out["logits"][i], _loop(w, x[i]), atol=1e-10)


def test_parameter_count_example():
    # lin+sftm, T=32, L=10, d=p=32: 32·32 (embeddings) + 10² (A) + 32·32 + 32 (W1, b1) + 32·11 + 11 (W2, b2) = 2543
    assert n_params("lin+sftm", 32, 10, 32, 32) == 2543
    w = _random("bos", T=6, L=5, d=4, p=3)
    assert w.n_params() == sum(a.size for a in (w.emb, w.W_Q, w.W_K, w.W1, w.b1, w.W2, w.b2))


def test_shape_errors():
    w = _random("dot")
    with pytest.raises(ValueError, match="length"):
        forward(w, np.zeros((2, w.L + 1), dtype=int))
    with pytest.raises(ValueError, match="tokens"):
        forward(w, np.full((2, w.L), w.T))
    with pytest.raises(ValueError, match="variant"):
        CountingWeights("attn", w.emb, w.W1, w.b1, w.W2, w.b2)


def test_parse_variants_rejects_unknown_and_repeated_names():
    assert parse_variants(" bos+sftm, dot ") == ["bos+sftm", "dot"]
    assert parse_variants("all") == list(VARIANTS)
    for bad in ("dot, dot", "attention", ""):
        with pytest.raises(ParameterError):
            parse_variants(bad)
