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


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_masked_adam_is_torch_fused_adam_on_each_replica_alone_bit_for_bit(dtype):
    """Each replica, with its own learning rate and active steps, equals torch.optim.Adam(fused=True)
    stepping that replica's parameters alone; padded (zero-gradient) and tiny gradients included."""
    g = torch.Generator().manual_seed(3)
    R, shapes = 5, [(5, 3, 5), (5, 7), (5, 2, 2, 3), (5,)]
    params = [torch.randn(s, generator=g, dtype=dtype).requires_grad_() for s in shapes]
    alone = [[p.detach()[r].clone().requires_grad_() for p in params] for r in range(R)]
    lr = torch.tensor([1e-3, 3e-3, 1e-3, 1e-3, 3e-2], dtype=dtype)  # replicas 2, 3 share one: one run
    refs = [torch.optim.Adam(alone[r], lr=float(lr[r]), betas=(0.9, 0.98), eps=1e-9, fused=True) for r in range(R)]
    opt = MaskedAdam(params, betas=(0.9, 0.98), eps=1e-9)
    for step in range(12):
        active = torch.tensor([True, step < 6, step % 3 != 0, True, step % 2 == 0])
        grads = [torch.randn(s, generator=g, dtype=dtype) for s in shapes]
        grads[0][:, 1] = 0  # a padded column: v stays exactly 0
        grads[0][:, 2, :2] = 1e-21 if step % 2 else 0  # v subnormal in float32
        for p, gr in zip(params, grads):
            p.grad = gr.clone()
        opt.step(lr, active)
        for r in range(R):
            if active[r]:
                for a, gr in zip(alone[r], grads):
                    a.grad = gr[r].clone()
                refs[r].step()
        for r in range(R):
            for p, a in zip(params, alone[r]):
                assert torch.equal(p.detach()[r], a.detach()), (step, r)
    for r in range(R):
        state = [refs[r].state[a] for a in alone[r]]
        for i, st in enumerate(state):
            assert torch.equal(opt.m[i][r], st["exp_avg"]) and torch.equal(opt.v[i][r], st["exp_avg_sq"])
            assert opt.t[r] == st["step"]


def test_masked_adam_moments_are_views_a_checkpoint_can_restore_in_place():
    params = [torch.zeros(2, 3, requires_grad=True), torch.zeros(2, 4, requires_grad=True)]
    opt = MaskedAdam(params)
    opt.m[1].copy_(torch.ones(2, 4))
    params[0].grad, params[1].grad = torch.zeros(2, 3), torch.zeros(2, 4)
    opt.step(torch.full((2,), 1e-3), torch.tensor([True, True]))
    assert opt.m[1].eq(0.9).all() and opt.m[0].eq(0).all()  # the restored moment is the one stepped
    with pytest.raises(ValueError, match="replica axis"):
        MaskedAdam([torch.zeros(2, 3, requires_grad=True), torch.zeros(3, 3, requires_grad=True)])
    with pytest.raises(ValueError, match="contiguous"):
        MaskedAdam([torch.zeros(3, 2).t().requires_grad_()])


def test_masked_adam_reads_a_non_contiguous_gradient_in_its_own_layout():
    p = torch.randn(4, 6, requires_grad=True)
    q = p.detach().clone().requires_grad_()
    g = torch.randn(6, 4).t()  # a transposed gradient (torch's fused kernel alone would read it in memory order)
    p.grad, q.grad = g, g.contiguous()
    a, b = MaskedAdam([p]), MaskedAdam([q])
    for opt in (a, b):
        opt.step(torch.full((4,), 0.1), torch.ones(4, dtype=torch.bool))
    assert torch.equal(p, q)


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


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cross_entropy_of_logits_hundreds_apart_equals_torch_with_its_exp_floor(dtype):
    """Classes far below the best (exp(z - max) floored at EXP_FLOOR): the loss equals torch's, the
    gradient differs by less than 1e-30 per entry."""
    from attnlab.core.train import EXP_FLOOR

    g = torch.Generator().manual_seed(7)
    base = torch.randn(2, 6, 30, generator=g, dtype=torch.float64)
    base[:, 0] += 400  # every other class more than 70 below class 0
    base[:, 3, :10] += 395  # a close runner-up in a third of the positions
    y = torch.randint(0, 6, (30,), generator=g)
    ours_in = base.to(dtype).requires_grad_()
    ref_in = base.to(dtype).requires_grad_()
    ours = replica_cross_entropy(ours_in.transpose(1, 2), y)
    ref = torch.stack([torch.nn.functional.cross_entropy(ref_in[r].t(), y) for r in range(2)])
    torch.testing.assert_close(ours, ref, rtol=1e-6 if dtype == torch.float32 else 1e-15, atol=0)
    ours.sum().backward()
    ref.sum().backward()
    assert torch.isfinite(ours_in.grad).all()
    tol = dict(rtol=1e-6, atol=1e-9) if dtype == torch.float32 else dict(rtol=0, atol=1e-16)
    torch.testing.assert_close(ours_in.grad, ref_in.grad, **tol)
    floored = base - base.amax(1, keepdim=True) < EXP_FLOOR
    assert floored.float().mean() > 0.5  # the floor was reached, and there the gradient is off by < 1e-30
    assert (ours_in.grad - ref_in.grad)[floored].abs().max() < 1e-30


def test_accuracy_index_is_argmax_also_with_ties():
    x = torch.tensor([[[0.0, 1.0, 1.0], [2.0, 2.0, 2.0], [0.0, -1.0, 3.0]]])
    assert torch.equal(x.max(-1).indices, x.argmax(-1))


def _stream(start=0, B=16, D=6, N=5):
    """Batch k is drawn from seed k: the iterator from batch `start` on."""
    k = start
    while True:
        g = torch.Generator().manual_seed(k)
        yield torch.randn(B, D, generator=g, dtype=torch.float64), torch.randint(0, N, (B,), generator=g)
        k += 1


def _program(checkpoint=None, batches=None, steps=40):
    torch.manual_seed(0)
    model = Tiny([3, 5, 6])
    log = train_replicas(model, batches if batches is not None else _stream(), steps, linear_lr(0.05, 0.005, steps, 4),
                         stop_at_accuracy=0.9, tail=10, curve_every=3, progress=False, checkpoint=checkpoint)
    return model, log


def _same(a, b):
    (ma, la), (mb, lb) = a, b
    assert torch.equal(ma.W, mb.W)
    assert (la.steps_trained, la.final_loss, la.tail_batch_accuracy, la.stopped_early, la.loss_curve) == \
        (lb.steps_trained, lb.final_loss, lb.tail_batch_accuracy, lb.stopped_early, lb.loss_curve)


def test_a_program_stopped_at_its_time_limit_and_resumed_ends_bit_for_bit_as_an_uninterrupted_one(tmp_path):
    from attnlab.core.checkpoint import Checkpoint, Deadline
    from attnlab.core.experiment import Incomplete

    whole = _program()
    assert whole[1].stopped_early != [False] * 3 or whole[1].steps_trained == [40] * 3
    late = Deadline(1.0, start=0.0)  # long passed: every call trains one step, saves and stops
    ck = Checkpoint(tmp_path / "p.pt", every=0, deadline=late)
    calls = 0
    while True:
        calls += 1
        try:
            resumed = _program(ck, batches=_stream)  # the batches as a function of the start
            break
        except Incomplete:
            assert ck.path.exists()
    assert calls > 10
    _same(resumed, whole)
    ck = Checkpoint(tmp_path / "q.pt", every=6, deadline=late)  # with `every`: stops at each checkpoint
    stops = []
    while True:
        try:
            resumed = _program(ck)  # the plain iterator, fast-forwarded
            break
        except Incomplete:
            stops.append(torch.load(ck.path, weights_only=True)["step"])
    assert stops[:2] == [6, 12]
    _same(resumed, whole)


def test_a_killed_program_resumes_from_its_last_checkpoint_bit_for_bit(tmp_path):
    from attnlab.core.checkpoint import Checkpoint

    whole = _program()

    def killed_at(k):
        for i, b in enumerate(_stream()):
            if i == k:
                raise KeyboardInterrupt  # stands in for SIGKILL: no save at the stop
            yield b

    ck = Checkpoint(tmp_path / "p.pt", every=7)
    with pytest.raises(KeyboardInterrupt):
        _program(ck, batches=killed_at(17))
    assert torch.load(ck.path, weights_only=True)["step"] == 14
    _same(_program(ck), whole)  # the plain iterator is fast-forwarded past the 14 batches used
    assert torch.load(ck.path, weights_only=True)["step"] == 35  # saved on the way; the caller removes it


# ------------------------------------------------------------------------------ train_program

def _fit(rule, checkpoint=None, kill_at=None, steps=60, schedule=None, clip=None):
    """Two groups (3 and 2 replicas), AdamW, a stop rule every 4 steps, optionally a per-replica schedule."""
    from attnlab.core.train import train_program

    torch.manual_seed(0)
    W = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    V = torch.randn(2, 2, dtype=torch.float64, requires_grad=True)  # a second group of 2 replicas

    def loss_at(s):
        if s == kill_at:
            raise KeyboardInterrupt  # stands in for SIGKILL: nothing saved at the stop
        g = torch.Generator().manual_seed(s)
        t = torch.randn(4, generator=g, dtype=torch.float64)
        return torch.cat([((W - t) ** 2).mean(1), ((V - t[:2]) ** 4).mean(1)])

    def validate():
        with torch.no_grad():
            return torch.cat([(W ** 2).mean(1), (V ** 2).mean(1)])

    log = train_program([[W], [V]], loss_at, steps, schedule if schedule is not None else 0.05, validate=validate,
                        rule=rule, check_every=4, weight_decay=0.01, checkpoint=checkpoint, clip=clip)
    return W.detach(), V.detach(), (log.steps, log.stopped, log.final_loss)


def _rules():
    from attnlab.core.train import Plateau, Threshold
    return [lambda: Plateau(patience=2, rel=0.05), lambda: Threshold(level=0.3, patience=2)]


@pytest.mark.parametrize("rule", _rules())
def test_a_program_stopped_or_killed_and_resumed_ends_bit_for_bit_as_an_uninterrupted_one(rule, tmp_path):
    """Resume after the time limit (every call one step: `Incomplete`) and after a kill; the rule's state included."""
    from attnlab.core.checkpoint import Checkpoint, Deadline
    from attnlab.core.experiment import Incomplete

    whole = _fit(rule())
    assert any(whole[2][1]) and not all(whole[2][1])  # the rule froze some replicas, not all
    ck = Checkpoint(tmp_path / "a.pt", every=0, deadline=Deadline(1.0, start=0.0))
    for calls in range(1, 100):
        try:
            resumed = _fit(rule(), ck)
            break
        except Incomplete:
            pass
    assert calls > 5
    assert all(torch.equal(a, b) for a, b in zip(resumed[:2], whole[:2])) and resumed[2] == whole[2]
    ck = Checkpoint(tmp_path / "b.pt", every=9)
    with pytest.raises(KeyboardInterrupt):
        _fit(rule(), ck, kill_at=21)
    assert torch.load(ck.path, weights_only=True)["step"] == 18
    resumed = _fit(rule(), ck)
    assert all(torch.equal(a, b) for a, b in zip(resumed[:2], whole[:2])) and resumed[2] == whole[2]


def test_a_program_with_a_plateau_schedule_resumes_bit_for_bit(tmp_path):
    """The schedule's state (ReduceOnPlateau: per-replica lr, best, bad counts) is checkpointed too."""
    from attnlab.core.checkpoint import Checkpoint, Deadline
    from attnlab.core.experiment import Incomplete
    from attnlab.core.schedules import ReduceOnPlateau

    whole = _fit(None, schedule=ReduceOnPlateau(0.05, 5, factor=0.5, patience=1, threshold=0.2), clip=0.5)
    ck = Checkpoint(tmp_path / "c.pt", every=0, deadline=Deadline(1.0, start=0.0))
    while True:
        try:
            resumed = _fit(None, ck, schedule=ReduceOnPlateau(0.05, 5, factor=0.5, patience=1, threshold=0.2), clip=0.5)
            break
        except Incomplete:
            pass
    assert all(torch.equal(a, b) for a, b in zip(resumed[:2], whole[:2])) and resumed[2] == whole[2]


def test_a_frozen_replica_is_left_untouched_and_its_budget_and_keep_mask_are_obeyed():
    from attnlab.core.train import train_program

    torch.manual_seed(1)
    W = torch.randn(4, 3, requires_grad=True)
    W0 = W.detach().clone()

    def loss_at(s):
        keep = torch.tensor([True, True, s < 5, True])  # replica 2 frozen by the loss function at step 5
        return (W ** 2).sum(1), keep

    log = train_program([W], loss_at, 20, 0.1, weight_decay=0.1, active=torch.tensor([True, False, True, True]),
                        max_steps=torch.tensor([25, 20, 20, 7]))
    assert log.steps == [20, 0, 5, 7]
    assert log.stopped == [False, False, True, False] and log.active == [True, False, False, False]
    assert torch.equal(W[1].detach(), W0[1])  # never active: parameters (and weight decay) untouched
    assert not torch.equal(W[0].detach(), W0[0])


def test_per_replica_clipping_equals_torch_clip_grad_norm_on_each_replica_alone():
    from attnlab.core.train import _clip_

    g = torch.Generator().manual_seed(3)
    A = torch.randn(3, 4, 5, generator=g, dtype=torch.float64, requires_grad=True)
    B = torch.randn(3, 2, generator=g, dtype=torch.float64, requires_grad=True)
    A.grad = torch.randn(3, 4, 5, generator=g, dtype=torch.float64) * torch.tensor([0.01, 1.0, 10.0]).view(3, 1, 1)
    B.grad = torch.randn(3, 2, generator=g, dtype=torch.float64)
    refs = []
    for r in range(3):
        a, b = A[r].detach().clone().requires_grad_(), B[r].detach().clone().requires_grad_()
        a.grad, b.grad = A.grad[r].clone(), B.grad[r].clone()
        torch.nn.utils.clip_grad_norm_([a, b], 1.0)
        refs.append((a.grad, b.grad))
    _clip_([[A, B]], 1.0)
    for r, (a, b) in enumerate(refs):
        torch.testing.assert_close(A.grad[r], a, rtol=1e-14, atol=0)
        torch.testing.assert_close(B.grad[r], b, rtol=1e-14, atol=0)
    assert torch.equal(refs[0][0], A.grad[0])  # below the norm: unchanged


def test_a_program_past_its_time_limit_saves_and_raises_incomplete(tmp_path):
    from attnlab.core.checkpoint import Checkpoint, Deadline
    from attnlab.core.experiment import Incomplete
    from attnlab.core.train import train_program

    W = torch.zeros(2, 3, requires_grad=True)
    ck = Checkpoint(tmp_path / "d.pt", every=0, deadline=Deadline(1.0, start=0.0))
    with pytest.raises(Incomplete) as err:
        train_program([W], lambda s: ((W - 1) ** 2).sum(1), 10, 0.1, checkpoint=ck)
    assert torch.load(ck.path, weights_only=True)["step"] == 1
    assert "rerun the same command" in str(err.value)  # the CLI exits with 75 on Incomplete
