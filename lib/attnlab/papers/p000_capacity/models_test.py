"""The replica-batched max-over-heads QK model: forward against a float64 reference, replica
independence, and early stopping that freezes a replica."""

from __future__ import annotations

import numpy as np
import torch

from attnlab.papers.p000_capacity import constructions as C
from attnlab.papers.p000_capacity import models as M
from attnlab.papers.p000_capacity import tasks as T


def test_forward_equals_max_over_heads_reference():
    """The padded, masked forward equals max_k (X W_Q^(k))(X W_K^(k))^T - tau per replica."""
    d, specs = 6, [(1, 4), (2, 6), (3, 3)]
    inits = [M.init_weights(d, h, D, 10, 0) for h, D in specs]
    model = M.MaxOverHeadsQK(d, specs, inits).double()
    with torch.no_grad():
        model.tau[:, 0] = torch.tensor([0.1, -0.2, 0.3], dtype=torch.float64)
    Xc = torch.randn(2, 5, d, dtype=torch.float64)
    out = model(Xc)
    for r, ((h, D), (wq, wk)) in enumerate(zip(specs, inits)):
        wq, wk = wq.float().double().numpy(), wk.float().double().numpy()  # the model stores float32
        c = C.QKConstruction(np.stack(np.split(wq, h, axis=1)), np.stack(np.split(wk, h, axis=1)),
                             0.0, (), ())
        for n in range(2):
            ref = C.max_scores(c, Xc[n].numpy()) - model.tau[r, 0].item()
            np.testing.assert_allclose(out[r, n].detach().numpy(), ref, atol=1e-12)


def test_replica_trained_alone_equals_replica_in_batch():
    kw = dict(steps=60, lr=3e-3, check_every=20, n_val=20, n_test=30)
    alone = M.train_seed(16, 8, [(2, 8)], 0, **kw)[0]
    batch = M.train_seed(16, 8, [(1, 4), (2, 8), (4, 16)], 0, **kw)[1]
    assert alone["h"] == batch["h"] == 2
    assert abs(alone["tau"] - batch["tau"]) < 1e-5 and abs(alone["f1"] - batch["f1"]) < 1e-9


def test_early_stopping_freezes_the_replica():
    """stop_f1 = -1 passes every check: after `patience` checks the replica stops and its step count
    stays at patience x check_every; an unreachable threshold never stops."""
    kw = dict(steps=200, lr=3e-3, check_every=10, patience=3, n_val=10, n_test=10)
    stopped = M.train_seed(16, 8, [(2, 8)], 1, stop_f1=-1.0, **kw)[0]
    assert stopped["stopped"] and stopped["steps"] == 30
    running = M.train_seed(16, 8, [(2, 8)], 1, stop_f1=2.0, **kw)[0]
    assert not running["stopped"] and running["steps"] == 200


def test_rgr_loss_weights_positives():
    margin = torch.zeros(1, 1, 4, 4)
    y = torch.eye(4, dtype=torch.bool)[None]
    sp = float(torch.nn.functional.softplus(torch.tensor(0.0)))
    expected = (4 * sp * 3 + 12 * sp) / 16
    assert abs(float(M.rgr_loss(margin, y, 10.0)) - expected) < 1e-7


def test_seed_data_streams_are_independent_of_sizes():
    a = M.seed_data(32, 8, 0, 8, 0.5, 10, 5, 5)
    b = M.seed_data(32, 8, 0, 8, 0.5, 20, 7, 9)
    assert np.array_equal(a["X"], b["X"]) and np.array_equal(a["perm"], b["perm"])
    assert np.array_equal(T.sample_contexts(a["perm"], 3, 8, 0.5, T.rng(0, "x")),
                          T.sample_contexts(b["perm"], 3, 8, 0.5, T.rng(0, "x")))


def test_head_padded_model_equals_the_column_model():
    """HeadPaddedQK (heads in slots) computes MaxOverHeadsQK's function on the same weights."""
    d, specs = 6, [(1, 4), (2, 6), (3, 3), (2, 8)]
    inits = [M.init_weights(d, h, D, 10, 0) for h, D in specs]
    a = M.MaxOverHeadsQK(d, specs, inits).double()
    b = M.HeadPaddedQK(d, specs, inits).double()
    Xc = torch.randn(3, 5, d, dtype=torch.float64)
    ref = a(Xc)
    out = b(Xc[None].expand(len(specs), -1, -1, -1))
    torch.testing.assert_close(out, ref, atol=1e-12, rtol=0)


def test_grid_replica_alone_equals_replica_among_other_cells():
    """A replica's trajectory does not depend on the other (m, d, seed) cells in its program."""
    kw = dict(steps=60, lr=3e-3, check_every=20, n_val=20, n_test=30)
    mine = {"m": 16, "d": 8, "h": 2, "D_K": 8, "seed": 0}
    alone = M.train_grid([mine], **kw)[0]
    others = [{"m": 32, "d": 16, "h": 4, "D_K": 16, "seed": 1}, {"m": 16, "d": 8, "h": 1, "D_K": 4, "seed": 0},
              {"m": 24, "d": 4, "h": 2, "D_K": 6, "seed": 2}]
    batch = M.train_grid(others[:2] + [mine] + others[2:], **kw)[2]
    assert (batch["m"], batch["h"], batch["D_K"]) == (16, 2, 8)
    assert abs(alone["tau"] - batch["tau"]) < 1e-5 and abs(alone["f1"] - batch["f1"]) < 1e-9
    # and the same replica through train_seed (one cell, the column model) ends at the same tau
    seed_run = M.train_seed(16, 8, [(2, 8)], 0, **kw)[0]
    assert abs(seed_run["tau"] - alone["tau"]) < 1e-4


def test_grid_cutoffs_and_freezing():
    kw = dict(steps=100, lr=3e-3, check_every=10, patience=3, n_val=10, n_test=10)
    runs = [{"m": 16, "d": 8, "h": 2, "D_K": 8, "seed": 1, "steps": 40}, {"m": 16, "d": 8, "h": 1, "D_K": 8, "seed": 1}]
    out = M.train_grid(runs, **kw)
    assert out[0]["steps"] == 40 and not out[0]["stopped"] and out[1]["steps"] == 100
    stopped = M.train_grid(runs[1:], stop_f1=-1.0, **kw)[0]
    assert stopped["stopped"] and stopped["steps"] == 30



def _assign_forward(model: M.MaxOverHeadsQK, Xc: torch.Tensor) -> torch.Tensor:
    """MaxOverHeadsQK's former forward (a contraction with the column-to-head assignment, ell^2 D_K H
    per replica), kept as the reference of the sub-slot forward."""
    Q = torch.einsum("npd,rdc->rnpc", Xc, model.w("W_Q"))
    K = torch.einsum("npd,rdc->rnpc", Xc, model.w("W_K"))
    S = torch.einsum("rnpc,rnqc,rch->rnhpq", Q, K, model.assign.to(Q.dtype))
    S = S.masked_fill(~model.head_ok[:, None, :, None, None], float("-inf"))
    return S.amax(dim=2) - model.w("tau").view(-1, 1, 1, 1)


def test_grouped_forward_equals_the_assignment_contraction():
    """The sub-slot forward equals the former contraction with `assign`, values and gradients, on
    random specs covering every path (heads split over several sub-slots with a partly padded last
    one, e.g. d_k = 7 in slots of 2; head counts that differ (-inf slots) or do not divide the padded
    widths; one-column heads; one spec alone, no gather): 1e-12 in float64, 1e-6 (relative) in float32."""
    rng = np.random.default_rng(0)
    cases = [[(1, 4), (2, 6), (3, 3), (2, 8)], [(3, 9)], [(5, 5), (1, 7), (2, 4), (5, 10), (3, 6), (1, 1)]]
    for _ in range(3):
        cases.append([(int(h), int(h) * int(rng.integers(1, 6))) for h in rng.integers(1, 6, size=int(rng.integers(2, 9)))])
    for dtype, tol in ((torch.float64, 1e-12), (torch.float32, 1e-6)):
        for i, specs in enumerate(cases):
            d = 7
            inits = [M.init_weights(d, h, D, 10, i) for h, D in specs]
            model = M.MaxOverHeadsQK(d, specs, inits).to(dtype)
            with torch.no_grad():
                model.tau[:, 0] = torch.linspace(-0.3, 0.3, len(specs), dtype=dtype)
            Xc = torch.randn(3, 6, d, dtype=dtype, generator=torch.Generator().manual_seed(i))
            out, ref = model(Xc), _assign_forward(model, Xc)
            scale = float(ref.detach().abs().max())
            torch.testing.assert_close(out, ref, atol=tol * scale, rtol=0)
            gw = torch.randn(out.shape, dtype=dtype, generator=torch.Generator().manual_seed(100 + i))
            got = torch.autograd.grad((out * gw).sum(), (model.W_Q, model.W_K, model.tau))
            want = torch.autograd.grad((ref * gw).sum(), (model.W_Q, model.W_K, model.tau))
            for a, b in zip(got, want):
                torch.testing.assert_close(a, b, atol=tol * max(1.0, float(b.abs().max())), rtol=0)


def test_grouped_forward_replica_is_independent_of_the_batch():
    """Replica r's output is the same alone and among replicas of other head widths and counts
    (float64, up to summation order: 1e-12)."""
    d, specs = 5, [(2, 6), (1, 2), (4, 8), (3, 9), (2, 2)]
    inits = [M.init_weights(d, h, D, 10, 3) for h, D in specs]
    batch = M.MaxOverHeadsQK(d, specs, inits).double()
    Xc = torch.randn(2, 4, d, dtype=torch.float64)
    out = batch(Xc)
    for r, (spec, init) in enumerate(zip(specs, inits)):
        alone = M.MaxOverHeadsQK(d, [spec], [init]).double()
        torch.testing.assert_close(out[r], alone(Xc)[0], atol=1e-12, rtol=0)


def _exact_rgr_loss(margin: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    """App. A.1's loss with the exact softplus (logaddexp(0, x); F.softplus returns x above 20)."""
    ell = margin.shape[-1]
    z = alpha * margin
    yf = y.to(z.dtype)
    zero = torch.zeros((), dtype=z.dtype)
    per = torch.logaddexp(zero, -z) * yf * (ell - 1) + torch.logaddexp(zero, z) * (1 - yf)
    return per.mean(dim=(1, 2, 3))


def _fused_cases():
    rng = np.random.default_rng(1)
    cases = [[(1, 4), (2, 6), (3, 3), (2, 8)], [(3, 9)], [(4, 16)], [(5, 5), (1, 7), (2, 4), (5, 10), (3, 6), (1, 1)]]
    for _ in range(3):
        cases.append([(int(h), int(h) * int(rng.integers(1, 6))) for h in rng.integers(1, 6, size=int(rng.integers(2, 9)))])
    return cases


def test_fused_loss_equals_the_loss_of_the_forward():
    """MaxOverHeadsQK.loss (written-out backward) = App. A.1's loss of the forward's margins, values and
    gradients of W_Q, W_K, tau under random per-replica output gradients: 1e-12 (relative to the largest
    entry) in float64 against the exact softplus, on every sub-slot path (heads over several sub-slots,
    padded sub-slots, differing head counts, one spec alone), one and two contexts per step, and weights
    scaled so that |alpha margin| reaches ~100 (saturated softplus and sigmoid); 1e-5 in float32 against
    `rgr_loss` itself."""
    for i, specs in enumerate(_fused_cases()):
        for n, scale in ((1, 1.0), (2, 1.0), (1, 6.0)):
            for dtype, tol, ref_loss in ((torch.float64, 1e-12, _exact_rgr_loss), (torch.float32, 1e-5, M.rgr_loss)):
                d, ell = 7, 6
                inits = [tuple(scale * w for w in M.init_weights(d, h, D, 10, i)) for h, D in specs]
                model = M.MaxOverHeadsQK(d, specs, inits).to(dtype)
                with torch.no_grad():
                    model.tau[:, 0] = torch.linspace(-0.3, 0.3, len(specs), dtype=dtype)
                g = torch.Generator().manual_seed(10 * i + n)
                Xc = torch.randn(n, ell, d, dtype=dtype, generator=g)
                y = torch.rand(n, ell, ell, generator=g) < 0.3
                gw = torch.rand(len(specs), dtype=dtype, generator=g)
                got, want = model.loss(Xc, y, 10.0), ref_loss(model(Xc), y, 10.0)
                torch.testing.assert_close(got, want, atol=tol * float(want.detach().abs().max()), rtol=0)
                params = (model.W_Q, model.W_K, model.tau)
                for a, b in zip(torch.autograd.grad((got * gw).sum(), params),
                                torch.autograd.grad((want * gw).sum(), params)):
                    torch.testing.assert_close(a, b, atol=tol * max(1e-30, float(b.abs().max())), rtol=0)


def test_fused_loss_splits_tied_maxima_like_amax():
    """Replicas whose heads are copies of each other tie at every pair: the fused backward splits the
    gradient evenly among the tied heads exactly as amax's backward does (float64, 1e-12). Weights and
    inputs are small integers, so every product and sum is exact and the copies tie bit for bit in
    whatever order a BLAS kernel sums (random normal copies tied on an Intel Xeon, not on an AMD EPYC)."""
    d, ell = 5, 4
    specs = [(2, 6), (3, 6), (1, 3)]
    g = torch.Generator().manual_seed(3)
    inits = []
    for h, D in specs:
        block = torch.randint(-3, 4, (2, d, D // h), generator=g).double()
        inits.append((block[0].repeat(1, h), block[1].repeat(1, h)))  # every head the same
    model = M.MaxOverHeadsQK(d, specs, inits).double()
    Xc = torch.randint(-3, 4, (1, ell, d), generator=g).double()
    y = torch.rand(1, ell, ell, generator=g) < 0.5
    got, want = model.loss(Xc, y, 10.0), _exact_rgr_loss(model(Xc), y, 10.0)
    torch.testing.assert_close(got, want, atol=1e-12, rtol=0)
    params = (model.W_Q, model.W_K, model.tau)
    for a, b in zip(torch.autograd.grad(got.sum(), params), torch.autograd.grad(want.sum(), params)):
        torch.testing.assert_close(a, b, atol=1e-12 * float(b.abs().max()), rtol=0)


def test_fused_loss_replica_is_independent_of_the_batch():
    """Replica r's loss and gradients are the same alone and among other replicas (float64, 1e-12)."""
    d, ell, specs = 5, 4, [(2, 6), (1, 2), (4, 8), (3, 9), (2, 2)]
    inits = [M.init_weights(d, h, D, 10, 3) for h, D in specs]
    batch = M.MaxOverHeadsQK(d, specs, inits).double()
    g = torch.Generator().manual_seed(4)
    Xc = torch.randn(1, ell, d, dtype=torch.float64, generator=g)
    y = torch.rand(1, ell, ell, generator=g) < 0.3
    out = batch.loss(Xc, y, 10.0)
    grads = torch.autograd.grad(out.sum(), (batch.W_Q, batch.W_K, batch.tau))
    for r, (spec, init) in enumerate(zip(specs, inits)):
        alone = M.MaxOverHeadsQK(d, [spec], [init]).double()
        mine = alone.loss(Xc, y, 10.0)
        torch.testing.assert_close(out[r], mine[0], atol=1e-12, rtol=0)
        for a, b in zip(grads, torch.autograd.grad(mine.sum(), (alone.W_Q, alone.W_K, alone.tau))):
            torch.testing.assert_close(a[r][..., :b.shape[-1]], b[0], atol=1e-12, rtol=0)
            assert (a[r][..., b.shape[-1]:] == 0).all()  # the padding


def test_fused_loss_padding_gets_no_gradient_and_labels_must_be_bool():
    d, specs = 4, [(1, 2), (2, 8)]
    model = M.MaxOverHeadsQK(d, specs, [M.init_weights(d, h, D, 10, 0) for h, D in specs])
    Xc, y = torch.randn(1, 5, d), torch.rand(1, 5, 5) < 0.5
    model.loss(Xc, y, 10.0).sum().backward()
    assert (model.W_Q.grad[0, :, 2:] == 0).all() and (model.W_K.grad[0, :, 2:] == 0).all()
    assert (model.W_Q.grad[0, :, :2] != 0).any()
    try:
        model.loss(Xc, y.float(), 10.0)
    except TypeError:
        pass
    else:
        raise AssertionError("float labels were accepted")


def test_fused_loss_refuses_a_second_order_backward():
    d, specs = 4, [(2, 4)]
    model = M.MaxOverHeadsQK(d, specs, [M.init_weights(d, h, D, 10, 0) for h, D in specs])
    loss = model.loss(torch.randn(1, 5, d), torch.rand(1, 5, 5) < 0.5, 10.0).sum()
    (g,) = torch.autograd.grad(loss, model.W_Q, create_graph=True)
    try:
        g.sum().backward()
    except RuntimeError:
        pass
    else:
        raise AssertionError("a second backward through the fused loss ran")


def _until_done(train, checkpoint):
    """Call `train(checkpoint)` until it no longer stops at the checkpoint's deadline; the calls it took."""
    from attnlab.core.experiment import Incomplete

    for calls in range(1, 1000):
        try:
            return train(checkpoint), calls
        except Incomplete:
            assert checkpoint.path.exists()


def _same_rows(a, b):
    drop = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]  # noqa: E731
    assert drop(a) == drop(b)


def test_train_grid_and_train_seed_stopped_at_a_deadline_resume_bit_for_bit(tmp_path):
    """Stopped every few steps (a long-passed deadline, checkpoint_every 7), with freezing, cutoffs and
    validation checks in between, a program ends exactly as the uninterrupted one."""
    from attnlab.core.checkpoint import Checkpoint, Deadline

    late = Deadline(1.0, start=0.0)
    kw = dict(steps=40, lr=3e-3, check_every=5, patience=2, n_val=10, n_test=10)
    runs = [{"m": 16, "d": 8, "h": 2, "D_K": 8, "seed": 1, "steps": 25}, {"m": 16, "d": 8, "h": 1, "D_K": 8, "seed": 1},
            {"m": 20, "d": 4, "h": 2, "D_K": 4, "seed": 2}]
    whole = M.train_grid(runs, stop_f1=0.3, **kw)
    resumed, calls = _until_done(lambda ck: M.train_grid(runs, stop_f1=0.3, checkpoint=ck, **kw),
                                 Checkpoint(tmp_path / "grid.pt", every=7, deadline=late))
    assert calls >= 3
    _same_rows(resumed, whole)
    specs = [(1, 4), (2, 8)]
    whole = M.train_seed(16, 8, specs, 0, **kw)
    resumed, calls = _until_done(lambda ck: M.train_seed(16, 8, specs, 0, checkpoint=ck, **kw),
                                 Checkpoint(tmp_path / "seed.pt", every=0, deadline=late))
    assert calls == 40
    _same_rows(resumed, whole)
