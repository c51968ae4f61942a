import math

import numpy as np
import pytest
import torch

from attnlab.papers.p003_allocation import lm

V, C = 11, 7


def _cfgs():
    # mixed widths (padding to d_model 12), two replicas of one (H, K) shape, FFN widths that differ
    return [lm.LMConfig(V, 3, 4, 2, C, seed=1), lm.LMConfig(V, 1, 3, 2, C, seed=2),
            lm.LMConfig(V, 2, 2, 2, C, ffn_mult=2.0, seed=3), lm.LMConfig(V, 3, 4, 2, C, seed=4)]


def test_replica_forward_equals_plain_forward_of_each_replica():
    cfgs = _cfgs()
    model = lm.ReplicaLM(cfgs, dtype=torch.float64)
    tokens = torch.randint(0, V, (3, C), generator=torch.Generator().manual_seed(0))
    out = model(tokens)
    assert out.shape == (len(cfgs), 3, C, V)
    for r, c in enumerate(cfgs):
        want = lm.plain_forward(model.replica_state(r), c, tokens)
        assert torch.allclose(out[r], want, atol=1e-12), r
    # causal: changing the last token changes no earlier logits
    t2 = tokens.clone()
    t2[:, -1] = (t2[:, -1] + 1) % V
    assert torch.equal(model(t2)[..., :-1, :], out[..., :-1, :])


def test_padded_entries_stay_zero_and_parameter_count():
    cfgs = _cfgs()
    model = lm.ReplicaLM(cfgs, dtype=torch.float64)
    for r, c in enumerate(cfgs):
        s = model.replica_state(r)
        assert s["Wq"].shape == (c.layers, c.d_model, c.d_model) and s["W1"].shape == (c.layers, c.d_model, c.ffn)
        assert sum(v.numel() for v in s.values()) == c.n_params
    ids = np.random.default_rng(0).integers(0, V, 500)
    lm.fit(model, lm.TrainSpec(steps=3, batch=4, lr=1e-2, weight_decay=0.1, dropout=0.1), ids, progress=False)
    for name in model._names:
        p, m = getattr(model, name), getattr(model, name + "_mask")
        assert torch.all(p[m == 0] == 0), name


def test_replica_trained_alone_equals_replica_in_a_batch():
    """With dropout, weight decay, clipping and warm-up: replicas stay independent."""
    cfgs = _cfgs()
    spec = lm.TrainSpec(steps=4, batch=3, lr=1e-2, warmup=2, weight_decay=0.1, clip=0.5, dropout=0.2)
    ids = np.random.default_rng(1).integers(0, V, 400)
    batch = lm.ReplicaLM(cfgs, dropout=spec.dropout, dtype=torch.float64)
    lm.fit(batch, spec, ids, progress=False)
    for r in (1, 2):
        alone = lm.ReplicaLM([cfgs[r]], dropout=spec.dropout, dtype=torch.float64)
        lm.fit(alone, spec, ids, progress=False)
        a, b = alone.replica_state(0), batch.replica_state(r)
        for k in a:
            assert torch.allclose(a[k], b[k], atol=1e-10), (r, k)


def test_training_step_equals_torch_adamw_with_clipping():
    """One replica's fit = torch.optim.AdamW (decay on matrices, not gains) + clip_grad_norm_ on the plain model."""
    c = lm.LMConfig(V, 2, 3, 2, C, seed=5)
    spec = lm.TrainSpec(steps=3, batch=4, lr=3e-2, warmup=1, weight_decay=0.1, clip=0.05)
    ids = np.random.default_rng(2).integers(0, V, 300)
    model = lm.ReplicaLM([c], dtype=torch.float64)
    state = {k: v.clone().requires_grad_(True) for k, v in model.replica_state(0).items()}
    lm.fit(model, spec, ids, progress=False)
    decay = [v for k, v in state.items() if k in lm.ReplicaLM.MATRICES]
    keep = [v for k, v in state.items() if k not in lm.ReplicaLM.MATRICES]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": spec.weight_decay},
                             {"params": keep, "weight_decay": 0.0}], lr=spec.lr)
    stream = lm.T.batches(ids, C, spec.batch, c.seed)
    for step in range(spec.steps):
        x, y = next(stream)
        loss = torch.nn.functional.cross_entropy(lm.plain_forward(state, c, x).reshape(-1, V), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(state.values()), spec.clip)
        for g in opt.param_groups:
            g["lr"] = spec.lr * lm.schedule(step, spec.steps, spec.warmup)
        opt.step()
    got = model.replica_state(0)
    for k in state:
        assert torch.allclose(got[k], state[k].detach(), atol=1e-9), k


def test_head_qk_and_capture_and_override():
    c = lm.LMConfig(V, 3, 4, 2, C, seed=7)
    s = lm.ReplicaLM([c], dtype=torch.float64).replica_state(0)
    tokens = torch.randint(0, V, (2, C), generator=torch.Generator().manual_seed(3))
    cap = {}
    base = lm.plain_forward(s, c, tokens, capture=cap)
    Wq, Wk = lm.head_qk(s, c, 1, 2)
    a = cap[(1, "a")]
    z = (a @ Wq) @ (a @ Wk).transpose(-1, -2) / math.sqrt(c.head_dim)
    z = z.masked_fill(~torch.ones(C, C, dtype=torch.bool).tril(), float("-inf"))
    assert torch.allclose(torch.softmax(z, -1), cap[(1, 2)], atol=1e-13)
    same = lm.plain_forward(s, c, tokens, override=lambda l, h, a_, p: p.clone() if (l, h) == (1, 2) else None)
    assert torch.equal(same, base)
    uniform = torch.ones(C, C, dtype=torch.float64).tril()
    uniform = uniform / uniform.sum(-1, keepdim=True)
    other = lm.plain_forward(s, c, tokens, override=lambda l, h, a_, p: uniform.expand_as(p) if (l, h) == (1, 2) else None)
    assert not torch.allclose(other, base)


def test_encode_decode_state_and_training_output():
    c = lm.LMConfig(V, 2, 2, 1, C, seed=0)
    ids = np.random.default_rng(3).integers(0, V, 300)
    (i, out, sec), = list(lm.train([c], lm.TrainSpec(steps=2, batch=2, lr=1e-2), ids, ids, n_eval=4,
                                   progress=False, keep_state=lambda r: True))
    s = lm.decode_state(out["state"])
    assert set(s) == set(lm.ReplicaLM.MATRICES + lm.ReplicaLM.GAINS) and s["tok"].shape == (V, 4)
    assert np.isfinite(out["valid_ce"]) and out["n_params"] == c.n_params and len(out["curve"]) == 2
    with pytest.raises(ValueError):
        lm.decode_state({"tok": {"shape": [3, 3], "f32": out["state"]["nf"]["f32"]}})


def test_bad_configs():
    with pytest.raises(ValueError):
        lm.LMConfig(V, 0, 4)
    with pytest.raises(ValueError):
        lm.ReplicaLM([lm.LMConfig(V, 2, 2, 2, C), lm.LMConfig(V, 2, 2, 3, C)])
    with pytest.raises(ValueError):
        lm.ReplicaLM([lm.LMConfig(V, 2, 2, 2, C)])(torch.zeros(1, C + 1, dtype=torch.long))


def test_forward_and_backward_keep_to_the_models_device():
    """Moved with .to() after construction, every tensor the forward uses moves too (devicecheck, meta);
    dropout's generators follow the input's device, each seeded as before."""
    from attnlab.papers.p003_allocation.devicecheck import check_on_meta

    model = lm.ReplicaLM(_cfgs())
    model.eval()
    out = check_on_meta(model, torch.zeros(3, C, dtype=torch.long))
    assert out.shape == (4, 3, C, V) and not any(k.startswith("group") for k in model.state_dict())
    drop = lm.ReplicaLM(_cfgs(), dropout=0.5)
    x = torch.zeros(2, C, dtype=torch.long)
    a = drop(x)
    again = lm.ReplicaLM(_cfgs(), dropout=0.5)
    torch.testing.assert_close(again(x), a)
    assert drop.generators(torch.device("cpu"))[0].device.type == "cpu"


def test_checkpoint_resume_is_bit_for_bit(tmp_path):
    """A program stopped at its deadline after a checkpoint, then resumed from the file, ends exactly where
    an uninterrupted one does (parameters, Adam moments, dropout generators, batch position, curve)."""
    from attnlab.core.checkpoint import Checkpoint, Deadline
    from attnlab.core.experiment import Incomplete

    ids = np.random.default_rng(0).integers(0, V, 400)
    spec = lm.TrainSpec(steps=7, batch=3, lr=1e-2, warmup=2, dropout=0.1)

    def run(checkpoint=None):
        out = list(lm.train(_cfgs(), spec, ids, ids, n_eval=4, progress=False, curve_every=2,
                            keep_state=lambda r: True, checkpoint=checkpoint))
        return [o for _, o, _ in out]

    plain = run()
    late = Deadline(1e-9, start=0.0)  # long passed: stop after the first save
    path = tmp_path / "program.pt"
    with pytest.raises(Incomplete, match="after 3 of 7 steps"):
        run(Checkpoint(path, every=3, deadline=late))
    assert path.exists()
    with pytest.raises(Incomplete, match="after 6 of 7 steps"):  # one more window: 3 more steps, then stop again
        run(Checkpoint(path, every=3, deadline=late))
    resumed = run(Checkpoint(path, every=3))  # no deadline: to the end
    for a, b in zip(plain, resumed, strict=True):
        assert a["state"] == b["state"] and a["curve"] == b["curve"]
        assert a["valid_ce"] == b["valid_ce"] and a["train_loss"] == b["train_loss"]
