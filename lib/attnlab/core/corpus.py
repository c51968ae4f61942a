"""A deterministic English text corpus on every machine: the Python standard library's docstrings.

The papers train and probe on WikiText-103 or GPT-2's vocabulary frequencies, which need the network.
The offline default is the docstrings (module, class and function) of the standard library's
pure-Python modules, read with `ast` from the source files (nothing is imported), files in sorted
order, each docstring cleaned with `inspect.cleandoc`, joined by blank lines. It is real English
prose about code; it depends on the Python version's standard library, so chapters print
`describe(text)` (the version, the length and a fingerprint).
"""

from __future__ import annotations

import ast
import collections
import functools
import hashlib
import inspect
import re
import sys
import sysconfig
from pathlib import Path

_SKIP_DIRS = {"test", "tests", "idlelib", "site-packages", "dist-packages", "lib2to3", "turtledemo", "__pycache__"}


def _stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if any(part in _SKIP_DIRS or part.startswith("test") for part in rel.parts[:-1]):
            continue
        files.append(path)
    return files


def _docstrings(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc and len(doc) > 40:
                out.append(inspect.cleandoc(doc))
    return out


@functools.cache
def stdlib_docstrings(max_chars: int = 2_000_000) -> str:
    """The first `max_chars` characters of the corpus (deterministic for a given Python version)."""
    if max_chars < 1:
        raise ValueError(f"max_chars {max_chars}: must be >= 1")
    parts, total = [], 0
    for path in _stdlib_files():
        try:
            source = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for doc in _docstrings(source):
            parts.append(doc)
            total += len(doc) + 2
            if total >= max_chars:
                return "\n\n".join(parts)[:max_chars]
    return "\n\n".join(parts)[:max_chars]


def word_frequencies(text: str) -> collections.Counter:
    """Counts of the lowercase words ([a-z]+) of `text`."""
    return collections.Counter(re.findall(r"[a-z]+", text.lower()))


def fingerprint(text: str) -> str:
    """The first 12 hex digits of the text's SHA-256 (which corpus a result was computed on)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def describe(text: str) -> str:
    """One line for a chapter: what the corpus is, its size and its fingerprint."""
    v = sys.version_info
    return (f"docstrings of the Python {v.major}.{v.minor} standard library: {len(text):,} characters, "
            f"{len(word_frequencies(text)):,} distinct words, sha256 {fingerprint(text)}")
