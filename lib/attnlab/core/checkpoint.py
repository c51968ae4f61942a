"""Checkpoint and resume inside a training program, and the time limit of a run.

A paper-scale program (hours of Adam steps) must fit the short windows a GPU grants: it saves its
whole training state every `checkpoint_every` steps, and stops after the first save past the
run's time limit (with `checkpoint_every` 0: saves when the limit passes) by raising
`Incomplete` (the CLI exits with 75); the same command loads the state and goes on, and gives bit
for bit the result of an uninterrupted program (the state holds everything the remaining steps
read: parameters, Adam moments and per-replica step counts, the active mask, the batch position,
the log so far).

- `Deadline(minutes)`: the time limit of one run, measured from its creation (`deadline_of(ctx)`
  creates it once per run, at the first sweep that asks, so all sweeps of one chapter share it).
  `check()` raises `Incomplete` once it has passed; `next_program()` does so at a program boundary,
  except before the run's first program (every call makes progress).
- `Checkpoint(path, every, deadline)`: one program's state file. `due(done)` says whether the loop
  saves after `done` steps: every `every` steps (a run past its deadline then stops at the next of
  them, at most `every` steps late), or with `every` 0 as soon as the deadline has passed.
  `save(state)` writes atomically (temporary file, fsync, os.replace: a process killed at any
  moment leaves the previous checkpoint or the new one, never half of one);
  `stop_if_late(...)` raises `Incomplete` after a save past the deadline; `load()` reads it back
  (torch.load with weights_only: tensors, numbers, strings, lists and dicts only); `remove()` once
  the program's results are stored.
- `RESUME_PARAMS` (declared in core.params with the other shared knobs): `checkpoint_every` and `time_limit`.
- `program_checkpoint(ctx, keys)`: the checkpoint of the program that trains the units `keys`,
  with ctx.config's `checkpoint_every` and time limit, or None when neither is set (CI scale: the
  loop then does no checkpoint work at all).

Where the files go: `<store root>/checkpoints/<result id>/<hash of the program's unit keys>.pt`,
that is results/<scale>/checkpoints/<paper>/<slug>/ (or $ATTNLAB_STORE/<scale>/checkpoints/... for
the caches), git-ignored (`results/**/checkpoints/`). A program stopped at the end of one GPU
window resumes in the next when that folder is carried along with results/<scale>/; without it,
the program starts over (its finished units are in the store either way).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from .experiment import Incomplete
from .hashing import stable_hash
from .params import RESUME_PARAMS  # noqa: F401 (declared with the shared knobs in params; chapters import it here too)

CHECKPOINTS = "checkpoints"



class Deadline:
    """The time limit of a run: `minutes` from `start` (time.time(); default now). 0 or None: no limit.
    An absolute time, so the workers of a cluster share it."""

    def __init__(self, minutes: float | None, start: float | None = None):
        self.minutes = float(minutes or 0)
        self.at = (time.time() if start is None else start) + 60 * self.minutes if self.minutes else None

        self.programs = 0  # programs started under this limit (see `next_program`)

    @classmethod
    def absolute(cls, at: float | None) -> "Deadline":
        """The deadline at time.time() = `at` (None: none)."""
        out = cls(0)
        out.at = at
        return out

    def __bool__(self) -> bool:
        return self.at is not None

    def passed(self) -> bool:
        return self.at is not None and time.time() > self.at

    def check(self, what: str = "") -> None:
        """Raise `Incomplete` if the limit has passed (between programs: nothing to save)."""
        if self.passed():
            raise Incomplete(f"{self} reached{' ' + what if what else ''}; finished units are stored: rerun the "
                             "same command to resume")

    def __str__(self) -> str:
        return f"time limit of {self.minutes:g} minutes" if self.minutes else "time limit"


    def next_program(self, what: str = "") -> None:
        """Before a program: raise `Incomplete` if the limit has passed and this run has started a
        program already (so every call makes progress, however small the limit)."""
        if self.programs:
            self.check(what)
        self.programs += 1


def deadline_of(ctx: Any) -> Deadline:
    """The run's `Deadline` from ctx.config["time_limit"] (minutes, absent or 0: none), created at the
    first call and kept on the context, so every sweep of the run counts from the same start."""
    found = getattr(ctx, "_deadline", None)
    if found is None:
        found = Deadline(ctx.config.get("time_limit") or 0)
        ctx._deadline = found
    return found


class Checkpoint:
    """One program's training state at `path`, saved every `every` steps (0: only at the deadline)."""

    def __init__(self, path: str | Path, every: int = 0, deadline: Deadline | None = None):
        self.path = Path(path)
        self.every = int(every or 0)
        self.deadline = deadline if deadline is not None else Deadline(0)

    def due(self, done: int) -> bool:
        """Save after `done` steps? Every `every` steps; with `every` 0, as soon as the deadline has
        passed. (So with `every` > 0 a program stops at its first checkpoint after the deadline, at
        most `every` steps late, and a call always trains `every` steps or to the end.)"""
        if self.every > 0:
            return done % self.every == 0
        return self.deadline.passed()

    def save(self, state: dict) -> None:
        """Write `state` atomically (temporary file in the same folder, fsync, os.replace)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp-", suffix=".pt")
        try:
            with os.fdopen(fd, "wb") as f:
                torch.save(state, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def stop_if_late(self, done: int, total: int, what: str = "") -> None:
        """After a save: raise `Incomplete` if the deadline has passed."""
        if self.deadline.passed():
            raise Incomplete(f"{self.deadline} reached after {done} of {total} "
                             f"steps{' of ' + what if what else ''}; checkpoint saved to {self.path}: rerun the "
                             "same command to resume")

    def load(self, device: Any = "cpu") -> dict | None:
        """The saved state (tensors on `device`), or None when there is none."""
        if not self.path.exists():
            return None
        return torch.load(self.path, map_location=device, weights_only=True)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def checkpoint_dir(ctx: Any) -> Path:
    """<store root>/checkpoints/<result id> of the run of `ctx` (results/<scale>/checkpoints/<id>)."""
    parts = len(Path(ctx.experiment.id).parts)
    return ctx.store.dir.parents[parts - 1] / CHECKPOINTS / ctx.experiment.id


def program_checkpoint(ctx: Any, keys: list[dict], every: int | None = None) -> Checkpoint | None:
    """Call at the start of each program: the checkpoint of the program that trains the units `keys`
    (named by their hash), saved every `every` steps (default ctx.config's `checkpoint_every`) and at
    the run's deadline (`deadline_of`); None when there is neither (nothing to save, no extra work
    in the training loop). First, past the deadline, it raises `Incomplete` unless this is the run's
    first program (`Deadline.next_program`): a sweep stops at the first program boundary or
    checkpoint after its time limit."""
    every = (ctx.config.get("checkpoint_every") or 0) if every is None else every
    deadline = deadline_of(ctx)
    deadline.next_program("before the next program")
    if not every and not deadline:
        return None
    return Checkpoint(checkpoint_dir(ctx) / f"{stable_hash({'program': keys})}.pt", every, deadline)
