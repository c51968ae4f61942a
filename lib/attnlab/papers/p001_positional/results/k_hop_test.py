"""The k-hop chapter on a tiny config: its asserted generator checks hold, the table is stable from
the store, and bad parameters fail naming the parameter."""

import pytest

from attnlab.core.params import ParameterError

from . import k_hop as ex

TINY = dict(embed=6, heads=3, iterations=20, batch=8, test_samples=40, layers_list=[1], samples_list=[200],
            layer_sweep_samples=200, sample_sweep_layers=1, seeds=2)


def test_runs_from_the_store_and_generator_rows_hold(tmp_path):
    exp = ex.EXPERIMENTS[0]
    r = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    t = ex.claims(r)
    assert [row.verdict for row in t.rows[:2]] == ["consistency check"] * 2
    assert len(r["runs"]) == 4  # 2 kinds x 2 trials, one program
    rows = {row.key: row for row in t.rows}
    assert rows["4"].verdict in ("consistency check", "fails") and rows["4"].ours.endswith("2 seeds)")
    again = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    assert again["meta"]["computed"] == 0 and ex.claims(again).markdown() == t.markdown()


def test_full_preset_sweeps_and_bad_parameters():
    exp = ex.EXPERIMENTS[0]
    runs = ex.runs_of(exp.config("full"))
    assert len(runs) == 2 * 12 * 10  # layers 1-8 at 50k, plus 4 more sizes at 8 layers; 2 kinds, 10 trials
    with pytest.raises(ParameterError, match="'max_hops'"):
        exp.config("ci", max_hops=4)
    with pytest.raises(ParameterError, match="'embed'"):
        exp.run(exp.config("ci", embed=10, heads=3), store_root="/tmp/never-used-khop", progress=False)


def test_a_run_stopped_at_its_time_limit_resumes_to_the_same_result(tmp_path):
    from attnlab.core.experiment import Incomplete

    exp = ex.EXPERIMENTS[0]
    small = dict(TINY, iterations=12, checkpoint_every=4)
    straight = exp.run(exp.config("ci", **small), store_root=tmp_path / "a", progress=False)
    with pytest.raises(Incomplete):
        exp.run(exp.config("ci", **small, time_limit=1e-6), store_root=tmp_path / "b", progress=False)
    resumed = exp.run(exp.config("ci", **small), store_root=tmp_path / "b", progress=False)
    strip = lambda r: [{k: v for k, v in row.items() if k != "seconds"} for row in r["runs"]]  # noqa: E731
    assert strip(resumed) == strip(straight)


def test_seed_offset_gives_other_trials(tmp_path):
    exp = ex.EXPERIMENTS[0]
    a = exp.run(exp.config("ci", **TINY), store_root=tmp_path, progress=False)
    b = exp.run(exp.config("ci", **TINY, seed=5), store_root=tmp_path, progress=False)
    assert b["meta"]["computed"] == 4 and {r["seed"] for r in b["runs"]} == {5, 6}
    assert [r["id_loss"] for r in a["runs"]] != [r["id_loss"] for r in b["runs"]]
