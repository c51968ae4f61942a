"""Dense r-regular graphs (App. A.3): the source-based context sampler, Eq. (30)'s balanced loss,
the head-slot model against a float64 reference, grouping by head count, replica independence."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.papers.p000_capacity import dense_graphs as G
from attnlab.papers.p000_capacity import models as M
from attnlab.papers.p000_capacity import tasks as T


def test_contexts_are_distinct_and_sources_get_neighbours():
    m, r, ell = 40, 3, 8
    edges = T.regular_graph(m, r, T.rng(0, "g"))
    ctx = G.sample_graph_contexts(edges, m, 500, ell, 1.0, T.rng(0, "c"))
    assert ctx.shape == (500, ell) and all(len(set(c)) == ell for c in ctx.tolist())
    adj = T.adjacency(edges, m)
    # with rho = 1 every position is a selected source; later writes may overwrite earlier targets,
    # but far more sources have an out-neighbour in the context than in a uniform context
    has = adj[ctx[:, :, None], ctx[:, None, :]].any(axis=2).mean()
    uniform = np.argsort(T.rng(1, "u").random((500, m)), axis=1)[:, :ell]
    base = adj[uniform[:, :, None], uniform[:, None, :]].any(axis=2).mean()
    assert has > base + 0.2, (has, base)  # measured 0.72 against 0.46
    assert np.array_equal(G.out_neighbours(edges, m)[0], np.sort(edges[edges[:, 0] == 0, 1]))


def test_balanced_loss_weights_positives_by_the_class_ratio():
    margin = torch.zeros(1, 2, 4, 4)
    y = torch.zeros(1, 2, 4, 4, dtype=torch.bool)
    y[0, 0, 0, 1] = y[0, 0, 1, 2] = True  # context 0: 2 positives, 14 negatives -> w+ = 7
    sp = float(F.softplus(torch.tensor(0.0)))
    ctx0 = (2 * 7 * sp + 14 * sp) / 16
    ctx1 = sp  # no positives: only the negative term
    assert abs(float(G.balanced_loss(margin, y, 10.0)) - (ctx0 + ctx1) / 2) < 1e-7


def test_grouped_head_slot_model_equals_max_over_heads_reference():
    d, specs = 6, [(2, 6), (1, 4), (3, 3), (2, 8)]
    inits = [M.init_weights(d, h, D, 10, 0) for h, D in specs]
    model = G.GroupedQK(d, specs, inits).double()
    Xc = torch.randn(4, 2, 5, d, dtype=torch.float64)
    out = model(Xc).detach().numpy()
    for r, ((h, D), (wq, wk)) in enumerate(zip(specs, inits)):
        wq, wk = wq.float().double().numpy(), wk.float().double().numpy()
        d_k = D // h
        for n in range(2):
            X = Xc[r, n].numpy()
            S = np.max([(X @ wq[:, k * d_k:(k + 1) * d_k]) @ (X @ wk[:, k * d_k:(k + 1) * d_k]).T for k in range(h)],
                       axis=0)
            np.testing.assert_allclose(out[r, n], S, atol=1e-12)  # tau = 0


def test_replica_alone_equals_replica_among_other_degrees_and_head_counts():
    kw = dict(steps=60, lr=3e-3, check_every=20, n_val=20, n_test=30)
    one = {"m": 32, "d": 8, "r": 2, "h": 2, "D_K": 8, "seed": 0}
    alone = G.train_runs([one], **kw)[0]
    mixed = G.train_runs([{**one, "r": 1, "h": 1}, {**one, "r": 3, "h": 4, "D_K": 16, "d": 16}, one,
                          {**one, "h": 4}], **kw)[2]
    assert (alone["r"], alone["h"]) == (mixed["r"], mixed["h"]) == (2, 2)
    assert abs(alone["tau"] - mixed["tau"]) < 1e-5 and abs(alone["f1"] - mixed["f1"]) < 1e-9
