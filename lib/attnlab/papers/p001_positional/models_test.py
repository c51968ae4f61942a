import math

import numpy as np
import pytest
import torch

from attnlab.core.train import MaskedAdam

from . import models as M
from . import reference as R


@pytest.mark.parametrize("kind,expected", [("positional", 84577), ("standard", 150273)])
def test_parameter_count_matches_the_authors_code_at_n8(kind, expected):
    c = M.ModelConfig(kind=kind)
    assert c.depth == 4 and M.parameter_count(c) == expected
    assert M.Transformer([c], [0]).n_params(0) == expected


def test_parameter_count_formula_on_other_shapes():
    for c in (M.ModelConfig(n=4, embed=32, hidden=16), M.ModelConfig(n=16, kind="standard", embed=16, hidden=8),
              M.ModelConfig(n=3, heads=4, embed=8, hidden=5, layers=2)):
        assert M.Transformer([c], [0]).n_params(0) == M.parameter_count(c)


def _train(model, x, y, steps=3):
    opt = MaskedAdam(model.parameters())
    for _ in range(steps):
        model.zero_grad()
        M.replica_mse(model(x), y).sum().backward()
        opt.step(torch.full((model.R,), 1e-2, dtype=model.dtype), torch.ones(model.R, dtype=torch.bool))


@pytest.mark.parametrize("kind", ["positional", "standard"])
def test_a_replica_alone_equals_the_same_replica_in_a_batch(kind):
    cs = [M.ModelConfig(n=4, kind=kind, embed=8, hidden=6), M.ModelConfig(n=4, kind=kind, embed=12, hidden=10)]
    seeds = [3, 4]
    g = torch.Generator().manual_seed(0)
    x = torch.rand(32, 4, generator=g, dtype=torch.float64) * 4 - 2
    y = torch.cumsum(x, 1)
    batch = M.Transformer(cs, seeds, dtype=torch.float64)
    alone = [M.Transformer([c], [s], dtype=torch.float64) for c, s in zip(cs, seeds)]
    out = batch(x)
    for r, m in enumerate(alone):
        assert torch.allclose(out[r], m(x)[0], atol=1e-12, rtol=0)
    _train(batch, x, y)
    out = batch(x)
    for r, m in enumerate(alone):
        _train(m, x, y)
        assert torch.allclose(out[r], m(x)[0], atol=1e-10, rtol=0)


def test_positional_model_is_eq1_of_the_reference_forward():
    c = M.ModelConfig(n=5, embed=8, hidden=7)
    m = M.Transformer([c], [1], dtype=torch.float64)
    with torch.no_grad():  # non-zero biases on the parts the reference has (MLP) stay in; Q/K/V/O biases are 0
        x = torch.rand(6, 5, dtype=torch.float64) * 4 - 2
        y = m(x)[0].numpy()
    st = m.replica_state(0)
    P = np.eye(c.nodes)
    layers = []
    for l in range(c.depth):
        W_O = np.concatenate([st[f"o_W{l}"][h].numpy() for h in range(c.heads)], axis=0)
        W1 = np.concatenate([st[f"m1a_W{l}"].numpy(), st[f"m1h_W{l}"].numpy()], axis=0)
        layers.append(R.Layer(st[f"q_W{l}"].numpy() / math.sqrt(c.d_k), st[f"k_W{l}"].numpy(), st[f"v_W{l}"].numpy(),
                              W_O, ((W1, st[f"m1_b{l}"].numpy()), (st[f"m2_W{l}"].numpy(), st[f"m2_b{l}"].numpy()))))
    X = np.concatenate([x.numpy(), np.zeros((6, 1))], axis=1)[..., None] @ st["enc_W"].numpy() + st["enc_b"].numpy()
    out = R.forward(X, P, layers) @ st["dec_W"].numpy() + st["dec_b"].numpy()
    assert np.abs(out[:, :5, 0] - y).max() < 1e-12


def test_positional_attention_ignores_the_input_standard_does_not():
    for kind, same in (("positional", True), ("standard", False)):
        m = M.Transformer([M.ModelConfig(n=8, kind=kind, embed=16, hidden=16)], [0])
        x = torch.rand(4, 8) * 4 - 2
        _, a1 = m(x, return_attention=True)
        _, a2 = m(8 * x, return_attention=True)
        for A1, A2 in zip(a1, a2):
            assert torch.equal(A1, A2) == same


def test_bad_configs_raise():
    with pytest.raises(ValueError, match="kind"):
        M.ModelConfig(kind="rope")
    with pytest.raises(ValueError, match="multiple"):
        M.ModelConfig(embed=10, heads=3)
    with pytest.raises(ValueError, match="share"):
        M.Transformer([M.ModelConfig(n=4), M.ModelConfig(n=8)], [0, 1])


# --- the variants of App. D.1.5–D.1.7 (helper 001-B) ---

@pytest.mark.parametrize("kind,total,first,last", [
    ("positional", 4.991864838133321, 0.4140315138070815, 0.4171159412917684),
    ("standard", 0.9456618719711287, 0.07908037026412582, 0.0787499771527615)])
def test_defaults_keep_the_first_chapters_model_bit_for_bit(kind, total, first, last):
    """Values printed by the model before the variant options existed (commit 0256d95): the new
    options at their defaults change neither the initialisation nor the forward pass. Pinned to float64
    rounding (1e-13), not bit for bit: the last bits differ between CPUs (the BLAS kernel chosen for the
    machine; seen on 2026-11-25 for the standard kind) and the positional kind's node-major path
    (`_forward_positional`) sums in another order."""
    x = torch.arange(12, dtype=torch.float64).reshape(3, 4) / 3 - 2
    y = M.Transformer([M.ModelConfig(n=4, kind=kind, embed=8, hidden=6)], [7], dtype=torch.float64)(x)[0]
    got = (y.sum().item(), y[0, 0].item(), y[2, 3].item())
    assert got == pytest.approx((total, first, last), abs=1e-13, rel=0)
    assert "pe" not in M.ModelConfig().seed_key() and "rope" not in M.ModelConfig().seed_key()
    assert M.ModelConfig(pe="binary").seed_key()["pe"] == "binary"


VARIANTS = [dict(kind="positional", pe="binary"), dict(kind="standard", pe="sinusoidal"),
            dict(kind="standard", rope=True), dict(kind="hybrid"), dict(kind="standard", pe="none", features="diag"),
            dict(kind="positional", features="value+pe"), dict(kind="standard", pe="none", rope=True)]


@pytest.mark.parametrize("opts", VARIANTS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_variants_replica_alone_equals_batch_and_count(opts):
    cs = [M.ModelConfig(n=4, embed=8, hidden=6, **opts), M.ModelConfig(n=4, embed=12, hidden=10, **opts)]
    g = torch.Generator().manual_seed(0)
    x = torch.rand(16, 4, generator=g, dtype=torch.float64) * 4 - 2
    y = torch.cumsum(x, 1)
    batch = M.Transformer(cs, [3, 4], dtype=torch.float64)
    alone = [M.Transformer([c], [s], dtype=torch.float64) for c, s in zip(cs, [3, 4])]
    for r, (c, m) in enumerate(zip(cs, alone)):
        assert m.n_params(0) == M.parameter_count(c) == batch.n_params(r)
        assert torch.allclose(batch(x)[r], m(x)[0], atol=1e-12, rtol=0)
    _train(batch, x, y)
    out = batch(x)
    for r, m in enumerate(alone):
        _train(m, x, y)
        assert torch.allclose(out[r], m(x)[0], atol=1e-10, rtol=0)


def _equivariant(m, x):
    perm = torch.tensor([2, 0, 3, 1, 5, 4])
    return torch.allclose(m(x[:, perm])[0], m(x)[0][:, perm], atol=1e-12, rtol=0)


def test_ablation_variants_route_positions_as_app_d17_says():
    """D.1.7: variants 3 and 4 have input-free attention (P only in Q/K); 1, 2, 5, 6, 7 do not.
    Variant 6 (no positional information at all) is equivariant to permutations of the inputs;
    every variant that has one (absolute P, Diag(X), RoPE) is not."""
    g = torch.Generator().manual_seed(1)
    x = torch.rand(5, 6, generator=g, dtype=torch.float64) * 4 - 2
    for v in M.ABLATIONS:
        m = M.Transformer([M.ablation_config(v, n=6, embed=8, hidden=8)], [v], dtype=torch.float64)
        _, a1 = m(x, return_attention=True)
        _, a2 = m(3 * x, return_attention=True)
        assert all(torch.equal(A, B) for A, B in zip(a1, a2)) == (v in (3, 4)), v
        assert _equivariant(m, x) == (v == 6), v
    assert M.ablation_config(2, n=6).d_in == 7 and M.ablation_config(4, n=6).d_in == 8
    assert M.ablation_config(5, n=6, embed=8).d_qk_in == 8 + 7
    with pytest.raises(ValueError, match="variant"):
        M.ablation_config(8)


def test_rope_model_scores_depend_on_positions_only_through_their_difference():
    """A standard+RoPE model whose input carries no position (pe none, value only) and whose
    encoder is zeroed sees the same features on every node: its first-layer scores q_p·k_s are then
    a function of s − p alone (a Toeplitz matrix), while without RoPE all scores are equal."""
    for rope in (True, False):
        c = M.ModelConfig(n=6, kind="standard", pe="none", rope=rope, embed=8, hidden=8)
        m = M.Transformer([c], [0], dtype=torch.float64)
        with torch.no_grad():
            m.enc_W.zero_()
            m.enc_b.normal_()
        _, maps = m(torch.zeros(1, 6, dtype=torch.float64), return_attention=True)
        A = maps[0][0, 0, 0]  # [nodes, nodes] of replica 0, sample 0, head 0
        logits = torch.log(A)  # row-wise shift of the scores
        logits = logits - logits[:, :1]
        toeplitz = all(torch.allclose(logits[p, s] - logits[p, 0], logits[p + 1, s + 1] - logits[p + 1, 1], atol=1e-12)
                       for p in range(5) for s in range(1, 6) if s + 1 < 7)
        assert toeplitz
        assert torch.allclose(A, torch.full_like(A, 1 / 7), atol=1e-12) != rope


def test_variant_configs_that_cannot_work_raise():
    with pytest.raises(ValueError, match="pe"):
        M.ModelConfig(pe="learned")
    with pytest.raises(ValueError, match="no positions"):
        M.ModelConfig(kind="positional", pe="none")
    with pytest.raises(ValueError, match="no positions"):
        M.ModelConfig(kind="standard", pe="none", features="value+pe")
    with pytest.raises(ValueError, match="even"):
        M.ModelConfig(kind="positional", rope=True)  # d_k = n + 1 = 9
    with pytest.raises(ValueError, match="share"):
        M.Transformer([M.ModelConfig(kind="standard", pe="none", features="diag"), M.ModelConfig(kind="standard")],
                      [0, 1])


@pytest.mark.parametrize("kind,opts", [
    ("positional", [dict(), dict(pe="binary"), dict(pe="sinusoidal"), dict(features="value+pe")]),
    ("standard", [dict(pe="binary"), dict(pe="sinusoidal"), dict(rope=True), dict(pe="none"),
                  dict(pe="none", rope=True)]),
    ("hybrid", [dict(), dict(pe="binary")])])
def test_replicas_with_different_encodings_in_one_program_equal_each_alone(kind, opts):
    """One program for replicas that differ in P, in whether the input reads P, and in RoPE."""
    cs = [M.ModelConfig(n=4, kind=kind, embed=8, hidden=6, **o) for o in opts]
    seeds = list(range(len(cs)))
    g = torch.Generator().manual_seed(2)
    x = torch.rand(8, 4, generator=g, dtype=torch.float64) * 4 - 2
    y = torch.cumsum(x, 1)
    batch = M.Transformer(cs, seeds, dtype=torch.float64)
    assert batch.mixed
    alone = [M.Transformer([c], [s], dtype=torch.float64) for c, s in zip(cs, seeds)]
    for r, (c, m) in enumerate(zip(cs, alone)):
        assert batch.n_params(r) == M.parameter_count(c)
        assert torch.allclose(batch(x)[r], m(x)[0], atol=1e-12, rtol=0)
    _train(batch, x, y)
    out = batch(x)
    for r, m in enumerate(alone):
        _train(m, x, y)
        assert torch.allclose(out[r], m(x)[0], atol=1e-10, rtol=0)


@pytest.mark.parametrize("opts", [
    [dict()],
    [dict(embed=8, hidden=6, heads=1), dict(embed=12, hidden=10, heads=1)],
    [dict(heads=4, embed=8, hidden=5), dict(heads=4, embed=12, hidden=9)],
    [dict(features="value+pe"), dict()],
    [dict(pe="sinusoidal"), dict(pe="onehot")],
    [dict(pe="binary"), dict(pe="binary", embed=12, hidden=9)],
])
def test_the_positional_node_major_path_is_the_general_forward(opts):
    """`_forward_positional` (attn folded into the MLP, node-major) = `_forward_general`, values and gradients."""
    cs = [M.ModelConfig(n=5, kind="positional", **o) for o in opts]
    m = M.Transformer(cs, list(range(len(cs))), dtype=torch.float64)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():  # non-zero V/O biases, so the folded bias is exercised
        for name in m._names:
            if name[:3] in ("v_b", "o_b", "q_b", "k_b"):
                getattr(m, name).copy_(torch.randn(getattr(m, name).shape, generator=g, dtype=torch.float64))
    x = torch.rand(7, 5, generator=g, dtype=torch.float64) * 4 - 2
    fast, maps = m._forward_positional(x, return_attention=True)
    slow, maps_slow = m._forward_general(x, return_attention=True)
    assert fast.shape == slow.shape == (len(cs), 7, 5)
    assert torch.allclose(fast, slow, atol=1e-12, rtol=0)
    assert all(torch.equal(a, b) for a, b in zip(maps, maps_slow))
    grads = []
    for out in (fast, slow):
        m.zero_grad()
        (out * torch.linspace(-1, 1, out.numel(), dtype=torch.float64).view(out.shape)).sum().backward(
            retain_graph=True)
        grads.append({n: p.grad.clone() for n, p in m.named_parameters()})
    for n in grads[0]:
        assert torch.allclose(grads[0][n], grads[1][n], atol=1e-11, rtol=0), n
