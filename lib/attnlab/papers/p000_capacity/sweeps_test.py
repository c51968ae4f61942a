"""The sweep's grid, keys and plan (training itself is tested in models_test and the chapter tests)."""

from __future__ import annotations

import math

from attnlab.papers.p000_capacity import sweeps


def test_cell_grid_divides_and_windows():
    assert sweeps.cell_grid(64, 16, [1, 2, 4], [6, 8, 12]) == [(1, 6), (2, 6), (1, 8), (2, 8), (4, 8), (1, 12),
                                                               (2, 12), (4, 12)]
    # x = 64 * 6 / 16 = 24: the window [0.4, 1.2] x keeps 9.6 <= D_K <= 28.8
    assert {D for _, D in sweeps.cell_grid(64, 16, [1], [6, 8, 12, 16, 24, 32], (0.4, 1.2))} == {12, 16, 24}


def test_keys_take_table2_cutoffs_under_the_cap():
    keys = sweeps.sweep_keys([(512, 16), (64, 32)], [1], [8], 2, steps=100000, lr=1e-3, n_val=5, n_test=5,
                             table2=True)
    assert {(k["m"], k["steps"]) for k in keys} == {(512, 80000), (64, 20000)} and len(keys) == 4
    capped = sweeps.sweep_keys([(512, 16)], [1], [8], 1, steps=300, lr=1e-3, n_val=5, n_test=5, table2=True)
    assert capped[0]["steps"] == 300


def test_plan_packs_cells_into_bounded_programs():
    keys = [{"m": m, "d": 8} for m in (16, 16, 16, 32, 32)]
    groups = sweeps.plan(keys, 2)([0, 1, 2, 3, 4])
    assert groups == [[0, 1], [2, 3], [4]]
    assert sweeps.plan(keys, 10)([4, 0]) == [[0, 4]] or sweeps.plan(keys, 10)([4, 0]) == [[4, 0]]


def test_grid_step_range():
    assert sweeps.grid_step_range([12, 16, 24, 32], 21, 21) == (16, 24)
    assert sweeps.grid_step_range([6, 8, 12], 6, 6) == (-math.inf, 8)
    assert sweeps.grid_step_range([6, 8], 18, 20) == (8, math.inf)


def test_a_sweep_stopped_at_its_time_limit_killed_and_resumed_stores_what_an_uninterrupted_one_does(tmp_path):
    """The headless CLI on a tiny Fig. 6 sweep (one program, both seeds replicas of it; a validation check and the
    plateau rule at step 500): exit 75 at the time limit, SIGKILL mid-program, then to the end; the
    stored units equal, bit for bit, those of an uninterrupted run without checkpoints."""
    from attnlab.core.checkpoint_test import stop_kill_resume
    from attnlab.papers import get

    tiny = {"m": 17, "d_models": "8", "heads": "1,2", "dks": "4", "d_msg": 4, "seeds": 2, "steps": 600,
            "n_test": 10, "checkpoint_every": 100}
    resumed, reference = stop_kill_resume(get("000-capacity/fig6-value-channel"), tiny, tmp_path, kill_at=200)
    assert len(reference) == 4 and resumed == reference
