"""Typed, validated experiment parameters and their presets (`ci`, `medium`, `full`).

Every knob of a chapter is a `Param`. A preset gives each one a value; a user overrides any
of them (notebook parameters cell, `attnlab run -p NAME VALUE`). Bad values fail at once
with one line naming the parameter, the value and what is allowed: a wrong type, NaN or ±inf
for any number (also inside lists), a value outside [min, max] or not among the choices (with
the closest choice suggested for a misspelt name).

A list parameter also takes a comma-separated string of numbers ("1,2.5" or "[1, nan]": parsed,
then each entry checked). A 'str' parameter with `sep=","` is a separated list of distinct names,
each among `choices` (e.g. tasks = "cumsum,sort"); it is normalised to "cumsum,sort".

Every int parameter declares a `max` (tests/test_fuzz.py fails otherwise): a typo such as
N = 10**9 is refused before anything is allocated. Where the danger is a product of several
parameters (e.g. N**2 * S floats), the compute function calls `require_memory` with its
estimate, which refuses with a ParameterError when the machine cannot hold it.
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass, replace
from typing import Any, Mapping

SCALES = ("ci", "medium", "full")
KINDS = ("int", "float", "str", "bool", "int_list", "float_list", "int_rows")


class ParameterError(ValueError):
    """A parameter has an unknown name or a value that is not allowed."""


@dataclass(frozen=True)
class Param:
    """One knob. kind: 'int' | 'float' | 'str' | 'bool' | 'int_list' | 'float_list' | 'int_rows'
    ('int_rows': a list of integer lists of length `width`, e.g. model configs (N, S, d, d_h, H))."""

    name: str
    kind: str
    doc: str
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] | None = None
    nullable: bool = False  # None is a meaningful value
    width: int | None = None  # for 'int_rows'
    sep: str | None = None  # for 'str': a `sep`-separated list of distinct entries, each among `choices`

    def __post_init__(self):
        if self.kind not in KINDS:
            raise TypeError(f"Param {self.name!r}: unknown kind {self.kind!r}; one of {', '.join(KINDS)}")
        if self.kind == "int_rows" and not self.width:
            raise TypeError(f"Param {self.name!r}: kind 'int_rows' needs a width")
        if self.sep is not None and (self.kind != "str" or not self.sep.strip()):
            raise TypeError(f"Param {self.name!r}: `sep` is for kind 'str' and must not be blank")

    def described(self, doc: str, nullable: bool = False) -> "Param":
        """This knob with a chapter's own description (what it seeds, the paper's value) and, where the chapter
        gives None a meaning, `nullable`: its name, kind and bounds stay those of the one declaration
        (`SHARED`), so sibling chapters accept the same values."""
        return replace(self, doc=doc, nullable=nullable)

    def _fail(self, value: Any, allowed: str) -> ParameterError:
        err = ParameterError(f"parameter {self.name!r}: value {_short(value)} is not allowed; {allowed}")
        err.allowed = allowed
        return err

    def _bound(self, bound: float) -> str:
        return str(int(bound)) if float(bound).is_integer() and abs(bound) < 1e16 else f"{bound:g}"

    def _scalar(self, value: Any, kind: str) -> Any:
        if kind in ("int", "float"):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or type(value).__name__ == "bool_":
                raise self._fail(value, "expected an integer" if kind == "int" else "expected a number")
            try:
                finite = math.isfinite(value)
            except OverflowError:  # an int too large for a float
                finite = kind == "int"
            if not finite:
                raise self._fail(value, "expected a finite number")  # the value named is nan, inf or -inf
            if kind == "int":
                if int(value) != value:
                    raise self._fail(value, "expected an integer")
                value = int(value)
            else:
                try:
                    value = float(value)
                except OverflowError:
                    raise self._fail(value, "expected a finite number") from None
        elif kind == "str":
            if not isinstance(value, str):
                raise self._fail(value, "expected a string")
        elif kind == "bool":
            if not isinstance(value, bool):
                raise self._fail(value, "expected true or false")
        if self.choices is not None and value not in self.choices:
            raise self._fail(value, _did_you_mean(value, self.choices) + "choose one of "
                             + ", ".join(map(str, self.choices)))
        if self.min is not None and value < self.min:
            raise self._fail(value, f"must be >= {self._bound(self.min)}")
        if self.max is not None and value > self.max:
            raise self._fail(value, f"must be <= {self._bound(self.max)}")
        return value

    def validate(self, value: Any) -> Any:
        """Return the normalised value or raise ParameterError."""
        if value is None:
            if self.nullable:
                return None
            raise self._fail(value, "a value is required")
        if self.kind == "int_rows":
            if (not isinstance(value, (list, tuple)) or not value
                    or any(not isinstance(row, (list, tuple)) or len(row) != self.width for row in value)):
                example = "[[" + ", ".join(["1"] * self.width) + "]]"
                raise self._fail(value, f"expected a non-empty list of lists of {self.width} integers, e.g. {example}")
            return [[self._entry(value, v, "int") for v in row] for row in value]
        if self.kind.endswith("_list"):
            scalar, given = self.kind[: -len("_list")], value
            if isinstance(value, numbers.Real) and not isinstance(value, bool):
                value = [value]
            elif isinstance(value, str):
                value = self._numbers(value, scalar)
            if not isinstance(value, (list, tuple)) or len(value) == 0:
                raise self._fail(value, f"expected a non-empty list of {'integers' if scalar == 'int' else 'numbers'}"
                                        ", e.g. [1, 2] or '1,2'")
            return [self._entry(given, v, scalar) for v in value]
        if self.sep is not None:
            return self._separated(value)
        return self._scalar(value, self.kind)

    def _entry(self, value: Any, entry: Any, kind: str) -> Any:
        """One entry of a list (or row) value, checked as a scalar; the error names the list and the entry."""
        try:
            return self._scalar(entry, kind)
        except ParameterError as err:
            raise self._fail(value, f"every entry: {err.allowed}; {_short(entry, 40)} is not") from None

    def _numbers(self, text: str, kind: str) -> Any:
        """A comma-separated string of numbers ('1,2', '[1, nan]') as a list; the string itself when it
        is not one (it then fails as 'expected a list')."""
        parts = [t.strip() for t in text.strip().removeprefix("[").removesuffix("]").split(",")]
        if not text.strip() or not all(parts):
            return text
        out = []
        for t in parts:
            try:
                out.append(int(t) if kind == "int" and t.lstrip("+-").isdigit() else float(t))
            except ValueError:
                raise self._fail(text, f"expected a list of {'integers' if kind == 'int' else 'numbers'}, "
                                       f"e.g. [1, 2] or '1,2'; {t!r} is not a number") from None
        return out

    def _separated(self, value: Any) -> str:
        """A `sep`-separated string (or a list of strings) of distinct entries, each among the choices,
        normalised: entries stripped, empty ones dropped, joined by `sep`."""
        sep = self.sep
        among = f"distinct entries among {', '.join(map(str, self.choices))}" if self.choices else "distinct entries"
        how = f"give one or more {among}, separated by {sep!r}"
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            entries = [v.strip() for v in value]
        elif isinstance(value, str):
            entries = [t.strip() for t in value.split(sep)]
        else:
            raise self._fail(value, "expected a string; " + how)
        entries = [t for t in entries if t]
        if not entries:
            raise self._fail(value, how)
        for t in entries:
            if sep.strip() in t or (self.choices is not None and t not in self.choices):
                hint = _did_you_mean(t, self.choices or ())
                raise self._fail(value, f"{t!r} is unknown{' (' + hint.strip() + ')' if hint else ''}; {how}")
        twice = next((t for i, t in enumerate(entries) if t in entries[:i]), None)
        if twice is not None:
            raise self._fail(value, f"{twice!r} is given twice; {how}")
        return sep.join(entries)


def _did_you_mean(value: Any, choices: tuple[Any, ...]) -> str:
    """'did you mean 'sort'? ' for a string close to one of the choices (as for unknown parameter names)."""
    if not isinstance(value, str):
        return ""
    import difflib

    close = difflib.get_close_matches(value, [str(c) for c in choices], n=2, cutoff=0.6)
    return f"did you mean {' or '.join(map(repr, close))}? " if close else ""


def _short(value: Any, limit: int = 120) -> str:
    """repr of a value for a one-line message (a list of 10**6 entries is not printed whole)."""
    text = repr(value).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + " ..."


def available_memory(device: Any = "cpu") -> int:
    """Bytes the computation may use: the free memory of a CUDA device, else the RAM available
    now (MemAvailable of /proc/meminfo, or the physical RAM where that is not readable)."""
    if str(device).startswith("cuda"):
        import torch

        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def require_memory(nbytes: float, what: str, names: Mapping[str, Any], device: Any = "cpu",
                   fraction: float = 1.0) -> None:
    """Refuse (ParameterError, one line) a computation whose estimated memory `nbytes` exceeds
    `fraction` of what the machine has (`available_memory`). `what`: the dominant allocation,
    e.g. "the attention scores, N**2 * S float64"; `names`: the parameters that set it."""
    budget = fraction * available_memory(device)
    if nbytes > budget:
        given = ", ".join(f"{k}={_short(v, 40)}" for k, v in names.items())
        raise ParameterError(f"parameters {given}: {what} needs an estimated {nbytes / 2**30:.3g} GiB, "
                             f"more than the {budget / 2**30:.3g} GiB this machine ({device}) can give; "
                             "lower them")


COMMON = (
    Param("scale", "str", "preset: ci (<= 45 s on one CPU thread), medium, full (the paper's protocol)",
          choices=SCALES),
    Param("device", "str", "auto: CUDA when present, else CPU", choices=("auto", "cpu", "cuda")),
)


# The knobs every training chapter shares, declared once (issue 25): a chapter lists them as they are or
# `.described(...)` with its own words; tests/test_params_shared.py checks that no chapter declares its own.
SEEDS = Param("seeds", "int", "seeds (a count): replicas of one program; every trained row is judged over them",
              min=1, max=1000)
SEED = Param("seed", "int", "the first seed: the run uses seeds seed, seed + 1, …, seed + seeds − 1 (0: the book's run)",
             min=0, max=2**31 - 1001)
STEPS = Param("steps", "int", "optimisation steps", min=1, max=10_000_000)
LR = Param("lr", "float", "learning rate", min=1e-6, max=1.0)
BATCH = Param("batch", "int", "examples per step", min=1, max=1_000_000)
N_TEST = Param("n_test", "int", "test examples", min=1, max=10_000_000)
CHUNK = Param("chunk", "int", "replicas per program at most (memory)", min=1, max=100_000)
# The two knobs of a resumable chapter (operational: they never change a result, see experiment.OPERATIONAL;
# core.checkpoint reads them).
RESUME_PARAMS = (
    Param("checkpoint_every", "int", "steps between checkpoints of a training program (0 = none)", min=0,
          max=10_000_000),
    Param("time_limit", "float", "minutes after which a run stops at a checkpoint or between programs (0 = no "
          "limit; the same command resumes, exit code 75)", min=0.0, max=10_000.0),
)
SHARED = {p.name: p for p in (SEEDS, SEED, STEPS, LR, BATCH, N_TEST, CHUNK) + RESUME_PARAMS}


def resolve(params: tuple[Param, ...], presets: Mapping[str, Mapping[str, Any]], scale: str,
            overrides: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """The preset of `scale` with `overrides` applied (None = keep the preset), all validated."""
    specs = {p.name: p for p in COMMON + tuple(params)}
    if not isinstance(scale, str) or scale not in presets:
        raise ParameterError(f"parameter 'scale': value {_short(scale)} is not allowed; "
                             f"choose one of {', '.join(presets)}")
    unknown = sorted(set(overrides) - set(specs))
    if unknown:
        import difflib

        close = difflib.get_close_matches(str(unknown[0]), list(specs), n=2, cutoff=0.6)
        hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
        raise ParameterError(f"unknown parameter {unknown[0]!r}{' for ' + where if where else ''}; "
                             f"{hint}allowed: {', '.join(sorted(specs))}")
    values: dict[str, Any] = {"device": "auto", **presets[scale], "scale": scale}
    for name, value in overrides.items():
        if value is not None:  # None keeps the preset's value
            values[name] = value
    missing = sorted(set(specs) - set(values))
    if missing:
        raise ParameterError(f"preset {scale!r}{' of ' + where if where else ''} lacks {missing}")
    return {name: specs[name].validate(values[name]) for name in specs}
