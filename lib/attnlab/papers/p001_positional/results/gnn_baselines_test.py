"""Chapter gnn-baselines on a small config: runs, resumes from the store, its exact claims hold; bad
parameters fail with the parameter named."""

import pytest

from attnlab.core.params import ParameterError

from . import gnn_baselines as ex

SMALL = {"steps": 30, "mc_samples": 5000, "test_samples": 200, "c_list": [1.0, 2.0, 10.0], "embed": 8}


def test_small_run_claims_and_store(tmp_path):
    exp = ex.EXPERIMENTS[0]
    result = exp.run(exp.config("ci", **SMALL), store_root=tmp_path, progress=False)
    table = ex.claims(result)
    rows = {r.key: r for r in table.rows}
    assert rows["1"].verdict == rows["2"].verdict == "consistency check"  # exact optimum = least squares
    # the paper's ID column sits at 35/9, 7/36: its numbers against our closed form, nothing trained
    assert rows["3"].verdict == rows["4"].verdict == "consistency check"
    assert rows["5"].verdict == "consistency check"
    assert result["baseline"]["cumsum"]["mse_fraction"] == "35/9" and len(result["runs"]) == 8 * 3  # 3 seeds
    assert rows["6"].ours.endswith("3 seeds)") and rows["7"].ours.endswith("3 seeds)")
    for r in result["runs"]:  # no position-agnostic model beats the optimum (beyond test noise)
        assert r["test_mse"][0] > 0.95 * r["optimum_same_lists"][0]
    again = exp.run(exp.config("ci", **SMALL), store_root=tmp_path, progress=False)
    assert again["meta"]["computed"] == 0 and ex.claims(again).markdown() == table.markdown()


def test_bad_parameters():
    exp = ex.EXPERIMENTS[0]
    with pytest.raises(ParameterError, match="'embed'"):
        exp.config("ci", embed=10**6)
    with pytest.raises(ParameterError, match="'steps'"):
        exp.run(exp.config("ci", epochs=3), store_root="/nonexistent", progress=False)


def test_seed_offset(tmp_path):
    """-p seed 4: seeds 4–6 on another shared training set (nothing reused from seeds 0–2)."""
    exp = ex.EXPERIMENTS[0]
    small = {**SMALL, "seeds": 1}
    a = exp.run(exp.config("ci", **small), store_root=tmp_path, progress=False)
    b = exp.run(exp.config("ci", **small, seed=4), store_root=tmp_path, progress=False)
    assert {r["seed"] for r in b["runs"]} == {4} and b["meta"]["computed"] == 8
    assert [r["test_mse"] for r in a["runs"]] != [r["test_mse"] for r in b["runs"]]
