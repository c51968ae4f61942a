import json

import pytest

from conftest import attnlab

FIG1A = "004-memorization/fig1a-accuracy-vs-heads"
TINY = ["-p", "N", "6", "-p", "d_list", "[2, 3]", "-p", "H_list", "[1, 2]", "-p", "steps", "5"]


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
])
def test_bad_input_exits_2_with_one_line_naming_it(args, words, store):
    out = attnlab(*args, env=store)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnlab: error:"), out.stderr
    assert all(w in lines[0] for w in words), lines[0]


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


def test_notebook_run_with_new_parameters_writes_executed_notebook_and_resumes(store, tmp_path):
    args = ["run", FIG1A, "-p", "seeds", "2", "-p", "H_list", "[1, 4, 8]", "-p", "d_list", "[6]",
            "-p", "steps", "60", "-p", "N", "12"]
    first = attnlab(*args, "--out", str(tmp_path / "run1"), env=store)
    nb = tmp_path / "run1" / "fig1a-accuracy-vs-heads.ipynb"
    assert nb.exists(), first.stderr
    assert first.returncode in (0, 1), first.stderr  # 1: an asserted claim failed at these parameters
    if first.returncode == 1:
        assert first.stderr.strip().startswith("attnlab:") and len(first.stderr.strip().splitlines()) == 1
    text = nb.read_text()
    assert "seeds = 2" in text and "6 computed" in text  # papermill's injected parameters cell
    second = attnlab(*args, "--out", str(tmp_path / "run2"), env=store)
    assert "0 computed, 6 from the store" in (tmp_path / "run2" / "fig1a-accuracy-vs-heads.ipynb").read_text()
    assert second.returncode == first.returncode


def test_time_limited_run_exits_75_and_the_same_command_resumes_to_the_end(store, tmp_path):
    """A paper-002 sweep with a (tiny) time limit stops at its first checkpoint with exit code 75
    (EX_TEMPFAIL); rerunning the same command continues from the checkpoint until it finishes."""
    args = ["run", "002-counting/phase-diagrams-T64-L15", "--headless", "-q", "--out", str(tmp_path / "o"),
            "-p", "settings", "[[6, 4]]", "-p", "variants", "lin", "-p", "d_list", "[4]", "-p", "p_list", "[6]",
            "-p", "steps", "40", "-p", "checkpoint_every", "10", "-p", "time_limit", "1e-9", "-p", "eval_n", "100"]
    codes = []
    for _ in range(6):
        out = attnlab(*args, env=store)
        codes.append(out.returncode)
        if out.returncode != 75:
            break
        assert "incomplete" in out.stderr and "rerun" in out.stderr
    assert codes == [75, 75, 75, 0], (codes, out.stderr)
    assert json.loads((tmp_path / "o" / "result.json").read_text())["meta"]["computed"] == 1
