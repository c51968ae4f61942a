import itertools

import torch

from attnlab.core.train import linear_lr, replica_cross_entropy, train_replicas
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


# ------------------------------------------------------------------ variants: repo parametrization, MLP

from attnlab.papers.p004_memorization.models import (fig3_parameter_axis, fig7_parameter_axis,
                                                          matched_mlp_width)  # noqa: E402

REPO = [AoTConfig(N, 2, d, d_h, H, seed, param="repo") for d, d_h, H, seed in
        [(5, 5, 3, 0), (5, 2, 4, 1), (6, 3, 2, 2), (4, 4, 1, 3), (6, 1, 5, 4), (3, 3, 6, 5)]]
MLP = [AoTConfig(N, 2, d, d, H, seed, mlp_width=w) for d, H, w, seed in
       [(4, 1, 0, 0), (4, 1, 8, 1), (5, 1, 20, 2), (3, 1, 12, 3), (5, 3, 0, 4), (4, 2, 16, 5)]]


def _repo_written_out(c, p, tokens):
    """T(t) = W_U (e(t_S) + D sum_h W_O^h W_V^h sum_s softmax_s((W_Q^h y_S)^T W_K^h y_s / sqrt(d_h)) y_s),
    y_s = C e(t_s) + p_s; C = D = identity when d = d_h."""
    C = p["C"] if c.compressed else torch.eye(c.d, dtype=torch.float64)
    D = p["Dec"] if c.compressed else torch.eye(c.d, dtype=torch.float64)
    y = p["E"][tokens] @ C.T + p["P"]
    heads = torch.zeros(tokens.shape[0], c.d_h, dtype=torch.float64)
    for h in range(c.H):
        scores = torch.einsum("bd,kd,ke,bse->bs", y[:, -1], p["W_Q"][h], p["W_K"][h], y) / c.d_h ** 0.5
        heads += torch.einsum("bs,bsd->bd", scores.softmax(-1), y) @ p["W_V"][h].T @ p["W_O"][h].T
    return (p["E"][tokens[:, -1]] + heads @ D.T) @ p["W_U"].T


def test_repo_forward_with_d_equal_d_h_matches_its_formula():
    c = AoTConfig(N, 3, 4, 4, 3, 0, param="repo")
    model = ReplicaAoT([c], dtype=torch.float64)
    p = model.replica_state(0)
    assert "C" in p and p["C"].numel() == 0 and p["Dec"].numel() == 0  # no compress/decompress
    assert p["P"].shape == (3, 4) and p["W_Q"].shape == (3, 4, 4)
    tokens = torch.randint(0, N, (9, 3), generator=torch.Generator().manual_seed(1))
    assert torch.allclose(model(tokens)[0], _repo_written_out(c, p, tokens), rtol=0, atol=1e-12)


def test_repo_forward_in_a_padded_batch_matches_its_formula():
    model = ReplicaAoT(REPO, dtype=torch.float64)
    tokens = torch.randint(0, N, (11, 2), generator=torch.Generator().manual_seed(2))
    out = model(tokens)
    for r, c in enumerate(REPO):
        p = model.replica_state(r)
        assert p["C"].shape == ((c.d_h, c.d) if c.compressed else (0, 0))
        assert torch.allclose(out[r], _repo_written_out(c, p, tokens), rtol=0, atol=1e-12), r


def test_repo_differs_from_eq1_when_d_h_below_d():
    """The shared decompress confines the heads' output to a d_h-dim subspace; Eq. (1) does not."""
    model = ReplicaAoT([AoTConfig(N, 2, 6, 2, 5, 0, param="repo")], dtype=torch.float64)
    tokens, _ = lookup_table_task(N)
    skip = model.replica_state(0)["E"][tokens[:, -1]]
    attn = model.residual(tokens)[0] - skip
    assert torch.linalg.matrix_rank(attn).item() == 2
    paper_model = ReplicaAoT([AoTConfig(N, 2, 6, 2, 5, 0)], dtype=torch.float64)
    p = paper_model.replica_state(0)
    attn_paper = paper_model.residual(tokens)[0] - (p["E"][tokens[:, -1]] + p["P"][-1])
    assert torch.linalg.matrix_rank(attn_paper).item() == 6


def test_mlp_forward_matches_its_formula():
    """T(t) = W_U (W_2 GELU(W_1 z + b_1) + z),  z = W_O W_V A(t) + e(t_S) + pos_S (one head, d_h = d)."""
    model = ReplicaAoT(MLP, dtype=torch.float64)
    tokens = torch.randint(0, N, (10, 2), generator=torch.Generator().manual_seed(3))
    out = model(tokens)
    for r, c in enumerate(MLP):
        p = model.replica_state(r)
        x = p["E"][tokens] + p["P"]
        z = x[:, -1].clone()
        for h in range(c.H):
            scores = torch.einsum("bd,kd,ke,bse->bs", x[:, -1], p["W_Q"][h], p["W_K"][h], x) / c.d_h ** 0.5
            z += torch.einsum("bs,bsd->bd", scores.softmax(-1), x) @ p["W_V"][h].T @ p["W_O"][h].T
        if c.mlp_width:
            z = z + torch.nn.functional.gelu(z @ p["W_1"].T + p["b_1"]) @ p["W_2"].T
        assert p["W_1"].shape == (c.mlp_width, c.d) if c.mlp_width else p["W_1"].numel() == 0
        assert torch.allclose(out[r], z @ p["W_U"].T, rtol=0, atol=1e-12), r


def _assert_batch_equals_alone(configs, indices, steps=40):
    batch = _train(configs, steps=steps)
    for r in indices:
        alone = _train([configs[r]], steps=steps)
        a, b = batch.replica_state(r), alone.replica_state(0)
        a, b = ({k: v for k, v in x.items() if v.numel()} for x in (a, b))  # width 0 alone: no MLP tensors
        assert a.keys() == b.keys()
        for name in a:
            assert a[name].shape == b[name].shape, (r, name)
            assert torch.allclose(a[name], b[name], rtol=0, atol=1e-12), (r, name, (a[name] - b[name]).abs().max())


def test_repo_replica_trained_in_a_batch_equals_it_trained_alone():
    _assert_batch_equals_alone(REPO, (0, 1, 4))


def test_mlp_replica_trained_in_a_batch_equals_it_trained_alone():
    _assert_batch_equals_alone(MLP, (0, 2, 3))


def test_per_replica_learning_rates():
    """train_replicas with lr returning [R]: replica r follows its own schedule, as if alone."""
    tokens, targets = lookup_table_task(N)
    schedules = [linear_lr(1e-2, 5e-4, 30), linear_lr(1e-2, 1e-4, 30)]
    model = ReplicaAoT(MLP[1:3], dtype=torch.float64)
    train_replicas(model, full_batches(tokens, targets), 30, lambda s: torch.tensor([f(s) for f in schedules]),
                   progress=False)
    alone = ReplicaAoT(MLP[2:3], dtype=torch.float64)
    train_replicas(alone, full_batches(tokens, targets), 30, linear_lr(1e-2, 1e-4, 30), progress=False)
    for name, value in model.replica_state(1).items():
        assert torch.allclose(value, alone.replica_state(0)[name], rtol=0, atol=1e-12), name


def test_init_of_the_plain_aot_is_unchanged_by_the_variant_fields():
    c = AoTConfig(N, 2, 5, 3, 2, 4)
    assert c.seed_config() == {"N": N, "S": 2, "d": 5, "d_h": 3, "H": 2}
    assert AoTConfig(N, 2, 5, 3, 2, 4, param="repo").seed_config()["param"] == "repo"


def test_variant_parameter_counts_match_tensors():
    for c in REPO + MLP + [AoTConfig(70, 2, 10, 10, 1, 0, mlp_width=matched_mlp_width(10, 31))]:
        n = sum(v.numel() for v in ReplicaAoT([c]).replica_state(0).values())
        assert n == c.n_parameters, c
    assert AoTConfig(50, 2, 10, 4, 20, 0, param="repo").n_parameters == 2 * 50 * 10 + 2 * 4 + 4 * 16 * 20 + 2 * 40


def test_fig3_axis_is_the_count_of_both_models_at_matched_width():
    """Fig. 3's x-axis 4d^2 H + d(2N + 1) for the H-head AoT and the 1-head MLP model with
    w = 2d(H - 1): equal weight counts; the exact counts differ from the axis by the S d
    positional entries minus d, and the MLP's by its w biases."""
    N_, S = 70, 2
    for d in (7, 10, 13):
        for H in (1, 6, 11, 16, 21, 26, 31):
            aot = AoTConfig(N_, S, d, d, H)
            mlp = AoTConfig(N_, S, d, d, 1, mlp_width=matched_mlp_width(d, H))
            axis = fig3_parameter_axis(d, H, N_)
            assert aot.n_parameters == axis - d + S * d
            assert mlp.n_parameters - mlp.mlp_width == aot.n_parameters
    assert fig3_parameter_axis(7, 1, 70) == 1183 and fig3_parameter_axis(13, 31, 70) == 22789  # EXP_5.py's axis
    # Fig. 7 (App. B.1; the authors' EXP_dim.py) uses 4d^2 H + 2d(N + 1) instead: d more (d = 50, N = 200: 30 100 -> 130 100).
    assert fig7_parameter_axis(50, 1, 200) == 30100 and fig7_parameter_axis(50, 11, 200) == 130100
    assert fig7_parameter_axis(50, 6, 200) - fig3_parameter_axis(50, 6, 200) == 50


def test_distinct_sequences_and_a_batch_of_repeats_equal_the_rows_computed_one_by_one():
    """A batch with repeated sequences (computed once per distinct sequence) equals the same rows
    each computed in a batch without repeats; gradients too (float64)."""
    from attnlab.papers.p004_memorization.models import distinct_sequences
    g = torch.Generator().manual_seed(4)
    tokens = torch.randint(0, 4, (40, 2), generator=g)  # at most 16 distinct sequences
    seqs, inverse = distinct_sequences(tokens, 4)
    assert torch.equal(seqs[inverse], tokens) and len(seqs) <= 16
    assert distinct_sequences(lookup_table_task(N)[0], N) is None  # all distinct: computed per row
    for configs in (SIXTEEN[:5], REPO[:3], MLP[:3]):
        model = ReplicaAoT(configs, dtype=torch.float64)
        probe = torch.randn(len(configs), 40, N, generator=g, dtype=torch.float64)
        out = model(tokens)
        ref = torch.cat([model(tokens[i:i + 1]) for i in range(40)], dim=1)  # one sequence a call
        assert torch.allclose(out, ref, rtol=0, atol=1e-12)
        params = list(model.parameters())
        ours = torch.autograd.grad((out * probe).sum(), params)
        theirs = torch.autograd.grad((ref * probe).sum(), params)
        for a, b in zip(ours, theirs):
            assert torch.allclose(a, b, rtol=0, atol=1e-12)


def test_unmasked_parameters_train_bit_for_bit_as_masked_and_their_padding_stays_zero(monkeypatch):
    """ReplicaAoT.w skips the 0/1 mask (but for C and Dec): padded entries get exactly zero gradient and stay
    zero, and every parameter after training equals, bit for bit, that of the model read through the masks."""
    from attnlab.core.replica import ReplicaModule

    tokens, targets = lookup_table_task(N)
    for configs in (SIXTEEN, MLP, REPO):
        models = []
        for masked in (False, True):
            if masked:
                monkeypatch.setattr(ReplicaAoT, "w", ReplicaModule.w)
            model = ReplicaAoT(configs)  # float32, the sweeps' dtype
            log = train_replicas(model, paper_batches(tokens, targets, 32, 4), 25, linear_lr(1e-2, 5e-4, 25),
                                 progress=False)
            models.append((model, log))
            monkeypatch.undo()
        (plain, log), (masked, log_m) = models
        assert log.final_loss == log_m.final_loss
        for name, p in plain.named_parameters():
            assert torch.equal(p, getattr(masked, name)), name
            assert not (p * (1 - getattr(plain, name + "_mask"))).any(), name  # padding still exactly zero
        replica_cross_entropy(plain(tokens), targets).sum().backward()
        for name, p in plain.named_parameters():
            if name not in ("C", "Dec"):
                assert not (p.grad * (1 - getattr(plain, name + "_mask"))).any(), name  # zero gradient on padding
