"""The Llama extraction against the model's own attention probabilities (a tiny random
LlamaForCausalLM with RoPE and grouped-query attention, built here), and the per-query
statistics against a dense eigendecomposition."""

import numpy as np
import pytest
import torch

from attnlab.papers.p003_allocation import jacobian as J
from attnlab.papers.p003_allocation import saturation as S


def tiny_llama(seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=64, rope_theta=10000.0, attn_implementation="eager")
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # larger query/key weights than the random init, so attention is not near-uniform
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(8.0)
            layer.self_attn.k_proj.weight.mul_(8.0)
    return model


def test_llama_logits_reproduce_the_models_attention_probabilities():
    model = tiny_llama()
    ids = torch.randint(0, 50, (3, 11), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True, use_cache=False)
    for layer in (0, 1):
        z = J.llama_attention_logits(model, ids, layer=layer)
        assert z.shape == (3, 4, 11, 11) and z.dtype == torch.float64
        assert torch.isinf(z[0, 0, 0, 1:]).all() and torch.isfinite(z[0, 0].tril()).all()
        p = torch.softmax(z, dim=-1)
        ref = out.attentions[layer].double()
        assert (p - ref).abs().max() < 1e-5, float((p - ref).abs().max())
        assert ref[0, 0].max() > 0.5  # the test is not on near-uniform attention
    # a subset of heads, in any order, gives the same rows; GQA: heads 0, 1 share KV head 0
    z = J.llama_attention_logits(model, ids, layer=0)
    sub = J.llama_attention_logits(model, ids, layer=0, heads=[3, 0])
    assert torch.equal(sub[:, 0], z[:, 3]) and torch.equal(sub[:, 1], z[:, 0])
    assert [J.gqa_kv_head(h, 4, 2) for h in range(4)] == [0, 0, 1, 1]
    with pytest.raises(ValueError, match="layer"):
        J.llama_attention_logits(model, ids, layer=2)
    with pytest.raises(ValueError, match="heads"):
        J.llama_attention_logits(model, ids, layer=0, heads=[4])


def test_describe_model_names_rope_and_gqa():
    d = J.describe_model("tiny", tiny_llama())
    assert d == {"name": "tiny", "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 8, "hidden": 32, "max_positions": 64,
                 "position": "RoPE", "causal": True}


def test_row_stats_against_eigendecomposition_and_the_bounds():
    rng = np.random.default_rng(0)
    for L in (2, 5, 40):
        z = rng.normal(0, 2, size=L)
        z_masked = np.concatenate([z, [-np.inf] * 3])
        r = J.row_stats(z_masked)
        p = S.softmax(z)
        lam = np.linalg.eigvalsh(np.diag(p) - np.outer(p, p))[-1]
        assert abs(r["jac"] - lam) < 1e-14 and r["n"] == L
        assert r["p2"] - 1e-15 <= r["jac"] <= r["p1"] + 1e-15
        assert r["p1"] <= np.exp(r["range"]) / L  # Lemma B.3's form: p_max <= e^(max - min) / n
        assert abs(r["l2"] - np.linalg.norm(z)) < 1e-12 and r["linf"] == np.abs(z).max()
    assert J.row_stats(np.array([0.3, -np.inf]))["jac"] == 0.0  # one visible key: J = 0


def test_sequence_stats_on_causal_zero_logits():
    L = 9
    z = np.where(np.tril(np.ones((L, L))) > 0, 0.0, -np.inf)
    s = J.sequence_stats(z)
    assert abs(s["middle"]["jac"] - 1 / (L // 2 + 1)) < 1e-15 and abs(s["last"]["jac"] - 1 / L) < 1e-15
    assert abs(s["mean_jac"] - np.mean(1 / np.arange(2, L + 1))) < 1e-15


def test_spans_and_special_tokens():
    ids = np.arange(100)
    sp = J.spans(ids, 7, 5, np.random.default_rng(0))
    assert sp.shape == (5, 7) and np.all(np.diff(sp, axis=1) == 1)
    w = J.with_special(sp, 101, 102)
    assert w.shape == (5, 9) and np.all(w[:, 0] == 101) and np.all(w[:, -1] == 102)
    with pytest.raises(ValueError, match="fewer"):
        J.spans(ids, 101, 1, np.random.default_rng(0))


def test_measure_matches_row_stats_and_skips_single_key_queries():
    L = 12
    rng = np.random.default_rng(3)
    z = np.where(np.tril(np.ones((L, L))) > 0, rng.normal(size=(2, L, L)), -np.inf)
    m = J.measure(z, n_positions=5)
    assert m["positions"][0] == 1 and m["positions"][-1] == L - 1 and len(m["positions"]) == 5
    assert m["middle"][1] == J.row_stats(z[1, L // 2]) and m["last"][0] == J.row_stats(z[0, -1])
    want = np.mean([J.row_stats(z[0, i])["jac"] for i in m["positions"]])
    assert abs(m["mean_jac"][0] - want) < 1e-14


def test_head_logits_of_a_causal_model_through_the_pretrained_wrapper():
    from attnlab.core.pretrained import Pretrained

    model = tiny_llama()
    p = Pretrained("tiny", model, None, "test", False, "")
    ids = torch.randint(0, 50, (2, 9), generator=torch.Generator().manual_seed(2))
    z = J.head_logits(p, ids, layer=1, head=2)
    with torch.no_grad():
        ref = model(input_ids=ids, output_attentions=True, use_cache=False).attentions[1][:, 2].double().numpy()
    assert z.shape == (2, 9, 9) and np.abs(S.softmax(z) - ref).max() < 1e-5
    with pytest.raises(ValueError, match="head"):
        J.head_logits(p, ids, layer=0, head=4)


def test_absent_local_model_fails_clearly(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNLAB_MODELS", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="TinyLlama-1.1B"):
        J.load("tinyllama")
    with pytest.raises(ValueError, match="choose"):
        J.load("gpt5")


@pytest.mark.skipif(not __import__("attnlab.core.pretrained", fromlist=["x"]).minilm_available(),
                    reason="the offline MiniLM weights are not installed")
def test_minilm_head_logits_match_the_models_attention():
    from attnlab.core import pretrained as P

    p = P.minilm()
    stream = J.token_stream(p, "The quick brown fox jumps over the lazy dog. " * 20)
    ids = J.sample_inputs(p, stream, 12, 2, np.random.default_rng(0))
    assert ids.shape == (2, 12) and np.all(ids[:, 0] == p.tokenizer.cls_token_id)
    z = J.head_logits(p, ids, layer=5, head=3)
    ref = P.attention_probabilities(p, torch.as_tensor(ids), 5)[:, 3].double().numpy()
    assert np.abs(S.softmax(z) - ref).max() < 1e-5
