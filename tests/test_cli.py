import json
import math
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from attnlab.cli import parse_value
from attnlab.papers import registry
from conftest import REPO, attnlab

FIG1A = "004-memorization/fig1a-accuracy-vs-heads"
TINY = ["-p", "N", "6", "-p", "d_list", "[2, 3]", "-p", "H_list", "[1, 2]", "-p", "steps", "5", "-p", "seeds", "1"]
FAST = "001-positional/discrepancy-bound"  # a construction chapter: seconds at CI scale, one stored unit per seed
OOD = "001-positional/ood-scale"


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["list", "--help"], ["book", "--help"]])
def test_help(args):
    out = attnlab(*args)
    assert out.returncode == 0 and "usage: attnlab" in out.stdout


def test_list_names_every_result_with_its_figure():
    out = attnlab("list")
    assert out.returncode == 0
    for text in (FIG1A, "Fig. 1a", "004-memorization/thm1-exact-construction", "Table 1"):
        assert text in out.stdout


@pytest.mark.parametrize("args, words", [
    (["run", FIG1A, "-p", "d_list", "[-1]"], ["'d_list'", "[-1]", ">= 1"]),
    (["run", FIG1A, "-p", "N", "-3"], ["'N'", "-3", ">= 2"]),
    (["run", FIG1A, "-p", "bogus", "1"], ["unknown parameter 'bogus'"]),
    (["run", "004-memorization/fig99", "--headless"], ["unknown result '004-memorization/fig99'", FIG1A]),
    (["run", FIG1A, "--scale", "huge"], ["'scale'", "'huge'", "ci"]),
    (["run", OOD, "-p", "tasks", "cumsum,sortt"], ["'tasks'", "'cumsum,sortt'", "'sortt' is unknown (did you mean "
                                                   "'sort'?)", "cumsum, cummin, cummedian, sort, maxsub"]),
    (["run", OOD, "-p", "tasks", "cumsum,cumsum", "--headless"], ["'tasks'", "'cumsum' is given twice"]),
    (["run", OOD, "-p", "c_list", "[1,nan]"], ["'c_list'", "[1, nan]", "expected a finite number; nan is not"]),
    (["run", OOD, "-p", "c_list", "1,inf", "--headless"], ["'c_list'", "expected a finite number; inf is not"]),
    (["run", OOD, "-p", "c_list", "1,x"], ["'c_list'", "'1,x'", "'x' is not a number"]),
    (["run", OOD, "-p", "scheduler", "onecycel"], ["'scheduler'", "'onecycel'", "did you mean 'onecycle'?"]),
])
def test_bad_input_exits_2_with_one_line_naming_it(args, words, store, tmp_path):
    """Refused before anything runs: no output folder, no kernel, nothing on stdout."""
    out = attnlab(*args, "--out", str(tmp_path / "out"), env=store)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnlab: error:"), out.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert out.stdout == "" and not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, kind, value", [
    ("[1,nan]", "float_list", [1, math.nan]), ("1,inf", "float_list", (1, math.inf)), ("-inf", "float", -math.inf),
    ("NaN", "float", math.nan), ("[1, 2]", "int_list", [1, 2]), ("1e-3", "float", 0.001), ("none", "int", None),
    ("cumsum,sort", "str", "cumsum,sort"), ("'quoted'", "str", "quoted"), ("['a', 'b']", "str", ["a", "b"]),
    ("3", "str", "3"), ("nan", "str", "nan"), ("3", None, 3), ("hello", None, "hello"),
])
def test_parse_value_reads_nan_and_inf_as_floats_and_str_parameters_as_typed(text, kind, value):
    got = parse_value(text, kind)
    def same(a, b):
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))

    if isinstance(value, (list, tuple)):
        assert type(got) is type(value) and len(got) == len(value) and all(map(same, got, value)), got
    else:
        assert type(got) is type(value) and same(got, value), got


def test_usage_error_exits_2():
    assert attnlab("run").returncode == 2
    assert attnlab("frobnicate").returncode == 2


def test_headless_run_writes_results_and_resumes(store, tmp_path):
    first = attnlab("run", FIG1A, "--headless", "-q", "--out", str(tmp_path / "o1"), *TINY, env=store)
    assert first.returncode == 0, first.stderr
    r1 = json.loads((tmp_path / "o1" / "result.json").read_text())
    assert r1["meta"]["computed"] == 4 and r1["meta"]["store_hits"] == 0
    second = attnlab("run", FIG1A, "--headless", "-q", "--out", str(tmp_path / "o2"), *TINY, env=store)
    r2 = json.loads((tmp_path / "o2" / "result.json").read_text())
    assert r2["meta"]["computed"] == 0 and r2["points"] == r1["points"]
    assert "4 computed" in first.stdout and "0 computed" in second.stdout
    assert "resumed" not in first.stdout and second.stdout.splitlines()[1] == "resumed: 4 of 4 units from the store"


def test_notebook_run_with_new_parameters_writes_executed_notebook_and_resumes(store, tmp_path):
    args = ["run", FIG1A, "-q", "-p", "seeds", "2", "-p", "H_list", "[1, 4, 8]", "-p", "d_list", "[6]",
            "-p", "steps", "60", "-p", "N", "12"]
    first = attnlab(*args, "--out", str(tmp_path / "run1"), env=store)
    nb = tmp_path / "run1" / "fig1a-accuracy-vs-heads.ipynb"
    assert nb.exists(), first.stderr
    assert first.returncode in (0, 1), first.stderr  # 1: an asserted claim failed at these parameters
    if first.returncode == 1:  # one line that names the cell and the error, cut short; the summary on stdout
        line = first.stderr.strip()
        assert line.startswith(f"attnlab: {FIG1A} stopped in cell [") and "\n" not in line and len(line) < 300, line
    assert first.stdout.strip().splitlines()[-1].startswith(f"book page: {tmp_path / 'run1' / 'fig1a-accuracy-vs-heads.html'}")
    text = nb.read_text()
    assert "seeds = 2" in text and "6 computed" in text  # papermill's injected parameters cell
    second = attnlab(*args, "--out", str(tmp_path / "run2"), env=store)
    assert "0 computed, 6 from the store" in (tmp_path / "run2" / "fig1a-accuracy-vs-heads.ipynb").read_text()
    assert second.returncode == first.returncode
    assert "resumed: 6 of 6 units from the store" in second.stdout  # also when a claim failed (exit 1)


def test_time_limited_run_exits_75_and_the_same_command_resumes_to_the_end(store, tmp_path):
    """A paper-002 sweep with a (tiny) time limit stops at its first checkpoint with exit code 75
    (EX_TEMPFAIL); rerunning the same command continues from the checkpoint until it finishes."""
    args = ["run", "002-counting/phase-diagrams-T64-L15", "--headless", "-q", "--out", str(tmp_path / "o"),
            "-p", "settings", "[[6, 4]]", "-p", "variants", "lin", "-p", "d_list", "[4]", "-p", "p_list", "[6]",
            "-p", "steps", "40", "-p", "checkpoint_every", "10", "-p", "time_limit", "1e-9", "-p", "eval_n", "100",
            "-p", "seed_list", "[0]"]
    codes = []
    for _ in range(6):
        out = attnlab(*args, env=store)
        codes.append(out.returncode)
        if out.returncode != 75:
            break
        assert "incomplete" in out.stderr and "rerun" in out.stderr
    assert codes == [75, 75, 75, 0], (codes, out.stderr)
    assert json.loads((tmp_path / "o" / "result.json").read_text())["meta"]["computed"] == 1


def test_notebook_run_summary_html_page_and_resume(store, tmp_path):
    """A few short lines: the time (and what it resumed), the claims' verdicts, the HTML page written
    beside the executed notebook; the progress (stderr) starts with where the run goes."""
    first = attnlab("run", FAST, "--out", str(tmp_path / "run1"), env=store)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.strip().splitlines()
    assert len(lines) == 3 and all(len(line) < 200 for line in lines), first.stdout
    assert re.fullmatch(rf"{FAST}: executed in \d+\.\d s", lines[0]), lines[0]
    assert re.fullmatch(r"claims: \d+ ✅ reproduced, \d+ 🔁 consistency check", lines[1]), lines[1]
    page = tmp_path / "run1" / "discrepancy-bound.html"
    assert lines[2] == f"book page: {page} (notebook: discrepancy-bound.ipynb beside it)"
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and FAST in html and "</html>" in html
    assert '<img src="data:image/png;base64,' in html and 'class="claims"' in html  # the figure and the claims table
    assert first.stderr.startswith(f"{FAST}: executing the chapter (scale ci) into {tmp_path / 'run1'}/")
    assert "Traceback" not in first.stderr
    nb = json.loads((tmp_path / "run1" / "discrepancy-bound.ipynb").read_text())
    seeds = registry()[FAST].config("ci")["seeds"]  # one stored unit per seed
    assert nb["metadata"]["attnlab"]["units"] == {"runs": 1, "computed": seeds, "store_hits": 0}
    assert not any("attnlab-units" in c["metadata"].get("tags", []) for c in nb["cells"])  # the counting cell is gone
    counts = [c["execution_count"] for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    assert counts == list(range(1, len(counts) + 1)), counts  # and numbered without it

    second = attnlab("run", FAST, "-q", "--out", str(tmp_path / "run2"), env=store)
    assert second.returncode == 0 and second.stderr == "", second.stderr  # -q: no progress
    assert re.fullmatch(rf"{FAST}: executed in \d+\.\d s; resumed: {seeds} of {seeds} units from the store",
                        second.stdout.splitlines()[0]), second.stdout


def _interrupt(args: list[str], env: dict, ready: str = "it/s]") -> tuple[subprocess.CompletedProcess, list[str]]:
    """Start `attnlab *args`, send SIGINT (Ctrl-C) once its stderr shows `ready` (a progress bar: the
    run is under way), return the finished process and the children (the kernel) it had then."""
    proc = subprocess.Popen([sys.executable, "-m", "attnlab.cli", *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "ATTNLAB_THREADS": "1", **env})
    seen, deadline = b"", time.monotonic() + 300
    while ready.encode() not in seen and time.monotonic() < deadline:
        chunk = os.read(proc.stderr.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
    assert ready.encode() in seen, seen.decode(errors="replace")
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:  # never leave a run behind
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), (seen + err).decode()), children


def _messages(stderr: str) -> list[str]:
    """The lines of stderr that are not progress bars (nor what is left of them)."""
    parts = re.split(r"[\r\n]", re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", stderr))
    return [p for p in parts if p.strip() and "%|" not in p]


@pytest.mark.parametrize("mode", ["headless", "notebook"])
def test_ctrl_c_stops_a_run_with_one_line_and_exit_130(mode, store, tmp_path):
    args = ["run", OOD, "-p", "steps", "3000", "-p", "tasks", "cumsum", "--out", str(tmp_path / "o")]
    out, children = _interrupt(args + (["--headless"] if mode == "headless" else []), store)
    assert out.returncode == 130, out.stderr
    assert "Traceback" not in out.stderr and "KeyboardInterrupt" not in out.stderr, out.stderr
    messages = [m for m in _messages(out.stderr) if not m.startswith(f"{OOD}: ")]  # where the run goes
    assert len(messages) == 1, out.stderr
    assert messages[0].startswith(f"attnlab: {OOD} interrupted (Ctrl-C) after ") and "rerun the same command" in messages[0]
    if mode == "notebook":  # the kernel is shut down, the notebook so far is kept
        assert children, "no kernel was running"
        time.sleep(1)
        assert not [c for c in children if os.path.exists(f"/proc/{c}")], children
        assert "the notebook so far" in messages[0] and (tmp_path / "o" / "ood-scale.ipynb").exists()
