import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def attnlab(*args, env=None, cwd=REPO, timeout=300):
    """Run the CLI as a user would; return the CompletedProcess."""
    full_env = {**os.environ, "ATTNLAB_THREADS": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "attnlab.cli", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd, timeout=timeout)


@pytest.fixture
def store(tmp_path):
    return {"ATTNLAB_STORE": str(tmp_path / "store")}


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """The book built strictly (warnings are errors) into a temporary folder, once per test session
    (worker): (the build's CompletedProcess, the HTML root)."""
    out_dir = tmp_path_factory.mktemp("book")
    exe = REPO / ".venv" / "bin" / "jupyter-book"
    out = subprocess.run([str(exe) if exe.exists() else "jupyter-book", "build", str(REPO), "--path-output",
                          str(out_dir), "--warningiserror", "--nitpick", "--keep-going"],
                         capture_output=True, text=True, timeout=900)
    return out, out_dir / "_build" / "html"
