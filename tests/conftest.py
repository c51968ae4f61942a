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
