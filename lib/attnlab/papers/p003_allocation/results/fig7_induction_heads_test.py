"""Fig. 7 chapter: parameter errors and a tiny run."""

import pytest

from attnlab.core.params import ParameterError
from attnlab.papers.p003_allocation.results import fig7_induction_heads as ex

EXP = ex.EXPERIMENTS[0]


def _run(tmp_path, **over):
    return EXP.run(EXP.config("ci", **over), store_root=tmp_path, progress=False)


def test_bad_values_raise_parameter_errors(tmp_path):
    with pytest.raises(ParameterError, match="heads"):
        _run(tmp_path, heads=[3])
    with pytest.raises(ParameterError, match="repeats"):
        _run(tmp_path, L=8, P=5)
    with pytest.raises(ParameterError, match="batch"):
        _run(tmp_path, n=20, batch=64)


def test_tiny_run_and_claims(tmp_path):
    r = _run(tmp_path, L=12, P=3, n=40, d_model=8, heads=[1, 2, 8], epochs=1, batch=8)
    t = ex.claims(r)
    assert [c.key for c in t.rows] == ["1", "2", "3", "4", "5"] and t.rows[0].verdict == "consistency check"
    assert set(r["best"]) == {"1", "2", "8"}
    again = _run(tmp_path, L=12, P=3, n=40, d_model=8, heads=[1, 2, 8], epochs=1, batch=8)
    assert again["meta"]["computed"] == 0
