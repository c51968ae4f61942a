"""The documents a newcomer reads first: the README (short, and pointing to the rest), CONTRIBUTING.md,
and the book's pages about the book (design notes, costs, performance), which are in the toc and whose
generated tables are current."""

import re

import pytest

from attnlab import bench
from attnlab.cli import build_parser
from attnlab.notebooks import ABOUT_PAGES, cost_table, toc_files, toc_yaml
from attnlab.papers import packages
from conftest import REPO

README = REPO / "README.md"
CONTRIBUTING = REPO / "CONTRIBUTING.md"
PAGES = {name: REPO / "book" / f"{name}.md" for name in ("design", "costs", "performance")}
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_readme_is_short_and_links_to_contributing_and_the_pages_about_the_book():
    text = README.read_text()
    assert len(text.splitlines()) <= 160, "the README is for a newcomer: keep it under 160 lines"
    links = set(LINK.findall(text))
    assert "CONTRIBUTING.md" in links
    for path in PAGES.values():
        assert str(path.relative_to(REPO)) in links, f"the README does not link to {path.relative_to(REPO)}"
    assert "_build/html/index.html" in text and "make book" in text and "make test" in text


@pytest.mark.parametrize("doc", [README, CONTRIBUTING], ids=lambda p: p.name)
def test_links_stay_in_the_repository_and_resolve(doc):
    papers = {pkg.URL for pkg in packages() if pkg.URL}
    for ref in LINK.findall(doc.read_text()):
        if ref.startswith(("http://", "https://")):
            assert ref in papers, f"{doc.name} links outside the repository: {ref}"
        else:
            assert (doc.parent / ref.split("#")[0]).exists(), f"{doc.name}: broken link {ref}"


def test_the_commands_named_exist():
    """Every `attnlab SUBCOMMAND` and `make TARGET` that the README and CONTRIBUTING.md name exists."""
    subcommands = set(next(a for a in build_parser()._actions if a.dest == "command").choices)
    targets = set(re.findall(r"^([a-z]+):", (REPO / "Makefile").read_text(), re.M))
    for doc in (README, CONTRIBUTING):
        text = doc.read_text()
        named = set(re.findall(r"\battnlab (\w+)", text))
        assert named <= subcommands, f"{doc.name} names attnlab {sorted(named - subcommands)}"
        made = set(re.findall(r"\bmake ([a-z]+)\b", text))
        assert made <= targets, f"{doc.name} names make {sorted(made - targets)}"


@pytest.mark.parametrize("path", [README, CONTRIBUTING, *PAGES.values()], ids=lambda p: p.name)
def test_no_word_from_outside_the_repository(path):
    text = path.read_text()
    assert "digest" not in text.lower(), f"{path.name} mentions digests, which readers cannot open"
    assert "shared/" not in text and "DESIGN.md" not in text, f"{path.name} points outside the repository"


def test_the_pages_about_the_book_are_in_the_toc():
    for name in ("design", "costs", "performance"):
        assert name in ABOUT_PAGES
        assert f"book/{name}" in toc_files(), f"_toc.yml does not list book/{name}: run `attnlab book`"
        assert f"- file: book/{name}\n" in toc_yaml()
        assert PAGES[name].exists()


def _generated(path, name: str) -> str:
    text = path.read_text()
    start, end = f"<!-- {name}:start -->\n", f"\n<!-- {name}:end -->"
    assert start in text and end in text, f"{path.name} lost its generated-region markers ({name})"
    return text.split(start, 1)[1].split(end, 1)[0]


def test_the_generated_tables_of_the_cost_and_performance_pages_are_current():
    """`attnlab book` writes them (`write_generated_pages`); a stale one means it was not run."""
    assert _generated(PAGES["costs"], "costs") == cost_table(), "book/costs.md is stale: run `attnlab book`"
    assert _generated(PAGES["performance"], "bench") == bench.performance_tables(), \
        "book/performance.md is stale: run `attnlab book`"


def test_the_design_page_says_it_is_maintained_with_the_code():
    text = PAGES["design"].read_text()
    assert "maintained with the code" in text
    for kind in ("reproduced", "fails", "inconclusive", "not run", "consistency check"):
        assert kind in text


def test_the_changelog_compares_every_chapter_with_the_recorded_snapshot(tmp_path):
    """book/changelog.md's tables are current, and they list a row whose kind changed, a removed row and a
    new row (a snapshot written here, from one executed chapter with its rows altered)."""
    import json

    from attnlab.notebooks import VERDICTS_BEFORE, _kind, changelog_tables, claims_of
    from attnlab.papers import registry

    page = (REPO / "book" / "changelog.md").read_text()
    assert changelog_tables() in page, "book/changelog.md is stale: run `attnlab book`"
    exp = next(e for e in registry().values() if e.executed.exists() and len(claims_of(e.executed)) >= 3)
    rows = [{"key": r["key"], "claim": r["claim"], "kind": _kind(r)} for r in claims_of(exp.executed)]
    first, second, third = rows[:3]
    other = "inconclusive" if first["kind"] != "inconclusive" else "fails"
    snapshot = {"commit": "0123456789", "chapters": {exp.id: [{**first, "kind": other}, {**second, "key": "zz"}, third,
                                                             *rows[3:]]}}
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(snapshot))
    text = changelog_tables(path)
    esc = {r["key"]: r["claim"].replace("|", "\\|") for r in (first, second, third)}  # cells escape a "|"
    assert f"| {first['key']} | {esc[first['key']]} | " in text and f"| (row removed) |" in text
    assert f"| {second['key']} | {esc[second['key']]} | (new row) |" in text
    assert f"| {third['key']} | {esc[third['key']]} |" not in text  # unchanged rows are not listed
    assert json.loads(VERDICTS_BEFORE.read_text())["chapters"], "the recorded snapshot is empty"


def test_the_readme_counts_the_verdicts_of_the_executed_chapters():
    from attnlab.notebooks import verdict_counts_table

    assert verdict_counts_table() in README.read_text(), "the README's verdict counts are stale: run `attnlab book`"
