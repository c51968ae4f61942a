"""The mixed-type chapter on a tiny config: generator row holds, stable from the store, bad parameters fail."""

import pytest

from attnlab.core.params import ParameterError

from . import mixed_type as ex

TINY = dict(variant_sum=False, embed=4, hidden=4, layers=1, steps=10, batch=8, samples_list=[100], fig6_samples=100,
            test_samples=20, scales=[1, 10], seeds=2)


def test_runs_from_the_store(tmp_path):
    exp = ex.EXPERIMENTS[0]
    r = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    t = ex.claims(r)
    assert t.rows[0].verdict == "consistency check" and len(r["runs"]) == 4  # 2 kinds x 2 seeds
    again = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    assert again["meta"]["computed"] == 0 and ex.claims(again).markdown() == t.markdown()


def test_full_preset_and_bad_parameters(tmp_path):
    exp = ex.EXPERIMENTS[0]
    full = exp.config("full")
    assert ex.steps_of(full, 50_000) == 2000 * 49 and ex.variants_of(full) == ["min", "sum", "multitask"]
    with pytest.raises(ParameterError, match="'scales'"):
        exp.config("ci", scales=[0, 2])
    with pytest.raises(ParameterError, match="variant"):
        exp.run(exp.config("ci", variant_min=False, variant_sum=False), store_root=tmp_path, progress=False)


def test_seed_offset_moves_seeds_and_training_prompts(tmp_path):
    """-p seed 7: seeds 7, 8 on other training prompts (keyed apart); OOD rows print one value per seed."""
    exp = ex.EXPERIMENTS[0]
    a = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    b = exp.run(exp.config("ci", **TINY, seed=7), store_root=tmp_path, progress=False)
    assert b["meta"]["computed"] == 4 and [r["seed"] for r in b["runs"]] == [7, 8, 7, 8]
    assert [r["train_mse"] for r in a["runs"]] != [r["train_mse"] for r in b["runs"]]
    rows = {row.key: row for row in ex.claims(b).rows}
    assert rows["min-4"].ours.endswith("2 seeds)") and rows["min-4"].verdict in ("inconclusive", "reproduced", "fails")
    with pytest.raises(ParameterError, match="'seed'"):
        exp.config("ci", seed=-3)
