import math

import numpy as np
import pytest

from attnlab.papers.p003_allocation import bounds, paper


def test_fig1_values_and_argmin():
    # Fig. 1 (§6.1): E_128(H) = sqrt(1 - 8/H) [H > 8] + 1.3 e^0.02 / H, computed independently from the printed formula
    expect = {1: 1.3 * math.exp(0.02), 4: 1.3 * math.exp(0.02) / 4, 8: 1.3 * math.exp(0.02) / 8,
              16: math.sqrt(0.5) + 1.3 * math.exp(0.02) / 16}
    for H, v in expect.items():
        assert bounds.fig1_error(H) == pytest.approx(v, abs=1e-12)
    assert bounds.fig1_error(8) == pytest.approx(0.165783, abs=1e-6)
    Hs = np.arange(1, 129)
    E = bounds.fig1_error(Hs)
    assert int(Hs[np.argmin(E)]) == paper.FIG1["argmin_H"]
    assert np.all(np.diff(E[:8]) < 0) and np.all(np.diff(E[7:]) > 0)


def test_indicator_branch():
    assert bounds.compression_term(8, 8) == 0.0
    assert bounds.compression_term(9, 8) == 0.0
    assert bounds.compression_term(2, 8) == pytest.approx(math.sqrt(0.75))
    with pytest.raises(ValueError):
        bounds.compression_term(0, 8)


def test_thm41_bound_terms():
    rho = [1.0, 1.0, 1.0, 1.0]
    t = bounds.thm41_bound(rho, [(8, 8)] * 4, d=8)
    assert t.compression == 0.0 and t.truncation == 0.0
    assert t.total == pytest.approx(1.3 / 8 * sum(math.exp(0.02 * m) for m in range(1, 5)), abs=1e-12)
    t = bounds.thm41_bound(rho, [(1, 4)], d=8, B=2.0, eps=0.5)
    assert t.compression == pytest.approx(2 * 1.5 * math.sqrt(0.5))
    assert t.truncation == pytest.approx(6.0)
    with pytest.raises(ValueError):
        bounds.thm41_bound([1.0], [(1, 1), (1, 1)], d=8)


def test_eps_delta():
    assert bounds.eps_delta(4, 64, 0.05, 8) == pytest.approx(math.sqrt(2 * math.log(2 * 4 * 64 / 0.05) / 8))
    with pytest.raises(ValueError):
        bounds.eps_delta(4, 64, 1.5, 8)


def test_uniform_head_bound_argmin_is_D_over_d():
    rho = [1.0] * 4
    for D in (64, 128, 256):
        Hs = [2 ** k for k in range(int(math.log2(D)) + 1)]
        vals = [bounds.uniform_head_bound(H, D, 8, rho) for H in Hs]
        assert Hs[int(np.argmin(vals))] == D // 8
    assert bounds.uniform_head_bound(256, 256, 8, rho) == pytest.approx(3.827094518757868)
    assert bounds.uniform_groups(3, 64, 4) is None
    assert bounds.uniform_groups(6, 48, 4) == [(2, 8), (2, 8), (1, 8), (1, 8)]


def test_lemma_b1_constant():
    sups = bounds.bump_derivative_sups(1)
    assert sups[0] == pytest.approx(math.exp(-1), abs=1e-9)
    # Psi'(x) = -2x/(1-x^2)^2 Psi: compare with a central difference
    x = np.linspace(-0.95, 0.95, 4001)
    h = 1e-6
    num = (bounds.bump(x + h) - bounds.bump(x - h)) / (2 * h)
    assert np.max(np.abs(num)) == pytest.approx(sups[1], rel=1e-4)
    c1 = bounds.lemma_b1_constant(1)
    assert 1.25 <= c1 <= 1.30
    assert bounds.lemma_b1_constant(2) > 10 * c1


def test_volterra_terms():
    k = {(1, 2): 1.0, (5, 5): 2.0}
    t = bounds.volterra_terms(k, 2, M=2, min_d=4, min_H=2, d=8)
    assert t["compression"] == pytest.approx(math.sqrt(1 - 0.25))
    eps = 1.3 * math.exp(0.04) / 2
    assert t["attention"] == pytest.approx((1 + eps) ** 2 - 1)
    assert t["truncation"] == 2.0
