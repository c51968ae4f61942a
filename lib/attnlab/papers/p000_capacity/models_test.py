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
