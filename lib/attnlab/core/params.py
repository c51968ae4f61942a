"""Typed, validated experiment parameters and their presets (`ci`, `medium`, `full`).

Every knob of a chapter is a `Param`. A preset gives each one a value; a user overrides any
of them (notebook parameters cell, `attnlab run -p NAME VALUE`). Bad values fail at once
with one line naming the parameter, the value and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

SCALES = ("ci", "medium", "full")


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

    def _fail(self, value: Any, allowed: str) -> ParameterError:
        return ParameterError(f"parameter {self.name!r}: value {value!r} is not allowed; {allowed}")

    def _scalar(self, value: Any, kind: str) -> Any:
        if kind == "int":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
                raise self._fail(value, "expected an integer")
            value = int(value)
        elif kind == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self._fail(value, "expected a number")
            value = float(value)
        elif kind == "str":
            if not isinstance(value, str):
                raise self._fail(value, "expected a string")
        elif kind == "bool":
            if not isinstance(value, bool):
                raise self._fail(value, "expected true or false")
        if self.choices is not None and value not in self.choices:
            raise self._fail(value, "choose one of " + ", ".join(map(str, self.choices)))
        if self.min is not None and value < self.min:
            raise self._fail(value, f"must be >= {self.min:g}")
        if self.max is not None and value > self.max:
            raise self._fail(value, f"must be <= {self.max:g}")
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
                raise self._fail(value, f"expected a non-empty list of lists of {self.width} integers")
            try:
                return [[self._scalar(v, "int") for v in row] for row in value]
            except ParameterError as err:
                raise self._fail(value, "every entry: " + str(err).split("; ", 1)[1]) from None
        if self.kind.endswith("_list"):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                value = [value]
            if not isinstance(value, (list, tuple)) or len(value) == 0:
                raise self._fail(value, "expected a non-empty list")
            try:
                return [self._scalar(v, self.kind[: -len("_list")]) for v in value]
            except ParameterError as err:
                raise self._fail(value, "every entry: " + str(err).split("; ", 1)[1]) from None
        return self._scalar(value, self.kind)


COMMON = (
    Param("scale", "str", "preset: ci (<= 45 s on one CPU thread), medium, full (the paper's protocol)",
          choices=SCALES),
    Param("device", "str", "auto: CUDA when present, else CPU", choices=("auto", "cpu", "cuda")),
)


def resolve(params: tuple[Param, ...], presets: Mapping[str, Mapping[str, Any]], scale: str,
            overrides: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """The preset of `scale` with `overrides` applied (None = keep the preset), all validated."""
    specs = {p.name: p for p in COMMON + tuple(params)}
    if scale not in presets:
        raise ParameterError(f"parameter 'scale': value {scale!r} is not allowed; "
                             f"choose one of {', '.join(presets)}")
    unknown = sorted(set(overrides) - set(specs))
    if unknown:
        raise ParameterError(f"unknown parameter {unknown[0]!r}{' for ' + where if where else ''}; "
                             f"allowed: {', '.join(sorted(specs))}")
    values: dict[str, Any] = {"device": "auto", **presets[scale], "scale": scale}
    for name, value in overrides.items():
        if value is not None:  # None keeps the preset's value
            values[name] = value
    missing = sorted(set(specs) - set(values))
    if missing:
        raise ParameterError(f"preset {scale!r}{' of ' + where if where else ''} lacks {missing}")
    return {name: specs[name].validate(values[name]) for name in specs}
