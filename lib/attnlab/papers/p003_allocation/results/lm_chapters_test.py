"""The language-model chapters (Figs. 5/9 and 6) on tiny configurations: parameters, store, claims."""

import pytest

from attnlab.core.params import ParameterError
from attnlab.papers.p003_allocation.results import fig6_lm_head_compression as fig6
from attnlab.papers.p003_allocation.results import figs5_9_lm_heads as fig59

TINY59 = dict(max_chars=50_000, vocab_size=40, layers=1, context=8, heads=2, head_dims=[1, 2, 4], fig9_heads=2,
              fig9_head_dims=[1, 2, 4], fig9_head_dim=2, fig9_head_counts=[1, 2], steps=3, batch=2, warmup=1,
              n_eval=2, seeds=1)
TINY6 = dict(max_chars=50_000, vocab_size=40, layers=1, context=8, heads=2, head_dim=4, steps=3, batch=2, warmup=1,
             ranks=[1, 2, 4], student_steps=2, student_batch=2, n_train=4, n_eval=2, seeds=1)


def _run(mod, tmp_path, **over):
    exp = mod.EXPERIMENTS[0]
    return exp.run(exp.config("ci", **over), store_root=tmp_path, progress=False)


def test_bad_values_raise_parameter_errors(tmp_path):
    with pytest.raises(ParameterError, match="head_dims"):
        _run(fig59, tmp_path, **{**TINY59, "head_dims": [4, 2]})
    with pytest.raises(ParameterError, match="ranks"):
        _run(fig6, tmp_path, **{**TINY6, "ranks": [1, 8]})
    with pytest.raises(ParameterError, match="head"):
        _run(fig6, tmp_path, **{**TINY6, "head": 2})
    with pytest.raises(ParameterError, match="corpus"):
        fig59.EXPERIMENTS[0].config("ci", corpus="ptb")
    with pytest.raises(ParameterError, match="max_chars"):
        fig6.EXPERIMENTS[0].config("ci", max_chars=10 ** 12)
    for mod in (fig59, fig6):  # the seed knobs (issue 27): a count >= 1 and a first seed >= 0
        with pytest.raises(ParameterError, match="seeds"):
            mod.EXPERIMENTS[0].config("ci", seeds=0)
        with pytest.raises(ParameterError, match="seed"):
            mod.EXPERIMENTS[0].config("ci", seed=-1)
        assert mod.EXPERIMENTS[0].config("ci")["seeds"] >= 3 and mod.EXPERIMENTS[0].config("full")["seeds"] == 1


def test_seed_moves_every_seed_and_rows_are_judged_over_seeds(tmp_path):
    r = _run(fig59, tmp_path, **{**TINY59, "seeds": 2, "seed": 5})
    assert r["meta"]["computed"] == 8 and all(len(m["ce_seeds"]) == 2 for m in r["models"].values())
    rows = {c.key: c for c in fig59.claims(r).rows}
    assert "2 seeds" in rows["1"].ours and "2 seeds" in rows["4"].ours
    again = _run(fig59, tmp_path, **{**TINY59, "seeds": 1, "seed": 6})  # seed 6 was the second replica above
    assert again["meta"]["computed"] == 0
    assert [m["ce_seeds"][0] for m in again["models"].values()] == [m["ce_seeds"][1] for m in r["models"].values()]
    r6 = _run(fig6, tmp_path, **{**TINY6, "seeds": 2, "seed": 3})
    assert [x["seed"] for x in r6["seeds"]] == [3, 4] and r6["meta"]["computed"] == 4  # 2 teachers, 2 student sets
    rows6 = {c.key: c for c in fig6.claims(r6).rows}
    assert "of 2 seeds" in rows6["4"].ours and "2 seeds" in rows6["1"].ours


def test_figs5_9_tiny_sweep_shares_models_and_resumes(tmp_path):
    r = _run(fig59, tmp_path, **TINY59)
    # Fig. 5 and Fig. 9's first sweep coincide: 3 + 1 distinct models (2x2 is in both sweeps)
    assert set(r["models"]) == {"2x1", "2x2", "2x4", "1x2"} and r["meta"]["computed"] == 4
    assert r["pairs"] == {"2": {"narrow": "2x1", "few": "1x2"}}
    assert r["models"]["2x1"]["n_params"] == r["models"]["1x2"]["n_params"]
    table = fig59.claims(r)
    rows = {c.key: c for c in table.rows}
    assert list(rows) == ["1", "2", "3", "4", "5", "6", "7"]
    assert rows["4"].verdict == "inconclusive" and rows["5"].verdict == "consistency check"
    # undertrained (below CONVERGED_STEPS): the Fig. 5 shape rows cannot fail, so they are not judged
    assert rows["2"].verdict == rows["3"].verdict == "inconclusive" and "undertrained" in rows["2"].tolerance
    again = _run(fig59, tmp_path, **TINY59)
    assert again["meta"]["computed"] == 0 and again["models"] == r["models"]


def test_figs5_9_reads_local_wikitext(tmp_path, monkeypatch):
    d = tmp_path / "data" / "wikitext-103"
    d.mkdir(parents=True)
    (d / "wiki.train.tokens").write_text(" = Robert Boulter = \n Robert Boulter is an English actor . \n" * 400)
    (d / "wiki.valid.tokens").write_text(" = Homarus gammarus = \n Homarus gammarus is a lobster . \n" * 40)
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path / "data"))
    r = _run(fig59, tmp_path / "store", **{**TINY59, "corpus": "wikitext", "head_dims": [2], "fig9_head_dims": [2],
                                           "fig9_head_counts": [1]})
    assert not r["substitute"] and "WikiText" in r["data"]
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="ATTNLAB_DATA"):
        _run(fig59, tmp_path / "store2", **{**TINY59, "corpus": "wikitext"})


def test_fig6_tiny_teacher_and_students(tmp_path):
    r = _run(fig6, tmp_path, **TINY6)
    assert set(r["students"]) == {"1", "2", "4"} and r["meta"]["computed"] == 2  # the teacher and the students
    assert r["students"]["4"]["init_mse"] < 1e-20 and len(r["teacher"]["singular_values"]) == 4
    rows = {c.key: c for c in fig6.claims(r).rows}
    assert rows["2"].verdict == "consistency check"
    again = _run(fig6, tmp_path, **{**TINY6, "student_steps": 3})  # the stored teacher is reused
    assert again["meta"]["computed"] == 1 and again["teacher"]["valid_ce"] == r["teacher"]["valid_ce"]
    assert fig6.EXPERIMENTS[0].stored("full") is None


def test_figs5_9_stops_at_its_time_limit_and_resumes(tmp_path):
    """checkpoint_every and time_limit (issues 25/30): a run past its limit stops at a checkpoint; the same
    command resumes it, and the result is the uninterrupted one."""
    from attnlab.core.experiment import Incomplete

    tiny = {**TINY59, "head_dims": [1, 2], "fig9_head_dims": [1, 2], "fig9_head_counts": [1], "steps": 4}
    plain = _run(fig59, tmp_path / "plain", **tiny)
    with pytest.raises(Incomplete):
        _run(fig59, tmp_path / "cut", **tiny, checkpoint_every=2, time_limit=1e-9)
    assert list((tmp_path / "cut").rglob("checkpoints/**/*.pt"))
    resumed = _run(fig59, tmp_path / "cut", **tiny, checkpoint_every=2)
    assert resumed["models"] == plain["models"]
    assert not list((tmp_path / "cut").rglob("checkpoints/**/*.pt"))  # removed once the models are stored
