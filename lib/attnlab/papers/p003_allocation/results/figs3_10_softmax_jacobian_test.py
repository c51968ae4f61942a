"""Figs. 3/10 chapter: parameter errors, a small run on the offline MiniLM, the claims' shape."""

import pytest

from attnlab.core import pretrained
from attnlab.core.params import ParameterError
from attnlab.papers.p003_allocation.results import figs3_10_softmax_jacobian as ex

EXP = ex.EXPERIMENTS[0]


def test_bad_values_raise_parameter_errors(tmp_path, monkeypatch):
    with pytest.raises(ParameterError, match="model"):
        EXP.config("ci", model="gpt5")
    with pytest.raises(ParameterError, match="lengths"):
        EXP.config("ci", lengths=[2])
    monkeypatch.setenv("ATTNLAB_MODELS", str(tmp_path))
    with pytest.raises(ParameterError, match="TinyLlama-1.1B"):
        EXP.run(EXP.config("ci", model="tinyllama", lengths=[8]), store_root=tmp_path, progress=False)


@pytest.mark.skipif(not pretrained.minilm_available(), reason="the offline MiniLM weights are not installed")
def test_small_run_on_minilm(tmp_path):
    cfg = EXP.config("ci", lengths=[4, 16, 64], sequences=3, corpus_chars=40_000)
    r = EXP.run(cfg, store_root=tmp_path, progress=False)
    assert [row["L"] for row in r["rows"]] == [4, 16, 64] and r["model"]["substitute"]
    t = ex.claims(r)
    assert [c.key for c in t.rows] == ["1", "2", "3", "4", "5", "6", "7"]
    assert all(c.verdict == "consistency check" for c in t.rows if c.key in ("3", "4"))
    again = EXP.run(cfg, store_root=tmp_path, progress=False)
    assert again["meta"]["computed"] == 0 and again["rows"] == r["rows"]
    with pytest.raises(ParameterError, match="512"):
        EXP.run(EXP.config("ci", lengths=[600], sequences=1, corpus_chars=40_000), store_root=tmp_path, progress=False)
