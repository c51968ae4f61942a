import math

import pytest
import torch

from attnlab.core.attention import heads_to_replicas, last_query_attention
from attnlab.papers.p004_memorization.heads import (last_query_heads, PackedHeads, ScoreDifference, TwoKeyRows,
                                                    WeightedRows)

# replicas (H, d_h, e) under padded sizes H_max = 4, K = 3, E = 5
HEADS = [(1, 3, 5), (4, 1, 2), (2, 2, 4), (3, 3, 3)]
H_MAX, K, E = 4, 3, 5


def _random_inputs(S: int, N: int = 6, B: int = 17, seed: int = 0, masks: bool = False):
    """Zero-padded weights and token tables (zero beyond each replica's e, d_h and H), float64
    (with masks=True: the 0/1 masks of their real entries instead, as the model's `w` applies them)."""
    g = torch.Generator().manual_seed(seed)
    R = len(HEADS)
    draw = (lambda *shape: torch.ones(shape, dtype=torch.float64)) if masks else \
        (lambda *shape: torch.randn(shape, generator=g, dtype=torch.float64))
    x_tab = torch.zeros(R, S, N, E, dtype=torch.float64)
    W = {n: torch.zeros(R, H_MAX, K, E, dtype=torch.float64) for n in ("W_Q", "W_K", "W_V")}
    W_O = torch.zeros(R, H_MAX, E, K, dtype=torch.float64)
    for r, (H, d_h, e) in enumerate(HEADS):
        x_tab[r, :, :, :e] = draw(S, N, e)
        for w in W.values():
            w[r, :H, :d_h, :e] = draw(H, d_h, e)
        W_O[r, :H, :e, :d_h] = draw(H, e, d_h)
    tokens = torch.randint(0, N, (B, S), generator=g)
    skip = torch.ones(R * E, B, dtype=torch.float64) if masks else torch.randn(R * E, B, generator=g,
                                                                                dtype=torch.float64)
    return x_tab, tokens, skip, W["W_Q"], W["W_K"], W["W_V"], W_O


def _core_reference(x_tab, tokens, skip, W_Q, W_K, W_V, W_O):
    """The same sum with core.attention (heads packed on one axis, padded K and E)."""
    R = len(HEADS)
    rows = torch.tensor([r * H_MAX + h for r, (H, _, _) in enumerate(HEADS) for h in range(H)])
    replica = torch.tensor([r for r, (H, _, _) in enumerate(HEADS) for _ in range(H)])
    scale = torch.tensor([1 / math.sqrt(d_h) for H, d_h, _ in HEADS for _ in range(H)], dtype=torch.float64)
    ws = [w.flatten(0, 1)[rows] for w in (W_Q, W_K, W_V, W_O)]
    out = heads_to_replicas(last_query_attention(x_tab[replica], tokens, *ws, scale), replica, R)
    return skip.view(R, E, -1) + out


def _written_out(x_tab, tokens, skip, W_Q, W_K, W_V, W_O):
    """Eq. (1) per replica, per head, per sequence, unpadded."""
    R, B = len(HEADS), tokens.shape[0]
    S = tokens.shape[1]
    out = skip.view(R, E, B).clone()
    for r, (H, d_h, e) in enumerate(HEADS):
        x = x_tab[r, torch.arange(S), tokens][:, :, :e]  # [B,S,e]
        for h in range(H):
            Q, Kh, V, O = W_Q[r, h, :d_h, :e], W_K[r, h, :d_h, :e], W_V[r, h, :d_h, :e], W_O[r, h, :e, :d_h]
            a = (torch.einsum("bk,bsk->bs", x[:, -1] @ Q.T, x @ Kh.T) / math.sqrt(d_h)).softmax(-1)
            out[r, :e] += (torch.einsum("bs,bsd->bd", a, x) @ V.T @ O.T).T
    return out


@pytest.mark.parametrize("S", [1, 2, 3])
def test_packed_heads_equal_core_attention_and_eq1(S):
    args = _random_inputs(S)
    lay = PackedHeads(HEADS, H_MAX, K, E, torch.float64, "cpu")
    out = last_query_heads(*args, lay)
    assert out.shape == (len(HEADS), E, args[1].shape[0])
    assert torch.allclose(out, _core_reference(*args), rtol=0, atol=1e-12)
    assert torch.allclose(out, _written_out(*args), rtol=0, atol=1e-12)


@pytest.mark.parametrize("S", [2, 3])
def test_packed_heads_gradients_equal_core_attention_gradients(S):
    args = [t.clone().requires_grad_(t.is_floating_point()) for t in _random_inputs(S, seed=1)]
    lay = PackedHeads(HEADS, H_MAX, K, E, torch.float64, "cpu")
    probe = torch.randn(len(HEADS), E, args[1].shape[0], generator=torch.Generator().manual_seed(2),
                        dtype=torch.float64)
    wrt = [t for t in args if t.requires_grad]
    ours = torch.autograd.grad((last_query_heads(*args, lay) * probe).sum(), wrt)
    ref = torch.autograd.grad((_core_reference(*args) * probe).sum(), wrt)
    masks = [m for m in _random_inputs(S, masks=True) if m.is_floating_point()]
    for a, b, m in zip(ours, ref, masks):  # padded entries are masked in the model (core's W_O pads get grads)
        assert torch.allclose(a * m, b * m, rtol=0, atol=1e-11), (a * m - b * m).abs().max()


def test_a_replica_in_the_pack_equals_it_alone():
    """Bit-level independence: replica 2's output and gradients alone equal those in the pack (float64)."""
    args = _random_inputs(2, seed=3)
    lay = PackedHeads(HEADS, H_MAX, K, E, torch.float64, "cpu")
    alone = PackedHeads(HEADS[2:3], H_MAX, K, E, torch.float64, "cpu")
    full = [t.clone().requires_grad_(t.is_floating_point()) for t in args]
    one = [t[2:3].clone() if i != 1 else t for i, t in enumerate(args)]
    one[2] = args[2].view(len(HEADS), E, -1)[2].clone()
    one = [t.requires_grad_(t.is_floating_point()) for t in one]
    out_full, out_one = last_query_heads(*full, lay)[2], last_query_heads(*one, alone)[0]
    assert torch.allclose(out_full, out_one, rtol=0, atol=1e-12)
    out_full.sum().backward()
    out_one.sum().backward()
    for i in (0, 3, 4, 5, 6):
        assert torch.allclose(full[i].grad[2], one[i].grad[0], rtol=0, atol=1e-12), i


def test_weighted_rows_gradcheck_and_two_key_rows_equal_plain_autograd():
    g = torch.Generator().manual_seed(4)
    G, C, M, B, Q, S = 3, 7, 5, 4, 6, 3
    head = torch.tensor([0, 0, 1, 1, 1, 2, 2])
    out_row = torch.tensor([0, 1, 2, 3, 4, 5, 5])
    T = torch.randn(C, M, generator=g, dtype=torch.float64, requires_grad=True)
    skip = torch.randn(Q, B, generator=g, dtype=torch.float64, requires_grad=True)
    a = torch.rand(G, S, B, generator=g, dtype=torch.float64, requires_grad=True)
    keys = torch.randint(0, M, (S * B,), generator=g)
    assert torch.autograd.gradcheck(lambda a, T, s: WeightedRows.apply(a, T, keys, head, out_row, s), (a, T, skip))
    a1 = torch.rand(G, B, generator=g, dtype=torch.float64, requires_grad=True)
    k0, k1 = keys[:B], keys[B:2 * B]
    # TwoKeyRows (a backward that runs once, in place) = the same sum in plain autograd ops
    probe = torch.randn(Q, B, generator=g, dtype=torch.float64)
    out = TwoKeyRows.apply(a1, T, k0, k1, head, out_row, skip)
    plain = skip.index_add(0, out_row, T[:, k0] + a1[head] * (T[:, k1] - T[:, k0]))
    assert torch.allclose(out, plain, rtol=0, atol=1e-12)
    ours = torch.autograd.grad((out * probe).sum(), (a1, T, skip), retain_graph=True)
    ref = torch.autograd.grad((plain * probe).sum(), (a1, T, skip))
    for x, y in zip(ours, ref):
        assert torch.allclose(x, y, rtol=0, atol=1e-12)
    with pytest.raises(RuntimeError, match="runs once"):
        torch.autograd.grad((out * probe).sum(), (a1, T, skip))
    # TwoKeyRows is WeightedRows with a_0 = 1 - a_1
    two = WeightedRows.apply(torch.stack([1 - a1, a1], 1), T, torch.cat([k0, k1]), head, out_row, skip)
    assert torch.allclose(TwoKeyRows.apply(a1, T, k0, k1, head, out_row, skip), two, rtol=0, atol=1e-12)


def test_score_difference_passes_gradcheck_and_equals_its_formula():
    for K in (2, 6):  # products over K, then bmm
        _check_score_difference(K)


def _check_score_difference(K):
    g = torch.Generator().manual_seed(5)
    G, N, B = 3, 4, 6
    q = torch.randn(G, K, N, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(G, K, 2 * N, generator=g, dtype=torch.float64, requires_grad=True)
    scale = torch.rand(G, generator=g, dtype=torch.float64)
    t0, t1 = torch.randint(0, N, (B,), generator=g), torch.randint(0, N, (B,), generator=g)
    z = ScoreDifference.apply(q, k, scale, t1, t0)
    own = torch.einsum("gkb,gkb->gb", q[:, :, t1], k[:, :, N + t1])
    first = torch.einsum("gkb,gkb->gb", q[:, :, t1], k[:, :, t0])
    assert torch.allclose(z, scale[:, None] * (own - first), rtol=0, atol=1e-12)
    assert torch.autograd.gradcheck(lambda q, k: ScoreDifference.apply(q, k, scale, t1, t0), (q, k))

