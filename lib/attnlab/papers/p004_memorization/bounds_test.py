"""Corollary 2, Mahdavi et al. and Table 1 / section 7 formulas, at the paper's experiment settings."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from attnlab.papers.p004_memorization.bounds import (
    FOOTNOTE5_MODELS,
    TABLE1_KEYS,
    capacity_gap,
    capacity_mahdavi,
    capacity_ours,
    corollary2_accuracy,
    hm_bubeck_competitive,
    mahdavi_applicable,
    parameters_for_capacity,
    phi,
    previous_accuracy_bound,
    table1_rows,
)

TOL = 1e-5


def _phi_exact(X, N, T_0):
    return float(Fraction(1, N) + (1 - Fraction(1, N)) * Fraction(X, T_0))


# ----------------------------------------------------------------------------- Corollary 2 reference values


def test_exp1_reference_values():
    """N = 50, d = d_h = 10, H = 1, 6, ..., 31 (Exp. 1, Fig. 1a): 1/N + (1 - 1/N)(H d_h + d)/N^2 by hand."""
    H = np.arange(1, 32, 5)
    ours = [0.02784, 0.04744, 0.06704, 0.08664, 0.10624, 0.12584, 0.14544]
    np.testing.assert_allclose(corollary2_accuracy(50, 10, 10, H), ours, rtol=0, atol=TOL)
    previous = previous_accuracy_bound(50, 10, H)
    np.testing.assert_allclose(previous[[0, -1]], [0.02392, 0.12976], rtol=0, atol=TOL)
    np.testing.assert_allclose(previous, [_phi_exact(h * 9 + 1, 50, 2500) for h in H], rtol=0, atol=1e-15)


def test_exp6_reference_values():
    """N = 10, d = d_h = 2, H = 1, 5, ..., 21."""
    H = np.arange(1, 22, 4)
    np.testing.assert_allclose(corollary2_accuracy(10, 2, 2, H), [0.136, 0.208, 0.280, 0.352, 0.424, 0.496],
                               rtol=0, atol=TOL)
    np.testing.assert_allclose(previous_accuracy_bound(10, 2, H)[[0, -1]], [0.118, 0.298], rtol=0, atol=TOL)


def test_exp2_and_exp3_reference_values():
    """Exp. 2: d = 10, H = 20, d_h = 1..10. Exp. 3: d_h = 10, H = 20, d = 5..15, which the paper plots
    with H d_h + d also for d < d_h (outside footnote 1); the construction's capacity there is H d + d."""
    ours = [corollary2_accuracy(50, 10, d_h, 20) for d_h in (1, 10)]
    previous = [previous_accuracy_bound(50, d_h, 20) for d_h in (1, 10)]
    np.testing.assert_allclose(ours + previous, [0.03176, 0.10232, 0.02039, 0.09095], rtol=0, atol=TOL)
    printed = [corollary2_accuracy(50, d, 10, 20, dh_gt_d="as_printed") for d in (5, 15)]
    np.testing.assert_allclose(printed, [0.10036, 0.10428], rtol=0, atol=TOL)
    assert corollary2_accuracy(50, 5, 10, 20, dh_gt_d="effective") == pytest.approx(_phi_exact(105, 50, 2500))
    with pytest.raises(ValueError, match=r"d_h=10 must satisfy 1 <= d_h <= d=5 \(footnote 1\)"):
        corollary2_accuracy(50, 5, 10, 20)


def test_exp6_with_dh5_is_clipped_at_one():
    """App. B's Exp. 6 text (d = 2, d_h = 5): 0.163 ... 0.883 and 1.0 at H = 21 (107 > T_0 = 100)."""
    H = np.arange(1, 22, 4)
    np.testing.assert_allclose(corollary2_accuracy(10, 2, 5, H, dh_gt_d="as_printed"),
                               [0.163, 0.343, 0.523, 0.703, 0.883, 1.0], rtol=0, atol=TOL)
    assert corollary2_accuracy(10, 2, 5, 21, dh_gt_d="as_printed", clip=False) == pytest.approx(1.063)
    assert corollary2_accuracy(10, 2, 5, 21, dh_gt_d="effective") == pytest.approx(_phi_exact(44, 10, 100))


def test_phi_endpoints_and_explicit_T0():
    assert phi(0, 50, 2500) == pytest.approx(1 / 50)  # guessing: 1/N
    assert phi(2500, 50, 2500) == pytest.approx(1.0)  # everything memorized
    assert corollary2_accuracy(50, 10, 10, 1, T_0=1000) == pytest.approx(_phi_exact(20, 50, 1000))
    with pytest.raises(ValueError, match=r"N=0 and T_0=10 must both be >= 1"):
        phi(1, 0, 10)


# ----------------------------------------------------------------------------- capacities


def test_capacity_gap_is_H_plus_d_minus_1():
    for d in range(1, 12):
        for d_h in range(1, d + 1):
            H = np.arange(0, 40)
            gap = capacity_ours(H, d_h, d) - capacity_mahdavi(H, d_h)
            assert np.array_equal(gap, H + d - 1) and np.array_equal(gap, capacity_gap(H, d))
            assert np.all(gap[1:] >= 1)


def test_capacity_formulas_and_validation():
    assert capacity_ours(31, 10, 10) == 320 and capacity_mahdavi(31, 10) == 280
    assert capacity_ours(20, 5, 2, dh_gt_d="effective") == 42  # construction claim 4
    assert capacity_ours(20, 5, 2, dh_gt_d="as_printed") == 102
    assert capacity_mahdavi(10, 8, Q=3) == 10 * 2 + 1  # H(min(Q, d_h) - 1) + 1
    with pytest.raises(ValueError, match=r"d_h=5 must satisfy 1 <= d_h <= d=2"):
        capacity_ours(20, 5, 2)
    with pytest.raises(ValueError, match=r"H=\[1, -1\] must be integers >= 0"):
        capacity_ours([1, -1], 2, 2)
    with pytest.raises(ValueError, match=r"dh_gt_d='clip' must be one of"):
        capacity_ours(1, 2, 2, dh_gt_d="clip")


# ----------------------------------------------------------------------------- Table 1 and section 7


def test_table1_rows_are_complete():
    rows = {row.key: row for row in table1_rows()}
    assert set(TABLE1_KEYS) <= set(rows)
    assert set(rows) >= {"kim2023_sec7", "huben_morris2023", "huben_morris_bubeck", "ours_thm1_eps"}
    for row in rows.values():
        assert row.capacity_latex and row.parameters_latex and row.condition_latex and row.citation
    assert rows["mahdavi2024"].capacity(H=31, d_h=10) == 280
    assert rows["ours_cor1"].capacity(H=31, d_h=10, d=10) == 320
    assert rows["kim2023_table1"].capacity(L=7) == 49
    for key in ("kim2023_table1", "kim2023_sec7"):  # the recorded Table 1 vs section 7 inconsistency
        assert "T_0 log T_0" in rows[key].notes and "sqrt(T_0 log T_0)" in rows[key].notes


def test_applicability_footnote5():
    """Mahdavi et al. need S <= d: GPT-2 (S = 1024 > d = 768) no, GPT-3 (S = 2048, d = 12288) yes."""
    assert FOOTNOTE5_MODELS == {"GPT-2": (1024, 768), "GPT-3": (2048, 12288)}
    assert not mahdavi_applicable(*FOOTNOTE5_MODELS["GPT-2"])
    assert mahdavi_applicable(*FOOTNOTE5_MODELS["GPT-3"])
    rows = {row.key: row for row in table1_rows()}
    assert not rows["mahdavi2024"].applicable(32, 2) and rows["ours_cor1"].applicable(32, 2)
    assert rows["huben_morris2023"].applicable(8, 10) and not rows["huben_morris2023"].applicable(9, 10)


def test_parameter_counts_per_work():
    S, N, d = 16, 50, 2
    T = np.array([10, 100, 1000])
    ours = parameters_for_capacity("ours_cor1", T, S, N, d)
    assert np.array_equal(ours, 2 * S + 4 * N + 8 * T - 16)  # section 7: "2S + 4N + 8T_0"
    np.testing.assert_allclose(parameters_for_capacity("kim2023_table1", T, S, N, d), S + N + T * np.log(T))
    kim_sec7 = parameters_for_capacity("kim2023_sec7", T, S, N, d)
    np.testing.assert_allclose(kim_sec7, S + N + np.sqrt(T * np.log(T)))
    assert np.array_equal(parameters_for_capacity("huben_morris2023", T, S, N, 20), (20 + S) * (S + N + T))
    assert np.array_equal(parameters_for_capacity("ours_thm1_eps", T, S, N, d), d * (S + N + T - d))
    # the two Kim variants disagree by orders of magnitude at T_0 = 1000 (erratum 4)
    kim = [parameters_for_capacity(k, 1000, S, N, d) for k in ("kim2023_table1", "kim2023_sec7")]
    assert kim[0] > 40 * kim[1]  # 6974 vs 149
    with pytest.raises(ValueError, match=r"work='bert' must be one of"):
        parameters_for_capacity("bert", T, S, N, d)


def test_huben_morris_bubeck_count_and_competitiveness():
    S, N, d, eps, T = 4, 50, 64, 0.1, 100
    neurons = np.log(1 / eps) * T * np.log(T) / np.log(d / np.log(T))
    expected = (neurons + d * (S + N)) * (1 + S / d)
    assert parameters_for_capacity("huben_morris_bubeck", T, S, N, d, eps=eps) == pytest.approx(expected)
    with pytest.raises(ValueError, match=r"eps=None must satisfy 0 < eps < 1"):
        parameters_for_capacity("huben_morris_bubeck", T, S, N, d)
    # S log N log(1/eps) <= d log d with O-constant 1
    assert hm_bubeck_competitive(S=4, N=50, d=64, eps=0.1)  # 36.0 <= 266.2
    assert not hm_bubeck_competitive(S=64, N=50, d=64, eps=0.1)  # 576.5 > 266.2
