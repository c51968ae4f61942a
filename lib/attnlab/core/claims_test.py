import pytest

from attnlab.core.claims import ClaimFailed, ClaimsTable, fmt


def test_table_text_roundtrips_and_verdicts():
    t = ClaimsTable()
    t.add("1", "a claim", paper=0.5, ours=0.51234, holds=True, tolerance="± 0.05", asserted=True)
    t.add("2", "needs full scale", paper=1.0, ours=None, holds=None, asserted=True)
    rows = ClaimsTable.parse(repr(t))
    assert rows[0]["ours"] == "0.512" and rows[0]["verdict"] == "✅ reproduced" and rows[0]["asserted"] == "yes"
    assert rows[1]["verdict"] == "⏳ not run" and rows[1]["asserted"] == "no"
    t.check()


def test_asserted_failure_raises_and_shown_failure_does_not():
    t = ClaimsTable().add("1", "shown", paper=1, ours=0, holds=False, tolerance="exact")
    t.check()
    t.add("2", "asserted", paper=1, ours=0, holds=False, asserted=True, tolerance="exact")
    with pytest.raises(ClaimFailed, match="claim 2"):
        t.check()


def test_fmt_is_stable():
    assert fmt(0.0) == "0" and fmt(-0.0) == "0" and fmt(1.23456e-7) == "1.23e-07" and fmt(3) == "3"


def test_every_kind_renders_and_a_measured_row_needs_a_tolerance():
    t = ClaimsTable()
    t.add("1", "measured", paper=0.9, ours=0.91, holds=True, tolerance="± 0.05", source="text")
    t.consistency("2", "count equals the formula", expected=10, ours=10, holds=True)
    t.inconclusive("3", "cannot tell", paper="T", ours="T or L", why="both shift at this scale")
    t.not_run("4", "paper scale", paper=0.999, command="attnlab run x --scale full --headless")
    rows = ClaimsTable.parse(repr(t))
    assert [r["verdict"] for r in rows] == ["✅ reproduced", "🔁 consistency check", "❔ inconclusive", "⏳ not run"]
    assert rows[0]["paper"] == "0.9 (text)" and t.counts()["reproduced"] == 1
    assert "<table" in t._repr_html_() and "reproduced" in t._repr_html_()
    with pytest.raises(ValueError, match="tolerance"):
        t.add("5", "no tolerance", paper=1, ours=1, holds=True)
    same = "authors' code"
    with pytest.raises(ValueError, match="itself"):
        t.add("6", "a value against itself", paper=same, ours=same, holds=True, tolerance="same")
    failing = ClaimsTable().consistency("7", "a failed identity", expected=1, ours=2, holds=False, asserted=True)
    with pytest.raises(ClaimFailed):
        failing.check()


def test_pipes_inside_cells_are_escaped_and_parsed_back():
    t = ClaimsTable()
    t.add("1", "the norm ||J||_2 falls", paper="a | b", ours=0.5, holds=True, tolerance="< 1", source="text")
    md = t.markdown()
    assert md.splitlines()[2].count(" | ") == 6  # seven cells, six separators: the escaped pipes add none
    row = ClaimsTable.parse(md)[0]
    assert row["claim"] == "the norm ||J||_2 falls" and row["paper"] == "a | b (text)"


def test_residuals_print_as_their_bound():
    from attnlab.core.claims import bound

    assert bound(3.7e-33, 1e-12) == "< 1e-12" and bound(-1.1e-16, 1e-12) == "< 1e-12"
    assert bound(2e-9, 1e-12) == "2.00e-09"  # above the bound: printed, and the row fails on its own


def test_numbers_agree_at_their_printed_precision_or_relative_tolerance():
    from attnlab.core.claims import numbers_agree

    assert numbers_agree("0.981", "0.982", 0) and not numbers_agree("0.981", "0.983", 0)  # one unit in the last place
    assert numbers_agree("4.32e-11", "4.33e-11", 0) and not numbers_agree("4.32e-11", "1.41e-10", 0)
    assert not numbers_agree("12", "13", 0)  # a count of an exact row is equal or wrong
    assert numbers_agree("0.90", "0.95", 0.1) and not numbers_agree("0.90", "1.05", 0.1)
    assert numbers_agree("−1", "-1", 0)


def _table(ours: float, holds: bool, rtol: float = 0.0) -> dict:
    t = ClaimsTable(rtol=rtol)
    t.add("1", "accuracy at H = 8", paper=0.9, ours=f"{ours:.3f} (median of 3)", holds=holds, tolerance="≥ 0.85",
          source="text")
    t.consistency("2", "max error of the construction", expected="< 1e-12", ours="< 1e-12", holds=True)
    return t.data()


def test_compare_accepts_rounding_and_catches_a_changed_number_or_verdict():
    stored = _table(0.912, True)
    assert ClaimsTable.compare(stored, _table(0.912, True)) == []
    assert ClaimsTable.compare(stored, _table(0.913, True)) == []  # one unit in the last printed digit
    assert "0.912 -> 0.93" in ClaimsTable.compare(stored, _table(0.930, True))[0]
    assert ClaimsTable.compare(_table(0.912, True, rtol=0.05), _table(0.930, True, rtol=0.05)) == []
    assert any("verdict" in p for p in ClaimsTable.compare(stored, _table(0.912, False)))
    worded = _table(0.912, True)
    worded["rows"][0]["ours"] = "0.912 (best of 3)"
    assert "words differ" in ClaimsTable.compare(stored, worded)[0]
    fewer = {"rows": stored["rows"][:1]}
    assert "rows differ" in ClaimsTable.compare(stored, fewer)[0]


def test_the_display_carries_the_table_as_json():
    from attnlab.core.claims import MIME

    bundle = ClaimsTable(rtol=0.1).add("1", "x", paper=1, ours=0.95, holds=True, tolerance="± 0.1")._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html", MIME}
    assert bundle[MIME]["rows"][0]["rtol"] == 0.1 and bundle[MIME]["rows"][0]["ours"] == "0.95"
    assert "± 10% across CPUs" in bundle["text/html"]
    with pytest.raises(ValueError, match="rtol"):
        ClaimsTable(rtol=2).add("1", "x", paper=1, ours=1, holds=True, tolerance="t")


def test_a_value_within_its_precision_of_the_threshold_is_inconclusive():
    t = ClaimsTable(rtol=0.05)
    t.add("1", "ratio ≥ 5", paper=5, ours=5.1, holds=True, tolerance="≥ 5", asserted=True, margin=(5.1, 5))
    t.add("2", "ratio ≥ 5", paper=5, ours=4.9, holds=False, tolerance="≥ 5", asserted=True, margin=(4.9, 5))
    t.add("3", "ratio ≥ 5", paper=5, ours=6.0, holds=True, tolerance="≥ 5", asserted=True, margin=(6.0, 5))
    t.add("4", "ratio ≥ 5", paper=5, ours=4.0, holds=False, tolerance="≥ 5", margin=(4.0, 5))
    assert [c.verdict for c in t.rows] == ["inconclusive", "inconclusive", "reproduced", "fails"]
    assert "within this row's precision" in t.rows[0].tolerance
    t.check()  # an inconclusive row never raises
    exact = ClaimsTable().add("5", "bound", paper=1, ours=1.0, holds=True, tolerance="≤ 1", margin=(1.0, 1.0))
    assert exact.rows[0].verdict == "inconclusive"


def test_every_kind_of_row_checks_its_source():
    for add in (lambda t: t.consistency("1", "x", expected=1, ours=1, holds=True, source="notes"),
                lambda t: t.inconclusive("1", "x", paper=1, ours=1, why="w", source="notes"),
                lambda t: t.not_run("1", "x", paper=1, command="c", source="notes")):
        with pytest.raises(ValueError, match="source 'notes'"):
            add(ClaimsTable())


def test_an_absolute_tolerance_covers_noise_around_zero():
    from attnlab.core.claims import numbers_agree

    assert numbers_agree("+0.044", "-0.060", 0.0, 0.11) and not numbers_agree("+0.044", "-0.060", 1.0, 0.0)
    t = ClaimsTable(rtol=0.2, atol=0.09)
    t.add("1", "loss falls", paper="< 0", ours=-0.05, holds=True, tolerance="< 0", margin=(-0.05, 0))
    t.consistency("2", "a trained sanity check", expected="> 0.1", ours=0.24, holds=True)
    assert t.rows[0].verdict == "inconclusive" and "± 0.09 + 20%" in t.rows[0].tolerance
    assert (t.rows[1].rtol, t.rows[1].atol) == (0.2, 0.09)  # a trained table's consistency rows are trained too
    with pytest.raises(ValueError, match="atol"):
        ClaimsTable(atol=-1).add("3", "x", paper=1, ours=1, holds=True, tolerance="t")


def test_the_seed_rule_prints_median_and_spread_and_judges_every_seed():
    t = ClaimsTable(rtol=0.2)
    t.add_seeds("1", "ratio at c = 10", paper=1485, values=[155.7, 108.9, 55.0], threshold=5,
                tolerance="≥ 5×", asserted=True, source="figure")
    t.add_seeds("2", "ratio at c = 10", paper=458, values=[39.4, 23.3, 5.05], threshold=5, tolerance="≥ 5×",
                asserted=True, source="figure")  # one seed within the precision of the threshold
    t.add_seeds("3", "ratio at c = 10", paper=458, values=[39.4, 23.3, 2.0], threshold=5, asserted=True)
    t.add_seeds("4", "ratio at c = 10", paper=458, values=[1.0, 2.0, 3.0], threshold=5, asserted=False)
    t.add_seeds("5", "ID factor", paper=10, values=[1.6, 2.0, 2.8, 9.3], threshold=10, above=False,
                tolerance="≤ 10×")
    t.add_seeds("6", "ID factor", paper=10, values=[1.6, 2.0, 2.8, 6.0], threshold=10, above=False)
    assert [c.verdict for c in t.rows] == ["reproduced", "inconclusive", "inconclusive", "fails", "inconclusive",
                                           "reproduced"]
    assert t.rows[0].ours == "109 (55–156, 3 seeds)" and t.rows[0].tolerance == "≥ 5× in each of 3 seeds"
    assert t.rows[1].tolerance == ("≥ 5× in each of 3 seeds: holds in 2, fails in 0, 1 within this row's "
                                   "precision (± 20%) of 5")
    assert "holds in 2, fails in 1, 0 within" in t.rows[2].tolerance
    assert t.rows[3].tolerance == "≥ 5 in each of 3 seeds" and t.rows[5].tolerance == "≤ 10 in each of 4 seeds"
    assert t.rows[4].ours == "2.4 (1.6–9.3, 4 seeds)"  # an even count: the mean of the middle two
    assert [c.asserted for c in t.rows] == [True, False, False, False, False, False]
    t.check()  # inconclusive rows never raise
    t.add_seeds("7", "asserted and failing in every seed", paper=5, values=[1.0, 2.0], threshold=5, asserted=True)
    with pytest.raises(ClaimFailed, match="claim 7"):
        t.check()


def test_no_rule_of_the_seed_rule_can_pick_a_best_seed():
    """The row (verdict and every printed cell) depends on the set of seed values only: reordering the
    seeds changes nothing, and one bad seed among good ones never gives ✅ (nor one good seed ❌)."""
    import itertools

    values = [155.7, 108.9, 3.0, 51.5, 66.2]
    rows = set()
    for perm in itertools.permutations(values):
        c = ClaimsTable(rtol=0.2).add_seeds("1", "r", paper=1485, values=list(perm), threshold=5).rows[0]
        rows.add((c.ours, c.tolerance, c.verdict))
    assert rows == {("66.2 (3–156, 5 seeds)", "≥ 5 in each of 5 seeds: holds in 4, fails in 1, 0 within this "
                     "row's precision (± 20%) of 5", "inconclusive")}
    good, bad = [50.0] * 4, 1.0
    for i in range(5):
        one_bad = good[:i] + [bad] + good[i:]
        assert ClaimsTable(rtol=0.2).add_seeds("1", "r", paper=1, values=one_bad, threshold=5).rows[0].verdict \
            == "inconclusive"
        one_good = [bad] * 4
        one_good.insert(i, 50.0)
        assert ClaimsTable(rtol=0.2).add_seeds("1", "r", paper=1, values=one_good, threshold=5).rows[0].verdict \
            == "inconclusive"
    # "this run" is the median, never the best or the worst seed
    c = ClaimsTable().add_seeds("1", "r", paper=1, values=[1.0, 100.0, 7.0], threshold=5).rows[0]
    assert c.ours.startswith("7 (1–100")


def test_a_seed_row_renders_in_markdown_html_and_json_and_compares_at_its_precision():
    from attnlab.core.claims import MIME, seed_summary

    def table(values):
        return ClaimsTable(rtol=0.2).add_seeds("16", "Fig. 4, cumsum: std / pos MSE at c = 10", paper=1485,
                                               values=values, threshold=5, tolerance="≥ 5×", asserted=True,
                                               source="figure")

    t = table([155.7, 108.9, 55.0])
    row = ClaimsTable.parse(t.markdown())[0]
    assert row == {"key": "16", "claim": "Fig. 4, cumsum: std / pos MSE at c = 10", "paper": "1485 (figure)",
                   "ours": "109 (55–156, 3 seeds)", "tolerance": "≥ 5× in each of 3 seeds",
                   "verdict": "✅ reproduced", "asserted": "yes"}
    data = t._repr_mimebundle_()[MIME]["rows"][0]
    assert (data["ours"], data["verdict"], data["rtol"], data["asserted"]) == ("109 (55–156, 3 seeds)", "reproduced",
                                                                              0.2, True)
    assert "109 (55–156, 3 seeds) <span class=\"claims-precision\">(± 20% across CPUs)" in t._repr_html_()
    # another CPU moves every seed a little: the table compares equal; a seed off by 2x does not
    assert ClaimsTable.compare(t.data(), table([150.0, 115.0, 60.0]).data()) == []
    assert "55 -> 27" in ClaimsTable.compare(t.data(), table([155.7, 108.9, 27.0]).data())[0]
    assert seed_summary([2.0]) == "2 (2–2, 1 seed)"
    with pytest.raises(ValueError, match="nan"):
        seed_summary([1.0, float("nan")])
    with pytest.raises(ValueError, match="no seeds"):
        table([])


def test_seed_outcomes_follow_the_seed_rule():
    t = ClaimsTable()
    t.add_seed_outcomes("a", "every seed", paper=1, ours="1/1/1", holds=[True, True, True], tolerance="h* = 1")
    t.add_seed_outcomes("b", "no seed", paper=1, ours="2/2", holds=[False, False], tolerance="h* = 1")
    t.add_seed_outcomes("c", "some seeds", paper=1, ours="1/2/1", holds=[True, False, True], tolerance="h* = 1",
                        asserted=True)
    assert [r.verdict for r in t.rows] == ["reproduced", "fails", "inconclusive"]
    assert t.rows[0].tolerance == "h* = 1 in each of 3 seeds"
    assert "holds in 2, fails in 1" in t.rows[2].tolerance and not t.rows[2].asserted
    with pytest.raises(ValueError, match="no seeds"):
        t.add_seed_outcomes("d", "none", paper=1, ours="", holds=[], tolerance="x")
