"""Fits, the numpy-only Student t, and the App. A.2 threshold rules on hand-made runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnlab.papers.p000_capacity import analysis as A
from attnlab.papers.p000_capacity import paper


def test_fits_are_exact_on_exact_data():
    x = np.array([1.0, 2.0, 5.0, 7.0])
    assert A.fit_origin(x, 2 * x) == pytest.approx((2.0, 1.0))
    assert A.fit_line(x, 3 * x - 1) == pytest.approx((3.0, -1.0, 1.0))
    c, beta, r2 = A.fit_power(x, 3 * x ** 1.5)
    assert (c, beta, r2) == pytest.approx((3.0, 1.5, 1.0))
    a, r2 = A.fit_origin(x, 2 * x + np.array([1, -1, 1, -1]))
    assert a < 2.1 and r2 < 1


def test_student_t_against_table_values():
    # t_{0.975, df} from standard tables
    for df, q in ((1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (30, 2.0423)):
        assert A.t_quantile(0.975, df) == pytest.approx(q, abs=1e-4)
    assert A.t_sf2(2.2622, 9) == pytest.approx(0.05, abs=1e-4)
    assert A.t_sf2(0.0, 5) == pytest.approx(1.0)
    for a, b, x in ((2.0, 3.0, 0.3), (0.5, 4.5, 0.9), (7.0, 0.5, 0.2)):
        assert A.betainc(a, b, x) == pytest.approx(1 - A.betainc(b, a, 1 - x), abs=1e-12)
    assert A.betainc(1.0, 1.0, 0.37) == pytest.approx(0.37)


def test_t_interval_and_paired_test():
    assert A.t_interval([0.7]) == (0.7, 0.7, 0.7)
    mean, lo, hi = A.t_interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and hi - mean == pytest.approx(4.3027 * 1.0 / math.sqrt(3), abs=1e-4)
    assert A.paired_t_p([1, 2, 3], [1, 2, 3]) == 1.0
    assert A.paired_t_p([1, 2, 3], [0.5, 1.5, 2.5]) == 0.0
    assert 0.0 < A.paired_t_p([1.0, 2.0, 3.5], [1.1, 1.8, 3.0]) < 1.0


def _runs(table):
    return [{"h": h, "D_K": D, "seed": s, "f1": f} for (h, D), fs in table.items() for s, f in enumerate(fs)]


def test_dk_star_central_lower_upper_and_h_interval():
    runs = _runs({(1, 8): [0.5, 0.6, 0.55], (2, 8): [0.985, 0.999, 0.98], (2, 16): [0.99, 1.0, 0.995],
                  (4, 16): [0.999, 1.0, 1.0], (1, 16): [0.7, 0.6, 0.65], (4, 8): [0.9, 0.95, 0.99]})
    out = A.dk_star(runs)
    # mean of (2, 8) is 0.988 < 0.99, its interval reaches above: optimistic lower = 8, central = 16
    assert out["lower"] == 8 and out["central"] == 16 and out["h_star"] == 4 and out["d_k"] == 4
    # the conservative end needs the interval's lower end >= 0.99
    assert out["upper"] == 16
    # h = 2 at D_K = 16 passes too and is not separated by a paired t-test: kept in the interval
    assert out["h_interval"] == (2, 4)
    assert A.dk_star(_runs({(1, 8): [0.5]}))["central"] is None


def test_the_printed_tables_fix_the_central_values():
    inf = A.infer_central()
    assert all(len(v["candidates"]) == 1 for v in inf.values()) and len(inf) == 12
    assert inf[(64, 16)] == {"candidates": [(20, 4)], "central": 20, "h_star": 4}
    assert inf[(512, 16)]["h_star"] == 64 and inf[(256, 32)]["central"] == 64
    for (m, d), v in inf.items():
        lo, hi = paper.FIG8_DKSTAR[(m, d)]
        assert lo <= v["central"] <= hi and v["central"] == v["h_star"] * paper.TABLE1_DK[(m, d)]
