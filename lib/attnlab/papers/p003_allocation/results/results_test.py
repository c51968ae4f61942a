"""Parameter validation and claims of the chapters on small, fast configurations."""

import pytest

from attnlab.core.params import ParameterError
from attnlab.papers.p003_allocation.results import (allocation_rule, fig2_ngram_heads, fig8_memory_kernels,
                                                     softmax_saturation, thm41_tradeoff_bound)


def _run(mod, tmp_path, **over):
    exp = mod.EXPERIMENTS[0]
    return exp.run(exp.config("ci", **over), store_root=tmp_path, progress=False)


def test_bad_values_raise_parameter_errors(tmp_path):
    with pytest.raises(ParameterError, match="heads"):
        _run(fig2_ngram_heads, tmp_path, heads=[3])
    with pytest.raises(ParameterError, match="H_max"):
        _run(thm41_tradeoff_bound, tmp_path, H_max=1000)
    with pytest.raises(ParameterError, match="d_h"):
        _run(softmax_saturation, tmp_path, d_h=[32])
    with pytest.raises(ParameterError, match="families"):
        _run(fig8_memory_kernels, tmp_path, families="gauss")
    with pytest.raises(ParameterError, match="D"):
        fig2_ngram_heads.EXPERIMENTS[0].config("ci", D=10 ** 6)


def test_theory_claims_hold_and_results_are_stored(tmp_path):
    for mod in (thm41_tradeoff_bound, allocation_rule):
        r = _run(mod, tmp_path)
        mod.claims(r).check()
        again = _run(mod, tmp_path)
        assert again["meta"]["store_hits"] == 1 and again["meta"]["computed"] == 0


def test_tiny_training_sweep_runs(tmp_path):
    r = _run(fig2_ngram_heads, tmp_path, D=8, heads=[1, 2, 8], steps=5, n_eval=16, L=6, seeds=2, seed=3)
    assert set(r["best"]) == {"1", "2", "8"} and sorted({x["seed"] for x in r["runs"]}) == [3, 4]
    sh = fig2_ngram_heads.shape(r)
    assert set(sh["seeds"]) == {3, 4} and all(v["argmin"] in (1, 2, 8) for v in sh["seeds"].values())
    rows = {c.key: c for c in fig2_ngram_heads.claims(r).rows}
    assert rows["1"].ours.endswith("2 seeds)")  # judged over both seeds (the seed rule)
    assert fig2_ngram_heads.EXPERIMENTS[0].stored("full") is None
    with pytest.raises(ParameterError, match="seed"):
        fig2_ngram_heads.EXPERIMENTS[0].config("ci", seed=-1)
