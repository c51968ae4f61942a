"""The paper-scale rows and the AoT-against-MLP rows built by analysis.py: each verdict kind where it
belongs, and each paper value taken at the point its label names."""

from attnlab.core.claims import ClaimsTable

from .analysis import by_seed, claims_aot_mlp, curve_row, per_seed, seeds_of, values_at
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


def test_by_seed_splits_a_sweep_in_seed_order():
    rows = [{"seed": s, "x": i} for i, s in enumerate((2, 0, 2, 1))]
    assert seeds_of(rows) == [0, 1, 2]
    assert [[r["x"] for r in g] for g in by_seed(rows)] == [[1], [3], [0, 2]]


def test_per_seed_and_values_at():
    rows = [{"d_h": k, "seed": s, "param": "repo", "acc": k + s / 10} for k in (1, 2) for s in (1, 0)]
    rows += [{"d_h": 1, "seed": 0, "acc": 9.0}]  # "paper" by default: not matched
    assert per_seed(rows, "acc", "d_h", [1, 2], param=("repo", "paper")).tolist() == [[1.0, 1.1], [2.0, 2.1]]
    assert values_at([1, 2, 3], [10, 20, 30], [3, 1]) == [30, 10]
    assert values_at([1, 2], [10, 20], [3]) is None


def _sweep(H):
    """Three seeds of an Exp.-5 sweep: the AoT at 0.1 + 0.01 H, the MLP model 0.1 above it."""
    per_d = {str(d): {"params": [float(h) for h in H], "widths": [2 * d * (h - 1) for h in H]} for d in (12, 16)}
    rows = [{"d": d, "H": h, "seed": s, "accuracy": 0.1 + 0.01 * h + s / 1000} for d in (12, 16) for h in H
            for s in range(3)]
    rows += [{"d": d, "H": 1, "seed": s, "mlp_width": 2 * d * (h - 1), "accuracy": 0.2 + 0.01 * h + s / 1000}
             for d in (12, 16) for h in H if h > 1 for s in range(3)]
    return {"H_list": H, "per_d": per_d, "points": rows, "metric": "accuracy"}


def test_aot_mlp_paper_value_is_taken_at_the_labelled_point():
    t = ClaimsTable()
    claims_aot_mlp(t, _sweep([1, 3, 5, 7]), "7", B1_H, B1_AOT, B1_MLP, asserted=False)
    a = t.rows[0]
    assert "H = 5, w = 8d" in a.text and a.paper == "0.165"  # the authors' data at H = 5 (d = 40)
    t = ClaimsTable()
    claims_aot_mlp(t, _sweep([1, 4, 7]), "7", B1_H, B1_AOT, B1_MLP, asserted=False)
    a = t.rows[0]  # H = 4 is not on the paper's grid: its middle point H = 7 is used, and named
    assert "the paper's middle point H = 7" in a.text and a.paper == "0.1"
    assert all(r.ours.endswith("3 seeds)") for r in t.rows)  # every row judged over the three seeds
