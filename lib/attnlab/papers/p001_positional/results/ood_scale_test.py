"""Chapter ood-scale on a tiny config: it runs, resumes from the store with the same table, and
refuses bad parameters (its asserted claims need the CI preset: checked by executing the chapter)."""

import pytest

from attnlab.core.params import ParameterError

from . import ood_scale as ex

TINY = dict(n=4, tasks="cumsum,sort", seeds=1, samples=64, steps=4, batch=32, embed=8, hidden=8,
            c_list=[1.0, 2.0, 10.0], test_samples=20)


def test_runs_resumes_and_tabulates(tmp_path):
    exp = ex.EXPERIMENTS[0]
    result = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    assert result["meta"]["computed"] == 4  # 2 architectures x 2 tasks x 1 seed
    assert set(result["test"]) == {"standard", "positional"} and len(result["test"]["standard"]["sort"][0]) == 3
    table = ex.claims(result)
    assert "nan" not in table.markdown() and [r.key for r in table.rows].count("21") == 5
    again = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    assert again["meta"]["computed"] == 0 and ex.claims(again).markdown() == table.markdown()


def test_bad_parameters_name_themselves():
    exp = ex.EXPERIMENTS[0]
    with pytest.raises(ParameterError, match="'tasks'"):
        exp.run(exp.config("ci", tasks="cumprod"), progress=False)
    with pytest.raises(ParameterError, match="'seeds'"):
        exp.config("ci", seeds=10**6)


def test_the_full_preset_is_valid():
    cfg = ex.EXPERIMENTS[0].config("full")
    assert cfg["epochs"] == 2000 and cfg["seeds"] == 10 and cfg["steps"] is None
