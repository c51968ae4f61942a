"""The value-channel model of §7.2: Eq. (3) against a float64 reference, Eq. (4)'s valid set and
loss, replica independence across data sets (zero-padded embeddings), and the plateau rule."""

from __future__ import annotations

import numpy as np
import torch

from attnlab.papers.p000_capacity import models as M
from attnlab.papers.p000_capacity import tasks as T
from attnlab.papers.p000_capacity import value_model as V
from attnlab.core.train import Plateau


def test_forward_is_raw_max_scores_times_messages():
    d, e, specs = 6, 3, [(1, 4), (2, 6), (3, 3)]
    inits = [M.init_weights(d, h, D, 10, 0) for h, D in specs]
    model = V.ValueChannelQK(d, specs, inits).double()
    Xc = torch.randn(1, 2, 5, d, dtype=torch.float64).expand(3, -1, -1, -1)
    Vc = torch.randn(1, 2, 5, e, dtype=torch.float64).expand(3, -1, -1, -1)
    out = model(Xc, Vc).detach().numpy()
    for r, ((h, D), (wq, wk)) in enumerate(zip(specs, inits)):
        wq, wk = wq.float().double().numpy(), wk.float().double().numpy()
        d_k = D // h
        for n in range(2):
            X = Xc[0, n].numpy()
            S = np.max([(X @ wq[:, k * d_k:(k + 1) * d_k]) @ (X @ wk[:, k * d_k:(k + 1) * d_k]).T for k in range(h)],
                       axis=0)
            np.testing.assert_allclose(out[r, n], S @ Vc[0, n].numpy(), atol=1e-12)


def test_valid_positions_and_loss():
    perm = np.array([1, 2, 0, 4, 3])
    ctx = np.array([[0, 1, 3], [2, 4, 1]])
    tgt, valid = V.retrieval_targets(ctx, perm)
    assert tgt.tolist() == [[1, 2, 4], [0, 3, 2]]
    assert valid.tolist() == [[True, False, False], [False, False, True]]
    pred = torch.ones(1, 2, 3, 2)
    target = torch.zeros(1, 2, 3, 2)
    # two valid positions, squared error 2 each: mean 2; invalid positions contribute nothing
    assert float(V.mse(pred, target, torch.as_tensor(valid)[None])) == 2.0
    assert float(V.mse(pred, target, torch.zeros(1, 2, 3, dtype=torch.bool))) == 0.0


def test_message_scale_and_seeding():
    W = V.value_map(16, 16, 0)
    assert np.array_equal(W, V.value_map(16, 16, 0)) and not np.array_equal(W, V.value_map(16, 16, 1))
    X = T.gun_embeddings(4000, 16, T.rng(0, "x"))
    assert abs(((X @ W) ** 2).sum(1).mean() - 1) < 0.35  # E||y||^2 = 1 up to the draw of W_V (16 x 16)


def test_replica_alone_equals_replica_among_other_data_sets():
    """A d = 8 replica trained alone equals the same replica trained beside d = 16 replicas of
    another seed (its embeddings zero-padded): each replica's function and gradients are its own."""
    kw = dict(steps=60, lr=3e-3, check_every=20, n_val=20, n_test=30, d_msg=4)
    alone = V.train_runs([{"m": 32, "d": 8, "h": 2, "D_K": 8, "seed": 0}], **kw)[0]
    mixed = V.train_runs([{"m": 32, "d": 16, "h": 1, "D_K": 16, "seed": 1}, {"m": 32, "d": 8, "h": 2, "D_K": 8, "seed": 0},
                          {"m": 32, "d": 16, "h": 4, "D_K": 16, "seed": 1}], **kw)[1]
    assert abs(alone["mse"] - mixed["mse"]) < 1e-6 * max(1.0, alone["mse"])


def test_plateau_rule_freezes_after_patience_checks_without_improvement():
    rule = Plateau(patience=2)
    rule.start(2, "cpu")
    keeps = [rule.keep(torch.tensor(s)).tolist() for s in ([1.0, 1.0], [0.5, 1.0], [0.5, 1.0], [0.4, 1.0])]
    assert keeps == [[True, True], [True, True], [True, False], [True, False]]


def test_training_reduces_the_mse():
    out = V.train_seed(24, 24, [(4, 32)], 0, steps=800, lr=3e-3, n_val=50, n_test=200, ell=8)[0]
    assert out["mse"] < 0.6, out
