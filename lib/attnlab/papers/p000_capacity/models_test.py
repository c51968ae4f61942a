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
