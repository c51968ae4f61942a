"""The one shape of every paper (DESIGN.md, "Package shape"), checked over the whole registry, so a
new paper or chapter that breaks it fails here: registration, chapter = notebook = results module =
book page, presets, parameters cells, docstrings, the import graph, and results/full provenance."""

import ast
import json
import re
from pathlib import Path

import jupytext
import pytest

from attnlab.core.experiment import OPERATIONAL
from attnlab.core.params import SCALES
from attnlab.notebooks import toc_files
from attnlab.papers import PAPERS, packages, registry, results_modules, unplaced
from conftest import REPO

LIB = REPO / "lib" / "attnlab"
EXPS = list(registry().values())


def test_every_paper_package_declares_its_identity():
    for pkg in packages():
        for attr in ("ID", "TITLE", "AUTHORS", "VENUE", "URL", "BOOK_ORDER"):
            assert getattr(pkg, attr, None) is not None, f"{pkg.__name__} lacks {attr}"
        assert re.fullmatch(r"\d{3}-[a-z]+", pkg.ID), pkg.ID
        assert pkg.__name__.split(".")[-1] == f"p{pkg.ID[:3]}_{pkg.ID[4:]}", pkg.__name__
        assert pkg.URL == "" or pkg.URL.startswith("https://"), pkg.URL  # "": no public version
        assert len(set(pkg.BOOK_ORDER)) == len(pkg.BOOK_ORDER), f"{pkg.ID}: a slug twice in BOOK_ORDER"
    assert len(PAPERS) == len({p.ID for p in packages()})


def test_every_results_module_defines_experiments():
    for pkg in packages():
        for m in results_modules(pkg):
            assert isinstance(getattr(m, "EXPERIMENTS", None), (tuple, list)) and m.EXPERIMENTS, \
                f"{m.__name__} defines no EXPERIMENTS"


def test_every_chapter_is_placed_in_book_order():
    assert unplaced() == {}, f"chapters not in BOOK_ORDER, or BOOK_ORDER slugs without a module: {unplaced()}"


@pytest.mark.parametrize("exp", EXPS, ids=[e.id for e in EXPS])
def test_chapter_is_notebook_results_module_and_book_page(exp):
    paper, slug = exp.id.split("/")
    pkg = next(p for p in packages() if p.ID == paper)
    module = next(m for m in results_modules(pkg) if exp in m.EXPERIMENTS)
    name = module.__name__.rsplit(".", 1)[1]
    if len(module.EXPERIMENTS) == 1:
        assert name == slug.replace("-", "_"), f"{exp.id} lives in results/{name}.py, not results/{slug.replace('-', '_')}.py"
    assert exp.notebook.exists(), f"{exp.id}: no {exp.notebook.relative_to(REPO)}"
    assert exp.executed.exists(), f"{exp.id}: no executed {exp.executed.relative_to(REPO)}; run `attnlab book`"
    assert f"book/{exp.id}" in toc_files(), f"{exp.id}: not in _toc.yml"


def test_toc_lists_chapters_in_book_order():
    listed = [f for f in toc_files() if f.count("/") == 2]
    ids = [e.id for e in EXPS]
    chapters = [f[len("book/"):] for f in listed if f[len("book/"):] in ids]
    assert chapters == ids, "the _toc.yml order differs from the papers' BOOK_ORDER (and PAPERS order)"


@pytest.mark.parametrize("exp", EXPS, ids=[e.id for e in EXPS])
def test_presets_resolve_and_parameters_cell_names_only_declared_parameters(exp):
    assert "ci" in exp.presets and "full" in exp.presets, f"{exp.id}: needs a ci and a full preset"
    for scale in exp.presets:
        assert scale in SCALES
        exp.config(scale)  # raises ParameterError if a preset is incomplete or invalid
    nb = jupytext.read(exp.notebook)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"{exp.id}: exactly one cell tagged 'parameters'"
    names = {t.id for node in ast.parse(cells[0].source).body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    assert "scale" in names
    assert names <= set(exp.names), f"{exp.id}: the parameters cell sets undeclared {sorted(names - set(exp.names))}"


@pytest.mark.parametrize("exp", EXPS, ids=[e.id for e in EXPS])
def test_compute_says_what_it_trains_or_loads_and_what_it_holds(exp):
    doc = (exp.compute.__doc__ or "").strip()
    assert len(doc) >= 60 and re.search(r"\b(result|holds|returns)\b", doc, re.I), \
        f"{exp.id}: {exp.compute.__name__} needs a docstring saying what it trains or loads and what its result holds"


def _imports(path: Path) -> list[str]:
    """Absolute module names imported by a file (relative imports resolved)."""
    parts = path.relative_to(LIB.parent).with_suffix("").parts
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(parts[:len(parts) - node.level]) if node.level else ""
            mod = ".".join(x for x in (base, node.module or "") if x)
            out += [mod] + [f"{mod}.{a.name}" for a in node.names]
    return out


def test_import_graph_runs_from_papers_to_core_and_results_modules_stand_alone():
    for path in (LIB / "core").rglob("*.py"):
        bad = [m for m in _imports(path) if m.startswith("attnlab.papers") or m.startswith("attnlab.notebooks")]
        assert not bad, f"{path.relative_to(REPO)} imports {bad}: core names no paper"
        if not path.name.endswith("_test.py"):  # tests may use made-up ids
            assert not re.search(r"\b(p00\d_\w+|00\d-[a-z]+)", path.read_text()), f"{path.relative_to(REPO)} names a paper"
    for path in (LIB / "papers").glob("p*/results/*.py"):
        if path.name.endswith("_test.py"):
            continue
        own = path.with_suffix("").name
        bad = [m for m in _imports(path) if re.search(r"\.results\.\w+$", m) and not m.endswith("." + own)
               and not m.endswith("results.__init__")]
        bad = [m for m in bad if (path.parent / (m.rsplit(".", 1)[1] + ".py")).exists()]
        assert not bad, f"{path.relative_to(REPO)} imports another results module: {bad}"


def test_results_full_holds_only_runs_of_the_full_preset():
    """Every committed paper-scale entry says it was computed by its result's full preset."""
    reg = registry()
    for path in sorted((REPO / "results" / "full").rglob("*.json")):
        if "checkpoints" in path.parts or path.name.startswith("."):  # a killed writer's .tmp- file
            continue
        rel = path.relative_to(REPO / "results" / "full")
        result_id = "/".join(rel.parts[:2])
        assert result_id in reg, f"{rel}: no result {result_id}"
        run = json.loads(path.read_text()).get("provenance", {}).get("run")
        assert run is not None, f"{rel}: no run provenance (scale and config of the run that wrote it)"
        assert run["scale"] == "full" and run["result"] == result_id, f"{rel}: written by {run['scale']} {run['result']}"
        differs = reg[result_id].differs_from_preset(run["config"], "full")
        assert not differs, f"{rel}: its run's {differs} differ from the full preset (a smoke test?)"


def test_operational_parameters_are_known():
    assert {"scale", "device"} <= OPERATIONAL


# Hashing vocabulary, the one use of the word "digest" the sources may keep: hashlib's .hexdigest()
# and .digest() calls.
_HASHING = re.compile(r"hexdigest|\.digest\(")


def _own_sources() -> list[Path]:
    """The files a reader gets as the book and its code: README, CONTRIBUTING, _config.yml, the chapter
    sources, the hand-written and generated pages of book/ (not the executed .ipynb, regenerated by
    `attnlab book`), and lib/ (not its build outputs). book/scorecard.md is left out: it is generated
    from the executed chapters' claims tables, whose texts come from lib/ and notebooks/, checked here."""
    files = [REPO / name for name in ("README.md", "CONTRIBUTING.md", "_config.yml") if (REPO / name).exists()]
    files += [p for p in sorted((REPO / "notebooks").rglob("*")) if p.is_file()]
    files += [p for p in sorted((REPO / "book").rglob("*.md")) if p != REPO / "book" / "scorecard.md"]
    files += [p for p in sorted((REPO / "lib").rglob("*")) if p.is_file() and p.suffix != ".pyc"
              and not any(part == "__pycache__" or part.endswith(".egg-info") for part in p.parts)]
    return files


def test_the_book_and_code_never_cite_the_private_digest():
    """The book stands on its own: no page, chapter source, docstring, comment or claim text refers to
    our private working notes (the "digest"), which no reader can open. A statement cites the paper
    (equation, figure, table, section) or the authors' released files by name, or says that a value
    is our derivation and writes it out."""
    hits = []
    for path in _own_sources():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # a binary file: nothing to cite
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if re.search("digest", _HASHING.sub("", line), re.IGNORECASE):
                hits.append(f"{path.relative_to(REPO)}:{n}: {line.strip()[:100]}")
    assert not hits, f"{len(hits)} line(s) cite the private digest:\n" + "\n".join(hits[:40])


def test_claims_reject_the_digest_as_a_source():
    """A paper value comes from the paper's text, a figure, the authors' released data, or our derivation
    (written out in the chapter); "digest" is no longer a source kind. (A literal source="digest" in any
    row kind is also caught by the word check above.)"""
    from attnlab.core.claims import SOURCES, ClaimsTable

    assert "digest" not in SOURCES and "derived" in SOURCES
    with pytest.raises(ValueError):
        ClaimsTable().add("1", "a claim", paper=1.0, ours=1.0, holds=True, tolerance="exact", source="digest")
    ClaimsTable().add("1", "a claim", paper=1.0, ours=1.0, holds=True, tolerance="exact", source="derived")
