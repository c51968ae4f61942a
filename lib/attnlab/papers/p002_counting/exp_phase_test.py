import numpy as np

from .exp_phase import grids, theory_bounds


def test_theory_bounds_are_the_papers_numbers_at_T32_L10():
    assert theory_bounds("lin", 32, 10) == {"eq. 50 (p = T)": (29, 32)}
    assert theory_bounds("dot", 32, 10) == {"eq. 62 (p = 1)": 30, "eq. 72 (p = T)": (12, 32)}
    assert theory_bounds("bos+sftm", 32, 10) == {"eq. 93 (p = 1)": 8}


def test_grids_reduce_over_seeds_and_mark_stars_and_dots():
    rows = [{"d": d, "p": p, "seed": s, "final_accuracy": a, "best_accuracy": b}
            for d, p, s, a, b in [(1, 1, 0, 0.2, 0.3), (1, 1, 1, 0.4, 0.5), (2, 1, 0, 0.99, 1.0), (2, 1, 1, 0.97, 0.98),
                                  (1, 4, 0, 0.9, 0.995), (1, 4, 1, 0.9, 0.9)]]
    g = grids({"rows": {"dot": rows}, "d_list": [1, 2], "p_list": [1, 4]}, "dot")
    np.testing.assert_allclose(g["mean"][0], [0.3, 0.9])
    np.testing.assert_allclose(g["std"][0, 0], 0.1)
    assert np.isnan(g["mean"][1, 1])  # (2, 4) was not trained
    assert g["stars"].tolist() == [[False, False], [True, False]]
    assert g["dots"].tolist() == [[False, True], [False, False]]
