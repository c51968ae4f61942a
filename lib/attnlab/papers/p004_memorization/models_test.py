import itertools

import torch

from attnlab.core.train import linear_lr, train_replicas
from attnlab.papers.p004_memorization.models import AoTConfig, ReplicaAoT
from attnlab.papers.p004_memorization.tasks import full_batches, lookup_table_task, paper_batches

N = 12
SIXTEEN = [AoTConfig(N, 2, d, d_h, H, seed) for (d, d_h, H), seed in
           zip(itertools.product((3, 5), (2, 3), (1, 2, 4, 6)), itertools.cycle((0, 1, 2)))
           if d_h <= d][:16]
SIXTEEN += [AoTConfig(N, 2, 6, 6, 3, 7), AoTConfig(N, 2, 4, 1, 5, 9)][: 16 - len(SIXTEEN)]


def _train(configs, steps=60, batches=None):
    tokens, targets = lookup_table_task(N)
    model = ReplicaAoT(configs, dtype=torch.float64)
    batches = batches or full_batches(tokens, targets)
    train_replicas(model, batches, steps, linear_lr(1e-2, 5e-4, steps), progress=False)
    return model


def test_sixteen_replicas_of_different_sizes():
    assert len(SIXTEEN) == 16 and len({(c.d, c.d_h, c.H) for c in SIXTEEN}) >= 12


def test_replica_trained_in_a_batch_of_16_equals_it_trained_alone():
    batch = _train(SIXTEEN)
    for r in (0, 7, 15):
        alone = _train([SIXTEEN[r]])
        a, b = batch.replica_state(r), alone.replica_state(0)
        assert a.keys() == b.keys()
        for name in a:
            assert a[name].shape == b[name].shape, name
            assert torch.allclose(a[name], b[name], rtol=0, atol=1e-12), (r, name, (a[name] - b[name]).abs().max())


def test_replica_equivalence_holds_with_minibatches_too():
    tokens, targets = lookup_table_task(N)
    mk = lambda: paper_batches(tokens, targets, batch_size=32, n_batches=4)
    batch = _train(SIXTEEN[:5], steps=30, batches=mk())
    alone = _train([SIXTEEN[3]], steps=30, batches=mk())
    for name, value in batch.replica_state(3).items():
        assert torch.allclose(value, alone.replica_state(0)[name], rtol=0, atol=1e-12)


def test_init_depends_on_config_and_seed_only():
    a = ReplicaAoT([SIXTEEN[2], SIXTEEN[5]]).replica_state(1)
    b = ReplicaAoT([SIXTEEN[5]]).replica_state(0)
    assert all(torch.equal(a[k], b[k]) for k in a)
    c = ReplicaAoT([AoTConfig(**{**SIXTEEN[5].__dict__, "seed": 99})]).replica_state(0)
    assert not torch.equal(b["E"], c["E"])


def test_forward_matches_eq2_written_out():
    """T(t) = W_U (x_S + sum_h W_O^h W_V^h sum_s softmax_s(x_S^T W_Q^hT W_K^h x_s / sqrt(d_h)) x_s)."""
    c = AoTConfig(N, 3, 5, 2, 3, 0)
    model = ReplicaAoT([c], dtype=torch.float64)
    p = model.replica_state(0)
    tokens = torch.randint(0, N, (7, 3), generator=torch.Generator().manual_seed(0))
    x = p["E"][tokens] + p["P"]
    out = x[:, -1].clone()
    for h in range(c.H):
        scores = torch.einsum("bd,kd,ke,bse->bs", x[:, -1], p["W_Q"][h], p["W_K"][h], x) / c.d_h ** 0.5
        A = torch.einsum("bs,bsd->bd", scores.softmax(-1), x)
        out += A @ p["W_V"][h].T @ p["W_O"][h].T
    assert torch.allclose(model(tokens)[0], out @ p["W_U"].T, atol=1e-12)


def test_parameter_count_formula_matches_tensors():
    c = AoTConfig(50, 2, 10, 4, 7, 0)
    n = sum(v.numel() for k, v in ReplicaAoT([c]).replica_state(0).items())
    assert n == c.n_parameters == 10 * (2 + 2 * 50 + 4 * 4 * 7)
