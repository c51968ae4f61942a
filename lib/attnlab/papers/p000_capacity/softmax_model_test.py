"""The replica-batched softmax-sum QK model: forward against a float64 reference written from §7.1,
padded heads contribute nothing, replica independence, and training that learns."""

from __future__ import annotations

import numpy as np
import torch

from attnlab.papers.p000_capacity import models as M
from attnlab.papers.p000_capacity import softmax_model as S


def _reference(wq, wk, h, tau, X):
    """A_pq - tau with A = sum_k softmax_q((X W_Q^(k))(X W_K^(k))^T / sqrt(d_k)), plain numpy float64."""
    d_k = wq.shape[1] // h
    A = np.zeros((len(X), len(X)))
    for k in range(h):
        cols = slice(k * d_k, (k + 1) * d_k)
        L = (X @ wq[:, cols]) @ (X @ wk[:, cols]).T / np.sqrt(d_k)
        P = np.exp(L - L.max(axis=1, keepdims=True))
        A += P / P.sum(axis=1, keepdims=True)
    return A - tau


def test_forward_equals_softmax_sum_reference():
    d, specs = 6, [(1, 4), (2, 6), (3, 3), (4, 8)]
    inits = [M.init_weights(d, h, D, 10, 0) for h, D in specs]
    model = S.SoftmaxSumQK(d, specs, inits, tau0=0.25).double()
    Xc = torch.randn(2, 5, d, dtype=torch.float64)
    out = model(Xc).detach().numpy()
    for r, ((h, D), (wq, wk)) in enumerate(zip(specs, inits)):
        wq, wk = wq.float().double().numpy(), wk.float().double().numpy()  # the model stores float32
        for n in range(2):
            np.testing.assert_allclose(out[r, n], _reference(wq, wk, h, 0.25, Xc[n].numpy()), atol=1e-12)


def test_row_sums_equal_the_head_count():
    """Each head's softmax sums to 1 over the context, so sum_q A_pq = h exactly: padded heads add nothing."""
    d, specs = 5, [(1, 8), (2, 8), (8, 8)]
    model = S.SoftmaxSumQK(d, specs, [M.init_weights(d, h, D, 10, 1) for h, D in specs], tau0=0.0).double()
    A = model.aggregate(torch.randn(3, 7, d, dtype=torch.float64))
    for r, (h, _) in enumerate(specs):
        np.testing.assert_allclose(A[r].sum(-1).detach().numpy(), h, atol=1e-12)


def test_replica_trained_alone_equals_replica_in_batch():
    kw = dict(steps=60, lr=3e-3, check_every=20, n_val=20, n_test=30)
    alone = S.train_seed(32, 8, [(2, 8)], 0, **kw)[0]
    batch = S.train_seed(32, 8, [(1, 4), (2, 8), (4, 16)], 0, **kw)[1]
    assert alone["h"] == batch["h"] == 2
    assert abs(alone["tau"] - batch["tau"]) < 1e-5 and abs(alone["f1"] - batch["f1"]) < 1e-9


def test_training_learns_an_easy_graph():
    """m = 24 items in d = 24 dimensions (no compression), 4 heads: the softmax model recovers the
    permutation far above the all-negative predictor (F1 = 0) within 1500 steps."""
    out = S.train_seed(24, 24, [(4, 32)], 0, steps=1500, lr=1e-2, n_val=50, n_test=200, ell=8)[0]
    assert out["f1"] > 0.9, out


def test_max_kind_is_the_core_protocol():
    """kind="max" runs the max-over-heads model through this loop: the same numbers as
    models.train_seed (Fig. 1's protocol), so Fig. 5's comparison differs only in the model."""
    kw = dict(steps=60, lr=3e-3, check_every=20, n_val=20, n_test=30)
    core = M.train_seed(16, 8, [(1, 4), (2, 8)], 0, **kw)
    here = S.train_seed(16, 8, [(1, 4), (2, 8)], 0, kind="max", **kw)
    for a, b in zip(core, here):
        assert abs(a["tau"] - b["tau"]) < 1e-6 and abs(a["f1"] - b["f1"]) < 1e-9 and a["steps"] == b["steps"]


def test_train_runs_is_train_seed_with_seeds_as_replicas():
    """Seeds as replicas of one program (issue 27): train_runs matches train_seed seed by seed, for the
    softmax model and (through models.HeadPaddedQK) the max-over-heads model."""
    kw = dict(steps=60, lr=3e-3, check_every=20, n_val=20, n_test=30)
    for kind in ("softmax", "max"):
        runs = [{"m": 32, "d": 8, "h": h, "D_K": D, "seed": s} for s in (0, 1) for h, D in ((1, 4), (2, 8))]
        both = S.train_runs(runs, kind=kind, **kw)
        for s in (0, 1):
            alone = S.train_seed(32, 8, [(1, 4), (2, 8)], s, kind=kind, **kw)
            for a, b in zip(alone, [r for r in both if r["seed"] == s]):
                assert (a["h"], a["D_K"]) == (b["h"], b["D_K"]) and a["steps"] == b["steps"]
                assert abs(a["tau"] - b["tau"]) < 1e-4 and abs(a["f1"] - b["f1"]) < 1e-6, (kind, a, b)
