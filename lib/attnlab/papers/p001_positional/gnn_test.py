from fractions import Fraction

import numpy as np
import pytest
import torch

from . import gnn as G


def _model(kind, graphs=("complete", "star"), seeds=(0, 1), n=4, embed=8, dtype=torch.float64):
    cs = [G.GNNConfig(n=n, kind=kind, graph=g, embed=embed) for g in graphs for _ in seeds]
    return G.GNN(cs, [s for _ in graphs for s in seeds], dtype=dtype), cs


def _gcn_reference(model, r, x):
    """Plain float64 forward of replica r, one list at a time, with explicit loops over nodes."""
    st = {k: v.double().numpy() for k, v in model.replica_state(r).items()}
    A = G.gcn_norm(G.adjacency(model.configs[r].graph, model.n))
    out = []
    for row in x:
        v = np.append(row, 0.0)[:, None]
        h = v @ st["enc_W"] + st["enc_b"]
        for l in range(model.L):
            W = np.concatenate(list(st[f"W{l}"]), axis=1)
            h = np.maximum(A @ (h @ W) + st[f"b{l}"], 0)
        out.append((h @ st["dec_W"] + st["dec_b"])[: model.n, 0])
    return np.array(out)


def _gat_reference(model, r, x):
    st = {k: v.double().numpy() for k, v in model.replica_state(r).items()}
    A = G.adjacency(model.configs[r].graph, model.n)
    out = []
    for row in x:
        h = np.append(row, 0.0)[:, None] @ st["enc_W"] + st["enc_b"]
        for l in range(model.L):
            heads = []
            for k in range(model.H):
                z = h @ st[f"W{l}"][k]
                e = (z @ st[f"a_dst{l}"][k])[:, None] + (z @ st[f"a_src{l}"][k])[None, :]
                e = np.where(e > 0, e, 0.2 * e)
                e = np.where(A > 0, e, -np.inf)
                a = np.exp(e - e.max(1, keepdims=True))
                a /= a.sum(1, keepdims=True)
                heads.append(a @ z)
            m = np.concatenate(heads, axis=1) + st[f"b{l}"]
            h = np.where(m > 0, m, np.expm1(np.minimum(m, 0)))
        out.append((h @ st["dec_W"] + st["dec_b"])[: model.n, 0])
    return np.array(out)


@pytest.mark.parametrize("kind", G.KINDS)
def test_forward_equals_reference_and_replicas_independent(kind):
    m, cs = _model(kind)
    x = torch.tensor(np.random.default_rng(0).uniform(-2, 2, (5, 4)))
    y = m(x).detach().numpy()
    ref = _gcn_reference if kind == "gcn" else _gat_reference
    for r in range(len(cs)):
        assert np.abs(y[r] - ref(m, r, x.numpy())).max() < 1e-12
        alone = G.GNN([cs[r]], [m.seeds[r]], dtype=torch.float64)
        same = all(torch.equal(a, b) for a, b in zip(alone.replica_state(0).values(), m.replica_state(r).values()))
        assert same  # initialised from (config, seed), never from the batch position
        assert torch.allclose(alone(x)[0], m(x)[r], atol=1e-13, rtol=0)  # padding/batching changes nothing


@pytest.mark.parametrize("kind", G.KINDS)
def test_permutation_equivariant_on_both_graphs(kind):
    """Position-agnostic: permuting the inputs permutes the outputs (float64, to rounding)."""
    m, cs = _model(kind, n=6)
    x = torch.tensor(np.random.default_rng(1).uniform(-2, 2, (7, 6)))
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    assert torch.allclose(m(x[:, perm]), m(x)[:, :, perm], atol=1e-12, rtol=0)


def test_gcn_on_complete_graph_gives_every_node_the_same_output():
    m, _ = _model("gcn", graphs=("complete",))
    y = m(torch.tensor(np.random.default_rng(2).uniform(-2, 2, (3, 4))))
    assert torch.allclose(y, y[..., :1].expand_as(y), atol=1e-12)


def test_star_graph_and_normalisation():
    A = G.adjacency("star", 4)
    assert A.sum() == 5 + 2 * 4 and A[4].sum() == 5 and A[0].sum() == 2  # self-loops + hub edges
    assert np.allclose(G.gcn_norm(G.adjacency("complete", 4)), 1 / 5)
    with pytest.raises(ValueError):
        G.GNNConfig(kind="gin")
    with pytest.raises(ValueError):
        G.GNN([G.GNNConfig(kind="gcn"), G.GNNConfig(kind="gat")], [0, 0])


def test_moments_and_rejection_factor():
    assert G.moments(1) == (Fraction(2, 3), Fraction(2, 9))
    a, b = G.moments(3)
    assert (a, b) == (Fraction(2, 3) * 10, Fraction(2, 9) * 10)  # c² + 1
    assert G.moments(3, reject=False)[0] == 6
    # Monte Carlo of the OOD sampler: E[x_i x_j] = a (i ≠ j) and E[x_i²] = a + b
    from .tasks import sample_lists
    x = sample_lists(np.random.default_rng(3), 400_000, 2, 3.0)
    a_mc, ab_mc = (x[:, 0] * x[:, 1]).mean(), (x[:, 0] ** 2).mean()
    assert abs(a_mc - float(a)) < 0.05 * float(a) and abs(ab_mc - float(a + b)) < 0.05 * float(a + b)


def test_exact_baseline_values():
    cs = G.baseline("cumsum", 8)
    assert cs["mse"] == Fraction(35, 9) and cs["coef"] == (Fraction(1, 2), Fraction(1, 2))
    so = G.baseline("sort", 8)
    assert so["mse"] == Fraction(7, 36) and so["coef"] == (0, Fraction(1, 8))
    assert G.baseline("cumsum", 8, "s")["mse"] == Fraction(63, 16)
    # sort: the bound is the mean within-list variance (n−1)/n · b for every n
    for n in (2, 3, 5, 16):
        assert G.baseline("sort", n)["mse"] == Fraction(n - 1, n) * Fraction(2, 9)
    # OOD: (c² + 1) × the ID value for c > 1
    curve = G.baseline_curve("cumsum", 8, [1, 2, 10])
    assert np.allclose(curve, [35 / 9, 5 * 35 / 9, 101 * 35 / 9], rtol=1e-12)


@pytest.mark.parametrize("task", G.BASELINE_TASKS)
def test_least_squares_matches_exact_and_no_richer_equivariant_predictor_beats_it(task):
    exact = float(G.baseline(task, 8)["mse"])
    ls = G.baseline_least_squares(task, 8, 60_000, seed=0)
    assert abs(ls["mse"] - exact) < 4 * ls["stderr"]
    rich = G.baseline_least_squares(task, 8, 60_000, seed=0, extra=True)
    assert rich["mse"] > exact - 4 * rich["stderr"]
    ood = G.baseline_least_squares(task, 8, 60_000, seed=1, c=5.0)
    assert abs(ood["mse"] - 26 * exact) < 4 * ood["stderr"]


def test_trains_with_the_generic_trainer_towards_the_bound():
    from . import sweeps
    from .tasks import sample_lists
    torch.manual_seed(0)
    m, _ = _model("gcn", graphs=("star",), seeds=(0,), n=8, embed=16, dtype=torch.float32)
    x = sample_lists(np.random.default_rng(0), 1024, 8)
    before = sweeps.mse(m, "sort", x)[0]
    sweeps.train(m, "sort", x, batch=128, lr=3e-3, seed=0, steps=120, scheduler="constant")
    after = sweeps.mse(m, "sort", x)[0]
    assert after < before and after < 0.5 and after > 0.19  # learns, never below the bound (7/36 ± noise)
