import json

import pytest

from attnlab import errata
from attnlab.core.claims import MIME


def _chapter(book, chapter, rows):
    """A minimal executed chapter whose claims output holds `rows` (key, ours, paper, text)."""
    path = book / f"{chapter}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"title": "t", "rows": [{"key": k, "ours": o, "paper": p, "text": t, "tolerance": "", "verdict": "fails",
                                    "source": "text", "rtol": 0, "atol": 0, "asserted": False}
                                   for k, o, p, t in rows]}
    nb = {"cells": [{"cell_type": "code", "source": "", "metadata": {}, "execution_count": 1,
                     "outputs": [{"output_type": "display_data", "metadata": {}, "data": {MIME: data}}]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))


@pytest.fixture
def book(tmp_path):
    _chapter(tmp_path, "009-x/law", [("4", "0.959 / 0.982", "0.944", "the centred R² would be 0.904"),
                                     ("D.1.4b", "138", "–", "")])
    return tmp_path


def test_placeholders_are_filled_from_the_executed_chapter(book):
    src = ("# E\n\n## 1. §6\n\nours {{009-x/law#4.ours}}, paper {{009-x/law#4.paper}}, 13 points "
           "{{009-x/law#4.ours[2]}}, centred {{009-x/law#4.text[R² would be]}}, dotted key {{009-x/law#D.1.4b.ours}}\n")
    assert errata.render(src, book=book) == ("# E\n\n## 1. §6\n\nours 0.959 / 0.982, paper 0.944, 13 points 0.982, "
                                             "centred 0.904, dotted key 138\n")


def test_a_phrase_with_a_count_picks_the_nth_number_after_it(book):
    _chapter(book, "009-x/fit", [("11", "2.05", "1.65", "h* ≈ 1.65 m/d − 6.64; ours alone give 2.05 m/d -6.51 (R² 0.925)")])
    src = "{{009-x/fit#11.ours}} m/d {{009-x/fit#11.text[alone give|2]}}, R² {{009-x/fit#11.text[alone give|3]}}"
    assert errata.render(src, book=book) == "2.05 m/d -6.51, R² 0.925"
    with pytest.raises(errata.ErratumError, match="no number #4 after 'alone give'"):
        errata.render("{{009-x/fit#11.text[alone give|4]}}", book=book)


@pytest.mark.parametrize("placeholder, words", [
    ("{{009-x/law#7.ours}}", ["'2. Fig. 3'", "'009-x/law'", "no claims row '7'"]),
    ("{{009-x/gone#4.ours}}", ["'2. Fig. 3'", "'009-x/gone'", "no executed notebook"]),
    ("{{009-x/law#4.ours[3]}}", ["'2. Fig. 3'", "row '4'", "no number #3"]),
    ("{{009-x/law#4.colour}}", ["'2. Fig. 3'", "cell 'colour'"]),
    ("{{009-x/law#4.text[R² is]}}", ["'2. Fig. 3'", "row '4'", "the phrase 'R² is' is not in it"]),
    ("{{ 009-x/law 4 }}", ["'2. Fig. 3'", "malformed placeholder"]),
    ("{{009-x/law#4.text[max{1, 2} =]}}", ["'2. Fig. 3'", "malformed placeholder"]),
])
def test_a_missing_chapter_row_or_number_fails_naming_the_erratum_chapter_and_row(book, placeholder, words):
    src = f"# E\n\n## 1. §6\n\nfine {{{{009-x/law#4.ours}}}}\n\n## 2. Fig. 3\n\nbad {placeholder}\n"
    with pytest.raises(errata.ErratumError) as err:
        errata.render(src, book=book)
    for w in words:
        assert w in str(err.value)


def test_every_paper_has_an_errata_source_and_every_placeholder_resolves():
    assert errata.papers_with_errata() == [p.ID for p in errata.packages()]
    for paper_id in errata.papers_with_errata():
        page = errata.errata_page(paper_id)
        assert "{{" not in page and page.startswith("# Errata")


def test_the_committed_errata_pages_are_current():
    """`attnlab book` rewrites them (`write_errata_pages`) after re-executing the chapters: a stale page means
    a chapter's numbers moved (or a source was edited) since; regenerate with `attnlab.errata.write_errata_pages()`."""
    assert errata.stale_pages() == [], "stale errata pages: run attnlab.errata.write_errata_pages()"
