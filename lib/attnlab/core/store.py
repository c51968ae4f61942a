"""A resumable, content-addressed result store (JSON, never pickle).

An entry lives at `<root>/<result id>/<key>.json`, where key = stable_hash(config). It holds
the config, the result, a sha256 of the result and its provenance. Writes are atomic
(temporary file + rename). An entry that does not parse, whose checksum or config does not
match, is reported, removed and recomputed: never silently used.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable

from .hashing import canonical_json, stable_hash

REPO_ROOT = Path(__file__).resolve().parents[3]


def default_root(scale: str) -> Path:
    """Where results of `scale` live: results/<scale> in the repository.

    Paper-scale results (results/full) are committed with their provenance and always read
    from there. The others are a local cache that git ignores; $ATTNLAB_STORE moves it (the
    book build and the tests point it at a fresh folder, so every CI number is recomputed).
    """
    base = os.environ.get("ATTNLAB_STORE")
    if scale == "full" or not base:
        return REPO_ROOT / "results" / scale
    return Path(base) / scale


def _checksum(result: Any) -> str:
    return hashlib.sha256(canonical_json(result).encode()).hexdigest()


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class ResultStore:
    """get / put / get_or_compute of JSON results keyed by their config."""

    def __init__(self, root: str | Path, result_id: str):
        self.dir = Path(root) / result_id
        self.hits = 0
        self.computed = 0

    def path(self, config: dict) -> Path:
        return self.dir / f"{stable_hash(config)}.json"

    def get(self, config: dict) -> Any | None:
        """The stored result for `config`, or None (missing, or corrupt and removed)."""
        path = self.path(config)
        if not path.exists():
            return None
        try:
            entry = json.loads(path.read_text())
            ok = (entry["checksum"] == _checksum(entry["result"])
                  and canonical_json(entry["config"]) == canonical_json(config))
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            warnings.warn(f"corrupt result store entry {path} removed; it will be recomputed")
            path.unlink(missing_ok=True)
            return None
        self.hits += 1
        return entry["result"]

    def put(self, config: dict, result: Any, seconds: float | None = None, device: str = "") -> Path:
        """Write atomically: a reader sees the old entry, or the whole new one."""
        path = self.path(config)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"config": config, "result": result, "checksum": _checksum(result),
                 "provenance": {"commit": git_commit(), "device": device, "seconds": seconds,
                                "host": platform.node(), "python": platform.python_version(),
                                "written": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(entry, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
        return path

    def get_or_compute(self, config: dict, compute: Callable[[], Any]) -> Any:
        result = self.get(config)
        if result is None:
            result = compute()
            self.put(config, result)
            self.computed += 1
        return result

    def entries(self) -> list[dict]:
        """Every valid entry (config, result, provenance), e.g. to plot stored paper-scale runs."""
        out = []
        for path in sorted(self.dir.glob("*.json")) if self.dir.exists() else []:
            try:
                entry = json.loads(path.read_text())
                if entry["checksum"] == _checksum(entry["result"]):
                    out.append(entry)
            except (ValueError, KeyError, TypeError):
                continue
        return out
