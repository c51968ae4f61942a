"""The papers of the book: the one list of paper packages, and the registry built from it.

A paper is a subpackage `pNNN_<short>/` (see DESIGN.md, "Package shape") whose `__init__`
defines `ID` (its folder in notebooks/, book/ and results/, e.g. "004-memorization"), `TITLE`,
`AUTHORS`, `URL` (where to read it) and `BOOK_ORDER` (its chapter slugs in the paper's order).
Its chapters are the modules of its `results/` subpackage, each defining `EXPERIMENTS` (one
`Experiment` per chapter; twin chapters may share one module). Adding a paper is its folder
plus one line in `PAPERS`; nothing in `core/` names a paper.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from types import ModuleType

from attnlab.core.experiment import Experiment
from attnlab.core.params import ParameterError

# The paper packages, in book order.
PAPERS = (
    "p000_capacity",
    "p001_positional",
    "p002_counting",
    "p003_allocation",
    "p004_memorization",
)


def packages() -> list[ModuleType]:
    """The imported paper packages, in book order."""
    return [importlib.import_module(f"{__name__}.{name}") for name in PAPERS]


def package_of(paper_id: str) -> ModuleType:
    """The package of paper `paper_id` (e.g. "002-counting")."""
    for pkg in packages():
        if pkg.ID == paper_id:
            return pkg
    raise ParameterError(f"unknown paper {paper_id!r}; known papers: {', '.join(p.ID for p in packages())}")


def results_modules(pkg: ModuleType) -> list[ModuleType]:
    """Every module of the paper's `results/` subpackage (one per chapter, or per twin chapters)."""
    results = importlib.import_module(f"{pkg.__name__}.results")
    return [importlib.import_module(f"{results.__name__}.{m.name}")
            for m in pkgutil.iter_modules(results.__path__) if not m.name.endswith("_test")]


def unplaced() -> dict[str, list[str]]:
    """Per paper, the chapters that a results module defines but BOOK_ORDER does not place (a
    chapter in progress; the contract test fails on any), and the slugs BOOK_ORDER names that no
    results module defines."""
    out = {}
    for pkg in packages():
        exps = {e.id.split("/", 1)[1] for m in results_modules(pkg) for e in getattr(m, "EXPERIMENTS", ())}
        bad = sorted(exps - set(pkg.BOOK_ORDER)) + [f"{s} (no results module)" for s in pkg.BOOK_ORDER if s not in exps]
        if bad:
            out[pkg.ID] = bad
    return out


@functools.cache
def registry() -> dict[str, Experiment]:
    """Every chapter's experiment of every paper, by id, in book order. A slug's module is
    `results/<slug with underscores>.py`; twin chapters are found in the module they share. Modules
    that BOOK_ORDER does not need are not imported, so a chapter in progress breaks nothing (the
    contract test imports them all; see `unplaced`)."""
    out: dict[str, Experiment] = {}
    for pkg in packages():
        results = importlib.import_module(f"{pkg.__name__}.results")
        names = [m.name for m in pkgutil.iter_modules(results.__path__) if not m.name.endswith("_test")]
        found: dict[str, Experiment] = {}
        errors: list[str] = []

        def load(name: str) -> None:
            try:
                module = importlib.import_module(f"{results.__name__}.{name}")
            except Exception as err:  # reported below only if a needed chapter stays missing
                errors.append(f"results/{name}.py: {type(err).__name__}: {err}")
                return
            found.update({e.id.split("/", 1)[1]: e for e in getattr(module, "EXPERIMENTS", ())})

        for slug in pkg.BOOK_ORDER:
            if slug.replace("-", "_") in names and slug not in found:
                load(slug.replace("-", "_"))
        for name in names:
            if any(s not in found for s in pkg.BOOK_ORDER):
                load(name)
        missing = [s for s in pkg.BOOK_ORDER if s not in found]
        if missing:
            raise RuntimeError(f"{pkg.__name__}: no results module defines {missing}" +
                               ("; " + "; ".join(errors) if errors else ""))
        for slug in pkg.BOOK_ORDER:
            out[found[slug].id] = found[slug]
    return out


def get(result_id: str) -> Experiment:
    """The experiment `result_id`, or a ParameterError listing the known ones (closest first)."""
    import difflib

    reg = registry()
    if result_id not in reg:
        close = [r for r in reg if result_id.lower() in r.lower()][:3] or difflib.get_close_matches(
            result_id, reg, n=3, cutoff=0.5)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise ParameterError(f"unknown result {result_id!r}; {hint}known results: {', '.join(reg)}")
    return reg[result_id]
