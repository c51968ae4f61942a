import copy

import pytest
import torch

from attnlab.core.replica import ReplicaModule
from attnlab.core.train import MaskedAdam, linear_lr, replica_cross_entropy, train_replicas


class Tiny(ReplicaModule):
    """R linear classifiers of different widths: logits = x[:, :d_r] W_r^T."""

    def __init__(self, widths, N=5, dtype=torch.float64):
        super().__init__(len(widths), dtype)
        self.add("W", (N, max(widths)))
        for r, d in enumerate(widths):
            self.place("W", r, torch.randn(N, d, generator=torch.Generator().manual_seed(d), dtype=dtype))

    def forward(self, x):
        return torch.einsum("bd,rnd->rbn", x[:, : self.W.shape[-1]], self.w("W"))


def _data(steps=1, B=16, D=6, N=5):
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(B, D, generator=g, dtype=torch.float64), torch.randint(0, N, (B,), generator=g)
    while True:
        yield x, y


def test_masked_adam_equals_torch_adam_when_all_active():
    model = Tiny([3, 5])
    ref = copy.deepcopy(model)
    opt_ref = torch.optim.Adam(ref.parameters(), lr=0.05)
    opt = MaskedAdam(model.parameters())
    batches = _data()
    for _ in range(20):
        x, y = next(batches)
        for m in (model, ref):
            m.zero_grad()
            replica_cross_entropy(m(x), y).sum().backward()
        opt.step(torch.full((2,), 0.05, dtype=torch.float64), torch.ones(2, dtype=torch.bool))
        opt_ref.step()
    assert torch.allclose(model.W, ref.W, atol=1e-12)


def test_frozen_replica_does_not_move_and_others_do():
    model = Tiny([3, 5])
    before = model.W.detach().clone()
    opt = MaskedAdam(model.parameters())
    x, y = next(_data())
    for _ in range(5):
        model.zero_grad()
        replica_cross_entropy(model(x), y).sum().backward()
        opt.step(torch.full((2,), 0.1, dtype=torch.float64), torch.tensor([False, True]))
    assert torch.equal(model.W[0], before[0])
    assert not torch.equal(model.W[1], before[1])
    assert opt.t.tolist() == [0, 5]


def test_early_stopping_freezes_at_target_accuracy():
    model = Tiny([6, 6])
    log = train_replicas(model, _data(B=6), 300, lambda s: 0.1, stop_at_accuracy=1.0, progress=False)
    x, y = next(_data(B=6))
    acc = (model(x).argmax(-1) == y).double().mean(1)
    assert all(log.stopped_early) and max(log.steps_trained) < 300
    assert acc.tolist() == [1.0, 1.0]


def test_padding_never_influences_a_replica():
    model = Tiny([2, 6])
    with torch.no_grad():
        model.W[0, :, 2:] = 123.0  # garbage in the padded part of replica 0
    x, y = next(_data())
    logits = model(x)
    expected = x[:, :2] @ model.W[0, :, :2].T
    assert torch.allclose(logits[0], expected)
    replica_cross_entropy(logits, y).sum().backward()
    assert torch.count_nonzero(model.W.grad[0, :, 2:]) == 0


def test_linear_lr_follows_torch_linearlr_semantics():
    lr = linear_lr(1e-2, 5e-4, steps=64 * 4, steps_per_epoch=4)
    assert lr(0) == pytest.approx(1e-2) and lr(3) == pytest.approx(1e-2)
    assert lr(4) == pytest.approx(1e-2 + (5e-4 - 1e-2) / 64)
    assert lr(10_000) == pytest.approx(5e-4)


def _adam_loop_reference(params, grads, state, lr, active, betas=(0.9, 0.999), eps=1e-8):
    """The per-parameter masked Adam step (the form MaskedAdam had before its flat buffers)."""
    b1, b2 = betas
    state["t"] += active.to(state["t"].dtype)
    t = state["t"].clamp(min=1)
    bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
    for i, (p, g) in enumerate(zip(params, grads)):
        shape = (-1,) + (1,) * (p.dim() - 1)
        a = active.view(shape)
        m, v = state["m"][i], state["v"][i]
        m.copy_(torch.where(a, b1 * m + (1 - b1) * g, m))
        v.copy_(torch.where(a, b2 * v + (1 - b2) * g * g, v))
        denom = (v.sqrt() / bc2.sqrt().view(shape)) + eps
        p.sub_(torch.where(a, (lr / bc1).view(shape) * m / denom, torch.zeros((), dtype=p.dtype)))


@pytest.mark.parametrize("eps", [1e-9, 1e-30])  # 1e-30: too small for the zero-safe sqrt, plain sqrt
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_flat_masked_adam_is_the_per_parameter_loop_bit_for_bit(dtype, eps):
    g = torch.Generator().manual_seed(3)
    shapes = [(4, 3, 5), (4, 7), (4, 2, 2, 3), (4,)]
    params = [torch.randn(s, generator=g, dtype=dtype).requires_grad_() for s in shapes]
    ref = [p.detach().clone() for p in params]
    state = {"t": torch.zeros(4, dtype=dtype), "m": [torch.zeros_like(p) for p in ref],
             "v": [torch.zeros_like(p) for p in ref]}
    opt = MaskedAdam(params, betas=(0.9, 0.98), eps=eps)
    assert (opt._clamp is None) == (eps == 1e-30 and dtype == torch.float32)  # float64's tiny is far smaller
    lr = torch.tensor([1e-3, 3e-3, 1e-2, 3e-2], dtype=dtype)
    for step in range(12):
        active = torch.tensor([True, step < 6, step % 3 != 0, True])
        grads = [torch.randn(s, generator=g, dtype=dtype) for s in shapes]
        grads[0][:, 1] = 0  # a padded column: v stays exactly 0
        grads[0][:, 2, :2] = 1e-21 if step % 2 else 0  # v subnormal in float32
        for p, gr in zip(params, grads):
            p.grad = gr.clone()
        opt.step(lr, active)
        with torch.no_grad():
            _adam_loop_reference(ref, grads, state, lr, active, betas=(0.9, 0.98), eps=eps)
        for p, r in zip(params, ref):
            assert torch.equal(p.detach(), r)
    for a, b in zip(opt.m + opt.v, state["m"] + state["v"]):
        assert torch.equal(a, b)
    assert torch.equal(opt.t, state["t"])


def test_masked_adam_moments_are_views_a_checkpoint_can_restore_in_place():
    params = [torch.zeros(2, 3, requires_grad=True), torch.zeros(2, 4, requires_grad=True)]
    opt = MaskedAdam(params)
    opt.m[1].copy_(torch.ones(2, 4))
    assert opt._m[:, 3:].eq(1).all() and opt._m[:, :3].eq(0).all()
    with pytest.raises(ValueError, match="replica axis"):
        MaskedAdam([torch.zeros(2, 3, requires_grad=True), torch.zeros(3, 3, requires_grad=True)])


def test_replica_cross_entropy_and_its_written_out_gradient_equal_torch_cross_entropy():
    g = torch.Generator().manual_seed(5)
    R, B, N = 3, 40, 7
    base = torch.randn(R, N, B, generator=g, dtype=torch.float64)
    y = torch.randint(0, N, (B,), generator=g)
    w = torch.rand(R, generator=g, dtype=torch.float64)
    ours_in = base.clone().requires_grad_()
    ref_in = base.clone().requires_grad_()
    ours = replica_cross_entropy(ours_in.transpose(1, 2), y)  # logits [R, B, N] as a view of [R, N, B]
    ref = torch.stack([torch.nn.functional.cross_entropy(ref_in[r].t(), y) for r in range(R)])
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-13)
    (ours * w).sum().backward()
    (ref * w).sum().backward()
    torch.testing.assert_close(ours_in.grad, ref_in.grad, rtol=0, atol=1e-15)
    again = replica_cross_entropy(base.clone().requires_grad_().transpose(1, 2), y).sum()
    again.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="runs once"):
        again.backward()


def test_accuracy_index_is_argmax_also_with_ties():
    x = torch.tensor([[[0.0, 1.0, 1.0], [2.0, 2.0, 2.0], [0.0, -1.0, 3.0]]])
    assert torch.equal(x.max(-1).indices, x.argmax(-1))
