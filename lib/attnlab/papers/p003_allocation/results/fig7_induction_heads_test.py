"""Fig. 7 chapter: parameter errors and a tiny run."""

import pytest

from attnlab.core.params import ParameterError
from attnlab.papers.p003_allocation.results import fig7_induction_heads as ex

EXP = ex.EXPERIMENTS[0]


def _run(tmp_path, **over):
    return EXP.run(EXP.config("ci", **over), store_root=tmp_path, progress=False)


def test_bad_values_raise_parameter_errors(tmp_path):
    with pytest.raises(ParameterError, match="heads"):
        _run(tmp_path, heads=[3])
    with pytest.raises(ParameterError, match="repeats"):
        _run(tmp_path, L=8, P=5)
    with pytest.raises(ParameterError, match="batch"):
        _run(tmp_path, n=20, batch=64)
    with pytest.raises(ParameterError, match="seed"):
        _run(tmp_path, seed=-1)


def test_tiny_run_and_claims(tmp_path):
    r = _run(tmp_path, L=12, P=3, n=40, d_model=8, heads=[1, 2, 8], epochs=1, batch=8)
    t = ex.claims(r)
    assert [c.key for c in t.rows] == ["1", "2", "3", "4", "5"] and t.rows[0].verdict == "consistency check"
    assert set(r["best"]) == {"1", "2", "8"} and r["seeds"] == [0, 1, 2]
    assert all(len(v) == 3 for v in r["best"].values()) and "3 seeds" in t.rows[2].ours
    again = _run(tmp_path, L=12, P=3, n=40, d_model=8, heads=[1, 2, 8], epochs=1, batch=8)
    assert again["meta"]["computed"] == 0


def test_seed_moves_every_seed_and_the_dataset(tmp_path):
    """`seed` moves the replicas' seeds and the dataset (init, shuffling, data); at seed 0 the store
    keys are those of before the dataset could move."""
    import torch
    from attnlab.papers.p003_allocation import induction as I

    tiny = dict(L=12, P=3, n=40, d_model=8, heads=[2], epochs=1, batch=8, seeds=2)
    a, b = _run(tmp_path, **tiny), _run(tmp_path, seed=5, **tiny)
    assert a["seeds"] == [0, 1] and b["seeds"] == [5, 6] and b["meta"]["computed"] == 2
    assert a["best"]["2"] != b["best"]["2"]
    task = I.InductionTask(V=10, L=12, P=3, n=40)
    assert not torch.equal(I.generate(task, 0)[0], I.generate(task, 5)[0])
    cfg = I.IHConfig(10, 11, 8, 2)
    assert "data_seed" not in I.unit_key(task, cfg, 1e-3, 0.0, 1, 8, 1.0)
    assert I.unit_key(task, cfg, 1e-3, 0.0, 1, 8, 1.0, 5)["data_seed"] == 5


def test_learned_is_judged_between_chance_and_a_perfect_head():
    """At the full preset's L = 128 a perfect head's MSE (0.0872) is above 0.9 x chance: the cutoff sits
    halfway between chance and the perfect head, so the trade-off row can pass and fail."""
    cfg = EXP.config("full")
    chance, perfect = 0.09, 0.09 * (1 - 4 / 127)
    base = {"config": cfg, "chance_mse": chance, "perfect_mse": perfect, "task_ok": True, "n_val": 2000,
            "induction_positions": 8000, "runs": [{"val_mse": 0.08, "untrained_mse": 0.1}],
            "ind_acc": {str(h): 0.5 for h in cfg["heads"]}}
    cut = ex.learned_cutoff(base)
    assert perfect < cut < chance and cut == pytest.approx((chance + perfect) / 2)
    base["ind_acc"] = {str(h): [0.5] * 3 for h in cfg["heads"]}
    mse = {1: 0.0890, 2: 0.0880, 4: 0.0874, 8: 0.0876, 16: 0.0885, 32: 0.0899}

    def row(per_seed):  # per_seed: one {H: MSE} per seed
        best = {str(h): [m[h] for m in per_seed] for h in cfg["heads"]}
        return ex.claims({**base, "best": best}).rows[2]

    assert row([mse] * 3).verdict == "reproduced" and "3 seeds" in row([mse] * 3).ours
    edge = {**mse, 1: 0.0873}  # lowest at the first head count: no trade-off
    assert row([edge] * 3).verdict == "fails"
    assert row([mse, mse, edge]).verdict == "inconclusive"  # the seeds disagree: no seed is picked
    flat = {h: chance for h in cfg["heads"]}
    assert row([flat] * 3).verdict == "inconclusive"
    assert row([mse, mse, flat]).verdict == "inconclusive"  # learned in 2 of 3 seeds
