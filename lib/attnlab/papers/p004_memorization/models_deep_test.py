import pytest
import torch
import torch.nn.functional as F

from attnlab.core.train import linear_lr, train_replicas
from attnlab.papers.p004_memorization.models import AoTConfig, ReplicaAoT
from attnlab.papers.p004_memorization.models_deep import DeepConfig, ReplicaDeep
from attnlab.papers.p004_memorization.tasks import full_batches, lookup_table_task, paper_batches

torch.set_num_threads(1)  # tiny models: two threads on two busy cores are many times slower
N = 9
MIXED = [DeepConfig(N, 2, 3, 4, 4, 1, 0, 0), DeepConfig(N, 2, 3, 5, 2, 3, 0, 1), DeepConfig(N, 2, 3, 3, 3, 1, 12, 2),
         DeepConfig(N, 2, 3, 5, 5, 2, 0, 3), DeepConfig(N, 2, 3, 4, 1, 4, 0, 4), DeepConfig(N, 2, 3, 5, 5, 1, 20, 5)]


def _loop_forward(c: DeepConfig, p: dict, tokens: torch.Tensor) -> torch.Tensor:
    """The model written out: one sequence, one position, one head at a time."""
    out = []
    for t in tokens:
        x = [p["E"][t[s]] + p["P"][s] for s in range(c.S)]
        for l in range(c.L):
            new = []
            for s in range(c.S):
                y = x[s].clone()
                for h in range(c.H):
                    q = p["W_Q"][l, h] @ x[s]
                    scores = torch.stack([q @ (p["W_K"][l, h] @ x[j]) for j in range(s + 1)]) / c.d_h ** 0.5
                    a = torch.softmax(scores, 0)
                    A = sum(a[j] * x[j] for j in range(s + 1))
                    y = y + p["W_O"][l, h] @ (p["W_V"][l, h] @ A)
                if c.w > 0:
                    y = y + p["W_2"][l] @ F.gelu(p["W_1"][l] @ y + p["b_1"][l])
                new.append(y)
            x = new
        out.append(p["W_U"] @ x[-1])
    return torch.stack(out)


@pytest.mark.parametrize("r", range(len(MIXED)))
def test_forward_matches_written_out_loop_float64(r):
    model = ReplicaDeep(MIXED, dtype=torch.float64)
    tokens = torch.randint(0, N, (7, 2), generator=torch.Generator().manual_seed(r))
    expected = _loop_forward(MIXED[r], model.replica_state(r), tokens)
    assert torch.allclose(model(tokens)[r], expected, rtol=0, atol=1e-12)


def test_forward_longer_context_and_one_layer_equals_the_one_layer_aot_math():
    c = DeepConfig(N, 4, 2, 4, 3, 2, 6, 0)
    model = ReplicaDeep([c], dtype=torch.float64)
    tokens = torch.randint(0, N, (5, 4), generator=torch.Generator().manual_seed(1))
    assert torch.allclose(model(tokens)[0], _loop_forward(c, model.replica_state(0), tokens), rtol=0, atol=1e-12)
    # L = 1, w = 0: the same function as the one-layer AoT of models.py given the same weights.
    c1 = DeepConfig(N, 3, 1, 5, 2, 3, 0, 0)
    deep, aot = ReplicaDeep([c1], dtype=torch.float64), ReplicaAoT([AoTConfig(N, 3, 5, 2, 3, 0)], dtype=torch.float64)
    with torch.no_grad():
        for name in ("E", "P", "W_U"):
            getattr(aot, name).copy_(getattr(deep, name))
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            getattr(aot, name).copy_(getattr(deep, name)[:, 0])
    tokens = torch.randint(0, N, (6, 3), generator=torch.Generator().manual_seed(2))
    assert torch.allclose(deep(tokens), aot(tokens), rtol=0, atol=1e-12)


def test_the_loop_check_can_fail():
    model = ReplicaDeep(MIXED[2:3], dtype=torch.float64)
    tokens = torch.randint(0, N, (4, 2), generator=torch.Generator().manual_seed(0))
    p = model.replica_state(0)
    p["b_1"] = p["b_1"] + 1e-3
    assert not torch.allclose(model(tokens)[0], _loop_forward(MIXED[2], p, tokens), rtol=0, atol=1e-9)


def _train(configs, steps=40, batches=None):
    tokens, targets = lookup_table_task(N)
    model = ReplicaDeep(configs, dtype=torch.float64)
    train_replicas(model, batches or full_batches(tokens, targets), steps, linear_lr(1e-2, 1e-3, steps),
                   progress=False)
    return model


def _assert_same(a: dict, b: dict):
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].shape == b[name].shape, name
        assert torch.allclose(a[name], b[name], rtol=0, atol=1e-12), (name, (a[name] - b[name]).abs().max())


def test_replica_trained_in_a_batch_equals_it_trained_alone():
    batch = _train(MIXED)
    for r in (0, 2, 4, 5):
        _assert_same(batch.replica_state(r), _train([MIXED[r]]).replica_state(0))
    moved = batch.replica_state(1)["W_Q"] - ReplicaDeep([MIXED[1]], dtype=torch.float64).replica_state(0)["W_Q"]
    assert moved.abs().max() > 1e-3  # it did train


def test_replica_equivalence_with_minibatches():
    tokens, targets = lookup_table_task(N)
    mk = lambda: paper_batches(tokens, targets, batch_size=16, n_batches=3)
    batch = _train(MIXED[:4], steps=20, batches=mk())
    _assert_same(batch.replica_state(3), _train([MIXED[3]], steps=20, batches=mk()).replica_state(0))


def test_init_depends_on_config_and_seed_only():
    a = ReplicaDeep([MIXED[0], MIXED[5]]).replica_state(1)
    b = ReplicaDeep([MIXED[5]]).replica_state(0)
    assert all(torch.equal(a[k], b[k]) for k in a)
    c = ReplicaDeep([DeepConfig(**{**MIXED[5].__dict__, "seed": 99})]).replica_state(0)
    assert not torch.equal(b["E"], c["E"])


@pytest.mark.parametrize("c", MIXED + [DeepConfig(70, 2, 5, 13, 13, 21), DeepConfig(70, 2, 3, 10, 10, 1, 400)])
def test_parameter_count_formula_matches_tensors(c):
    n = sum(v.numel() for v in ReplicaDeep([c]).replica_state(0).values())
    assert n == c.n_parameters
    assert c.n_parameters == c.d * (c.S + 2 * c.N) + c.L * (4 * c.d * c.d_h * c.H + (2 * c.d + 1) * c.w)


def test_mlp_width_matched_to_heads_gives_equal_counts():
    """w = 2 d (H - 1) per layer matches an AoT with H heads per layer up to the w biases (Fig. 10's x-axis)."""
    d, H, L = 10, 9, 3
    aot, mlp = DeepConfig(70, 2, L, d, d, H), DeepConfig(70, 2, L, d, d, 1, 2 * d * (H - 1))
    assert mlp.n_parameters - aot.n_parameters == L * mlp.w


def test_bad_configs_fail_with_the_value():
    with pytest.raises(ValueError, match="d_h=5"):
        DeepConfig(N, 2, 3, 4, 5, 1)
    with pytest.raises(ValueError, match="share N, S and L"):
        ReplicaDeep([DeepConfig(N, 2, 3, 4, 4, 1), DeepConfig(N, 2, 2, 4, 4, 1)])


def test_folded_layer_equals_core_causal_attention_head_by_head():
    from attnlab.core.attention import causal_attention
    from attnlab.papers.p004_memorization.models_deep import folded_causal_attention

    g = torch.Generator().manual_seed(3)
    R, H, D, K, S, B = 2, 3, 5, 2, 4, 6
    x = torch.randn(R, B, S, D, generator=g, dtype=torch.float64)
    Wq, Wk, Wv = (torch.randn(R, H, K, D, generator=g, dtype=torch.float64) for _ in range(3))
    Wo = torch.randn(R, H, D, K, generator=g, dtype=torch.float64)
    scale = torch.full((R * H,), K ** -0.5, dtype=torch.float64)
    ref = causal_attention(x.repeat_interleave(H, 0), Wq.flatten(0, 1), Wk.flatten(0, 1), Wv.flatten(0, 1),
                           Wo.flatten(0, 1), scale).view(R, H, B, S, D).sum(1)  # [R,B,S,D]
    QK = torch.einsum("rhkd,rhke->rhde", Wq, Wk) * K ** -0.5
    for first in (0, S - 1):
        out = folded_causal_attention(x.permute(0, 3, 2, 1), QK, Wo @ Wv, first)  # [R,D,S',B]
        assert torch.allclose(out.permute(0, 3, 2, 1), ref[:, :, first:], rtol=0, atol=1e-12)
