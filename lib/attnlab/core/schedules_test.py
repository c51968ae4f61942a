"""Each schedule against torch's own scheduler on a single replica."""

import torch

from attnlab.core.schedules import ReduceOnPlateau, linear_lr, one_cycle, warmup_cosine


def _torch_lrs(make, steps, lr=0.1, observe=None):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=lr)
    sched = make(opt)
    out = []
    for s in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step(*([observe[s]] if observe is not None else []))
    return out


def test_linear_lr_is_torch_linear_lr_stepped_per_epoch():
    steps, per_epoch = 40, 4
    ref = _torch_lrs(lambda o: torch.optim.lr_scheduler.LinearLR(o, 1.0, 0.1, total_iters=steps // per_epoch),
                     steps // per_epoch, lr=0.05)
    ours = [linear_lr(0.05, 0.005, steps, per_epoch)(e * per_epoch) for e in range(steps // per_epoch)]
    torch.testing.assert_close(torch.tensor(ours, dtype=torch.float64), torch.tensor(ref, dtype=torch.float64),
                               rtol=1e-12, atol=0)  # torch multiplies factors step by step: equal up to rounding


def test_warmup_cosine_is_torch_lambda_lr_then_cosine_annealing():
    steps, warmup, lr = 50, 10, 0.3
    ref = _torch_lrs(lambda o: torch.optim.lr_scheduler.SequentialLR(o, [
        torch.optim.lr_scheduler.LambdaLR(o, lambda s: (s + 1) / warmup),
        torch.optim.lr_scheduler.CosineAnnealingLR(o, steps - warmup)], milestones=[warmup]), steps, lr=lr)
    ours = [warmup_cosine(lr, steps, warmup)(s) for s in range(steps)]
    torch.testing.assert_close(torch.tensor(ours, dtype=torch.float64), torch.tensor(ref, dtype=torch.float64),
                               rtol=1e-9, atol=1e-15)  # torch's cosine is recursive: equal up to rounding


def test_one_cycle_is_torch_one_cycle_lr_per_replica():
    totals = [30, 57]
    f = one_cycle(0.2, torch.tensor(totals), pct_start=0.25)
    for r, total in enumerate(totals):
        ref = _torch_lrs(lambda o: torch.optim.lr_scheduler.OneCycleLR(o, 0.2, total_steps=total, pct_start=0.25,
                                                                         cycle_momentum=False), total)
        ours = [float(f(s)[r]) for s in range(total)]
        assert ours == ref  # the same arithmetic: bit for bit


def test_reduce_on_plateau_is_torch_reduce_lr_on_plateau_per_replica():
    g = torch.Generator().manual_seed(0)
    scores = torch.rand(60, 3, generator=g, dtype=torch.float64).cumsum(0) * torch.tensor([-1.0, 0.0, 0.01])
    scores += torch.rand(60, 3, generator=g, dtype=torch.float64)
    ours = ReduceOnPlateau(0.1, 3, factor=0.5, patience=2, threshold=1e-3, min_lr=0.01)
    got = []
    for s in range(60):
        got.append(ours(s).clone())
        ours.observe(scores[s])
    got = torch.stack(got)
    for r in range(3):
        ref = _torch_lrs(lambda o: torch.optim.lr_scheduler.ReduceLROnPlateau(o, factor=0.5, patience=2, threshold=1e-3,
                                                                                min_lr=0.01), 60,
                         observe=scores[:, r].tolist())
        assert got[:, r].tolist() == ref
    assert got[-1, 1] < got[-1, 0]  # the flat replica cut its rate more often than the improving one
    frozen = ReduceOnPlateau(0.1, 1, patience=0)
    frozen.observe(torch.tensor([1.0]), torch.tensor([False]))
    assert frozen.state_dict()["best"].isinf().all()  # an inactive replica's state does not change
