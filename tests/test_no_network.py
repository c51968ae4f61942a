"""The book and the tests need no network (issue 12): a chapter runs headless and as a notebook
(papermill, a Jupyter kernel on loopback) with every non-loopback connection refused.

Two ways to cut the network, each with a probe showing it really is cut (a test that cannot
fail is not a test): (1) portable, always run: a `sitecustomize.py` on PYTHONPATH makes every
Python process (the CLI, papermill, the kernel) refuse connections and name lookups that are
not loopback; (2) where the kernel allows it, `unshare -rn`: a network namespace whose only
interface is loopback, which also catches C code that bypasses Python's socket module.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

CHAPTER = "004-memorization/setup-formalism"  # a fast chapter: no training, one second of compute
PRETRAINED = "003-allocation/figs3-10-softmax-jacobian"  # loads the offline MiniLM-L6 through transformers

GUARD = r'''
"""Test guard (tests/test_no_network.py): refuse every connection that is not loopback."""
import ipaddress
import socket

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", ""}


def _local(host):
    host = str(host).strip("[]")
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _refuse(what):
    raise OSError(101, f"network disabled by the no-network test: {what}")


_connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo


def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
        _refuse(f"connect to {address!r}")
    return _connect(self, address)


def connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
        _refuse(f"connect to {address!r}")
    return _connect_ex(self, address)


def getaddrinfo(host, *args, **kwargs):
    if host is not None and not _local(host.decode() if isinstance(host, bytes) else host):
        _refuse(f"name lookup of {host!r}")
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo

import os, sys  # noqa: E401,E402: record which processes run guarded (the CLI, papermill, the kernel)
if os.environ.get("NO_NETWORK_LOG"):
    with open(os.environ["NO_NETWORK_LOG"], "a") as _log:
        _log.write(" ".join(getattr(sys, "orig_argv", [])) + "\n")
'''

PROBE = ("import urllib.error, urllib.request\n"
         "try:\n"
         "    urllib.request.urlopen('http://93.184.215.14/', timeout=5)\n"   # a public address
         "except urllib.error.HTTPError as err:\n"   # an answer, even an error page, came over the network
         "    print('REACHED THE NETWORK:', err)\n"
         "except OSError as err:\n"
         "    print('refused:', err)\n"
         "else:\n"
         "    print('REACHED THE NETWORK')\n")


def _unshare_works() -> bool:
    if not shutil.which("unshare") or not shutil.which("ip"):
        return False
    probe = subprocess.run(["unshare", "-rn", "sh", "-c", "ip link set lo up"], capture_output=True, timeout=30)
    return probe.returncode == 0


def _env(tmp_path, guard: bool) -> dict:
    env = {**os.environ, "ATTNLAB_THREADS": "1", "OMP_NUM_THREADS": "1", "ATTNLAB_STORE": str(tmp_path / "store"),
           "PIP_NO_INDEX": "1", "HF_HUB_OFFLINE": "1"}
    for proxy in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(proxy, None)
    if guard:
        (tmp_path / "guard").mkdir()
        (tmp_path / "guard" / "sitecustomize.py").write_text(GUARD)
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "guard"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env["NO_NETWORK_LOG"] = str(tmp_path / "guarded.log")
    return env


def _run(cmd: list[str], env: dict, unshare: bool, timeout: int = 300) -> subprocess.CompletedProcess:
    if unshare:  # a fresh network namespace: loopback only, brought up for the Jupyter kernel
        cmd = ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *cmd]
    return subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def _chapter_runs_offline(tmp_path, env, unshare: bool, headless: bool, chapter: str = CHAPTER):
    probe = _run([sys.executable, "-c", PROBE], env, unshare, timeout=60)
    assert probe.stdout.startswith("refused:"), (probe.stdout, probe.stderr)  # the network really is cut
    out = tmp_path / ("headless" if headless else "notebook")
    args = ["run", chapter, "--out", str(out)] + (["--headless", "-q"] if headless else [])
    run = _run([sys.executable, "-m", "attnlab.cli", *args], env, unshare)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    made = out / ("result.json" if headless else f"{chapter.split('/')[1]}.ipynb")
    assert made.exists(), run.stderr[-2000:]
    assert "network disabled" not in run.stderr and "REACHED" not in run.stdout


@pytest.mark.parametrize("headless", [True, False], ids=["headless", "notebook"])
def test_a_chapter_runs_with_python_sockets_refusing_the_network(tmp_path, headless):
    _chapter_runs_offline(tmp_path, _env(tmp_path, guard=True), unshare=False, headless=headless)
    guarded = (tmp_path / "guarded.log").read_text()
    assert "attnlab.cli" in guarded
    if not headless:
        assert "ipykernel" in guarded, guarded  # the Jupyter kernel that ran the chapter was guarded too


def test_the_guard_would_catch_a_network_access(tmp_path):
    """Without the guard the same probe is not refused by it; with it, it is (by name)."""
    probe = _run([sys.executable, "-c", PROBE], _env(tmp_path, guard=True), unshare=False, timeout=60)
    assert "network disabled by the no-network test" in probe.stdout, probe.stdout + probe.stderr
    (tmp_path / "free").mkdir()
    free = _run([sys.executable, "-c", PROBE], _env(tmp_path / "free", guard=False), unshare=False, timeout=60)
    assert "network disabled by the no-network test" not in free.stdout + free.stderr


@pytest.mark.skipif(not _unshare_works(), reason="unshare -rn (user and network namespaces) is not permitted here")
def test_a_chapter_notebook_runs_in_a_network_namespace_with_only_loopback(tmp_path):
    _chapter_runs_offline(tmp_path, _env(tmp_path, guard=False), unshare=True, headless=False)


def test_a_pretrained_model_chapter_runs_offline_without_hub_settings(tmp_path):
    """The MiniLM-L6 substitute loads through transformers with no network and no HF_* variables set by
    the caller (attnlab.core.pretrained sets them itself): in a loopback-only namespace where permitted,
    else with Python's sockets refusing."""
    env = _env(tmp_path, guard=not _unshare_works())
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        env.pop(var, None)
    _chapter_runs_offline(tmp_path, env, unshare=_unshare_works(), headless=True, chapter=PRETRAINED)
