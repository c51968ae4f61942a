"""The induction task (patterns where recorded, the induction mask) and the replica-batched model:
against a plain per-replica forward, replica independence, and a few training steps."""

import math

import pytest
import torch
import torch.nn.functional as F

from attnlab.papers.p003_allocation import induction as I


def test_generate_places_the_pattern_and_the_mask_marks_the_copyable_tokens():
    task = I.InductionTask(V=7, L=24, P=4, repeats=3, n=50)
    x, starts = I.generate(task)
    assert x.shape == (50, 24) and starts.shape == (50, 3) and int(x.max()) < 7
    for i in range(50):
        occ = [x[i, s:s + 4].tolist() for s in starts[i].tolist()]
        assert occ[0] == occ[1] == occ[2]
        assert all(b - a >= 4 for a, b in zip(starts[i].tolist(), starts[i, 1:].tolist()))
    m = I.induction_mask(task, starts)
    assert m.shape == (50, 23) and int(m.sum()) == 50 * 2 * 3
    i = 0
    for t in m[i].nonzero().flatten().tolist():  # the token after t repeats the first occurrence
        s = max(s for s in starts[i].tolist() if s <= t)
        assert s != starts[i, 0] and x[i, t + 1] == x[i, starts[i, 0] + (t + 1 - s)]
    assert torch.equal(I.generate(task)[0], x)  # seeded by the task alone
    with pytest.raises(ValueError, match="fit"):
        I.InductionTask(L=8, P=5, repeats=2)


def _plain_forward(state, c: I.IHConfig, tokens):
    """One replica, written out plainly (float64) from its unpadded state."""
    s = {k: v.double() for k, v in state.items()}
    B, L = tokens.shape
    h = s["tok"][tokens] + s["pos"][:L]
    D = c.d_model
    for l in range(c.layers):
        a = F.layer_norm(h, (D,), s[f"ln1_g{l}"], s[f"ln1_b{l}"], eps=1e-5)
        q, k, v = (a @ s[f"W_in{l}"] + s[f"b_in{l}"]).chunk(3, -1)
        K = D // c.H
        q, k, v = (t.view(B, L, c.H, K).transpose(1, 2) for t in (q, k, v))
        z = q @ k.transpose(-1, -2) / math.sqrt(K)
        z = z.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
        o = (torch.softmax(z, -1) @ v).transpose(1, 2).reshape(B, L, D)
        h = h + o @ s[f"W_o{l}"] + s[f"b_o{l}"]
        f = F.layer_norm(h, (D,), s[f"ln2_g{l}"], s[f"ln2_b{l}"], eps=1e-5)
        h = h + F.gelu(f @ s[f"W_1{l}"] + s[f"b_1{l}"]) @ s[f"W_2{l}"] + s[f"b_2{l}"]
    f = F.layer_norm(h, (D,), s["lnf_g"], s["lnf_b"], eps=1e-5)
    return F.gelu(f @ s["W_a"] + s["b_a"]) @ s["W_b"] + s["b_b"]


def test_replica_forward_equals_a_plain_forward_per_replica():
    configs = [I.IHConfig(6, 9, 8, H, seed=s) for H, s in ((1, 0), (4, 1), (2, 2), (4, 3))]
    model = I.ReplicaIH(configs, dtype=torch.float64)
    tokens = torch.randint(0, 6, (3, 9), generator=torch.Generator().manual_seed(0))
    out = model(tokens)
    for r, c in enumerate(configs):
        ref = _plain_forward(model.replica_state(r), c, tokens)
        assert (out[r] - ref).abs().max() < 1e-12


def test_a_replica_trained_alone_equals_the_same_replica_in_a_batch():
    task = I.InductionTask(V=5, L=12, P=3, repeats=2, n=40)
    a = I.IHConfig(5, 11, 8, 2, seed=1)
    b = I.IHConfig(5, 11, 8, 4, seed=0)
    both = {r: o for r, o, _ in I.train(task, [b, a], [1e-2, 3e-3], 1e-2, epochs=2, batch=8, evals=2)}
    alone = {r: o for r, o, _ in I.train(task, [a], [3e-3], 1e-2, epochs=2, batch=8, evals=2)}
    assert abs(both[1]["val_mse"] - alone[0]["val_mse"]) < 1e-6
    assert both[1]["curve"][0][0] == 1 and len(both[1]["curve"]) == 2


def test_training_lowers_the_loss_and_clipping_bounds_each_replica():
    task = I.InductionTask(V=5, L=12, P=3, repeats=2, n=64)
    out = {r: o for r, o, _ in I.train(task, [I.IHConfig(5, 11, 8, 2)], [1e-2], 0.0, epochs=3, batch=16)}
    assert out[0]["val_mse"] < out[0]["untrained_mse"]
    p = [torch.zeros(2, 3, requires_grad=True), torch.zeros(2, 4, requires_grad=True)]
    p[0].grad = torch.tensor([[3.0, 4.0, 0.0], [0.1, 0.0, 0.0]])
    p[1].grad = torch.zeros(2, 4)
    norms = I.clip_per_replica(p, 1.0)
    assert torch.allclose(norms, torch.tensor([5.0, 0.1]))
    assert torch.allclose(p[0].grad[0].norm(), torch.tensor(1.0), atol=1e-5) and torch.allclose(p[0].grad[1, 0], torch.tensor(0.1))
    assert abs(I.chance_mse(10) - 0.09) < 1e-15


def test_forward_and_backward_keep_to_the_models_device():
    """Moved with .to() after construction, every tensor the forward uses moves too (devicecheck, meta)."""
    from attnlab.papers.p003_allocation.devicecheck import check_on_meta

    m = I.ReplicaIH([I.IHConfig(5, 8, 8, H, seed=s) for s, H in enumerate((2, 1, 4))])
    out = check_on_meta(m, torch.zeros(3, 7, dtype=torch.long))
    assert out.shape == (3, 3, 7, 5) and not any(k.startswith("group") for k in m.state_dict())


@pytest.mark.parametrize("L,P,repeats", [(128, 5, 2), (32, 5, 2), (30, 3, 3)])
def test_perfect_head_mse_is_chance_times_the_unpredictable_share(L, P, repeats):
    """Measured on the data: (1/V)(1 - 1/V) (1 - (repeats - 1)(P - 1) / (L - 1)); at the paper's L = 128,
    0.0872 against chance 0.09 (Fig. 7's judgement sits between the two)."""
    task = I.InductionTask(V=10, L=L, P=P, repeats=repeats, n=60)
    x, starts = I.generate(task)
    m = I.perfect_head_mse(x, I.induction_mask(task, starts), 10)
    assert m == pytest.approx(I.chance_mse(10) * (1 - (repeats - 1) * (P - 1) / (L - 1)), rel=1e-12)
    if L == 128:
        assert round(m, 4) == 0.0872


def test_a_program_stopped_and_resumed_ends_bit_for_bit_as_an_uninterrupted_one(tmp_path):
    """Checkpointed past a long-passed time limit: each call trains to its next checkpoint (mid-epoch or
    at an epoch's end, after that epoch's evaluation), saves and raises Incomplete; the resumed
    program's results equal the uninterrupted one's exactly."""
    from attnlab.core.checkpoint import Checkpoint, Deadline
    from attnlab.core.experiment import Incomplete

    task = I.InductionTask(V=5, L=12, P=3, repeats=2, n=40)  # 32 training sequences: 4 steps per epoch
    cfgs = [I.IHConfig(5, 11, 8, 2, seed=1), I.IHConfig(5, 11, 8, 4, seed=0)]
    run = lambda ck=None: {r: o for r, o, _ in I.train(task, cfgs, [1e-2, 3e-3], 1e-2, epochs=3, batch=8,  # noqa: E731
                                                       evals=3, data_seed=2, checkpoint=ck)}
    whole = run()
    for every in (2, 0):  # every 2 steps (2, 6, 10 mid-epoch; 4, 8 at epochs' ends); 0: at every step
        ck = Checkpoint(tmp_path / f"p{every}.pt", every=every, deadline=Deadline(1.0, start=0.0))
        stops = []
        while True:
            try:
                resumed = run(ck)
                break
            except Incomplete:
                stops.append(torch.load(ck.path, weights_only=True)["step"])
        assert stops == ([2, 4, 6, 8, 10] if every else list(range(1, 12)))
        assert resumed == whole
