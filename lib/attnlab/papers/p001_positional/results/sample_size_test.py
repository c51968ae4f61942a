"""Chapter sample-size on a tiny config: it runs, resumes from the store, and refuses bad
parameters (its asserted claims need the CI preset: checked by executing the chapter)."""

import pytest

from attnlab.core.params import ParameterError

from . import sample_size as ex

TINY = dict(n=4, tasks="cummin", sizes=[8, 32], seeds=1, steps=3, batch=16, embed=8, hidden=8, test_samples=20)


def test_runs_resumes_and_tabulates(tmp_path):
    exp = ex.EXPERIMENTS[0]
    result = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    assert result["meta"]["computed"] == 4 and len(result["runs"]) == 2  # 2 sizes x 2 architectures
    cv = ex.curves(result, "positional", "cummin")
    assert len(cv["train"]["median"]) == len(cv["ood"]["median"]) == 2
    table = ex.claims(result)
    assert "nan" not in table.markdown()
    again = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    assert again["meta"]["computed"] == 0 and ex.claims(again).markdown() == table.markdown()


def test_bad_parameters_name_themselves(tmp_path):
    exp = ex.EXPERIMENTS[0]
    with pytest.raises(ParameterError, match="'sizes'"):
        exp.config("ci", sizes=[4])
    with pytest.raises(ParameterError, match="'sizes'"):
        exp.run(exp.config("ci", sizes=[64, 16]), store_root=tmp_path, progress=False)
    with pytest.raises(ParameterError, match="'c_list'"):
        exp.run(exp.config("ci", c_list=[2.0, 3.0]), store_root=tmp_path, progress=False)


def test_the_full_preset_is_valid():
    cfg = ex.EXPERIMENTS[0].config("full")
    assert cfg["epochs"] == 2000 and cfg["seeds"] == 10 and cfg["steps"] is None


def test_rows_any_learner_passes_are_inconclusive_and_the_ood_row_is_judged_over_seeds():
    cfg = ex.EXPERIMENTS[0].config("ci")
    run = lambda std, pos: {a: {"cumsum": {"train": [1e-3] * 3, "test": [[1e-2, v] for v in vals]}}  # noqa: E731
                            for a, vals in (("standard", std), ("positional", pos))}
    result = {"config": cfg, "tasks": ["cumsum"], "sizes": [16, 4096],
              "runs": [run([5.0, 6.0, 7.0], [0.5, 0.5, 0.5]), run([4.0, 4.0, 0.6], [0.1, 0.1, 0.1])]}
    rows = ex.claims(result).rows
    assert {r.verdict for r in rows if r.key in ("18", "18g")} == {"inconclusive"}
    d13 = next(r for r in rows if r.key == "D.1.3")
    assert d13.verdict == "reproduced" and d13.ours == "10 (6–12, 3 seeds)" and d13.asserted
