import numpy as np
import pytest
import torch

from .models import ModelConfig, Transformer
from .sweeps import train
from .variable import VariableTransformer, variable_lists

N = 4


def _explicit(big: VariableTransformer, ell: int) -> Transformer:
    """The (ℓ + 1)-node model whose P rows are the first ℓ one-hot rows and the scratchpad's row,
    with big's weights (float64)."""
    c = big.configs[0]
    small = Transformer([ModelConfig(n=ell, kind=c.kind, heads=c.heads, embed=c.embed, hidden=c.hidden,
                                     layers=c.depth, qk_dim=c.d_k)], [0], dtype=torch.float64)
    rows = list(range(ell)) + [N]
    with torch.no_grad():
        for name in big._names:
            src = getattr(big, name)
            if c.kind == "positional" and name[:3] in ("q_W", "k_W"):
                src = src[:, :, rows]
            if c.kind == "standard" and name == "enc_W":
                src = src[:, [0] + [1 + r for r in rows]]
            getattr(small, name).copy_(src)
    return small


@pytest.mark.parametrize("kind", ["positional", "standard"])
def test_a_short_list_runs_as_the_explicit_short_model(kind):
    big = VariableTransformer([ModelConfig(n=N, kind=kind, embed=8, hidden=8)], [3], dtype=torch.float64)
    x = torch.randn(6, N, dtype=torch.float64)
    for ell in range(1, N + 1):
        got = big(x, length=ell)
        assert got.shape == (1, 6, ell)
        ref = _explicit(big, ell)(x[:, :ell])
        torch.testing.assert_close(got, ref, atol=1e-12, rtol=1e-12)
        garbage = x.clone()
        garbage[:, ell:] = 1e3  # the padding is never read
        torch.testing.assert_close(big(garbage, length=ell), got, atol=0, rtol=0)
    torch.testing.assert_close(big(x, length=N), Transformer.forward(big, x), atol=0, rtol=0)
    _, maps = big(x, length=2, return_attention=True)
    A = maps[-1]
    A = A.detach()
    assert float(A[..., 2:N].abs().max()) == 0 and torch.allclose(A[..., :3, :].sum(-1), torch.ones(()).double())


def test_variable_lists_and_training():
    x, lengths = variable_lists(N, 30, 10.0, seed=1)
    assert np.bincount(lengths).tolist() == [0, 8, 8, 7, 7]
    assert all((x[lengths == ell, ell:] == 0).all() for ell in range(1, N + 1))
    assert np.abs(x).max() <= 20 and (np.abs(x[lengths == 4]).max(axis=1) > 2).mean() > 0.5
    xt, lt = variable_lists(N, 64, 1.0, seed=0)
    configs = [ModelConfig(n=N, embed=8, hidden=8), ModelConfig(n=N, embed=4, hidden=8)]
    both = VariableTransformer(configs, [0, 1])
    log = train(both, ["cumsum", "sort"], xt, lengths=lt, batch=8, lr=3e-3, seed=0, steps=[12, 5])
    alone = VariableTransformer(configs[1:], [1])
    log1 = train(alone, "sort", xt, lengths=lt, batch=8, lr=3e-3, seed=0, steps=5)
    assert log.train_mse[1] == pytest.approx(log1.train_mse[0], rel=1e-5)
    for k, v in alone.replica_state(0).items():
        if not k.startswith("k_b"):  # key biases: softmax-invariant, float noise only (see sweeps_test)
            torch.testing.assert_close(both.replica_state(1)[k], v, atol=2e-6, rtol=1e-5)
