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
