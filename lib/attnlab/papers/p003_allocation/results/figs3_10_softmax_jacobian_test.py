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
    assert [c.verdict for c in t.rows if c.key == "6"] == ["inconclusive"]  # Gaussian logits pass it too
    again = EXP.run(cfg, store_root=tmp_path, progress=False)
    assert again["meta"]["computed"] == 0 and again["rows"] == r["rows"]
    with pytest.raises(ParameterError, match="512"):
        EXP.run(EXP.config("ci", lengths=[600], sequences=1, corpus_chars=40_000), store_root=tmp_path, progress=False)


def test_the_real_loader_path_on_a_tiny_local_llama(tmp_path, monkeypatch):
    """model="tinyllama" end to end: a tiny random Llama (RoPE, 4 query heads on 2 K/V heads) saved
    where find_local looks, with a word-level tokenizer; the chapter's extraction must reproduce the
    model's own attention."""
    import torch
    import transformers as tf
    from tokenizers import Tokenizer, models, pre_tokenizers

    torch.manual_seed(0)
    words = ["<unk>", "<pad>", "the", "a", "of", "to", "is", "and", "in", "return", "if", "for"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    llama = tf.LlamaForCausalLM(tf.LlamaConfig(vocab_size=len(words), hidden_size=32, intermediate_size=48,
                                               num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                               max_position_embeddings=64, attn_implementation="eager"))
    path = tmp_path / "models" / "TinyLlama-1.1B"
    llama.save_pretrained(path)
    tf.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>").save_pretrained(path)
    monkeypatch.setenv("ATTNLAB_MODELS", str(tmp_path / "models"))
    cfg = EXP.config("ci", model="tinyllama", head=3, lengths=[4, 16, 64], sequences=2, corpus_chars=40_000)
    r = EXP.run(cfg, store_root=tmp_path / "store", progress=False)
    assert r["model"]["causal"] and r["model"]["position"] == "RoPE" and not r["model"]["substitute"]
    assert max(row["check"] for row in r["rows"]) < 1e-5
    assert r["rows"][0]["middle_n"] == 3 and r["rows"][-1]["last_n"] == 64  # causal: query i sees i + 1 keys
    with pytest.raises(ParameterError, match="64"):
        EXP.run(EXP.config("ci", model="tinyllama", lengths=[128], sequences=1, corpus_chars=40_000),
                store_root=tmp_path / "store", progress=False)


def test_corpus_wikitext_reads_a_local_folder_or_says_where_it_goes(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path / "data"))
    with pytest.raises(ParameterError, match="parameter 'corpus'.*ATTNLAB_DATA"):
        EXP.run(EXP.config("ci", corpus="wikitext", lengths=[8]), store_root=tmp_path, progress=False)
    if not pretrained.minilm_available():
        pytest.skip("the offline MiniLM weights are not installed")
    d = tmp_path / "data" / "wikitext-103"
    d.mkdir(parents=True)
    (d / "wiki.train.tokens").write_text(" = Valkyria Chronicles = \n The game began in 2010 , carrying over a "
                                         "large portion of the work done on its predecessor . \n" * 400)
    r = EXP.run(EXP.config("ci", corpus="wikitext", lengths=[4, 16], sequences=2, corpus_chars=20_000),
                store_root=tmp_path / "store", progress=False)
    assert not r["model"]["corpus_substitute"] and "WikiText" in r["model"]["corpus_note"]
