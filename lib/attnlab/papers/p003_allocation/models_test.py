import pytest
import torch

from attnlab.core.train import MaskedAdam
from attnlab.papers.p003_allocation import tasks as T
from attnlab.papers.p003_allocation.models import EncoderConfig, ReplicaEncoder


def _torch_layer(model: ReplicaEncoder, r: int, c: EncoderConfig):
    layer = torch.nn.TransformerEncoderLayer(c.D, c.H, dim_feedforward=c.ffn, dropout=0.0, norm_first=True,
                                             batch_first=True, dtype=torch.float64)
    s = model.replica_state(r)
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(s["W_in"]); layer.self_attn.in_proj_bias.copy_(s["b_in"])
        layer.self_attn.out_proj.weight.copy_(s["W_out"]); layer.self_attn.out_proj.bias.copy_(s["b_out"])
        layer.norm1.weight.copy_(s["ln1_g"]); layer.norm1.bias.copy_(s["ln1_b"])
        layer.norm2.weight.copy_(s["ln2_g"]); layer.norm2.bias.copy_(s["ln2_b"])
        layer.linear1.weight.copy_(s["W_1"]); layer.linear1.bias.copy_(s["b_1"])
        layer.linear2.weight.copy_(s["W_2"]); layer.linear2.bias.copy_(s["b_2"])
    return layer, s


def test_forward_equals_torch_encoder_layer():
    L = 6
    cfgs = [EncoderConfig(3, 8, h, 16, seed=1) for h in (1, 2, 4, 8)]
    model = ReplicaEncoder(cfgs, L, dtype=torch.float64)
    x = torch.randn(2, L, 3, dtype=torch.float64)
    out = model(x.expand(4, -1, -1, -1))
    mask = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64)
    for r, c in enumerate(cfgs):
        layer, s = _torch_layer(model, r, c)
        layer.eval()
        h = x @ s["W_E"].T + s["b_E"] + model.pe[:L]
        want = layer(h, src_mask=mask) @ s["W_R"].T + s["b_R"]
        assert torch.allclose(out[r], want, atol=1e-12), r


def test_replica_alone_equals_replica_in_batch():
    task = T.ConvTask(d=2, L=6)
    x, y = T.sample(task, 4, torch.Generator().manual_seed(0), torch.float64)
    def run(cfgs, steps=3):
        m = ReplicaEncoder(cfgs, task.L, dtype=torch.float64)
        opt = MaskedAdam(list(m.parameters()))
        for _ in range(steps):
            for p in m.parameters():
                p.grad = None
            loss = ((m(x.expand(len(cfgs), -1, -1, -1)) - y) ** 2).mean((1, 2, 3))
            loss.sum().backward()
            opt.step(torch.full((len(cfgs),), 1e-2, dtype=torch.float64), torch.ones(len(cfgs), dtype=torch.bool))
        return m
    c = EncoderConfig(2, 8, 2, 8, seed=3)
    alone = run([c]).replica_state(0)
    batch = run([EncoderConfig(2, 8, 4, 16, 0), c, EncoderConfig(2, 8, 1, 4, 5)]).replica_state(1)
    for k in alone:
        # the key bias has an exactly zero gradient (softmax ignores a constant shift), so Adam
        # turns its 1e-17 rounding noise into updates of size lr * noise / eps ~ 1e-11
        assert torch.allclose(alone[k], batch[k], atol=1e-10 if k == "b_in" else 1e-13), k


def test_bad_config():
    with pytest.raises(ValueError):
        EncoderConfig(2, 8, 3, 8)
    with pytest.raises(ValueError):
        ReplicaEncoder([EncoderConfig(2, 8, 2, 8), EncoderConfig(2, 16, 2, 8)], 4)


def _former_forward(m: ReplicaEncoder, x: torch.Tensor) -> torch.Tensor:
    """ReplicaEncoder's former forward (layer norm by mean and variance, scaled_dot_product_attention
    per head group, bmm then bias), kept as the reference of the current one."""
    import torch.nn.functional as F

    def ln(t, g, b, eps=1e-5):
        return (t - t.mean(-1, keepdim=True)) / torch.sqrt(t.var(-1, unbiased=False, keepdim=True) + eps) * g + b

    def lin(t, W, b):
        R, B, L, i = t.shape
        return (torch.bmm(t.reshape(R, B * L, i), W.transpose(1, 2)) + b.unsqueeze(1)).view(R, B, L, -1)

    R, B, L, _ = x.shape
    w = m.w
    h = lin(x, w("W_E"), w("b_E")) + m.pe[:L]
    q, k, v = lin(ln(h, w("ln1_g").view(R, 1, 1, -1), w("ln1_b").view(R, 1, 1, -1)), w("W_in"), w("b_in")).chunk(3, -1)
    D = q.shape[-1]
    outs = []
    for H, idx in m.groups:
        def split(t):
            return t.index_select(0, idx).view(len(idx) * B, L, H, D // H).transpose(1, 2)
        o = F.scaled_dot_product_attention(split(q), split(k), split(v), is_causal=m.causal)
        outs.append(o.transpose(1, 2).reshape(len(idx), B, L, D))
    h = h + lin(torch.cat(outs, 0).index_select(0, m.unpermute), w("W_out"), w("b_out"))
    f = ln(h, w("ln2_g").view(R, 1, 1, -1), w("ln2_b").view(R, 1, 1, -1))
    h = h + lin(torch.relu(lin(f, w("W_1"), w("b_1"))), w("W_2"), w("b_2"))
    return lin(h, w("W_R"), w("b_R"))


@pytest.mark.parametrize("causal,piece", [(True, None), (False, None), (True, 1), (False, 300)])
def test_forward_equals_the_former_forward(causal, piece, monkeypatch):
    """Explicit attention, F.layer_norm, baddbmm, unmasked full parameters and the forward in pieces
    of replicas compute the former forward's function, values and gradients (float64, 1e-10), for
    replicas sorted by H (slices) or not (gathers), one replica per piece or several, FFN widths that
    pad (incl. 0), shorter inputs than the model's L; perturbed LayerNorm gains and biases."""
    import attnlab.papers.p003_allocation.models as M

    if piece is not None:
        monkeypatch.setattr(M, "PIECE", piece)
    g = torch.Generator().manual_seed(0)
    for cfgs in ([EncoderConfig(3, 8, H, f, seed=s, causal=causal) for H, f, s in
                  [(4, 16, 0), (1, 8, 1), (8, 0, 2), (2, 16, 3), (4, 4, 4)]],
                 [EncoderConfig(2, 16, H, 16, seed=s, causal=causal) for H in (1, 4, 16) for s in (0, 1)],
                 [EncoderConfig(2, 8, 2, 8, seed=5, causal=causal)]):
        m = ReplicaEncoder(cfgs, 7, dtype=torch.float64)
        with torch.no_grad():
            for n in ("ln1_g", "ln1_b", "ln2_g", "ln2_b", "b_in", "b_out"):
                getattr(m, n).add_(0.3 * torch.randn(getattr(m, n).shape, generator=g, dtype=torch.float64))
        for L in (7, 5):
            x = torch.randn(len(cfgs), 3, L, cfgs[0].d, generator=g, dtype=torch.float64)
            out, ref = m(x), _former_forward(m, x)
            torch.testing.assert_close(out, ref, atol=1e-10, rtol=0)
            gy = torch.randn(out.shape, generator=g, dtype=torch.float64)
            params = list(m.parameters())
            for a, b in zip(torch.autograd.grad((out * gy).sum(), params), torch.autograd.grad((ref * gy).sum(), params)):
                torch.testing.assert_close(a, b, atol=1e-10, rtol=0)


@pytest.mark.parametrize("heads", [(4, 1, 2, 1), (1, 2, 4)])
def test_forward_and_backward_keep_to_the_models_device(heads):
    """Moved with .to() after construction (as bench._train_batched does on CUDA), every tensor the
    forward uses moves too: checked on the meta device (devicecheck), unsorted heads (gathers) or sorted."""
    from attnlab.papers.p003_allocation.devicecheck import check_on_meta

    m = ReplicaEncoder([EncoderConfig(3, 8, H, 8, seed=s) for s, H in enumerate(heads)], 6)
    out = check_on_meta(m, torch.ones(len(heads), 2, 5, 3))
    assert out.shape == (len(heads), 2, 5, 3)
    assert all(idx.device.type == "meta" for _, idx in m.groups)
    assert not any(k.startswith("group") for k in m.state_dict())  # index buffers are not state
