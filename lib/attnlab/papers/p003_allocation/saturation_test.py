import numpy as np
import pytest

from attnlab.papers.p003_allocation import saturation as S


def test_spectral_norm_matches_eigvalsh_exhaustively():
    rng = np.random.default_rng(0)
    for L in (1, 2, 3, 5, 16, 64):
        for scale in (0.0, 0.5, 2.0, 8.0):
            z = rng.normal(0, scale, size=(20, L))
            p = S.softmax(z)
            lam = S.spectral_norm(p)
            for row, l in zip(p, lam):
                ev = np.linalg.eigvalsh(S.jacobian(row))
                assert l == pytest.approx(ev[-1], abs=1e-14)


def test_jacobian_properties():
    rng = np.random.default_rng(1)
    for L in (2, 7, 50):
        for delta in (0.0, 0.5, 1.0, 3.0):
            p = S.softmax(rng.uniform(-delta, delta, size=L))
            J = S.jacobian(p)
            ev = np.linalg.eigvalsh(J)
            assert ev[0] >= -1e-15 and ev[-1] <= 0.5 + 1e-15          # PSD, Gershgorin
            assert np.trace(J) == pytest.approx(1 - p @ p, abs=1e-15)   # trace
            ps = np.sort(p)
            assert ps[-2] - 1e-15 <= ev[-1] <= ps[-1] + 1e-15           # interlacing
            assert np.exp(-2 * delta) / L - 1e-15 <= ev[-1] <= np.exp(2 * delta) / L + 1e-15  # Lemma B.3


def test_zero_logits_exact():
    for L in (1, 2, 10, 1000):
        lam = S.spectral_norm(np.full((1, L), 1.0 / L))[0]
        assert lam == pytest.approx(0.0 if L == 1 else 1.0 / L, abs=1e-16)
    norms = S.causal_column_norms(np.zeros((6, 6)))
    assert norms[0] == 0.0
    assert norms[1:] == pytest.approx(1.0 / np.arange(2, 7), abs=1e-16)


def test_slope():
    x = np.array([1, 2, 4, 8.0])
    assert S.loglog_slope(x, 3 * x ** -0.5) == pytest.approx(-0.5)


def test_truncation_exact_at_full_rank():
    rng = np.random.default_rng(2)
    W, s = S.teacher(16, 4, 2.0, 0.5, rng)
    assert np.linalg.matrix_rank(W) == 4
    assert S.truncate(W, 4) == pytest.approx(W, abs=1e-12)
    assert S.tail_sum(s, 1) == pytest.approx(2 * (0.5 + 0.25 + 0.125))
    X = S.unit_tokens(32, 16, 1.0, rng)
    e = S.compression_errors(W, S.truncate(W, 4), X)
    assert e["l2"] < 1e-12
    e1 = S.compression_errors(W, S.truncate(W, 1), X)
    # the logit error of the last query is at most B^2 sigma_2 entrywise
    assert e1["logit_linf"] <= s[1] + 1e-12
    assert e1["linf"] <= e1["l2"] <= e1["l1"]
