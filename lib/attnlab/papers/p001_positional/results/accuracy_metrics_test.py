"""Chapter accuracy-metrics on a tiny config: runs, resumes from the store, accuracies are
fractions; bad parameters fail with the parameter named."""

import numpy as np
import pytest

from attnlab.core.params import ParameterError

from . import accuracy_metrics as ex

SMALL = {"tasks": "cummin", "embed": 8, "hidden": 8, "samples": 256, "batch": 64, "steps": 10,
         "c_list": [1.0, 3.0], "test_samples": 100, "seeds": 2}


def test_tiny_run_and_store(tmp_path):
    exp = ex.EXPERIMENTS[0]
    result = exp.run(exp.config("ci", **SMALL), store_root=tmp_path, progress=False)
    for kind in ex.KINDS:
        for m in ex.METRICS:
            v = np.array(result["runs"][kind]["cummin"][m])
            assert v.shape == (2, 2) and (v >= 0).all() and (v <= 1).all()
        # the literal 'and' reading is never more lenient than the authors' isclose reading
        assert (np.array(result["runs"][kind]["cummin"]["closeness_both"])
                <= np.array(result["runs"][kind]["cummin"]["closeness"])).all()
    table = ex.claims(result)
    assert {r.key for r in table.rows} >= {"1", "2", "3", "4", "5", "6"}
    again = exp.run(exp.config("ci", **SMALL), store_root=tmp_path, progress=False)
    assert again["meta"]["computed"] == 0 and ex.claims(again).markdown() == table.markdown()


def test_bad_parameters():
    exp = ex.EXPERIMENTS[0]
    with pytest.raises(ParameterError, match="'tasks'"):
        exp.run(exp.config("ci", tasks="cumsum,foo"), store_root="/nonexistent", progress=False)
    with pytest.raises(ParameterError, match="'embed'"):
        exp.config("ci", embed=10**6)


def test_seed_offset_moves_the_seeds(tmp_path):
    """-p seed 5: other model seeds and (CI: shared) training data; a row per seed count is kept."""
    exp = ex.EXPERIMENTS[0]
    base = exp.run(exp.config("ci", **SMALL), store_root=tmp_path, progress=False)
    moved = exp.run(exp.config("ci", **SMALL, seed=5), store_root=tmp_path, progress=False)
    assert moved["meta"]["computed"] == 2 * 2  # nothing reused from seeds 0, 1
    assert moved["runs"]["positional"]["cummin"]["mse"] != base["runs"]["positional"]["cummin"]["mse"]
    assert "2 seeds" in next(r for r in ex.claims(moved).rows if r.key == "1").ours
    with pytest.raises(ParameterError, match="'seed'"):
        exp.config("ci", seed=-1)
