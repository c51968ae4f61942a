"""Experiments: one per paper result, each with its parameters, presets and compute function.

A chapter notebook and `attnlab run --headless` both call `Experiment.run(config)`, which
reads and writes the result store, so a rerun resumes instead of starting over.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from .device import select_device, set_threads
from .params import Param, ParameterError, resolve
from .store import REPO_ROOT, ResultStore, default_root


@dataclass(frozen=True)
class Experiment:
    """A paper result. `id` is '<paper folder>/<result slug>', e.g. '004-memorization/fig1a-accuracy-vs-heads'."""

    id: str
    label: str  # as the paper names it: "Fig. 1a, Fig. 2b (Exps. 1 and 4)"
    title: str
    params: tuple[Param, ...]
    presets: Mapping[str, Mapping[str, Any]]
    compute: Callable[["Context"], dict]
    summary: str = ""

    @property
    def paper(self) -> str:
        return self.id.split("/")[0]

    @property
    def notebook(self) -> Path:
        return REPO_ROOT / "notebooks" / f"{self.id}.md"

    @property
    def executed(self) -> Path:
        return REPO_ROOT / "book" / f"{self.id}.ipynb"

    def config(self, scale: str = "ci", **overrides: Any) -> dict[str, Any]:
        """The validated config: preset of `scale` with overrides (None keeps the preset value)."""
        return resolve(self.params, self.presets, scale, overrides, where=self.id)

    def run(self, config: Mapping[str, Any] | None = None, *, store_root: str | Path | None = None,
            progress: bool = True) -> dict:
        """Compute (or load from the store) the result for `config`."""
        config = dict(config or self.config())
        config = self.config(config.pop("scale"), **config)  # re-validate whatever was passed in
        set_threads()
        ctx = Context(self, config, ResultStore(store_root or default_root(config["scale"]), self.id),
                      select_device(config["device"]), progress)
        start = time.perf_counter()
        result = self.compute(ctx)
        result.setdefault("meta", {}).update(
            seconds=round(time.perf_counter() - start, 2), store_hits=ctx.store.hits,
            computed=ctx.store.computed, device=str(ctx.device))
        return result

    def stored(self, scale: str = "full", **overrides: Any) -> dict | None:
        """The result of `scale` assembled from the store alone, or None if any part is missing."""
        config = self.config(scale, **overrides)
        ctx = Context(self, config, ResultStore(default_root(scale), self.id), select_device("cpu"),
                      progress=False, readonly=True)
        try:
            return self.compute(ctx)
        except MissingResult:
            return None


class MissingResult(LookupError):
    """A read-only run needs a result that is not in the store."""


class Incomplete(RuntimeError):
    """A long computation stopped at its time limit after saving its progress; rerun the same
    command to resume (the CLI exits with 75, EX_TEMPFAIL)."""


@dataclass
class Context:
    """What a compute function gets: its experiment, config, store, device and progress flag."""

    experiment: Experiment
    config: dict[str, Any]
    store: ResultStore
    device: Any
    progress: bool = True
    readonly: bool = False  # True: never compute, raise MissingResult instead

    def unit(self, key: dict, compute: Callable[[], Any]) -> Any:
        """The stored result of one unit of work `key`; if absent, `compute()` it (timed) and store
        it, or raise MissingResult when the context is read-only."""
        found = self.store.get(key)
        if found is not None:
            return found
        if self.readonly:
            raise MissingResult(f"{key} is not in {self.store.dir}")
        start = time.perf_counter()
        result = compute()
        self.store.put(key, result, seconds=time.perf_counter() - start, device=str(self.device))
        self.store.computed += 1
        return result


PAPER_PACKAGES = ("attnlab.papers.p002_counting", "attnlab.papers.p004_memorization")


def registry() -> dict[str, Experiment]:
    """Every experiment of every paper, by id, in book order (each paper package lists its modules)."""
    out: dict[str, Experiment] = {}
    for package in PAPER_PACKAGES:
        pkg = importlib.import_module(package)
        exps = [e for m in pkg.EXPERIMENT_MODULES for e in importlib.import_module(f"{package}.{m}").EXPERIMENTS]
        order = list(pkg.BOOK_ORDER)
        unplaced = [e.id for e in exps if e.id.split("/", 1)[1] not in order]
        if unplaced:
            raise RuntimeError(f"{package}.BOOK_ORDER does not place {unplaced}")
        for exp in sorted(exps, key=lambda e: order.index(e.id.split("/", 1)[1])):
            out[exp.id] = exp
    return out


def get(result_id: str) -> Experiment:
    """The experiment `result_id`, or a ParameterError listing the known ones."""
    reg = registry()
    if result_id not in reg:
        raise ParameterError(f"unknown result {result_id!r}; known results: {', '.join(reg)}")
    return reg[result_id]
