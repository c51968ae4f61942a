import numpy as np
import pytest
import torch

from attnlab.core.train import linear_lr

from . import reference
from .models import (CountingConfig, ReplicaCounting, counting_accuracy, counting_batches, eval_tokens,
                     train_counting)
from .tasks import hist, sample

T, L = 8, 6
GRID = [(1, 1), (2, 8), (5, 3), (8, 16), (12, 2), (16, 5)]  # (d, p), sizes differ in both


def configs(variant, seed=0):
    return [CountingConfig(variant, T, L, d, p, seed=seed + i % 2) for i, (d, p) in enumerate(GRID)]


@pytest.mark.parametrize("variant", reference.VARIANTS)
def test_forward_equals_reference_on_the_same_weights(variant):
    torch.manual_seed(0)
    m = ReplicaCounting(configs(variant), dtype=torch.float64)
    with torch.no_grad():  # move off the init (biases and scales large enough to matter)
        for prm in m.parameters():
            prm.add_(0.5 * torch.randn_like(prm))
    x = sample("code", 200, T, L, seed=3)
    logits = m(torch.from_numpy(x)).detach().numpy()
    assert logits.shape == (len(GRID), 200, L, L + 1)
    for r in range(m.R):
        ref = reference.forward(m.weights(r), x)["logits"]
        np.testing.assert_allclose(logits[r], ref, rtol=0, atol=1e-11 * max(1.0, np.abs(ref).max()))


def test_forward_differs_between_variants():
    """The test above can fail: the six variants compute different functions of shared weights."""
    x = torch.from_numpy(sample("code", 50, T, L, seed=1))
    c = CountingConfig("dot", T, L, 8, 8)
    m = ReplicaCounting([c], dtype=torch.float64)
    w = m.weights(0)
    out = reference.forward(reference.CountingWeights("dot+sftm", w.emb, w.W1, w.b1, w.W2, w.b2, W_Q=w.W_Q, W_K=w.W_K),
                         x.numpy())["logits"]
    assert np.abs(out - m(x).detach().numpy()[0]).max() > 1e-3


@pytest.mark.parametrize("variant", ["dot", "bos+sftm", "lin", "dot+sftm"])
def test_replica_trained_in_a_batch_equals_it_trained_alone(variant):
    cs = configs(variant)
    lr = linear_lr(1e-2, 1e-3, 40)
    ev = eval_tokens(T, L, n=300)
    batch = ReplicaCounting(cs, dtype=torch.float64)
    log_b = train_counting(batch, counting_batches(T, L, 32, seed=5), 40, lr, eval_set=ev)
    for r in (0, 3, 5):
        alone = ReplicaCounting([cs[r]], dtype=torch.float64)
        log_a = train_counting(alone, counting_batches(T, L, 32, seed=5), 40, lr, eval_set=ev)
        wa, wb = alone.replica_state(0), batch.replica_state(r)
        for k in wa:
            assert wa[k].shape == wb[k].shape
            torch.testing.assert_close(wa[k], wb[k], rtol=0, atol=1e-12)
        assert log_a.final_accuracy[0] == pytest.approx(log_b.final_accuracy[r], abs=1e-12)
        assert log_a.final_loss[0] == pytest.approx(log_b.final_loss[r], abs=1e-12)
    # and training moved the weights (the comparison is not between two untouched inits)
    fresh = ReplicaCounting(cs, dtype=torch.float64).replica_state(5)
    assert max((fresh[k] - batch.replica_state(5)[k]).abs().max() for k in fresh) > 1e-2


def test_padded_entries_stay_zero_and_receive_no_gradient():
    m = ReplicaCounting(configs("dot"), dtype=torch.float64)
    train_counting(m, counting_batches(T, L, 16), 5, lambda s: 1e-2, eval_set=eval_tokens(T, L, n=50))
    for name in ("emb", "W_Q", "W_K", "W1", "b1", "W2", "b2"):
        prm, mask = getattr(m, name), getattr(m, name + "_mask")
        assert (prm.detach()[mask == 0] == 0).all()


@pytest.mark.parametrize("variant", reference.VARIANTS)
def test_parameter_count_formula_matches_tensors(variant):
    m = ReplicaCounting(configs(variant))
    for r, c in enumerate(m.configs):
        n = sum(t.numel() for t in m.replica_state(r).values())
        assert n == c.n_params == m.weights(r).n_params()
    # lin+sftm, T=32, L=10, d=p=32: 1024 + 100 + 1056 + 363 = 2,543 (embeddings, A, W1 and b1, W2 and b2)
    assert CountingConfig("lin+sftm", 32, 10, 32, 32).n_params == 2543


def test_init_depends_on_config_and_seed_only():
    c = CountingConfig("bos", T, L, 4, 3, seed=7)
    a = ReplicaCounting([c], dtype=torch.float64).replica_state(0)
    b = ReplicaCounting(configs("bos") + [c], dtype=torch.float64).replica_state(len(GRID))
    other = ReplicaCounting([CountingConfig("bos", T, L, 4, 3, seed=8)], dtype=torch.float64).replica_state(0)
    for k in a:
        assert torch.equal(a[k], b[k])
    assert not torch.equal(a["emb"], other["emb"])


def test_bos_output_drops_the_bos_position_and_accuracy_uses_hist():
    m = ReplicaCounting([CountingConfig("bos+sftm", T, L, 4, 4)], dtype=torch.float64)
    x = torch.from_numpy(sample("code", 100, T, L, seed=2))
    assert m(x).shape == (1, 100, L, L + 1)
    acc = counting_accuracy(m, x).item()
    ref = float((reference.forward(m.weights(0), x.numpy())["prediction"] == hist(x.numpy())).mean())
    assert acc == pytest.approx(ref)


def test_mixed_variants_in_one_program_are_refused():
    with pytest.raises(ValueError):
        ReplicaCounting([CountingConfig("dot", T, L, 2, 2), CountingConfig("bos", T, L, 2, 2)])


def test_training_learns_the_task_at_small_scale():
    """dot with d = p = 16 > T learns counting (100% at 3,000 steps in our CPU pilot); 400 steps must
    at least clear the 1/3 majority baseline by a wide margin."""
    m = ReplicaCounting([CountingConfig("dot", T, L, 16, 16)])
    log = train_counting(m, counting_batches(T, L, 128), 400, lambda s: 1e-2, eval_set=eval_tokens(T, L, n=1000))
    assert log.final_accuracy[0] > 0.6


def test_hidden_readout_gradient_equals_autograd_of_the_plain_ops():
    """`_HiddenReadout` (per group, its first k units as views, ReLU and its backward in place) =
    bmm(V_g, relu(bmm(H_g, W_g))) under autograd, here with two groups of different widths; the
    units a group does not use get zero gradient."""
    from .models import _HiddenReadout

    g = torch.Generator().manual_seed(0)
    W = torch.randn(5, 4, 11, generator=g, dtype=torch.float64, requires_grad=True)
    H = torch.randn(5, 6, 4, generator=g, dtype=torch.float64, requires_grad=True)
    V = torch.randn(5, 2, 6, generator=g, dtype=torch.float64, requires_grad=True)
    groups = ((0, 3, 3), (3, 5, 6))
    assert torch.autograd.gradcheck(lambda *x: _HiddenReadout.apply(x[0], groups, *x[1:]), (W, H, V))
    out = torch.randn(5, 2, 11, generator=g, dtype=torch.float64)
    mine = torch.autograd.grad((_HiddenReadout.apply(W, groups, H, V) * out).sum(), (W, H, V))
    plain = torch.cat([torch.bmm(V[:3, :, :3], torch.relu(torch.bmm(H[:3, :3], W[:3]))),
                       torch.bmm(V[3:], torch.relu(torch.bmm(H[3:], W[3:])))])
    plain = torch.autograd.grad((plain * out).sum(), (W, H, V))
    for a, b in zip(mine, plain):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-13)
    assert (mine[1][:3, 3:] == 0).all() and (mine[2][:3, :, 3:] == 0).all()


def test_width_groups_and_their_order():
    """Replicas are grouped by padded hidden width; logits_t and loss come back in replica order
    (the forward test above checks the values against the reference)."""
    m = ReplicaCounting(configs("dot"))  # p = 1, 8, 3, 16, 2, 5 -> widths 4, 8, 4, 16, 4, 8
    assert m.group_widths == [4, 8, 16] and m.bounds == (0, 3, 5, 6) and m.sorted
    assert m.groups == ((0, 3, 5), (3, 5, 9), (5, 6, 17))
    assert m.order.tolist() == [0, 2, 4, 1, 5, 3]
    x = torch.from_numpy(sample("code", 20, T, L, seed=4))
    # loss (computed in the grouped order, readout and cross-entropy fused) = the per-position loss of
    # logits_t in replica order: the next test, in float64
    one = ReplicaCounting([CountingConfig("dot", T, L, 3, 5)])
    assert one.group_widths == [5] and not one.sorted
    # no padding: w() is the parameter itself (the batch-vs-alone test compares this path with the masked one)
    assert one.dense and not m.dense and one.w("W1") is one.W1


def test_counting_loss_and_its_gradient_equal_cross_entropy():
    """The written-out loss and gradient = F.cross_entropy per replica (mean over positions)."""
    from .models import counting_loss

    g = torch.Generator().manual_seed(1)
    z = (3 * torch.randn(4, L + 1, 16, L, generator=g, dtype=torch.float64)).requires_grad_()
    y = torch.randint(1, L + 1, (16, L), generator=g)
    w = torch.randn(4, generator=g, dtype=torch.float64)
    loss = counting_loss(z, y)
    want = torch.stack([torch.nn.functional.cross_entropy(z[r].permute(1, 2, 0).reshape(-1, L + 1), y.reshape(-1))
                        for r in range(4)])
    torch.testing.assert_close(loss, want, rtol=0, atol=1e-13)
    (gm,) = torch.autograd.grad((loss * w).sum(), z)
    (gw,) = torch.autograd.grad((want * w).sum(), z)
    torch.testing.assert_close(gm, gw, rtol=0, atol=1e-14)
    loss = counting_loss(z, y).sum()
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="runs once"):  # its saved tensors were overwritten
        loss.backward()


@pytest.mark.parametrize("variant", reference.VARIANTS)
def test_training_loss_equals_the_mean_cross_entropy_of_the_logits(variant):
    """`loss` (readout and cross-entropy fused per width group, `_HiddenReadoutLoss`; for the
    dot-product variants once per distinct (sequence, query token) pair, weighted by its count)
    = the mean cross-entropy over all positions (`counting_loss` of `logits_t`), value and gradient
    of every parameter, in float64, in replica order."""
    from .models import counting_loss, hist_torch

    m = ReplicaCounting(configs(variant), dtype=torch.float64)
    assert m.sorted
    with torch.no_grad():  # off the init, as in the reference test
        for name in m._names:
            getattr(m, name).add_(0.5 * torch.randn_like(getattr(m, name)) * getattr(m, name + "_mask"))
    x = torch.from_numpy(sample("code", 64, T, L, seed=6))
    w = torch.randn(m.R, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    pairs = m.loss(x)
    full = counting_loss(m.logits_t(x), hist_torch(x))
    torch.testing.assert_close(pairs, full, rtol=1e-13, atol=0)
    params = list(m.parameters())
    g_pairs = torch.autograd.grad((pairs * w).sum(), params)
    g_full = torch.autograd.grad((counting_loss(m.logits_t(x), hist_torch(x)) * w).sum(), params)
    for a, b in zip(g_pairs, g_full):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)


def test_query_pairs():
    """Distinct (sequence, token) pairs, row-major; n = the token's count (its positions' label);
    BOS is never a query."""
    m = ReplicaCounting([CountingConfig("bos", 4, 5, 2, 2)])
    x = torch.tensor([[0, 0, 3, 0, 1], [2, 2, 2, 2, 2]])
    b, q, counts, n = m.query_pairs(x)
    assert b.tolist() == [0, 0, 0, 1] and q.tolist() == [0, 1, 3, 2] and n.tolist() == [3, 1, 1, 5]
    # counts of the pair's sequence per type 0 .. 3, BOS (4) and the bias row (5)
    assert counts[:, 0].tolist() == [3, 1, 0, 1, 1, 0] and counts[:, 3].tolist() == [0, 0, 5, 0, 1, 0]


def test_hidden_readout_loss_equals_the_weighted_cross_entropy_of_hidden_readout():
    """`_HiddenReadoutLoss` = Σ_n w_n F.cross_entropy of `_HiddenReadout`'s logits per replica, value
    and gradient of every input (float64, two groups of different widths); its backward runs once
    (so no gradcheck, which runs it once per output)."""
    from .models import _HiddenReadout, _HiddenReadoutLoss

    g = torch.Generator().manual_seed(3)
    W = torch.randn(5, 4, 11, generator=g, dtype=torch.float64, requires_grad=True)
    H = torch.randn(5, 6, 4, generator=g, dtype=torch.float64, requires_grad=True)
    V = torch.randn(5, 7, 6, generator=g, dtype=torch.float64, requires_grad=True)
    groups = ((0, 3, 3), (3, 5, 6))
    y = torch.randint(0, 7, (11,), generator=g)
    onehot = (y[None] == torch.arange(7)[:, None]).double()
    wt = torch.rand(11, generator=g, dtype=torch.float64)
    r = torch.randn(5, generator=g, dtype=torch.float64)

    def fused(W, H, V):
        return _HiddenReadoutLoss.apply(W, groups, onehot * wt, wt, H, V)

    def plain(W, H, V):
        z = _HiddenReadout.apply(W, groups, H, V)
        return torch.stack([(torch.nn.functional.cross_entropy(z[i].t(), y, reduction="none") * wt).sum()
                            for i in range(5)])

    torch.testing.assert_close(fused(W, H, V), plain(W, H, V), rtol=1e-14, atol=0)
    mine = torch.autograd.grad((fused(W, H, V) * r).sum(), (W, H, V))
    want = torch.autograd.grad((plain(W, H, V) * r).sum(), (W, H, V))
    for a, b in zip(mine, want):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-13)
    loss = fused(W, H, V).sum()
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="runs once"):
        loss.backward()


def test_count_softmax_equals_softmax_of_scores_plus_log_counts():
    """`_CountSoftmax` = softmax_t(S + log n) + O and its gradient (autograd of the log form, float64),
    with absent types (n = 0), one of them scoring far above the present ones (no overflow, no NaN)."""
    from .models import _CountSoftmax

    g = torch.Generator().manual_seed(4)
    S = (3 * torch.randn(3, 5, 12, generator=g, dtype=torch.float64))
    n = torch.randint(0, 3, (5, 12), generator=g).double()
    n[0] = 1  # every column has a type present
    n[4] = 0
    S[:, 4] = 1e3  # an absent type far above the others
    S.requires_grad_()
    O = torch.rand(5, 12, generator=g, dtype=torch.float64)
    r = torch.randn(3, 5, 12, generator=g, dtype=torch.float64)
    mine = _CountSoftmax.apply(S, n, O)
    want = torch.softmax(S + n.log(), 1) + O
    assert torch.isfinite(mine).all()
    torch.testing.assert_close(mine, want, rtol=0, atol=1e-15)
    (gm,) = torch.autograd.grad((mine * r).sum(), S)
    (gw,) = torch.autograd.grad((want * r).sum(), S)
    torch.testing.assert_close(gm, gw, rtol=0, atol=1e-14)
    assert (gm[:, 4] == 0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_hidden_readout_loss_with_classes_far_below_the_best(dtype):
    """Logits 100s apart (exp(y − max) floored at e^−70, `core.train.EXP_FLOOR`): loss and gradient = torch's
    cross-entropy of the same logits, finite."""
    from .models import _HiddenReadout, _HiddenReadoutLoss

    g = torch.Generator().manual_seed(5)
    W = torch.rand(2, 3, 50, generator=g, dtype=dtype, requires_grad=True)
    H = torch.rand(2, 4, 3, generator=g, dtype=dtype, requires_grad=True)
    V = (300 * torch.randn(2, 7, 4, generator=g, dtype=dtype)).requires_grad_()
    groups = ((0, 2, 4),)
    y = torch.randint(0, 7, (50,), generator=g)
    wt = torch.full((50,), 1 / 50, dtype=dtype)
    onehot = (y[None] == torch.arange(7)[:, None]).to(dtype)
    z = _HiddenReadout.apply(W, groups, H, V)
    assert (z - z.amax(1, keepdim=True)).min() < -200  # the floor is used
    want = torch.stack([torch.nn.functional.cross_entropy(z[i].t(), y) for i in range(2)])
    mine = _HiddenReadoutLoss.apply(W, groups, onehot * wt, wt, H, V)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(mine, want, rtol=tol, atol=0)
    gm = torch.autograd.grad(mine.sum(), (W, H, V))
    gw = torch.autograd.grad(want.sum(), (W, H, V))
    for a, b in zip(gm, gw):
        assert torch.isfinite(a).all()
        torch.testing.assert_close(a, b, rtol=tol, atol=tol * b.abs().max().item())


@pytest.mark.parametrize("variant", reference.VARIANTS)
def test_per_stream_loss_and_gradient_equal_each_replica_on_its_own_batch(variant):
    """set_streams: replica r trains on batch stream_of[r] of tokens [S, B, L] (padded pair columns
    add nothing); the loss and every gradient equal those of the plain path on that batch alone."""
    torch.manual_seed(1)
    cs = [CountingConfig(variant, T, L, d, p, seed=i % 3) for i, (d, p) in enumerate(GRID)]
    m = ReplicaCounting(cs, dtype=torch.float64)
    with torch.no_grad():
        for prm in m.parameters():
            prm.add_(0.3 * torch.randn_like(prm))
    toks = torch.stack([torch.from_numpy(sample("code", 32, T, L, seed=s)) for s in (1, 2, 3)])
    stream_of = [2 - i % 3 for i in range(len(cs))]
    m.set_streams(stream_of)
    loss = m.loss(toks)
    loss.sum().backward()
    grads = {n: p.grad.clone() for n, p in m.named_parameters()}
    for r in range(len(cs)):
        m.zero_grad()
        alone = m.loss(toks[stream_of[r]])[r]
        alone.backward()
        assert float(alone.detach()) == pytest.approx(float(loss[r].detach()), abs=1e-12)
        for n, p in m.named_parameters():
            torch.testing.assert_close(p.grad[r], grads[n][r], rtol=0, atol=1e-12)
    assert not torch.allclose(loss, m.loss(toks[0]).detach())  # the streams differ: the test can fail
    with pytest.raises(ValueError, match="set_streams"):
        ReplicaCounting(cs).loss(toks)
