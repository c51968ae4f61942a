import math

import pytest
import torch

from . import encodings as E


def test_binary_encoding_is_the_pm1_code_of_the_index():
    P = E.binary(8)
    assert P.shape == (9, 3) and E.width("binary", 8) == 3 == math.ceil(math.log2(8))
    assert P[0].tolist() == [-1, -1, -1] and P[5].tolist() == [1, -1, 1] and P[7].tolist() == [1, 1, 1]
    assert P[8].tolist() == [0, 0, 0]  # the scratchpad: no ±1 code
    assert len({tuple(r) for r in P.tolist()}) == 9  # every node distinct
    assert E.binary(5).shape == (6, 3) and E.binary(2).shape == (3, 1)
    with pytest.raises(ValueError, match="n >= 2"):
        E.binary(1)


def test_sinusoidal_encoding_is_vaswanis():
    P = E.matrix("sinusoidal", 8)
    assert P.shape == (9, 4) and E.width("sinusoidal", 9) == 5
    for p in range(9):
        for i in range(4):
            a = p / 10000 ** (2 * (i // 2) / 4)
            assert P[p, i].item() == pytest.approx(math.sin(a) if i % 2 == 0 else math.cos(a), abs=1e-15)
    assert torch.equal(E.matrix("onehot", 4), torch.eye(5, dtype=torch.float64))
    assert E.matrix("none", 4).shape == (5, 0)


def test_rope_dot_products_depend_only_on_the_position_difference():
    """RoPE's defining property (float64): ⟨R_p q, R_s k⟩ = ⟨R_{p+t} q, R_{s+t} k⟩ for all shifts t,
    and rotations keep norms; position 0 is the identity."""
    g = torch.Generator().manual_seed(0)
    d, positions = 16, 40
    cos, sin = E.rope_tables(positions, d)
    q, k = torch.randn(2, d, generator=g, dtype=torch.float64)
    Rq = E.rope(q.expand(positions, d), cos, sin)
    Rk = E.rope(k.expand(positions, d), cos, sin)
    S = Rq @ Rk.T  # S[p, s] = <R_p q, R_s k>
    for p in range(positions - 1):
        for s in range(positions - 1):
            assert abs(S[p, s] - S[p + 1, s + 1]) < 1e-12
    assert torch.allclose(Rq.norm(dim=1), q.norm().expand(positions), atol=1e-12, rtol=0)
    assert torch.equal(Rq[0], q)
    assert abs(S[0, 3] - S[3, 0]) > 1e-3  # not symmetric in the two positions: a signed difference
    # against the complex-number form: (q_{2i} + i q_{2i+1}) e^{i p θ_i}
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    zc = torch.complex(q[0::2], q[1::2]) * torch.exp(1j * 7 * theta)
    assert torch.allclose(Rq[7, 0::2], zc.real, atol=1e-12) and torch.allclose(Rq[7, 1::2], zc.imag, atol=1e-12)
    with pytest.raises(ValueError, match="even"):
        E.rope_tables(4, 5)
