"""Chapter variable-length on a tiny config: it runs, resumes from the store, and refuses bad
parameters (its asserted claims need the CI preset: checked by executing the chapter)."""

import pytest

from attnlab.core.params import ParameterError

from . import variable_length as ex

TINY = dict(n=3, tasks="cumsum,sort", seeds=1, samples=30, steps=3, batch=8, embed=8, hidden=8,
            c_list=[1.0, 10.0], test_samples=12)


def test_runs_resumes_and_tabulates(tmp_path):
    exp = ex.EXPERIMENTS[0]
    result = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    assert result["meta"]["computed"] == 4 and len(result["test"]["standard"]["sort"][0]) == 2
    table = ex.claims(result)
    assert "nan" not in table.markdown() and [r.key for r in table.rows].count("P19") == 5
    again = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    assert again["meta"]["computed"] == 0 and ex.claims(again).markdown() == table.markdown()


def test_bad_parameters_name_themselves():
    with pytest.raises(ParameterError, match="'n'"):
        ex.EXPERIMENTS[0].config("ci", n=1)


def test_the_full_preset_is_valid():
    cfg = ex.EXPERIMENTS[0].config("full")
    assert cfg["epochs"] == 2000 and cfg["seeds"] == 10 and cfg["steps"] is None
