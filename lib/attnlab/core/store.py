"""A resumable, content-addressed result store (JSON, never pickle).

An entry lives at `<root>/<result id>/<key>.json`, where key = stable_hash(config). It holds
the config, the result, a sha256 of the result and its provenance. Writes are atomic
(temporary file + rename), so a process killed at any moment leaves the old entry or the whole
new one (at worst a `.tmp-*` file, which is never read), and processes sharing a store never
see a half-written entry. An entry that is empty, does not parse, or whose checksum, config or
file name does not match is never silently used: it is reported (a warning) and recomputed.
In a cache (results/ci, results/medium, $ATTNLAB_STORE) it is deleted. In a store whose root
folder is named `full` (results/full: committed paper-scale work, hours of GPU time) it is
never deleted: it is moved aside to `<key>.json.corrupt-<UTC time>`, which `entries()` and the
registry ignore and `quarantined()` (hence `attnlab check`) reports.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import os
import platform
import re
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any, Iterator

from .hashing import _default, canonical_json, stable_hash

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


@functools.cache
def git_commit() -> str:
    """The commit this process runs (looked up once: every stored entry records it). A copy of the
    tree without its git folder (a GPU box) reads it from the environment variable ATTNLAB_COMMIT."""
    if os.environ.get("ATTNLAB_COMMIT"):
        return os.environ["ATTNLAB_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


QUARANTINE = ".corrupt-"  # <key>.json.corrupt-<UTC time>: a corrupt paper-scale entry, moved aside
_ENTRY = re.compile(r"^[0-9a-f]{16}\.json$")


def keeps_corrupt(root: str | Path) -> bool:
    """True for a store of committed paper-scale work (root folder `full`): corrupt entries are
    moved aside, never deleted."""
    return Path(root).name == "full"


def _entry_paths(folder: Path) -> Iterator[Path]:
    """The entry files of one result folder (not temporary files, not quarantined ones)."""
    if folder.is_dir():
        yield from sorted(p for p in folder.iterdir() if _ENTRY.match(p.name))


def _problem(path: Path, raw: bytes, config: dict | None = None) -> tuple[str, Any]:
    """(why the entry is corrupt or "", the parsed entry)."""
    if not raw.strip():
        return "it is empty", None
    try:
        entry = json.loads(raw)
        if not isinstance(entry, dict) or not {"config", "result", "checksum"} <= set(entry):
            return "it lacks config, result or checksum", entry
        if entry["checksum"] != _checksum(entry["result"]):
            return "its result does not match its checksum", entry
        if config is not None and canonical_json(entry["config"]) != canonical_json(config):
            return "its config is not the one asked for", entry
        if path.name != f"{stable_hash(entry['config'])}.json":
            return "its file name is not the hash of its config", entry
    except (ValueError, TypeError) as err:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return f"it does not parse ({type(err).__name__})", None
    return "", entry


def _set_aside(path: Path, raw: bytes, why: str, keep: bool) -> Path | None:
    """Move the corrupt entry `path` (whose bytes were `raw`) out of the way, with a warning:
    renamed to `<name>.corrupt-<time>` when `keep`, else deleted. If another process replaced
    the file in the meantime (a fresh valid entry), that entry is put back, not lost."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    aside = path.with_name(f"{path.name}{QUARANTINE}{stamp}-{os.getpid()}")
    try:
        os.rename(path, aside)  # atomic: we now own whatever was at `path`
    except FileNotFoundError:  # another process dealt with it already
        return None
    if aside.read_bytes() != raw:  # not the bytes we judged: a writer replaced them; undo
        if not path.exists():
            os.rename(aside, path)
        else:
            aside.unlink(missing_ok=True)
        return None
    if keep:
        warnings.warn(f"corrupt result store entry {path} ({why}) moved aside to {aside.name}, not deleted: "
                      "it will be recomputed; inspect it, then delete it", stacklevel=3)
        return aside
    aside.unlink(missing_ok=True)
    warnings.warn(f"corrupt result store entry {path} ({why}) removed; it will be recomputed", stacklevel=3)
    return None


class ResultStore:
    """get / put of JSON results keyed by their config."""

    def __init__(self, root: str | Path, result_id: str, keep_corrupt: bool | None = None):
        self.dir = Path(root) / result_id
        self.keep_corrupt = keeps_corrupt(root) if keep_corrupt is None else keep_corrupt
        self.hits = 0
        self.computed = 0

    def path(self, config: dict) -> Path:
        return self.dir / f"{stable_hash(config)}.json"

    def _read(self, path: Path, config: dict | None = None) -> dict | None:
        """The valid entry at `path`, or None (missing, or corrupt and set aside)."""
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        why, entry = _problem(path, raw, config)
        if why:
            _set_aside(path, raw, why, self.keep_corrupt)
            return None
        return entry

    def get(self, config: dict) -> Any | None:
        """The stored result for `config`, or None (missing, or corrupt and set aside)."""
        entry = self._read(self.path(config), config)
        if entry is None:
            return None
        self.hits += 1
        return entry["result"]

    def put(self, config: dict, result: Any, seconds: float | None = None, device: str = "",
            run: dict | None = None) -> Path:
        """Write atomically: a reader sees the old entry, or the whole new one. `run`: the scale and
        config of the run that computed it (provenance: a results/full entry must come from the full preset)."""
        path = self.path(config)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"config": config, "result": result, "checksum": _checksum(result),
                 "provenance": {"commit": git_commit(), "device": device, "seconds": seconds,
                                "host": platform.node(), "python": platform.python_version(),
                                "written": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                                **({"run": run} if run else {})}}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(entry, f, indent=1, sort_keys=True, default=_default)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def entries(self) -> list[dict]:
        """Every valid entry (config, result, provenance), e.g. to plot stored paper-scale runs.
        Corrupt entries are set aside (see the module docstring) and left out."""
        return [e for e in (self._read(p) for p in _entry_paths(self.dir)) if e is not None]


def quarantined(root: str | Path, scan: bool = True) -> list[Path]:
    """Every corrupt entry moved aside under `root` (e.g. results/full), oldest name first. With
    `scan`, each entry under `root` is first checked, and a corrupt one is set aside (with a
    warning) as any reader would: so `attnlab check` reports damage nobody has read yet."""
    root = Path(root)
    if not root.is_dir():
        return []
    if scan:
        for folder in sorted({p.parent for p in root.rglob("*.json")}):
            for path in _entry_paths(folder):
                try:
                    raw = path.read_bytes()
                except FileNotFoundError:
                    continue
                why, _ = _problem(path, raw)
                if why:
                    _set_aside(path, raw, why, keep=True)  # reporting never deletes
    return sorted(p for p in root.rglob(f"*{QUARANTINE}*") if p.is_file())
