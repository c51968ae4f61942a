import time

import numpy as np
import pytest
import torch

from attnlab.core.experiment import Context, Experiment
from attnlab.core.store import ResultStore

from attnlab.core.params import ParameterError

from . import sweeps as S
from .models import ModelConfig, Transformer
from .sweeps import (Incomplete, Plateau, Protocol, evaluate, onecycle_lr, sweep, train, train_lists, unit_key)
from .tasks import targets

SMALL = dict(n=4, heads=2)


def cfg(**kw):
    return ModelConfig(**{**SMALL, "embed": 8, "hidden": 8, **kw})


def state(model, r):
    return {k: v.clone() for k, v in model.replica_state(r).items()}


def assert_same(a, b, atol=2e-5):
    """Equal weights to float tolerance, except the key biases k_b: softmax is invariant to them
    (a shift of each row's logits), so their gradient is float round-off only, which Adam's
    normalisation blows up to lr-sized random steps; they do not change the function (checked by
    the predictions)."""
    assert a.keys() == b.keys()
    for k in a:
        if not k.startswith("k_b") or atol == 0:
            torch.testing.assert_close(a[k], b[k], atol=atol, rtol=atol and 1e-5, msg=k)


@pytest.mark.parametrize("kind", ["positional", "standard"])
def test_replica_in_a_batch_equals_it_alone_and_a_finished_replica_stays_frozen(kind):
    x = train_lists(4, 100, seed=0)
    configs = [cfg(kind=kind, embed=8), cfg(kind=kind, embed=4, hidden=6), cfg(kind=kind, embed=8, hidden=4)]
    seeds, tasks, steps = [0, 1, 2], ["cumsum", "cummin", "sort"], [25, 8, 25]
    batch = Transformer(configs, seeds)
    before = state(batch, 1)
    log = train(batch, tasks, x, batch=32, lr=3e-3, seed=5, steps=steps, scheduler="plateau")
    assert log.steps == steps and len(log.train_mse) == 3
    for r in range(3):
        alone = Transformer([configs[r]], [seeds[r]])
        log1 = train(alone, tasks[r], x, batch=32, lr=3e-3, seed=5, steps=steps[r], scheduler="plateau")
        assert_same(state(batch, r), state(alone, 0))
        assert log.train_mse[r] == pytest.approx(log1.train_mse[0], rel=1e-4)
        xt = torch.as_tensor(train_lists(4, 50, seed=9), dtype=torch.float32)
        with torch.no_grad():
            torch.testing.assert_close(batch(xt)[r], alone(xt)[0], atol=1e-5, rtol=1e-5)
    # the frozen replica moved in its 8 steps, then not at all: training it 8 steps alone gives it
    assert any((before[k] != state(batch, 1)[k]).any() for k in before)
    more = Transformer(configs, seeds)
    train(more, tasks, x, batch=32, lr=3e-3, seed=5, steps=[25, 8, 60], scheduler="plateau")
    assert_same(state(more, 1), state(batch, 1), atol=0)


def test_training_fits_cumsum_and_evaluate_shapes():
    x = train_lists(4, 512, seed=1)
    model = Transformer([cfg(embed=16, hidden=16), cfg(kind="positional", embed=16, hidden=16)], [0, 1])
    log = train(model, "cumsum", x, batch=64, lr=3e-3, seed=0, steps=300, scheduler="onecycle")
    var = targets("cumsum", x).var()
    assert max(log.train_mse) < var / 20  # far below the mean predictor's MSE
    ev = evaluate(model, "cumsum", [1, 2, 10], 200, seed=0)
    assert ev.shape == (2, 3) and (ev[:, 2] > ev[:, 0]).all()  # OOD at c = 10 is worse than ID
    assert np.allclose(ev, evaluate(model, "cumsum", [1, 2, 10], 200, seed=0))  # seeded test sets


def test_plateau_equals_torch_reduce_lr_on_plateau():
    rng = np.random.default_rng(0)
    R, E = 3, 400
    losses = np.exp(-np.cumsum(rng.uniform(-1, 1.02, size=(E, R)) * 0.01, axis=0))  # noisy, slowly falling
    losses[150:, 1] = losses[150, 1]  # one replica stalls: several cuts
    ours = Plateau.start(5e-4, R)
    for e in range(E):
        ours.step(losses[e], np.ones(R, dtype=bool))
    for r in range(R):
        p = torch.nn.Parameter(torch.zeros(1))
        opt = torch.optim.Adam([p], lr=5e-4)
        sch = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.9, patience=50, min_lr=1e-6)
        for e in range(E):
            sch.step(float(losses[e, r]))
        assert ours.lr[r] == pytest.approx(opt.param_groups[0]["lr"], rel=1e-12)
    assert ours.lr[1] < 5e-4 * 0.9 ** 3


def test_onecycle_equals_torch():
    total = 37
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.Adam([p], lr=1.0)
    sch = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=total, pct_start=0.1)
    ref = []
    for _ in range(total):
        ref.append(opt.param_groups[0]["lr"])
        opt.step()
        sch.step()
    ours = onecycle_lr(torch.arange(total), torch.full((total,), total), 2e-3, 0.1)
    np.testing.assert_allclose(ours.numpy(), ref, rtol=1e-10)


def test_checkpointed_training_resumes_to_the_same_weights(tmp_path):
    x = train_lists(4, 90, seed=2)
    configs, seeds = [cfg(), cfg(embed=4)], [0, 1]
    whole = Transformer(configs, seeds)
    train(whole, ["cumsum", "maxsub"], x, batch=32, lr=1e-3, seed=1, epochs=8)
    ck = str(tmp_path / "ck.pt")
    for attempt in range(10):
        piece = Transformer(configs, seeds)
        try:
            train(piece, ["cumsum", "maxsub"], x, batch=32, lr=1e-3, seed=1, epochs=8, checkpoint=ck,
                  checkpoint_every=5, deadline=time.time() - 1)
            break
        except Incomplete:
            pass
    assert attempt == 4  # 24 steps, a checkpoint every 5: stops at 5, 10, 15, 20, then finishes
    for r in range(2):
        assert_same(state(whole, r), state(piece, r), atol=0)


def _ctx(tmp_path):
    exp = Experiment("001-positional/test", "", "", (), {}, lambda c: {})
    return Context(exp, {"scale": "ci"}, ResultStore(tmp_path, "t"), torch.device("cpu"), False)


def test_sweep_stores_resumes_and_groups(tmp_path):
    proto = Protocol(samples=64, batch=32, lr=2e-3, steps=6, scheduler="onecycle", c_list=(1, 3), test_samples=50,
                     joint=True)
    units = [(cfg(kind=k), s, t) for k in ("positional", "standard") for s in (0, 1) for t in ("cumsum", "sort")]
    c = _ctx(tmp_path)
    rows = sweep(c, units, proto)
    assert c.store.computed == 8 and len(rows) == 8
    assert all(len(r["test_mse"]) == 2 and r["steps"] == 6 for r in rows)
    c2 = _ctx(tmp_path)
    again = sweep(c2, units[:3] + [(cfg(kind="positional", embed=4), 0, "cummin")], proto)
    assert c2.store.computed == 1 and again[:3] == rows[:3]
    # a unit's result does not depend on the other units of its program
    alone = sweep(_ctx(tmp_path / "b"), [units[5]], proto)[0]
    assert alone["test_mse"] == pytest.approx(rows[5]["test_mse"], rel=1e-4)
    # keys: non-default config fields only; joint and independent runs never mix
    k = unit_key(cfg(), 0, "sort", proto)
    assert k["n"] == 4 and "kind" not in k and k["joint"] is True and "epochs" not in k
    assert unit_key(cfg(), 0, "sort", Protocol(**{**proto.__dict__, "joint": False})) != k


def test_mixed_seeds_train_each_on_its_own_data_as_alone(tmp_path):
    """mix_seeds: the seeds of a program are replicas of one tensor program, each with its own training set,
    data order and test lists (its seed's): the same key and, in float64, the same model as trained alone."""
    proto = Protocol(samples=32, batch=16, lr=2e-3, steps=3, scheduler="onecycle", c_list=(1, 3), test_samples=20)
    mixed = Protocol(**{**proto.__dict__, "mix_seeds": True})
    assert mixed.key == proto.key
    with pytest.raises(ValueError, match="mix_seeds"):
        Protocol(**{**proto.__dict__, "mix_seeds": True, "joint": True})
    units = [(cfg(kind=k), s, "cumsum") for k in ("positional", "standard") for s in (0, 1)]
    c = _ctx(tmp_path / "mixed")
    rows = sweep(c, units, mixed)
    assert c.store.computed == 4
    for i in (1, 2):
        alone = sweep(_ctx(tmp_path / f"alone{i}"), [units[i]], proto)[0]
        assert alone["test_mse"] == pytest.approx(rows[i]["test_mse"], rel=1e-4)
        assert alone["train_mse"] == pytest.approx(rows[i]["train_mse"], rel=1e-4)
    # the seeds saw different data: their test MSEs differ more than a shared set would make them
    assert rows[0]["test_mse"] != rows[1]["test_mse"]


def test_per_replica_batches_equal_each_replica_alone():
    """train / evaluate with x_train [R, N, n] and one seed per replica = each replica alone (float64)."""
    c = cfg(kind="standard")
    seeds = [3, 5]
    xs = np.stack([S.train_lists(4, 32, s) for s in seeds])
    m = Transformer([c, c], seeds, dtype=torch.float64)
    log = S.train(m, ["cumsum", "sort"], xs, batch=16, lr=1e-2, seed=seeds, steps=4, scheduler="onecycle")
    ev = S.evaluate(m, ["cumsum", "sort"], [1.0, 5.0], 20, seeds)
    for r, (s, t) in enumerate(zip(seeds, ["cumsum", "sort"])):
        one = Transformer([c], [s], dtype=torch.float64)
        l1 = S.train(one, t, xs[r], batch=16, lr=1e-2, seed=s, steps=4, scheduler="onecycle")
        assert log.train_mse[r] == pytest.approx(l1.train_mse[0], rel=1e-12)
        assert ev[r] == pytest.approx(S.evaluate(one, t, [1.0, 5.0], 20, s)[0], rel=1e-12)
    with pytest.raises(ValueError, match="per replica"):
        S.train(m, "cumsum", xs, batch=16, lr=1e-2, seed=3, steps=1)


def test_seed_offsets():
    """`seed` moves a chapter's seeds; a joint protocol's shared data seed moves with it, and seed 0 keeps the
    book's keys (no joint_seed in the key)."""
    assert S.seed_list({"seeds": 3}) == [0, 1, 2] and S.seed_list({"seeds": 2, "seed": 10}) == [10, 11]
    assert S.joint_seed({"seed": 0}) is None and S.joint_seed({"seed": 10}) == -11
    p0 = S.Protocol(samples=64, batch=8, lr=1e-3, steps=1, joint=True)
    p10 = S.Protocol(samples=64, batch=8, lr=1e-3, steps=1, joint=True, joint_seed=-11)
    assert "joint_seed" not in p0.key and S.data_seed(p0, 5) == -1 and S.data_seed(p10, 5) == -11
    assert S.data_seed(S.Protocol(samples=64, batch=8, lr=1e-3, steps=1), 5) == 5
    with pytest.raises(ParameterError, match="'seed'"):
        S.seed_list({"seeds": 2, "seed": -1})
