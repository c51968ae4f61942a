"""The paper-scale rows and the AoT-against-MLP rows built by analysis.py: each verdict kind where it
belongs, and each paper value taken at the point its label names."""

from attnlab.core.claims import ClaimsTable

from .analysis import claims_aot_mlp, curve_row, mean_se, per_seed, seed_interval_row, values_at
from .paper import B1_AOT, B1_H, B1_MLP


def test_curve_row_is_not_run_without_the_full_result_and_measured_with_it():
    t = ClaimsTable()
    curve_row(t, "a", "curve", [0.1, 0.5], None, "attnlab run x --scale full --headless")
    curve_row(t, "b", "curve", [0.1, 0.5], [0.12, 0.56], "cmd")
    curve_row(t, "c", "curve", [0.1, 0.5], [0.12, 0.54], "cmd")
    a, b, c = t.rows
    assert a.verdict == "not run" and a.tolerance.startswith("attnlab run") and a.source == "data"
    assert b.verdict == "fails" and b.ours == "0.06"  # the largest difference, 0.06 > 0.05
    assert c.verdict == "reproduced"


def test_seed_interval_row_gives_each_verdict():
    t = ClaimsTable()
    seed_interval_row(t, "r", "x", paper=0.1, values=[0.5, 0.52, 0.48], below=1.0, n_seeds=3)
    seed_interval_row(t, "f", "x", paper=0.1, values=[2.0, 2.1, 1.9], below=1.0, n_seeds=3)
    seed_interval_row(t, "i", "x", paper=0.1, values=[0.5, 1.5, 0.9], below=1.0, n_seeds=3)
    assert [r.verdict for r in t.rows] == ["reproduced", "fails", "inconclusive"]
    assert "± " in t.rows[0].ours and "(3 seeds)" in t.rows[0].ours
    assert mean_se([1.0]) == (1.0, 0.0)


def test_per_seed_and_values_at():
    rows = [{"d_h": k, "seed": s, "param": "repo", "acc": k + s / 10} for k in (1, 2) for s in (1, 0)]
    rows += [{"d_h": 1, "seed": 0, "acc": 9.0}]  # "paper" by default: not matched
    assert per_seed(rows, "acc", "d_h", [1, 2], param=("repo", "paper")).tolist() == [[1.0, 1.1], [2.0, 2.1]]
    assert values_at([1, 2, 3], [10, 20, 30], [3, 1]) == [30, 10]
    assert values_at([1, 2], [10, 20], [3]) is None


def _sweep(H):
    per_d = {str(d): {"aot": [0.1] * len(H), "mlp": [0.2] * len(H), "aot_r2": 0.99, "mlp_r2": 0.9} for d in (12, 16)}
    return {"H_list": H, "per_d": per_d}


def test_aot_mlp_paper_value_is_taken_at_the_labelled_point():
    t = ClaimsTable()
    claims_aot_mlp(t, _sweep([1, 3, 5, 7]), "7", B1_H, B1_AOT, B1_MLP, asserted=False)
    a = t.rows[0]
    assert "H = 5, w = 8d" in a.text and a.paper == "0.165"  # the authors' data at H = 5 (d = 40)
    t = ClaimsTable()
    claims_aot_mlp(t, _sweep([1, 4, 7]), "7", B1_H, B1_AOT, B1_MLP, asserted=False)
    a = t.rows[0]  # H = 4 is not on the paper's grid: its middle point H = 7 is used, and named
    assert "the paper's middle point H = 7" in a.text and a.paper == "0.1"
