import numpy as np
import torch

from attnlab.papers.p003_allocation import lm
from attnlab.papers.p003_allocation import lm_students as LS

V, C = 9, 6


def _teacher():
    c = lm.LMConfig(V, 2, 4, 2, C, seed=3)
    state = lm.ReplicaLM([c], dtype=torch.float64).replica_state(0)
    state["Wq"] = state["Wq"] * 40  # sharpen the attention of the random model
    tokens = torch.randint(0, V, (5, C), generator=torch.Generator().manual_seed(1))
    return c, state, tokens


def test_bilinear_form_reproduces_the_heads_attention():
    c, s, x = _teacher()
    cap = {}
    lm.plain_forward(s, c, x, capture=cap)
    X = LS.layer_inputs(s, c, x, 1)
    assert np.allclose(X, cap[(1, "a")].numpy())
    P = LS.causal_attention(torch.as_tensor(X), torch.as_tensor(LS.bilinear(s, c, 1, 1)))
    assert torch.allclose(P, cap[(1, 1)], atol=1e-12)


def test_full_rank_student_is_the_teacher_and_students_plug_in():
    c, s, x = _teacher()
    X = LS.layer_inputs(s, c, x, 1)
    M = LS.bilinear(s, c, 1, 0)
    out = LS.train_students(M, X, X, [1, c.head_dim], steps=3, batch=2, lr=1e-3, seed=0)
    full = out[str(c.head_dim)]
    assert full["init_mse"] < 1e-25 and full["best_mse"] == full["init_mse"] and len(full["curve"]) == 2
    y = torch.randint(0, V, x.shape, generator=torch.Generator().manual_seed(2))
    base = LS.loss_with_head(s, c, x, y, 1, 0)
    assert abs(LS.loss_with_head(s, c, x, y, 1, 0, LS.student_probs(full["A"], full["B"])) - base) < 1e-10
    assert out["1"]["init_mse"] > 1e-8  # rank 1 loses something of a random rank-4 head
    assert LS.loss_with_head(s, c, x, y, 1, 0, LS.uniform_probs) != base


def test_sharpness_of_uniform_and_one_hot_attention():
    L = 5
    U = LS.uniform_probs(torch.zeros(2, L, 3, dtype=torch.float64))
    assert torch.allclose(U.sum(-1), torch.ones(2, L, dtype=torch.float64)) and U[0, 0, 1] == 0
    su = LS.sharpness(U)
    assert abs(su["max_weight"] - su["uniform_max_weight"]) < 1e-12 and abs(su["entropy_ratio"] - 1) < 1e-12
    assert su["tv_to_uniform"] < 1e-12
    hot = torch.zeros(1, L, L, dtype=torch.float64)
    hot[0, torch.arange(L), 0] = 1.0
    sh = LS.sharpness(hot)
    assert sh["max_weight"] == 1.0 and sh["entropy_ratio"] == 0.0 and sh["tv_to_uniform"] > 0.5
