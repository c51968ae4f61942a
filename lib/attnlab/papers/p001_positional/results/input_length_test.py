"""Chapter input-length on a tiny config: it runs, resumes from the store, and refuses bad
parameters (its asserted claims need the CI preset: checked by executing the chapter)."""

import pytest

from attnlab.core.params import ParameterError

from . import input_length as ex

TINY = dict(ns=[2, 3], tasks="maxsub", seeds=1, samples=32, steps=3, batch=16, embed=8, hidden=8, test_samples=20)


def test_runs_resumes_and_tabulates(tmp_path):
    exp = ex.EXPERIMENTS[0]
    result = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    assert result["meta"]["computed"] == 4 and result["ns"] == [2, 3]  # 2 lengths x 2 architectures
    table = ex.claims(result)
    assert "nan" not in table.markdown() and any(r.key == "D.1.2b" for r in table.rows)
    again = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    assert again["meta"]["computed"] == 0 and ex.claims(again).markdown() == table.markdown()


def test_bad_parameters_name_themselves(tmp_path):
    exp = ex.EXPERIMENTS[0]
    with pytest.raises(ParameterError, match="'ns'"):
        exp.config("ci", ns=[1, 4])
    with pytest.raises(ParameterError, match="'ns'"):
        exp.run(exp.config("ci", ns=[8, 4]), store_root=tmp_path, progress=False)


def test_the_full_preset_is_valid():
    cfg = ex.EXPERIMENTS[0].config("full")
    assert cfg["epochs"] == 2000 and cfg["seeds"] == 10 and cfg["steps"] is None
