"""The book extension's pure parts: reading a claims table, choosing the headline, plain-text titles."""

from attnlab.book_sphinx import claims_rows, count_kinds, headline_rows, tex_to_text, with_data_labels
from attnlab.core.claims import ClaimsTable


def _table() -> ClaimsTable:
    t = ClaimsTable("t")
    t.consistency("1", "arithmetic", expected=2, ours=2, holds=True, asserted=True)
    t.add("2a", "a measured value, shown only", paper=1.0, ours=1.01, holds=True, tolerance="± 0.05")
    t.add("2 (b)", "the asserted measured value", paper=3.0, ours=3.5, holds=False, tolerance="± 0.1", asserted=False)
    t.add("3", "the headline & more", paper=0.5, ours=0.51, holds=True, tolerance="± 0.05", asserted=True)
    t.not_run("4", "paper scale", paper=0.9, command="attnlab run x --scale full --headless")
    return t


def test_claims_rows_read_the_html_table_as_shown():
    headers, rows = claims_rows(_table()._repr_html_())
    assert headers == ["#", "claim", "paper", "this run", "tolerance", "verdict", "asserted"]
    assert [r["#"] for r in rows] == ["1", "2a", "2 (b)", "3", "4"]
    assert rows[3]["claim"] == "the headline & more" and rows[3]["asserted"] == "yes"
    assert count_kinds(rows) == {"reproduced": 2, "fails": 1, "inconclusive": 0, "not run": 1,
                                 "consistency check": 1}


def test_the_headline_is_the_first_asserted_measured_row_and_a_failure_is_shown_too():
    _, rows = claims_rows(_table()._repr_html_())
    picked = headline_rows(rows)
    assert [r["#"] for r in picked] == ["3", "2 (b)"]
    only_shown = [r for r in rows if r["#"] != "3"]
    assert [r["#"] for r in headline_rows(only_shown)] == ["2a", "2 (b)"]
    assert [r["#"] for r in headline_rows([r for r in rows if r["#"] in ("1", "4")])] == ["1"]
    assert headline_rows([]) == []


def test_data_labels_name_every_cell_by_its_column_once():
    html = _table()._repr_html_()
    headers, _ = claims_rows(html)
    labelled = with_data_labels(html, headers)
    assert labelled.count('<td data-label="verdict"') == 5 and labelled.count('<th data-label="claim"') == 1
    assert with_data_labels(labelled, headers) == labelled
    assert claims_rows(labelled)[1] == claims_rows(html)[1]


def test_titles_with_math_read_as_plain_text():
    assert tex_to_text(r"d_h") == "dₕ"
    assert tex_to_text(r"\varepsilon > 0") == "ε > 0"
    assert tex_to_text(r"\lambda = m / d_{\text{model}} = 8") == "λ = m / d_model = 8"
    assert tex_to_text(r"D_K = \Omega\big(\frac{m'}{d}\log\frac{m^2}{m'}\big)") == "D_K = Ω((m′/d) log(m²/m′))"
    assert tex_to_text(r"d_k = \Theta(\log m)") == "dₖ = Θ(log m)"
    assert tex_to_text(r"\lceil \log_2(T+1) \rceil") == "⌈ log₂(T+1) ⌉"
    assert tex_to_text(r"x^{-1/2}") == "x^(−1/2)"
