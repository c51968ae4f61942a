"""Stable content hashes of JSON-able configs, used for store keys and replica seeds."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: equal configs give equal strings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_default)


def _default(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"cannot hash object of type {type(obj).__name__}: {obj!r}")


def stable_hash(obj: Any, length: int = 16) -> str:
    """Hex sha256 of the canonical JSON of `obj`, truncated to `length` characters."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


def derive_seed(config: Any, seed: int) -> int:
    """A 63-bit seed that depends on (config, seed) only, never on a position in a batch."""
    return int(stable_hash({"config": config, "seed": seed}, 15), 16)
