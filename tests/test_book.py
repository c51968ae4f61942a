"""The book: chapters up to date and within budget, nbval catches a changed number, strict build."""

import csv
import json
import shutil
import subprocess
import sys

import nbformat

from attnlab.papers import registry
from attnlab.notebooks import CI_BUDGET_S, TIMINGS, check, claims_of
from conftest import REPO


def test_attnlab_check_passes():
    """toc lists every chapter, every executed copy is up to date, contract cells and timings."""
    assert check() == []


def test_every_chapter_has_a_measured_time_within_budget():
    with TIMINGS.open() as f:
        rows = {r["result"]: r for r in csv.DictReader(f)}
    for exp in registry().values():
        assert exp.id in rows, f"{exp.id} has no measured time in {TIMINGS.name}"
        assert rows[exp.id]["threads"] == "1" and rows[exp.id]["scale"] == "ci"
        assert float(rows[exp.id]["seconds"]) <= CI_BUDGET_S, rows[exp.id]


def test_every_executed_chapter_shows_a_claims_table_with_no_failure():
    for exp in registry().values():
        rows = claims_of(exp.executed)
        assert rows, f"{exp.id}: no claims table"
        assert not [r for r in rows if r["verdict"].startswith("❌") and r["asserted"] == "yes"]


def _nbval(path):
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
                           str(path)], capture_output=True, text=True, cwd=path.parent, timeout=600)


def test_nbval_fails_when_a_stored_number_is_changed(tmp_path):
    """Change the 'this run' value of the first row of a claims table in an executed chapter: nbval
    must fail on it (and pass on the untouched copy)."""
    src = REPO / "book" / "004-memorization" / "table1-capacity-bounds.ipynb"
    nb = nbformat.read(src, as_version=4)
    changed = None
    for cell in nb.cells:
        if "NBVAL_CHECK_OUTPUT" in cell.source:
            for out in cell.outputs:
                text = out.get("data", {}).get("text/plain", "")
                rows = [line for line in text.splitlines() if line.startswith("| ")][2:]
                if rows and changed is None:
                    cells = rows[0].split(" | ")
                    cells[3] = changed = cells[3] + "1"  # the 'this run' column
                    out["data"]["text/plain"] = text.replace(rows[0], " | ".join(cells), 1)
    assert changed is not None
    good, bad = tmp_path / "good.ipynb", tmp_path / "bad.ipynb"
    shutil.copy(src, good)
    nbformat.write(nb, bad)
    assert _nbval(good).returncode == 0
    result = _nbval(bad)
    assert result.returncode == 1 and changed in result.stdout


def test_strict_book_build(built_book):
    out, html_root = built_book
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert (html_root / "book" / "intro.html").exists()
    for exp in registry().values():
        html = (html_root / "book" / f"{exp.id}.html").read_text()
        assert "Paper vs this run" in html and "<img" in html, exp.id


def _number(text: str) -> bool:
    try:
        float(text.replace("%", "").replace("−", "-"))
        return True
    except ValueError:
        return False


def test_every_reproduced_row_measures_something():
    """A row counted as reproduced has a tolerance and does not compare a value with itself (the same
    words in the paper and this-run columns); such rows are consistency checks."""
    import re

    for exp in registry().values():
        for r in claims_of(exp.executed):
            if not r["verdict"].startswith("✅"):
                continue
            assert r["tolerance"].strip() not in ("", "–"), f"{exp.id} row {r['key']}: reproduced without a tolerance"
            paper = re.sub(r" \((text|figure|data|digest)\)$", "", r["paper"]).strip()
            assert not (paper == r["ours"].strip() and not _number(paper)), \
                f"{exp.id} row {r['key']}: paper and this run both read {paper!r}: a consistency check, not a reproduction"


def test_machine_warnings_name_chapters_executed_on_another_cpu_only():
    from attnlab.notebooks import executed_on, machine_warnings

    here = executed_on()
    assert machine_warnings([dict(here), dict(here)]) == []
    other = {"cpu": f"A CPU other than {here['cpu']}", "torch": here["torch"]}  # whatever this one is
    lines = machine_warnings([dict(here), other, other, {}])
    assert len(lines) == 2 and lines[0].startswith(f"2 chapter(s) were executed on A CPU other than {here['cpu']}")
    assert "an unrecorded CPU" in lines[1] and "attnlab book --force" in lines[1]


def test_the_executed_book_records_the_machine_that_ran_it():
    for exp in registry().values():
        meta = nbformat.read(exp.executed, as_version=4).metadata["attnlab"]
        assert meta.get("cpu") and meta.get("torch"), exp.id


def test_no_chapter_code_imports_the_benchmark_modules_left_out_of_its_lib_hash():
    """lib_hash leaves out bench.py and core/benchmark.py; that is sound only while no module a chapter can
    reach (the library outside the benchmark, the chapter notebooks) imports them."""
    import ast
    import re

    from attnlab.notebooks import NOT_CHAPTER_CODE, lib_files

    lib = REPO / "lib" / "attnlab"
    hashed = {p for exp in registry().values() for p in lib_files(exp)}
    assert {p.name for p in (lib / "papers").rglob("bench.py")} | {"benchmark.py"} == set(NOT_CHAPTER_CODE)
    assert not any(p.name in NOT_CHAPTER_CODE for p in hashed)
    for path in hashed:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                assert not any(re.search(r"(^|\.)bench(mark)?$", n) for n in names), (path, names)
    for nb in (REPO / "notebooks").rglob("*.md"):
        assert not re.search(r"import .*\bbench|\bbench(mark)? import|\.bench\b", nb.read_text()), nb


def test_a_test_run_says_in_its_header_when_the_book_was_executed_elsewhere(monkeypatch):
    import attnlab.notebooks
    from attnlab import pytest_plugin

    monkeypatch.setattr(attnlab.notebooks, "machine_warnings", lambda: ["2 chapter(s) were executed on X"])
    assert pytest_plugin.pytest_report_header(None) == ["attnlab: warning: 2 chapter(s) were executed on X"]
    monkeypatch.setattr(attnlab.notebooks, "machine_warnings", lambda: [])
    assert pytest_plugin.pytest_report_header(None) == []
