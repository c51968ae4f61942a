import math

import pytest

from attnlab.papers.p003_allocation import allocation as A, bounds, paper


def test_ngram4_optimum_matches_paper():
    rho = [1.0] * paper.NGRAM_LAGS
    a = A.solve_cor41(rho, paper.NGRAM4["D"], paper.NGRAM4["d"], paper.NGRAM4["M_max"])
    assert a.groups == paper.NGRAM4_OPTIMUM["groups"]
    assert a.objective == pytest.approx(0.683497, abs=1e-6)
    assert A.solve_cor41(rho, 128, 8, 4).groups == ((4, 8),) * 4
    a64 = A.solve_cor41(rho, 64, 8, 4)
    assert a64.M == 3 and a64.budget == 64 and a64.objective == pytest.approx(2.574278, abs=1e-6)


@pytest.mark.parametrize("D", [8, 12, 16, 24])
def test_dp_equals_brute_force(D):
    for rho in ([1.0] * 4, [0.9, 0.5, 0.3, 0.1]):
        for d in (4, 8):
            dp = A.solve_cor41(rho, D, d, 4)
            bf = A.enumerate_cor41(rho, D, d, 4)
            assert dp.objective == pytest.approx(bf.objective, abs=1e-12)
            assert dp.budget == D
            assert A.objective(rho, dp.groups, d) == pytest.approx(dp.objective, abs=1e-12)


def test_head_dim_equals_d_when_budget_allows():
    rho = [0.5 ** i for i in range(1, 21)]
    a = A.solve_cor41(rho, 256, 8, 8)
    assert all(dm == 8 for _, dm in a.groups)
    Hs = [H for H, _ in a.groups]
    assert all(x >= y for x, y in zip(Hs, Hs[1:]))  # heads decrease with lag for a decaying kernel
    assert a.objective == pytest.approx(0.19954, abs=1e-5)


def test_realisable():
    assert A.realisable(64, 3, 8, 2)          # (2,8),(3,8),(3,8)
    assert not A.realisable(64, 4, 8, 3)      # 4 * 24 > 64
    assert A.realisable(7, 1, 1, 7) and not A.realisable(7, 1, 2, 1)  # 7 is prime


def test_cor_e1_printed_objective_prefers_one_group():
    import itertools
    k = {tau: 1.0 for tau in itertools.product(range(1, 5), repeat=2)}
    printed = A.solve_cor_e1(k, 2, 64, 8, 4, with_truncation=False)
    full = A.solve_cor_e1(k, 2, 64, 8, 4)
    assert printed.M == 1 and full.M > 1
    t = bounds.volterra_terms(k, 2, full.M, full.min_d, full.min_H, 8)
    assert full.objective == pytest.approx(sum(t.values()))
    assert A.realisable(64, full.M, full.min_d, full.min_H, 8)
