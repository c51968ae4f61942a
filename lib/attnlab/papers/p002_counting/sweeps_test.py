import numpy as np
import pytest

from attnlab.core.experiment import Context, Experiment
from attnlab.core.store import ResultStore

from .sweeps import Incomplete, Protocol, grid_array, grids, p_bucket, run_sweep, running_best, weights_from_json

T, L = 6, 4


def ctx(tmp_path, **cfg):
    exp = Experiment("002-counting/test", "", "", (), {}, lambda c: {})
    config = {"scale": "ci", "checkpoint_every": 0, "time_limit": 0, **cfg}
    return Context(exp, config, ResultStore(tmp_path, "t"), "cpu", False)


def test_p_bucket():
    assert [p_bucket(p) for p in (1, 2, 4, 5, 16, 17, 64, 65, 128)] == [1, 1, 1, 2, 2, 3, 3, 4, 4]


def test_sweep_resumes_from_the_store_and_weights_round_trip(tmp_path):
    proto = Protocol(steps=30, batch_size=16, lr=1e-2, lr_end=1e-3, eval_n=200, eval_every=10, keep_weights=True)
    c = ctx(tmp_path)
    rows = run_sweep(c, "dot", T, L, [(2, 1), (4, 8)], [0, 1], proto)
    assert c.store.computed == 4 and len(rows) == 4
    for r in rows:
        assert r["best_accuracy"] >= r["final_accuracy"] and len(r["eval_curve"]) == 2
        w = weights_from_json(r["weights"])
        assert w.W1.shape == (r["d"], r["p"])
    c2 = ctx(tmp_path)
    again = run_sweep(c2, "dot", T, L, [(2, 1), (4, 8), (4, 2)], [0, 1], proto)
    assert c2.store.computed == 2  # only the new (4, 2) models
    assert [r["final_accuracy"] for r in again[:4]] == [r["final_accuracy"] for r in rows]
    acc = grid_array(again, [2, 4], [1, 2, 8])
    assert acc.shape == (2, 3) and np.isnan(acc[0, 1]) and not np.isnan(acc[1, 1])


def test_checkpointed_run_equals_one_piece_and_resumes_after_the_time_limit(tmp_path):
    proto = Protocol(steps=40, batch_size=16, lr=1e-2, lr_end=1e-2, eval_n=200, eval_every=10)
    whole = run_sweep(ctx(tmp_path / "a"), "bos+sftm", T, L, [(3, 2), (5, 4)], [0], proto)
    c = ctx(tmp_path / "b", checkpoint_every=10, time_limit=1e-9)
    with pytest.raises(Incomplete):
        run_sweep(c, "bos+sftm", T, L, [(3, 2), (5, 4)], [0], proto)
    pieces = None
    for _ in range(5):
        try:
            pieces = run_sweep(ctx(tmp_path / "b", checkpoint_every=10, time_limit=1e-9), "bos+sftm", T, L,
                               [(3, 2), (5, 4)], [0], proto)
            break
        except Incomplete:
            pass
    assert pieces is not None
    for a, b in zip(whole, pieces):
        assert a["final_accuracy"] == pytest.approx(b["final_accuracy"], abs=1e-6)
        assert a["eval_curve"] == pytest.approx(b["eval_curve"], abs=1e-6)


def test_frozen_embeddings_do_not_move(tmp_path):
    proto = Protocol(steps=20, batch_size=16, lr=1e-2, lr_end=1e-2, eval_n=100, frozen_embeddings=True,
                     keep_weights=True)
    a = run_sweep(ctx(tmp_path), "dot+sftm", T, L, [(4, 4)], [0], proto)[0]
    proto0 = Protocol(steps=1, batch_size=16, lr=0.0, lr_end=0.0, eval_n=100, frozen_embeddings=True, keep_weights=True)
    b = run_sweep(ctx(tmp_path), "dot+sftm", T, L, [(4, 4)], [0], proto0)[0]
    ea, eb = weights_from_json(a["weights"]).emb, weights_from_json(b["weights"]).emb
    np.testing.assert_array_equal(ea, eb)
    assert abs(ea.std() - 0.5) < 0.3  # N(0, 1/d) with d = 4


def test_running_best_is_monotone():
    rows = [{"n_params": n, "final_accuracy": a} for n, a in [(30, 0.5), (10, 0.7), (20, 0.6), (40, 0.9)]]
    n, best = running_best(rows)
    assert n.tolist() == [10, 20, 30, 40] and best.tolist() == [0.7, 0.7, 0.7, 0.9]


def test_joint_program_replicas_are_independent_and_stored(tmp_path):
    proto = Protocol(steps=20, batch_size=16, lr=1e-2, lr_end=1e-3, eval_n=200)
    c = ctx(tmp_path / "a")
    rows = run_sweep(c, "bos+sftm", T, L, [(3, 2), (7, 8)], [0, 1], proto, joint=True)
    assert c.store.computed == 4 and [(r["d"], r["p"], r["seed"]) for r in rows][:2] == [(3, 2, 0), (3, 2, 1)]
    alone = run_sweep(ctx(tmp_path / "b"), "bos+sftm", T, L, [(7, 8)], [1], proto, joint=True)
    assert alone[0]["final_accuracy"] == rows[3]["final_accuracy"]
    np.testing.assert_allclose(alone[0]["loss_curve"], rows[3]["loss_curve"], rtol=1e-4, atol=1e-5)
    c2 = ctx(tmp_path / "a")
    again = run_sweep(c2, "bos+sftm", T, L, [(3, 2), (7, 8)], [0, 1], proto, joint=True)
    assert c2.store.computed == 0 and again == rows
    other = run_sweep(ctx(tmp_path / "a"), "bos+sftm", T, L, [(7, 8)], [1], proto, joint=True, data_seed=1)
    assert other[0]["loss_curve"] != rows[3]["loss_curve"]  # another data stream is another key


def test_joint_program_gives_each_seed_the_data_stream_of_its_independent_run(tmp_path):
    proto = Protocol(steps=20, batch_size=16, lr=1e-2, lr_end=1e-3, eval_n=200)
    joint = run_sweep(ctx(tmp_path / "a"), "dot+sftm", T, L, [(3, 2), (5, 4)], [0, 1, 2], proto, joint=True,
                      streams="per-seed")
    alone = run_sweep(ctx(tmp_path / "b"), "dot+sftm", T, L, [(3, 2), (5, 4)], [0, 1, 2], proto, joint=False)
    for a, b in zip(joint, alone):
        np.testing.assert_allclose(a["loss_curve"], b["loss_curve"], rtol=1e-4, atol=1e-5)
    shared = run_sweep(ctx(tmp_path / "c"), "dot+sftm", T, L, [(3, 2)], [0, 1], proto, joint=True, streams="shared")
    assert shared[1]["loss_curve"] != joint[1]["loss_curve"]  # the old shortcut: one stream for every seed
    with pytest.raises(ValueError, match="streams"):
        run_sweep(ctx(tmp_path / "c"), "dot", T, L, [(3, 2)], [0], proto, joint=True, streams="one")


def test_grids_reduce_over_seeds_and_mark_stars_and_dots():
    rows = [{"d": d, "p": p, "seed": s, "final_accuracy": a, "best_accuracy": b}
            for d, p, s, a, b in [(1, 1, 0, 0.2, 0.3), (1, 1, 1, 0.4, 0.5), (2, 1, 0, 0.99, 1.0), (2, 1, 1, 0.97, 0.98),
                                  (1, 4, 0, 0.9, 0.995), (1, 4, 1, 0.9, 0.9)]]
    g = grids({"rows": {"dot": rows}, "d_list": [1, 2], "p_list": [1, 4]}, "dot")
    np.testing.assert_allclose(g["mean"][0], [0.3, 0.9])
    np.testing.assert_allclose(g["std"][0, 0], 0.1)
    assert np.isnan(g["mean"][1, 1])  # (2, 4) was not trained
    assert g["stars"].tolist() == [[False, False], [True, False]]
    assert g["dots"].tolist() == [[False, True], [False, False]]


def test_independent_runs_on_another_data_stream_are_another_key_and_data_seed_0_keeps_the_old_key(tmp_path):
    proto = Protocol(steps=10, batch_size=16, lr=1e-2, lr_end=1e-3, eval_n=100)
    c = ctx(tmp_path)
    base = run_sweep(c, "dot", T, L, [(3, 2)], [0], proto)
    assert c.store.computed == 1
    c0 = ctx(tmp_path)
    assert run_sweep(c0, "dot", T, L, [(3, 2)], [0], proto, data_seed=0) == base and c0.store.computed == 0
    c1 = ctx(tmp_path)
    other = run_sweep(c1, "dot", T, L, [(3, 2)], [0], proto, data_seed=1)
    assert c1.store.computed == 1 and other[0]["loss_curve"] != base[0]["loss_curve"]


def test_seed_list_refuses_a_repeated_seed_and_by_seed_groups_in_seed_order():
    from attnlab.core.params import ParameterError

    from .sweeps import by_seed, seed_list
    assert seed_list({"seed_list": [2, 0, 1]}) == [2, 0, 1]
    with pytest.raises(ParameterError, match="parameter 'seed_list'.*repeated"):
        seed_list({"seed_list": [0, 1, 0]})
    rows = [{"seed": s, "x": i} for i, s in enumerate([1, 0, 1])]
    assert by_seed(rows) == {0: [{"seed": 0, "x": 1}], 1: [{"seed": 1, "x": 0}, {"seed": 1, "x": 2}]}
