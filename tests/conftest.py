import fcntl
import json
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
    """The book built strictly (warnings are errors) into a temporary folder, once per test session:
    (the build's CompletedProcess, the HTML root). Under pytest-xdist the workers share one build (in the
    session's folder above theirs): the first to ask builds it, the others wait for it (the tests only read it)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out_dir, record = shared / "book", shared / "book-build.json"
    with open(shared / "book-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or if this worker dies
        if not record.exists():
            exe = REPO / ".venv" / "bin" / "jupyter-book"
            out = subprocess.run([str(exe) if exe.exists() else "jupyter-book", "build", str(REPO), "--path-output",
                                  str(out_dir), "--warningiserror", "--nitpick", "--keep-going"],
                                 capture_output=True, text=True, timeout=900)
            record.write_text(json.dumps([out.args, out.returncode, out.stdout, out.stderr]))
        out = subprocess.CompletedProcess(*json.loads(record.read_text()))
    return out, out_dir / "_build" / "html"
