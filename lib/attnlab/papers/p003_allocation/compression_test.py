"""Corollary 5.1's error at SVD initialisation against exact bounds (float64, many random cases),
the bilinear form with biases, and the students' training (exact at full rank, independence)."""

import numpy as np
import pytest
import torch

from attnlab.papers.p003_allocation import compression as C
from attnlab.papers.p003_allocation import saturation as S


def test_svd_factors_give_the_truncated_svd():
    rng = np.random.default_rng(0)
    M = rng.normal(size=(9, 7)) @ rng.normal(size=(7, 9))
    for k in (1, 3, 7):
        A, B, s = C.svd_factors(M, k)
        assert A.shape == (9, k) and np.allclose(A @ B.T, S.truncate(M, k), atol=1e-12)
    A, B, _ = C.svd_factors(M, 7)
    assert np.abs(A @ B.T - M).max() < 1e-12


def test_init_errors_respect_the_exact_bounds_and_the_entrywise_rate():
    rng = np.random.default_rng(1)
    worst = {"l2": 0.0, "linf": 0.0, "dz": 0.0, "l2s": 0.0, "linfs": 0.0}
    for trial in range(60):
        D, d_H = 12, 6
        W, s = S.teacher(D, d_H, sigma_max=rng.uniform(0.5, 4), decay=rng.uniform(0.3, 0.95), rng=rng)
        L = int(rng.choice([2, 5, 17, 64, 200]))
        B = rng.uniform(0.3, 2.0)
        X = S.unit_tokens(L, D, B, rng) * rng.uniform(0.2, 1.0, size=(L, 1))  # norms <= B
        q = S.unit_tokens(1, D, B, rng)[0]
        for k in range(1, d_H + 1):
            sig = s[k] if k < d_H else 0.0
            e = C.init_errors(W, S.truncate(W, k), X, q, sig)
            worst["l2"] = max(worst["l2"], e["l2"] - e["l2_mv"])
            worst["linf"] = max(worst["linf"], e["linf"] - e["linf_mv"])
            worst["dz"] = max(worst["dz"], e["dz_inf"] - e["dz_bound"])
            worst["l2s"] = max(worst["l2s"], e["l2_mv"] - e["l2_sigma"])
            worst["linfs"] = max(worst["linfs"], e["linf_mv"] - e["linf_sigma"])
            if k == d_H:
                assert e["l2"] < 1e-12
    assert max(worst.values()) <= 1e-13, worst


def test_the_l2_bound_is_attained_in_order_by_a_worst_case():
    # all keys equal to the query's direction but one: Delta z of size sigma on every key except one
    L, D = 400, 4
    W = np.diag([2.0, 0.5, 0.0, 0.0])
    X = np.zeros((L, D))
    X[:, 1] = np.where(np.arange(L) % 2 == 0, 1.0, -1.0)  # Delta z_i = +-0.5: the l2 error ~ 0.5/(2 sqrt L)
    q = np.array([0.0, 1.0, 0.0, 0.0])
    e = C.init_errors(W, S.truncate(W, 1), X, q, 0.5)
    assert e["l2"] > 0.2 * e["l2_sigma"]  # the L^-1/2 rate is not an artefact of a loose bound


def test_bilinear_form_reproduces_the_logits_with_biases():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(5, 6))
    Wq, Wk, bq, bk = rng.normal(size=(6, 3)), rng.normal(size=(6, 3)), rng.normal(size=3), rng.normal(size=3)
    M = C.bilinear_form(Wq, bq, Wk, bk)
    xa = C.augment(x)
    assert np.allclose(xa @ M @ xa.T, (x @ Wq + bq) @ (x @ Wk + bk).T / np.sqrt(3), atol=1e-12)
    assert np.linalg.matrix_rank(M) == 3


def _toy(seed=0, n=7, N=80, L=10):
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(n, 4)) @ rng.normal(size=(4, n)) * 0.8
    X = C.augment(rng.normal(size=(N, L, n - 1)))
    return M, X[:64], X[64:]


def test_students_exact_at_full_rank_and_training_helps():
    M, Xt, Xe = _toy()
    out = C.train_students(M, Xt, Xe, [1, 2, 4], steps=60, batch=8, lr=1e-2, seed=0)
    assert out["4"]["init_mse"] < 1e-25
    assert out["1"]["init_mse"] > out["2"]["init_mse"] > out["4"]["init_mse"]
    for k in ("1", "2"):
        assert out[k]["final_mse"] < out[k]["init_mse"], (k, out[k])
        assert out[k]["curve"][-1][1] < out[k]["curve"][0][1]
    assert C.uniform_mse(Xe, M) > out["1"]["init_mse"]
    causal = C.train_students(M, Xt, Xe, [4], steps=0, batch=4, lr=1e-2, seed=0, causal=True)
    assert causal["4"]["init_mse"] < 1e-25


def test_students_trained_together_equal_students_trained_alone():
    M, Xt, Xe = _toy(1)
    both = C.train_students(M, Xt, Xe, [1, 3], steps=20, batch=3, lr=1e-2, seed=5)
    alone = C.train_students(M, Xt, Xe, [3], steps=20, batch=3, lr=1e-2, seed=5)
    assert both["3"]["final_mse"] == alone["3"]["final_mse"]
    assert torch.get_default_dtype() == torch.float32


def test_seeds_trained_as_replicas_equal_each_seed_trained_alone():
    M, Xt, Xe = _toy(2)
    many = C.train_students(M, [Xt, Xt[::-1].copy()], Xe, [1, 3], steps=15, batch=3, lr=1e-2, seed=[4, 7])
    assert isinstance(many, list) and len(many) == 2
    for X, s, got in zip([Xt, Xt[::-1].copy()], [4, 7], many):
        alone = C.train_students(M, X, Xe, [1, 3], steps=15, batch=3, lr=1e-2, seed=s)
        assert {k: v["final_mse"] for k, v in got.items()} == {k: v["final_mse"] for k, v in alone.items()}
    assert many[0]["3"]["init_mse"] == many[1]["3"]["init_mse"]  # the same SVD initialisation
    with pytest.raises(ValueError, match="training sets"):
        C.train_students(M, [Xt], Xe, [1], steps=1, batch=3, lr=1e-2, seed=[1, 2])


def test_rope_teacher_equals_a_llama_heads_own_attention_and_its_full_rank_student_is_exact():
    from transformers import LlamaConfig, LlamaForCausalLM

    from attnlab.papers.p003_allocation import jacobian as J

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=40, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=64, attn_implementation="eager")
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(6.0)
            layer.self_attn.k_proj.weight.mul_(6.0)
    ids = torch.randint(0, 40, (6, 14), generator=torch.Generator().manual_seed(1))
    x = J.llama_attention_inputs(model, ids, 1)[0].double().numpy()
    h, hd = 3, 8
    a = model.model.layers[1].self_attn
    WQ = a.q_proj.weight.detach().double().numpy()[h * hd:(h + 1) * hd].T
    WK = a.k_proj.weight.detach().double().numpy()[(h // 2) * hd:(h // 2 + 1) * hd].T
    s = hd ** 0.25
    T = C.rope_attention(torch.as_tensor(x), torch.as_tensor(WQ / s), torch.as_tensor(WK / s), C.rope_theta(cfg))
    ref = torch.softmax(J.llama_attention_logits(model, ids, layer=1, heads=[h])[:, 0], -1)
    assert (T - ref).abs().max() < 1e-5
    out = C.rope_students(WQ, WK, C.rope_theta(cfg), x[:4], x[4:], [2, 4, 8], steps=10, batch=2, lr=1e-2, seed=0)
    assert out["8"]["init_mse"] < 1e-25 and out["2"]["init_mse"] > 1e-8
    assert C.rope_uniform_mse(WQ, WK, C.rope_theta(cfg), x[4:]) > out["2"]["best_mse"] * 0.0
    with pytest.raises(ValueError, match="even"):
        C.rope_students(WQ, WK, C.rope_theta(cfg), x[:4], x[4:], [3], steps=0, batch=2, lr=1e-2, seed=0)
