"""Chapters: execute notebook sources into the book, know when an executed copy is stale,
record timings, and build the scorecard from the claims tables.

A chapter's source is `notebooks/<id>.md` (jupytext MyST). `attnlab book` executes it with
papermill into `book/<id>.ipynb` and records in the notebook's metadata the hashes of its
source and of the library code it runs on (`attnlab/core` and its paper's package), so a
copy is re-executed exactly when one of them changed.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import hashlib
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Iterable

try:
    import nbformat
except ModuleNotFoundError:  # a bare machine (torch and numpy only): `attnlab list` reads chapters as JSON
    nbformat = None

from .core.claims import KINDS, LEGEND, VERDICT_MARK, ClaimsTable
from .core.experiment import Experiment
from .core.store import REPO_ROOT
from .papers import package_of, packages, registry

BOOK = REPO_ROOT / "book"
TIMINGS = BOOK / "timings.csv"
CI_BUDGET_S = 45.0
CHECK_MARK = "# NBVAL_CHECK_OUTPUT"


NOT_CHAPTER_CODE = ("bench.py", "benchmark.py")  # the throughput benchmark (`python -m attnlab.bench`) only


def lib_files(exp: Experiment) -> list[Path]:
    """The library code a chapter depends on: attnlab/core, attnlab/__init__ and its paper's package,
    without tests and the benchmark modules (no chapter imports them; tests/test_book.py checks)."""
    lib = REPO_ROOT / "lib" / "attnlab"
    files = [lib / "__init__.py", *sorted((lib / "core").rglob("*.py")),
             *sorted(Path(package_of(exp.paper).__file__).parent.rglob("*.py"))]
    return [f for f in files if not f.name.endswith("_test.py") and f.name not in NOT_CHAPTER_CODE]


def _hash_files(paths: Iterable[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.relative_to(REPO_ROOT).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def full_files(exp: Experiment) -> list[Path]:
    """The chapter's stored paper-scale entries (results/full/<id>/*.json, without checkpoints or
    entries set aside as corrupt): the "At paper scale" rows are judged from them."""
    folder = REPO_ROOT / "results" / "full" / exp.id
    return sorted(p for p in folder.rglob("*.json") if "checkpoints" not in p.parts and not p.name.startswith(".tmp-"))


def fingerprint(exp: Experiment) -> dict[str, str]:
    """What an executed chapter depends on: its source, the library code it runs, and its stored
    paper-scale results (committing new results/full entries makes the chapter stale, so
    `attnlab book` re-executes it and its "not run" rows are judged)."""
    return {"source_hash": _hash_files([exp.notebook]), "lib_hash": _hash_files(lib_files(exp)),
            "full_hash": _hash_files(full_files(exp))}


def executed_on() -> dict[str, str]:
    """What an executed chapter records about the machine that ran it (`core.device.machine`: the CPU,
    its instruction set as torch sees it, torch, numpy's BLAS kernel): they decide the last digits of
    trained float32 and float64 numbers, which is why claims tables are compared at each number's
    declared precision (`ClaimsTable.compare`)."""
    from attnlab.core.device import machine

    return machine()


MACHINE_KEYS = ("cpu", "cpu_capability", "torch", "numpy_blas")


def machine_warnings(executed: Iterable[dict] | None = None) -> list[str]:
    """One line per machine (CPU, instruction set, torch, numpy's BLAS) other than this one that executed
    chapters in book/ (their `attnlab` metadata; default: every executed chapter), naming what differs and
    what the checks then tolerate."""
    if executed is None:
        executed = [nbformat.read(e.executed, as_version=4).metadata.get("attnlab", {})
                    for e in registry().values() if e.executed.exists()]
    here = executed_on()
    other: dict[tuple[str, ...], int] = {}
    for meta in executed:
        key = tuple(str(meta.get(k, "unrecorded")) for k in MACHINE_KEYS)
        if key != tuple(here[k] for k in MACHINE_KEYS):
            other[key] = other.get(key, 0) + 1
    lines = []
    for key, n in sorted(other.items()):
        differs = ", ".join(f"{k} {v} (here {here[k]})" for k, v in zip(MACHINE_KEYS, key) if v != here[k])
        lines.append(f"{n} chapter(s) were executed on another machine: {differs}. nbval compares their claims "
                     "tables at each number's declared precision (verdicts and words identical, exact values at "
                     "their printed digits, trained values within their row's relative tolerance), which holds "
                     "across x86-64 CPUs; a failure beyond that is a real difference (`attnlab book --force` "
                     "re-executes the book here)")
    return lines


# Another instruction set for torch and another kernel for numpy's BLAS than those that executed the book:
# what `make test` re-runs the claims checks under, to show they hold on other CPUs.
OTHER_CAPABILITY = {"AVX512": "avx2", "AVX512_BF16": "avx2", "AMX": "avx2", "AVX2": "default"}
OTHER_CORETYPE = {"SkylakeX": "Haswell", "Cooperlake": "Haswell", "SapphireRapids": "Haswell", "Zen": "Sandybridge",
                  "Haswell": "Sandybridge"}


def other_machine_env() -> dict[str, str]:
    """ATEN_CPU_CAPABILITY and OPENBLAS_CORETYPE for a machine other than the one that executed most chapters
    of the book: torch's next lower instruction set (AVX-512 -> AVX2 -> none) and an older OpenBLAS kernel."""
    from collections import Counter

    metas = [nbformat.read(e.executed, as_version=4).metadata.get("attnlab", {})
             for e in registry().values() if e.executed.exists()]
    here = executed_on()
    cap = Counter(m.get("cpu_capability", here["cpu_capability"]) for m in metas).most_common(1)[0][0]
    blas = Counter(m.get("numpy_blas", here["numpy_blas"]) for m in metas).most_common(1)[0][0]
    return {"ATEN_CPU_CAPABILITY": OTHER_CAPABILITY.get(cap, "default"),
            "OPENBLAS_CORETYPE": OTHER_CORETYPE.get(blas.split()[-1], "Sandybridge")}


# The chapters `make test` checks a second time as on another CPU: chosen by cost, within this much measured
# chapter time (book/timings.csv), so that `make test` stays within its 20 minutes on the project's machine.
OTHER_CPU_BUDGET_S = 150.0  # 240 until November 2026 (20 chapters); 150: 14 chapters, every paper still twice


def _trained(exp: Experiment) -> bool:
    """Whether a chapter's claims table declares trained precision (a row with rtol or atol > 0)."""
    from .core.claims import MIME

    nb = nbformat.read(exp.executed, as_version=4)
    return any(row.get("rtol") or row.get("atol") for cell in nb.cells if cell.cell_type == "code"
               for out in cell.get("outputs", []) for row in out.get("data", {}).get(MIME, {}).get("rows", []))


def other_cpu_chapters(budget_s: float = OTHER_CPU_BUDGET_S) -> list[Path]:
    """The executed chapters re-checked as on another CPU: of every paper, its cheapest chapter with trained
    rows and its cheapest exact one; then, cheapest first, more chapters with trained rows (the numbers a CPU
    moves) within 60 % of `budget_s` of measured chapter time, and exact ones within the rest. Deterministic,
    so every run checks the same chapters."""
    times = {k: float(v["seconds"]) for k, v in read_timings().items()}
    exps = [e for e in registry().values() if e.executed.exists()]
    cost = lambda e: (times.get(e.id, CI_BUDGET_S), e.id)  # noqa: E731
    trained = {e.id: _trained(e) for e in exps}
    chosen: list[Experiment] = []
    for paper in sorted({e.paper for e in exps}):
        mine = sorted((e for e in exps if e.paper == paper), key=cost)
        for kind in (True, False):
            first = next((e for e in mine if trained[e.id] == kind), None)
            if first is not None:
                chosen.append(first)
    spent = sum(cost(e)[0] for e in chosen)
    for kind, limit in ((True, 0.6 * budget_s), (False, budget_s)):
        for e in sorted((e for e in exps if trained[e.id] == kind), key=cost):
            if e not in chosen and spent + cost(e)[0] <= limit:
                chosen.append(e)
                spent += cost(e)[0]
    return sorted((e.executed for e in chosen), key=str)


def stale_reason(exp: Experiment) -> str | None:
    """Why the executed copy of `exp` is out of date, or None if it is current."""
    if not exp.executed.exists():
        return "never executed"
    meta = json.loads(exp.executed.read_text()).get("metadata", {}).get("attnlab", {})
    now = fingerprint(exp)
    if meta.get("source_hash") != now["source_hash"]:
        return "notebook source changed"
    if meta.get("lib_hash") != now["lib_hash"]:
        return "library code changed"
    if meta.get("full_hash") != now["full_hash"]:
        return "paper-scale results changed"
    if meta.get("parameters", {}) != {}:
        return "executed with non-default parameters"
    return None


def execute(exp: Experiment, output: Path, parameters: dict[str, Any] | None = None,
            store_root: str | None = None, cwd: Path = REPO_ROOT, progress: Any = None, units: bool = False) -> float:
    """Execute the chapter's source with papermill into `output`; return the wall time in seconds.
    `progress` (a `core.progress.CellProgress`, for `attnlab run`) is shown each code cell as it starts
    and the kernel's stderr (the experiment's tqdm bars) as it arrives. `units`: record in the executed
    notebook's metadata (`attnlab.units`) how many units of work the chapter's experiment runs computed
    and loaded from the store (a last cell reads their results' meta; it is removed from the notebook)."""
    import logging

    import jupytext
    import papermill

    logging.getLogger("papermill").setLevel(logging.ERROR)  # its per-line parameter-parsing chatter

    env = {"ATTNLAB_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    if store_root:
        env["ATTNLAB_STORE"] = store_root
    os.environ.update(env)  # the kernel inherits this process's environment
    nb = jupytext.read(exp.notebook)
    if units:  # right after the cell that runs the experiment, so that a later failing cell (a claim) keeps it
        at = next((i + 1 for i, c in enumerate(nb.cells) if c.cell_type == "code" and ".run(" in c.source), len(nb.cells))
        nb.cells.insert(at, nbformat.v4.new_code_cell(_UNITS_CELL, metadata={"tags": [_UNITS_TAG]}))
    if progress is not None:  # the code cells, with papermill's injected parameters and without the units cell
        progress.total = sum(c.cell_type == "code" and bool(c.source.strip()) for c in nb.cells) - units + bool(parameters)
    fp = fingerprint(exp)
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / (output.stem + ".ipynb")
        nbformat.write(nb, src)
        start = time.perf_counter()
        hooks = {} if progress is None else {"stderr_file": progress, "on_cell_start": progress.cell_start}
        try:
            with _kernel_stderr_to(Path(tmp) / "kernel.log"):
                papermill.execute_notebook(str(src), str(output), parameters=parameters or {}, kernel_name="python3",
                                           progress_bar=False, cwd=str(cwd), log_output=False, **hooks)
        except BaseException:  # failed or interrupted (Ctrl-C): the notebook so far, without the units cell
            with contextlib.suppress(Exception):  # a notebook cut short mid-write stays as it is
                if units and output.exists():
                    partial = nbformat.read(output, as_version=4)
                    found = _pop_units(partial)
                    if found:
                        partial.metadata.setdefault("attnlab", {})["units"] = found
                    nbformat.write(partial, output)
            raise
        finally:
            if progress is not None:
                progress.close()
        seconds = time.perf_counter() - start
    done = nbformat.read(output, as_version=4)
    done.metadata["attnlab"] = {**fp, "result": exp.id, "parameters": parameters or {},
                                "seconds": round(seconds, 1), **executed_on(),
                                **({"units": _pop_units(done)} if units else {})}
    done.metadata.pop("papermill", None)
    for cell in done.cells:  # keep executed copies free of per-run timestamps
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
    nbformat.write(done, output)
    return seconds


_UNITS_TAG = "attnlab-units"
_UNITS_CELL = """import json as _json
_metas = {id(_v): _v["meta"] for _v in list(globals().values())
          if isinstance(_v, dict) and isinstance(_v.get("meta"), dict) and "store_hits" in _v["meta"]}
print("ATTNLAB_UNITS", _json.dumps({"runs": len(_metas), **{k: sum(int(m.get(k) or 0) for m in _metas.values())
                                                          for k in ("computed", "store_hits")}}))"""


def _pop_units(nb: nbformat.NotebookNode) -> dict[str, int] | None:
    """Remove the units cell that `execute(units=True)` inserted (and number the executed cells again
    without it); return what it printed: how many units the experiment runs of the chapter (results
    with `meta`) computed and found in the store, or None when it did not run or found no result."""
    import json

    found = None
    for cell in [c for c in nb.cells if _UNITS_TAG in c.metadata.get("tags", [])]:
        nb.cells.remove(cell)
        for out in cell.get("outputs", []):
            for line in "".join(out.get("text", "")).splitlines():
                if line.startswith("ATTNLAB_UNITS "):
                    found = json.loads(line.split(" ", 1)[1])
        if cell.get("execution_count"):
            for later in nb.cells:
                if later.cell_type == "code" and (later.get("execution_count") or 0) > cell.execution_count:
                    later.execution_count -= 1
                    for out in later.get("outputs", []):
                        if out.get("execution_count"):
                            out.execution_count -= 1
    return found if found and found.get("runs") else None


@contextlib.contextmanager
def _kernel_stderr_to(path: Path):
    """Send what the Jupyter kernel process writes to stderr (it inherits file descriptor 2, and
    ipykernel warns there about its transport) to `path`; errors still arrive through papermill."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "w") as log:
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _execute_for_book(exp_id: str, store_root: str) -> tuple[str, float]:
    exp = registry()[exp_id]
    return exp_id, execute(exp, exp.executed, store_root=store_root)


def build_chapters(jobs: int = 2, force: bool = False, only: list[str] | None = None, log=print) -> list[str]:
    """Execute, `jobs` at a time, every chapter whose executed copy is stale; update timings.

    Results are recomputed in a fresh store, so the book is regenerated by the code, not a cache.
    """
    reg = registry()
    todo = [e for e in reg.values() if (only is None or e.id in only) and (force or stale_reason(e))]
    for e in reg.values():
        if e not in todo:
            log(f"up to date   {e.id}")
    if not todo:
        return []
    with tempfile.TemporaryDirectory(prefix="attnlab-store-") as store, \
            ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_execute_for_book, e.id, store): e for e in todo}
        for e in todo:
            log(f"executing    {e.id}  ({'forced' if force else stale_reason(e)})")
        for fut in as_completed(futures):
            exp_id, seconds = fut.result()
            record_timing(exp_id, seconds)
            log(f"done {seconds:6.1f} s  {exp_id}")
    return [e.id for e in todo]


def read_timings() -> dict[str, dict[str, str]]:
    if not TIMINGS.exists():
        return {}
    with TIMINGS.open() as f:
        return {row["result"]: row for row in csv.DictReader(f)}


def record_timing(result_id: str, seconds: float) -> None:
    """Write the measured wall time (one torch thread, scale ci) of a chapter into book/timings.csv."""
    rows = read_timings()
    rows[result_id] = {"result": result_id, "seconds": f"{seconds:.1f}", "threads": "1", "scale": "ci",
                       "measured": time.strftime("%Y-%m-%d")}
    order = list(registry())
    with TIMINGS.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["result", "seconds", "threads", "scale", "measured"])
        w.writeheader()
        for rid in sorted(rows, key=lambda r: order.index(r) if r in order else len(order)):
            w.writerow(rows[rid])


def claims_of(path: Path) -> list[dict[str, str]]:
    """The claims rows shown by an executed chapter (its `# NBVAL_CHECK_OUTPUT` cell). The generated
    pages all read them: each notebook is parsed once per version of the file."""
    return [dict(row) for row in _claims_of(str(path), Path(path).stat().st_mtime_ns)]


@functools.lru_cache(maxsize=None)
def _claims_of(path: str, mtime_ns: int) -> tuple[dict[str, str], ...]:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and CHECK_MARK in cell.source:
            for out in cell.get("outputs", []):
                text = out.get("data", {}).get("text/plain") or out.get("text")
                if text and "| claim |" in text:
                    return tuple(ClaimsTable.parse(text))
    return ()


KIND_OF_MARK = {mark.split()[0]: kind for kind, mark in VERDICT_MARK.items()}
SHORT = {"reproduced": "reproduced", "fails": "fails", "inconclusive": "inconclusive", "not run": "not run",
         "consistency check": "consistency"}


def _kind(row: dict[str, str]) -> str:
    return KIND_OF_MARK.get(row["verdict"].split()[0], "not run")


def _chapter_name(exp: Experiment) -> str:
    """'Title (label)', without repeating a label that the title already says."""
    return exp.title if exp.label.lower().split(":")[0] in exp.title.lower() else f"{exp.title} ({exp.label})"


def count_kinds(rows: list[dict[str, str]]) -> dict[str, int]:
    """How many claims rows of each verdict kind."""
    return {k: sum(_kind(r) == k for r in rows) for k in KINDS}


def _rows_table(rows: list[dict[str, str]], chapter: str | None = None) -> list[str]:
    head = (["chapter"] if chapter is None else []) + ["#", "claim", "paper", "this run", "tolerance", "verdict"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = ([r["chapter"]] if chapter is None else []) + [r["key"], r["claim"], r["paper"], r["ours"],
                                                                r["tolerance"], r["verdict"]]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return out


def scorecard_markdown() -> str:
    """The scorecard page: per paper and chapter, how many claims of each kind; what fails and what
    is inconclusive first; then every chapter's rows. Only "reproduced" counts as a reproduction."""
    chapters = []
    for exp in registry().values():
        rows = claims_of(exp.executed) if exp.executed.exists() else []
        link = f"[{_chapter_name(exp)}](/{Path('book') / exp.id}.ipynb)"
        chapters.append((exp, link, [{**r, "chapter": link} for r in rows]))
    lines = ["# Scorecard", "",
             "Every checkable claim of every chapter, as the executed chapters show them (generated by "
             "`attnlab book`; do not edit). " + LEGEND, "",
             "Only ✅ **reproduced** counts as a reproduction: a value this run measured, within the stated "
             "tolerance of the paper's. A 🔁 consistency check (arithmetic, shapes, a value the formulas fix) "
             "and a ❔ inconclusive row (this scale cannot tell the claim from its alternative) are shown, "
             "never counted. ⏳ not run rows wait for paper scale; the tolerance column gives the command.", "",
             "## Per paper", "",
             "| paper | chapters | " + " | ".join(VERDICT_MARK[k] for k in KINDS) + " |",
             "|---|---|" + "---|" * len(KINDS)]
    for pkg in packages():
        mine = [c for c in chapters if c[0].paper == pkg.ID]
        n = count_kinds([r for c in mine for r in c[2]])
        lines.append(f"| [{pkg.ID[:3]} {pkg.TITLE.split(':')[0]}](/book/{pkg.ID}/overview.md) | {len(mine)} | "
                     + " | ".join(str(n[k]) for k in KINDS) + " |")
    allrows = [r for c in chapters for r in c[2]]
    for kind, title in (("fails", "What fails"), ("inconclusive", "What is inconclusive")):
        picked = [r for r in allrows if _kind(r) == kind]
        lines += ["", f"## {title} ({len(picked)})", ""]
        lines += _rows_table(picked) if picked else ["None."]
    for pkg in packages():
        mine = [c for c in chapters if c[0].paper == pkg.ID]
        if not mine:
            continue
        lines += ["", f"## Paper {pkg.ID[:3]}: {pkg.TITLE}", "",
                  "| chapter | " + " | ".join(SHORT[k] for k in KINDS) + " |", "|---|" + "---|" * len(KINDS)]
        for exp, link, rows in mine:
            n = count_kinds(rows)
            lines.append(f"| {link} | " + " | ".join(str(n[k]) for k in KINDS) + " |")
        for exp, link, rows in mine:
            lines += ["", f"### {_chapter_name(exp)}", "", f"Chapter: {link}", ""]
            lines += _rows_table(rows, chapter=exp.id) if rows else ["Not executed yet."]
    return "\n".join(lines) + "\n"


def status_table(paper: str) -> str:
    """Markdown rows for a paper's overview page: result, chapter, verdict counts, CI time."""
    timings = read_timings()
    out = ["| result | chapter | " + " | ".join(VERDICT_MARK[k] for k in KINDS) + " | CI time |",
           "|---|---|" + "---|" * len(KINDS) + "---|"]
    for exp in registry().values():
        if exp.paper != paper:
            continue
        n = count_kinds(claims_of(exp.executed) if exp.executed.exists() else [])
        t = timings.get(exp.id, {}).get("seconds", "–")
        out.append(f"| {exp.label} | [{exp.title}]({Path(exp.id).name}.ipynb) | "
                   + " | ".join(str(n[k]) for k in KINDS) + f" | {t} s |")
    return "\n".join(out)


def cost_table() -> str:
    """The table of book/costs.md ("What each chapter costs"): every chapter, linked, with its measured CI
    time (book/timings.csv) and its verdicts."""
    timings = read_timings()
    out = ["| chapter (paper result) | CI time | claims: " + " / ".join(SHORT[k] for k in KINDS) + " |",
           "|---|---|---|"]
    for exp in registry().values():
        n = count_kinds(claims_of(exp.executed) if exp.executed.exists() else [])
        t = timings.get(exp.id, {}).get("seconds")
        out.append(f"| {exp.paper[:3]} {exp.label}: [{exp.title}]({exp.id}.ipynb) | {t + ' s' if t else '–'} | "
                   + " / ".join(str(n[k]) for k in KINDS) + " |")
    total = sum(float(timings[e.id]["seconds"]) for e in registry().values() if e.id in timings)
    out += ["", f"{len(registry())} chapters, {total:.0f} s of chapter time in all (measured at CI scale, one "
            "torch thread per chapter, by `attnlab book`; the date of each measurement is in book/timings.csv)."]
    return "\n".join(out)


def _replace_between(path: Path, name: str, text: str) -> None:
    if not path.exists():
        return
    page = path.read_text()
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    if start in page and end in page:
        head, rest = page.split(start, 1)
        path.write_text(f"{head}{start}\n{text}\n{end}{rest.split(end, 1)[1]}")


def papers_table() -> str:
    """The intro page's table of the five papers: links to the paper and to its part of the book."""
    out = ["| id | paper | authors, venue | chapters | ✅ reproduced / claims |", "|---|---|---|---|---|"]
    for pkg in packages():
        exps = [e for e in registry().values() if e.paper == pkg.ID]
        rows = [r for e in exps if e.executed.exists() for r in claims_of(e.executed)]
        n = count_kinds(rows)
        part = f"[{pkg.TITLE}]({pkg.ID}/overview.md)" if (BOOK / pkg.ID / "overview.md").exists() else pkg.TITLE
        where = f"[paper]({pkg.URL})" if pkg.URL else "no public version"
        out.append(f"| {pkg.ID[:3]} | {part} | {pkg.AUTHORS}; {pkg.VENUE}; {where} | {len(exps)} | "
                   f"{n['reproduced']} / {len(rows)} |")
    return "\n".join(out)


# The last part of the toc, "About this book" (pages in book/): using the book, then how it is made.
ABOUT_PAGES = ("rerun", "scorecard", "changelog", "errata", "costs", "performance", "design")
VERDICTS_BEFORE = REPO_ROOT / "results" / "verdicts" / "e975048.json"  # the rows before issue 27's reseeding


def verdict_counts_table() -> str:
    """The README's table: per paper, its chapters and how many claims rows of each verdict kind the executed
    chapters show (the scorecard's first table, with links that work on a code host)."""
    out = ["| paper | chapters | " + " | ".join(VERDICT_MARK[k] for k in KINDS) + " |", "|---|---|" + "---|" * len(KINDS)]
    for pkg in packages():
        exps = [e for e in registry().values() if e.paper == pkg.ID]
        n = count_kinds([r for e in exps if e.executed.exists() for r in claims_of(e.executed)])
        out.append(f"| [{pkg.ID[:3]} {pkg.TITLE.split(':')[0]}](book/{pkg.ID}/overview.md) | {len(exps)} | "
                   + " | ".join(str(n[k]) for k in KINDS) + " |")
    return "\n".join(out)


def changelog_tables(snapshot: Path = VERDICTS_BEFORE) -> str:
    """The changelog page's generated part: per paper, the claims of each verdict kind in a recorded
    snapshot of the executed chapters (`snapshot`: JSON, each chapter's rows as key, claim and kind,
    written from the book at a commit) and now; then every row whose kind changed, was added or was
    removed since, matched by chapter and row key (a key that occurs twice is matched in order)."""
    old = json.loads(snapshot.read_text())
    commit = old["commit"][:7]
    marks = {k: VERDICT_MARK[k].split()[0] for k in KINDS}
    lines = [f"| paper | " + " | ".join(f"{VERDICT_MARK[k]} (then → now)" for k in KINDS) + " |",
             "|---|" + "---|" * len(KINDS)]
    changed: list[str] = []
    for pkg in packages():
        exps = [e for e in registry().values() if e.paper == pkg.ID]
        before = {k: 0 for k in KINDS}
        after = {k: 0 for k in KINDS}
        for exp in exps:
            was = old["chapters"].get(exp.id, [])
            now = [{"key": r["key"], "claim": r["claim"], "kind": _kind(r)}
                   for r in (claims_of(exp.executed) if exp.executed.exists() else [])]
            for r in was:
                before[r["kind"]] += 1
            for r in now:
                after[r["kind"]] += 1
            pending = {}
            for r in was:
                pending.setdefault(r["key"], []).append(r)
            link = f"[{exp.id.split('/')[1]}](/{Path('book') / exp.id}.ipynb)"
            now = [{**r, "claim": r["claim"].replace("|", "\\|")} for r in now]  # a norm ||J|| in a table cell
            for w in was:
                w["claim"] = w["claim"].replace("|", "\\|")
            for r in now:
                prior = pending.get(r["key"], [])
                w = prior.pop(0) if prior else None
                if w is None:
                    changed.append(f"| {link} | {r['key']} | {r['claim']} | (new row) | {marks[r['kind']]} {r['kind']} |")
                elif w["kind"] != r["kind"]:
                    changed.append(f"| {link} | {r['key']} | {r['claim']} | {marks[w['kind']]} {w['kind']} | "
                                   f"{marks[r['kind']]} {r['kind']} |")
            for rest in pending.values():
                for w in rest:
                    changed.append(f"| {link} | {w['key']} | {w['claim']} | {marks[w['kind']]} {w['kind']} | "
                                   "(row removed) |")
        lines.append(f"| {pkg.ID[:3]} | " + " | ".join(f"{before[k]} → {after[k]}" for k in KINDS) + " |")
    out = [f"Claims of each kind at commit `{commit}` and in the book as executed now:", "", *lines, "",
           f"### Rows that changed kind, were added or were removed since `{commit}` ({len(changed)})", ""]
    if changed:
        out += ["| chapter | # | claim (now) | then | now |", "|---|---|---|---|---|", *changed]
    else:
        out.append("None.")
    return "\n".join(out)


def toc_yaml() -> str:
    """_toc.yml from the registry: one part per paper (its overview, chapters in book order, errata),
    then the pages about the book. Written by `attnlab book`, so a registered chapter is in the toc."""
    lines = ["# Generated by `attnlab book` from the registry (attnlab.papers): do not edit.",
             "format: jb-book", "root: book/intro", "parts:"]
    for pkg in packages():
        exps = [e for e in registry().values() if e.paper == pkg.ID]
        if not exps:
            continue
        title = pkg.TITLE.split(":")[0].replace('"', "'")
        lines += [f'  - caption: "Paper {pkg.ID[:3]}: {title}"', "    chapters:"]
        pages = [f"book/{e.id}" for e in exps]
        if (BOOK / pkg.ID / "errata.md").exists():
            pages.append(f"book/{pkg.ID}/errata")
        if (BOOK / pkg.ID / "overview.md").exists():
            lines += [f"      - file: book/{pkg.ID}/overview", "        sections:"]
            lines += [f"          - file: {f}" for f in pages]
        else:
            lines += [f"      - file: {f}" for f in pages]
    lines += ['  - caption: "About this book"', "    chapters:"]
    lines += [f"      - file: book/{page}" for page in ABOUT_PAGES]
    return "\n".join(lines) + "\n"


def write_generated_pages() -> None:
    """Write _toc.yml, book/scorecard.md, the tables of the intro and of the paper overview pages, and the
    generated tables of book/costs.md (`cost_table`), book/changelog.md (`changelog_tables`), the README's verdict counts (`verdict_counts_table`) and book/performance.md (`bench.performance_tables`),
    the campaign plan (results/campaign.toml, `campaign.write_plan`) and the errata pages (`errata`)."""
    (REPO_ROOT / "_toc.yml").write_text(toc_yaml())
    (BOOK / "scorecard.md").write_text(scorecard_markdown())
    _replace_between(BOOK / "intro.md", "papers", papers_table())
    for pkg in packages():
        _replace_between(BOOK / pkg.ID / "overview.md", "status", status_table(pkg.ID))
    _replace_between(BOOK / "costs.md", "costs", cost_table())
    _replace_between(BOOK / "changelog.md", "changes", changelog_tables())
    _replace_between(REPO_ROOT / "README.md", "verdicts", verdict_counts_table())
    from .bench import performance_tables

    _replace_between(BOOK / "performance.md", "bench", performance_tables())
    from .campaign import write_plan

    write_plan()  # results/campaign.toml: what each chapter's paper-scale run unlocks and costs
    from .errata import write_errata_pages, write_overview_pages

    write_overview_pages()  # book/<paper>/overview.md from lib/attnlab/papers/<pkg>/overview.md.in
    write_errata_pages()  # book/<paper>/errata.md from the papers' errata sources and the executed chapters


def toc_files() -> list[str]:
    """Every file the _toc.yml names (without suffix)."""
    import yaml

    toc = yaml.safe_load((REPO_ROOT / "_toc.yml").read_text())
    found: list[str] = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                found.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc.get("parts", toc.get("chapters", [])))
    return found


def check() -> list[str]:
    """Fast static checks; returns one line per problem (empty: all good)."""
    from .core.store import quarantined

    problems = []
    for path in quarantined(REPO_ROOT / "results" / "full"):
        problems.append(f"{path.relative_to(REPO_ROOT)}: a corrupt results/full entry was moved aside here; "
                        "recompute it (attnlab run ... --scale full --headless) and delete this file")
    listed = set(toc_files())
    timings = read_timings()
    for f in listed:
        if not any((REPO_ROOT / (f + ext)).exists() for ext in (".md", ".ipynb")):
            problems.append(f"_toc.yml names {f}, which does not exist")
    for exp in registry().values():
        if not exp.notebook.exists():
            problems.append(f"{exp.id}: notebook source {exp.notebook.relative_to(REPO_ROOT)} is missing")
            continue
        if f"book/{exp.id}" not in listed:
            problems.append(f"{exp.id}: not listed in _toc.yml (expected book/{exp.id})")
        text = exp.notebook.read_text()
        if "tags: [parameters]" not in text or 'scale = "ci"' not in text:
            problems.append(f"{exp.id}: no cell tagged 'parameters' with scale = \"ci\"")
        if CHECK_MARK not in text:
            problems.append(f"{exp.id}: no claims table cell marked {CHECK_MARK}")
        reason = stale_reason(exp)
        if reason:
            problems.append(f"{exp.id}: executed copy is stale ({reason}); run `attnlab book`")
        t = timings.get(exp.id)
        if t is None:
            problems.append(f"{exp.id}: no measured CI time in book/timings.csv")
        elif float(t["seconds"]) > CI_BUDGET_S:
            problems.append(f"{exp.id}: CI time {t['seconds']} s exceeds the {CI_BUDGET_S:.0f} s budget")
    return problems

