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
