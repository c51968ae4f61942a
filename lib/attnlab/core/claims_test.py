import pytest

from attnlab.core.claims import ClaimFailed, ClaimsTable, fmt


def test_table_text_roundtrips_and_verdicts():
    t = ClaimsTable()
    t.add("1", "a claim", paper=0.5, ours=0.51234, holds=True, tolerance="± 0.05", asserted=True)
    t.add("2", "needs full scale", paper=1.0, ours=None, holds=None, asserted=True)
    rows = ClaimsTable.parse(repr(t))
    assert rows[0]["ours"] == "0.512" and rows[0]["verdict"] == "✅ holds" and rows[0]["asserted"] == "yes"
    assert rows[1]["verdict"] == "⏳ not run" and rows[1]["asserted"] == "no"
    t.check()


def test_asserted_failure_raises_and_shown_failure_does_not():
    t = ClaimsTable().add("1", "shown", paper=1, ours=0, holds=False)
    t.check()
    t.add("2", "asserted", paper=1, ours=0, holds=False, asserted=True)
    with pytest.raises(ClaimFailed, match="claim 2"):
        t.check()


def test_fmt_is_stable():
    assert fmt(0.0) == "0" and fmt(-0.0) == "0" and fmt(1.23456e-7) == "1.23e-07" and fmt(3) == "3"
