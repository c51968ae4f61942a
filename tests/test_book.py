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


def _nbval(*paths):
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "attnlab.pytest_plugin",
                           "--nbval-lax", *map(str, paths)], capture_output=True, text=True, cwd=paths[0].parent,
                          timeout=600)


def _mutated(src, tmp_path, name, mutate):
    """A copy of an executed chapter whose stored claims table (its JSON, what the check compares) is changed
    by `mutate(rows)`."""
    from attnlab.core.claims import MIME

    nb = nbformat.read(src, as_version=4)
    tables = [out["data"][MIME] for cell in nb.cells if "NBVAL_CHECK_OUTPUT" in cell.source
              for out in cell.outputs if MIME in out.get("data", {})]
    assert tables, f"{src.name}: no claims table carries its JSON"
    mutate(tables[0]["rows"])
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def _bump(rows, units):
    """Change the first number of the first 'this run' cell that has one by `units` in its last printed digit."""
    from attnlab.core.claims import NUMBER, _last_place

    for row in rows:
        m = NUMBER.search(row["ours"])
        if m:
            token = m.group()
            value = float(token) + units * _last_place(token)
            decimals = len(token.split(".")[1]) if "." in token else 0
            row["ours"] = row["ours"][:m.start()] + f"{value:.{decimals}f}" + row["ours"][m.end():]
            return row["ours"]
    raise AssertionError("no number in any 'this run' cell")


def test_nbval_compares_claims_at_their_precision_and_catches_a_changed_number_or_verdict(tmp_path):
    """Mutation test of the check CI runs: an untouched chapter passes, and so does one whose stored number
    moved by one unit in its last printed digit (equal at the printed precision); a number changed beyond
    its precision, a flipped verdict and a changed word each fail, naming the row."""
    src = REPO / "book" / "004-memorization" / "table1-capacity-bounds.ipynb"
    good = tmp_path / "good.ipynb"
    shutil.copy(src, good)
    within = _mutated(src, tmp_path, "within", lambda rows: _bump(rows, 1))
    changed = {}
    number = _mutated(src, tmp_path, "number", lambda rows: changed.setdefault("number", _bump(rows, 50)))

    def flip(rows):
        rows[0]["verdict"] = "fails" if rows[0]["verdict"] != "fails" else "reproduced"

    verdict = _mutated(src, tmp_path, "verdict", flip)
    word = _mutated(src, tmp_path, "word", lambda rows: rows[0].update(text=rows[0]["text"] + " (changed)"))
    backend = tmp_path / "backend.ipynb"  # the kernels draw no PNG (attnlab.pytest_plugin.kernel_without_figures)
    backend.write_text(json.dumps({"cells": [{"cell_type": "code", "execution_count": 1, "metadata": {}, "source": [
        "# NBVAL_CHECK_OUTPUT\n", "import matplotlib\n", "print(matplotlib.get_backend().lower())"], "outputs": [
        {"name": "stdout", "output_type": "stream", "text": ["agg\n"]}]}], "metadata": {"kernelspec": {
            "display_name": "Python 3", "language": "python", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}))
    result = _nbval(good, within, number, verdict, word, backend)
    out = result.stdout
    assert result.returncode == 1, out[-3000:]
    failed = {line.split()[1].split("::")[0].split("/")[-1] for line in out.splitlines() if line.startswith("FAILED")}
    assert failed == {"number.ipynb", "verdict.ipynb", "word.ipynb"}, out[-3000:]
    assert changed["number"] in out and "verdict" in out and "words differ" in out


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
            paper = re.sub(r" \((text|figure|data|derived)\)$", "", r["paper"]).strip()
            assert not (paper == r["ours"].strip() and not _number(paper)), \
                f"{exp.id} row {r['key']}: paper and this run both read {paper!r}: a consistency check, not a reproduction"


def test_machine_warnings_name_what_differs_and_what_the_check_tolerates():
    from attnlab.notebooks import executed_on, machine_warnings

    here = executed_on()
    assert set(here) == {"cpu", "cpu_capability", "torch", "numpy_blas"} and all(here.values())
    assert machine_warnings([dict(here), dict(here)]) == []
    isa = {**here, "cpu_capability": "AVX512" if here["cpu_capability"] != "AVX512" else "AVX2"}
    lines = machine_warnings([dict(here), isa, isa, {}])
    assert len(lines) == 2
    assert lines[0].startswith(f"2 chapter(s) were executed on another machine: cpu_capability {isa['cpu_capability']} "
                               f"(here {here['cpu_capability']})")
    assert "declared precision" in lines[0] and "verdicts and words identical" in lines[0]
    assert "cpu unrecorded" in lines[1] and "attnlab book --force" in lines[1]


def test_the_executed_book_records_the_machine_that_ran_it():
    for exp in registry().values():
        meta = nbformat.read(exp.executed, as_version=4).metadata["attnlab"]
        assert all(meta.get(k) for k in ("cpu", "cpu_capability", "torch", "numpy_blas")), exp.id


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


def test_the_other_cpu_check_samples_every_paper_within_its_budget():
    """make test re-checks a sample as on another CPU: every paper's cheapest chapter with trained rows and its
    cheapest exact one are in it, and its measured chapter time stays within the budget (or only the
    per-paper minimum exceeds it)."""
    from attnlab.notebooks import OTHER_CPU_BUDGET_S, _trained, other_cpu_chapters, read_timings

    chosen = other_cpu_chapters()
    times = {k: float(v["seconds"]) for k, v in read_timings().items()}
    by_path = {exp.executed: exp for exp in registry().values()}
    picked = [by_path[p] for p in chosen]
    for paper in {exp.paper for exp in registry().values()}:
        kinds = {_trained(e) for e in picked if e.paper == paper}
        assert kinds == {True, False} or kinds == {_trained(e) for e in registry().values() if e.paper == paper}, paper
    assert sum(times[e.id] for e in picked) <= max(OTHER_CPU_BUDGET_S, 2 * 5 * 45)
    assert chosen == other_cpu_chapters()  # deterministic


def test_the_other_cpu_environment_is_another_instruction_set_and_blas_kernel():
    from attnlab.notebooks import OTHER_CAPABILITY, executed_on, other_machine_env

    env = other_machine_env()
    assert set(env) == {"ATEN_CPU_CAPABILITY", "OPENBLAS_CORETYPE"}
    here = executed_on()
    assert env["ATEN_CPU_CAPABILITY"] == OTHER_CAPABILITY.get(here["cpu_capability"], "default")
    assert env["OPENBLAS_CORETYPE"] != here["numpy_blas"].split()[-1]
