import numpy as np
import pytest

from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import ParameterError
from attnlab.core.store import ResultStore

from .exp_slices import slice_dims
from .exp_svd import drop_ratio, spectrum
from .sweeps import Protocol, run_sweep

T, L = 6, 4


def ctx(tmp_path, **cfg):
    exp = Experiment("002-counting/test", "", "", (), {}, lambda c: {})
    return Context(exp, {"checkpoint_every": 0, "time_limit": 0, **cfg}, ResultStore(tmp_path, "t"), "cpu", False)


def test_slice_dims_names_the_parameter_out_of_place():
    cfg = dict(T=8, d_big=16, d_small=4, p_small=4, p_big=16)
    assert slice_dims(cfg) == {"relation": (16, 4), "inventory": (16, 16), "entangled": (4, 16), "p=1": (16, 1)}
    with pytest.raises(ParameterError, match="'d_small'"):
        slice_dims({**cfg, "d_small": 8})
    with pytest.raises(ParameterError, match="'p_big'"):
        slice_dims({**cfg, "p_big": 7})


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


def test_drop_ratio_of_a_rank_T_matrix_is_large():
    rng = np.random.default_rng(0)
    W = rng.normal(size=(12, T)) @ rng.normal(size=(T, 10)) + 1e-3 * rng.normal(size=(12, 10))
    s = spectrum(W)
    assert np.all(np.diff(s) <= 0) and np.allclose(s, spectrum(W.T))
    assert drop_ratio(s, T) > 100
    with pytest.raises(ValueError):
        drop_ratio(s[:T], T)
