"""Experiments: one per paper result, each with its parameters, presets and compute function.

A chapter notebook and `attnlab run --headless` both call `Experiment.run(config)`, which
reads and writes the result store, so a rerun resumes instead of starting over.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Mapping

from .device import provenance, select_device, set_threads
from .params import COMMON, Param, resolve
from .progress import tqdm
from .store import REPO_ROOT, ResultStore, default_root


# Parameters that say how a run is executed, not what it computes: they may differ from the preset.
OPERATIONAL = frozenset({"scale", "device", "chunk", "time_limit", "checkpoint_every"})


@dataclass(frozen=True)
class Experiment:
    """A paper result. `id` is '<paper folder>/<result slug>', e.g. '<NNN-paper>/<chapter-slug>'."""

    id: str
    label: str  # as the paper names it: "Fig. 1a, Fig. 2b (Exps. 1 and 4)"
    title: str
    params: tuple[Param, ...]
    presets: Mapping[str, Mapping[str, Any]]
    compute: Callable[["Context"], dict]
    summary: str = ""
    # Knobs added after paper-scale runs were stored, with the value those runs had (e.g. {"seeds": 1, "seed": 0}
    # for a chapter that trained one seed before it had a seed knob): such a run is still a run of the full preset.
    added_since_stored: Mapping[str, Any] = field(default_factory=dict)

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

    def differs_from_preset(self, config: Mapping[str, Any], scale: str = "full") -> list[str]:
        """The parameters (other than OPERATIONAL ones) whose value in `config` is not the preset's (a knob
        absent from `config` counts with its `added_since_stored` value)."""
        preset = self.config(scale)
        return sorted(k for k in preset if k not in OPERATIONAL
                      and config.get(k, self.added_since_stored.get(k)) != preset[k])

    @property
    def names(self) -> tuple[str, ...]:
        """Every parameter a chapter's `parameters` cell may set: `scale`, `device` and the declared ones."""
        return tuple(p.name for p in COMMON + tuple(self.params))

    def config_from(self, namespace: Mapping[str, Any]) -> dict[str, Any]:
        """The validated config from a notebook's namespace: each declared parameter is read by its
        name (absent or None keeps the preset's value), so a knob is written once, in the
        parameters cell. `scale` defaults to "ci"."""
        values = {name: namespace.get(name) for name in self.names}
        return self.config(values.pop("scale") or "ci", **values)

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

    def at_paper_scale(self, note: str = "") -> dict | None:
        """The stored paper-scale result (`results/full/<id>`), or None after saying how far the
        stored run has got and which command completes it (`note`: what that run costs)."""
        full = self.stored("full")
        if full is None:
            stored = len(ResultStore(default_root("full"), self.id).entries())
            progress = (f"A paper-scale run is in progress: {stored} unit(s) are stored in results/full/{self.id}/, "
                        "not yet all of them." if stored else "No stored paper-scale run yet.")
            print(f"{progress} Produce it (resumable: a rerun continues where it stopped) with\n"
                  f"  attnlab run {self.id} --scale full --headless\n"
                  + (f"({note})\n" if note else "")
                  + f"then commit results/full/{self.id}/.")
        return full


class MissingResult(LookupError):
    """A read-only run needs a result that is not in the store."""


class Incomplete(RuntimeError):
    """A long computation stopped at its time limit after saving its progress; rerun the same
    command to resume (the CLI exits with 75, EX_TEMPFAIL)."""


@dataclass
class Context:
    """What a compute function gets: its experiment, config, store, device and progress flag, and
    the backend that runs planned batches of units: "local" (in this process) or a
    `attnlab.core.distributed.RayBackend` (each group a Ray task)."""

    experiment: Experiment
    config: dict[str, Any]
    store: ResultStore
    device: Any
    progress: bool = True
    readonly: bool = False  # True: never compute, raise MissingResult instead
    backend: Any = None  # None: Context.default_backend ("local" unless inside `Context.using(...)`)

    default_backend: ClassVar[Any] = "local"

    def __post_init__(self):
        if self.backend is None:
            self.backend = Context.default_backend

    @classmethod
    @contextmanager
    def using(cls, backend: Any) -> Iterator[Any]:
        """Within the block, contexts created without a backend use `backend` (e.g. `Experiment.run`
        under `attnlab run --backend ray`)."""
        before, cls.default_backend = cls.default_backend, backend
        try:
            yield backend
        finally:
            cls.default_backend = before

    @property
    def run_info(self) -> dict:
        """The provenance of a stored unit: which result, at which scale, with which config."""
        return {"result": self.experiment.id, "scale": self.config["scale"], "config": self.config}

    def unit(self, key: dict, compute: Callable[[], Any]) -> Any:
        """The stored result of one unit of work `key`; if absent, `compute()` it (timed) and store
        it, or raise MissingResult when the context is read-only. Always computed in this process."""
        found = self.store.get(key)
        if found is not None:
            return found
        if self.readonly:
            raise MissingResult(f"{key} is not in {self.store.dir}")
        start = time.perf_counter()
        result = compute()
        self.store.put(key, result, seconds=time.perf_counter() - start, device=provenance(self.device), run=self.run_info)
        self.store.computed += 1
        return result

    def units(self, keys: list[dict], compute: Callable[[list[int]], Any],
              plan: Callable[[list[int]], list[list[int]]] | None = None, desc: str = "") -> list[Any]:
        """The batch form of `unit`: the stored results of `keys`, each looked up once.

        The missing ones (indices into `keys`) are split into groups by `plan(missing)`: one group
        is one tensor program, one resumable chunk, in the order a single process trains them
        (without a plan, all of `missing` is one group). `compute(group)` trains exactly one
        group and yields `(i, result, seconds)` for each i of it (seconds: the unit's share of the
        time, for the provenance). Each result is stored as soon as it arrives, so an interrupted
        batch resumes with what was finished. Locally the groups run one after another in this
        process (a bar over them, titled `desc`, when there are two or more); with a Ray backend
        each group is a Ray task (`attnlab.core.distributed`). Read-only contexts raise
        MissingResult instead of computing."""
        found: dict[int, Any] = {}
        for i, key in enumerate(keys):
            hit = self.store.get(key)
            if hit is not None:
                found[i] = hit
        missing = [i for i in range(len(keys)) if i not in found]
        if missing and self.readonly:
            raise MissingResult(f"{len(missing)} of {len(keys)} units are not in {self.store.dir}")
        if not missing:
            return [found[i] for i in range(len(keys))]
        groups = self.groups(plan, missing)
        if plan is not None and self.backend != "local":
            found.update(self.backend.run_groups(self, keys, compute, groups, desc=desc))
        else:
            for i, result, seconds in self._local(compute, groups, plan is not None, desc):
                self.store.put(keys[i], result, seconds=seconds, device=provenance(self.device), run=self.run_info)
                self.store.computed += 1
                found[i] = result
        return [found[i] for i in range(len(keys))]

    @staticmethod
    def groups(plan: Callable[[list[int]], list[list[int]]] | None, missing: list[int]) -> list[list[int]]:
        """`plan(missing)`, checked to split `missing` into non-empty groups, each index in exactly
        one (ValueError otherwise); without a plan, `[missing]`."""
        if plan is None:
            return [list(missing)]
        groups = [list(g) for g in plan(list(missing))]
        flat = [i for g in groups for i in g]
        if any(not g for g in groups) or len(flat) != len(set(flat)) or sorted(flat) != sorted(missing):
            raise ValueError(f"a plan must split the missing units {missing} into non-empty groups, each unit in "
                             f"exactly one; it gave {groups}")
        return groups

    def _local(self, compute: Callable[[list[int]], Any], groups: list[list[int]], planned: bool, desc: str):
        """Run the groups in this process, in order; a planned group must yield its own units only."""
        if not planned:
            yield from compute(groups[0])
            return
        for group in tqdm(groups, desc=desc or "programs", disable=not self.progress or len(groups) < 2):
            allowed = set(group)
            for i, result, seconds in compute(group):
                if i not in allowed:
                    raise ValueError(f"compute(group) yielded unit {i}, which is not in its group {group}")
                yield i, result, seconds
