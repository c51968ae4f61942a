"""Fig. 4 chapter: parameter errors and a small run (synthetic bounds + a few MiniLM student steps)."""

import pytest

from attnlab.core import pretrained
from attnlab.core.params import ParameterError
from attnlab.papers.p003_allocation.results import fig4_head_compression as ex

EXP = ex.EXPERIMENTS[0]


def test_bad_values_raise_parameter_errors(tmp_path):
    with pytest.raises(ParameterError, match="syn_d_h"):
        EXP.run(EXP.config("ci", syn_d_h=[16]), store_root=tmp_path, progress=False)
    with pytest.raises(ParameterError, match="model"):
        EXP.config("ci", model="litellama")


@pytest.mark.skipif(not pretrained.minilm_available(), reason="the offline MiniLM weights are not installed")
def test_small_run(tmp_path):
    cfg = EXP.config("ci", syn_lengths=[16, 64, 256], draws=3, d_h=[8, 32], L=16, train_spans=8, eval_spans=2,
                     steps=5, corpus_chars=40_000)
    r = EXP.run(cfg, store_root=tmp_path, progress=False)
    t = ex.claims(r)
    got = {c.key: c.verdict for c in t.rows}
    assert got["1"] == got["2"] == got["6"] == got["7"] == "consistency check"
    assert set(ex.student_table(r)) == {8, 32}
    with pytest.raises(ParameterError, match="d_h"):
        EXP.run(EXP.config("ci", d_h=[64], L=16, train_spans=2, eval_spans=1, steps=0, corpus_chars=40_000,
                           syn_lengths=[16], draws=1), store_root=tmp_path, progress=False)
