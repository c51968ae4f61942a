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
