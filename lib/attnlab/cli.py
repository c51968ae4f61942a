"""attnlab: list, run, book, check and scorecard the companion book's chapters.

  attnlab list                              every result: paper, figure, chapter, status, CI time
  attnlab run RESULT [--scale ci|medium|full] [-p NAME VALUE]... [--device D] [--headless]
              [--backend local|ray [--address ADDR]]   ray: each program of a sweep a Ray task
  attnlab book [--jobs 2] [--force] [--no-build]
  attnlab check                             fast static checks (toc, staleness, contract, timings)
  attnlab scorecard                         every claim with its verdict

A run shows its progress on stderr (the cell that runs, the experiment's progress bars; -q: none),
then a short summary: the claims' verdicts, how many stored units it reused, and (without
--headless) the HTML page of the executed notebook, written beside it. Ctrl-C stops it with one line;
the units it finished are kept, so the same command resumes.

Exit codes: 0 success, 1 a check or claim failed, 2 bad usage or bad parameter (refused before
anything runs), 75 a headless run stopped at its time limit (-p time_limit MINUTES) after saving
progress: rerun to resume, 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import os

# Tiny models: one BLAS/OpenMP thread per process (set before numpy or torch load their libraries).
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, os.environ.get("ATTNLAB_THREADS", "1"))

import argparse  # noqa: E402
import ast  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from .core.params import ParameterError  # noqa: E402

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INCOMPLETE = 75  # sysexits EX_TEMPFAIL: stopped at the time limit, rerun to resume
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C


_NONFINITE = {"nan": "nan", "inf": "inf", "infinity": "inf"}


def _literal(text: str):
    """ast.literal_eval that also reads nan, inf and infinity (any case, also inside lists) as floats,
    so that `-p c_list "[1,nan]"` reaches the parameter check as [1, nan] and is refused naming nan."""

    class Floats(ast.NodeTransformer):
        def visit_Name(self, node):
            key = node.id.lower()
            return ast.copy_location(ast.Constant(float(_NONFINITE[key])), node) if key in _NONFINITE else node

    return ast.literal_eval(Floats().visit(ast.parse(text.strip(), mode="eval")))


def parse_value(text: str, kind: str | None = None):
    """'-p NAME VALUE' values: true/false/none/null, else a Python literal (numbers, lists; nan and inf
    read as floats), else the text itself. For a 'str' parameter (`kind`) the text is taken as typed
    (-p tasks cumsum,sort), unless it is a quoted string or a list of strings."""
    lowered = {"true": True, "false": False, "none": None, "null": None}
    if text.lower() in lowered:
        return lowered[text.lower()]
    if kind == "str":
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return text
        strings = isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
        return value if isinstance(value, str) or strings else text
    try:
        return _literal(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def cmd_list(args) -> int:
    from .papers import registry
    from .notebooks import read_timings, stale_reason

    timings = read_timings()
    rows = [("result", "paper figure/theorem", "scales", "status", "CI time")]
    for exp in registry().values():
        if args.paper and not exp.paper.startswith(args.paper):
            continue
        status = stale_reason(exp) or "up to date"
        t = timings.get(exp.id, {}).get("seconds")
        rows.append((exp.id, exp.label, ", ".join(exp.presets), status, f"{t} s" if t else "–"))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return EXIT_OK


def cmd_run(args) -> int:
    from .core.params import COMMON
    from .papers import get

    exp = get(args.result)
    kinds = {p.name: p.kind for p in COMMON + tuple(exp.params)}
    overrides = {name: parse_value(value, kinds.get(name)) for name, value in args.param}
    if args.device:
        overrides["device"] = args.device
    config = exp.config(args.scale, **overrides)  # validate before anything runs
    if args.backend == "ray" and not args.headless:
        print("attnlab: error: --backend ray runs the experiment only: add --headless", file=sys.stderr)
        return EXIT_USAGE
    if args.address and args.backend != "ray":
        print("attnlab: error: --address is the address of a Ray cluster: add --backend ray", file=sys.stderr)
        return EXIT_USAGE
    if args.headless:
        return _run_headless(exp, config, args)
    # the chapter gets the validated values (lists, normalised names), not the command line's text
    return _run_notebook(exp, {"scale": args.scale, **{k: config[k] for k, v in overrides.items() if v is not None}},
                         args)


def _run_headless(exp, config: dict, args) -> int:
    from .core.experiment import Context, Incomplete

    backend, where = "local", None
    if args.backend == "ray":
        from .core.distributed import RayBackend, RayUnavailable

        try:
            backend = RayBackend(address=args.address).start()
        except RayUnavailable as err:
            print(f"attnlab: error: {err}", file=sys.stderr)
            return EXIT_USAGE
        except ConnectionError as err:
            print(f"attnlab: {exp.id}: cannot join the Ray cluster at {args.address}: {err}", file=sys.stderr)
            return EXIT_FAILED
        where = backend.describe()
        print(f"attnlab: {exp.id} on {where}", file=sys.stderr)
    if not args.quiet:
        from .core.store import default_root

        print(f"{exp.id}: running the experiment (scale {config['scale']}); finished units are stored in "
              f"{_shown(default_root(config['scale']) / exp.id)}/", file=sys.stderr)
    start = time.perf_counter()
    try:
        with Context.using(backend):
            result = exp.run(config, progress=not args.quiet)
    except Incomplete as err:
        print(f"attnlab: {exp.id} incomplete: {err}", file=sys.stderr)
        return EXIT_INCOMPLETE
    except KeyboardInterrupt:
        return _interrupted(exp, config, time.perf_counter() - start)
    finally:
        if backend != "local":
            backend.close()
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "result.json").write_text(json.dumps(result, indent=1, default=str))
    meta = result.get("meta", {})
    print(f"{exp.id}: done in {meta.get('seconds')} s on {meta.get('device') if backend == 'local' else where} "
          f"({meta.get('computed')} computed, {meta.get('store_hits')} from the store)"
          + (f"; result in {_shown(out / 'result.json')}" if out else ""))
    resumed = resumed_line(meta)
    if resumed:
        print(resumed)
    return EXIT_OK


def _run_notebook(exp, params: dict, args) -> int:
    from papermill.exceptions import PapermillExecutionError

    from .core.progress import CellProgress
    from .notebooks import execute

    out = Path(args.out or Path("runs") / exp.id / time.strftime("%Y%m%d-%H%M%S"))
    notebook = out / f"{Path(exp.id).name}.ipynb"
    progress = None
    if not args.quiet:
        print(f"{exp.id}: executing the chapter (scale {args.scale}) into {_shown(out)}/", file=sys.stderr)
        # papermill sends the kernel's file descriptor 2 to a log: progress goes to a copy of the terminal's
        terminal = os.fdopen(os.dup(sys.stderr.fileno()), "w", encoding="utf-8", errors="replace")
        progress = CellProgress(terminal)
    start = time.perf_counter()
    try:
        seconds = execute(exp, notebook, parameters=params, cwd=Path.cwd(), progress=progress, units=True)
    except PapermillExecutionError as err:
        if err.ename == "KeyboardInterrupt":
            return _interrupted(exp, params, time.perf_counter() - start, notebook)
        print(f"attnlab: {exp.id} stopped in cell [{_error_cell(notebook) or err.exec_count}]: {err.ename}: "
              f"{_first_line(err.evalue)}", file=sys.stderr)
        if resumed_line(_units(notebook)):
            print(resumed_line(_units(notebook)))
        print(claims_summary(notebook))
        print(f"book page: {_page(exp, notebook)} (the executed notebook, up to the error)")
        return EXIT_FAILED
    except KeyboardInterrupt:
        return _interrupted(exp, params, time.perf_counter() - start, notebook)
    finally:
        if progress is not None:
            progress.stream.close()
    units = _units(notebook)
    print(f"{exp.id}: executed in {seconds:.1f} s" + (f"; {resumed_line(units)}" if resumed_line(units) else ""))
    print(claims_summary(notebook))
    print(f"book page: {_page(exp, notebook)} (notebook: {notebook.name} beside it)")
    return EXIT_OK


def _interrupted(exp, config: dict, seconds: float, notebook: Path | None = None) -> int:
    """One line for Ctrl-C: what was kept and how to go on."""
    from .core.store import default_root

    with contextlib.suppress(Exception):  # close the experiment's progress bars before the message
        from tqdm import tqdm

        for bar in list(getattr(tqdm, "_instances", ())):
            bar.close()
    _clear_line()
    store = default_root(config.get("scale", "ci")) / exp.id
    partial = f"; the notebook so far: {_shown(notebook)}" if notebook is not None and notebook.exists() else ""
    print(f"attnlab: {exp.id} interrupted (Ctrl-C) after {seconds:.0f} s; the units it finished are kept in "
          f"{_shown(store)}/: rerun the same command to resume{partial}", file=sys.stderr)
    return EXIT_INTERRUPTED


def _clear_line() -> None:
    """On a terminal, erase a progress bar left on the current line (the next message starts clean)."""
    if sys.stderr.isatty():
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()


def _shown(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _first_line(text: str | None, limit: int = 200) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _error_cell(notebook: Path) -> int | None:
    """The number (In [N]) of the executed notebook's cell that raised."""
    import nbformat

    for cell in nbformat.read(notebook, as_version=4).cells:
        if any(out.get("output_type") == "error" for out in cell.get("outputs", [])):
            return cell.get("execution_count")
    return None


def _units(notebook: Path) -> dict:
    import nbformat

    return nbformat.read(notebook, as_version=4).metadata.get("attnlab", {}).get("units") or {}


def resumed_line(meta: dict) -> str:
    """'resumed: N of M units from the store' when a run reused N > 0 stored units (M: all it needed)."""
    hits, computed = int(meta.get("store_hits") or 0), int(meta.get("computed") or 0)
    return f"resumed: {hits} of {hits + computed} units from the store" if hits else ""


def _page(exp, notebook: Path) -> str:
    """Write the HTML page of the executed notebook beside it; return its path as shown."""
    import html

    import nbformat

    from .htmlpage import write_page

    meta = nbformat.read(notebook, as_version=4).metadata.get("attnlab", {})
    given = ", ".join(f"{k}={v!r}" for k, v in meta.get("parameters", {}).items())
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(notebook.stat().st_mtime))
    header = (f'<header class="run">attnlab run <code>{html.escape(exp.id)}</code> ({html.escape(exp.label)}), '
              f"executed {when}" + (f" in {meta['seconds']} s" if "seconds" in meta else "")
              + (f" on {html.escape(str(meta['cpu']))}" if meta.get("cpu") else "")
              + (f"; parameters: <code>{html.escape(given)}</code>" if given else "") + "</header>")
    return _shown(write_page(notebook, f"{exp.title} ({exp.id})", header))


def claims_summary(notebook: Path) -> str:
    """One line: how many claims of the executed chapter have each verdict (its claims table), and
    which fail."""
    from .core.claims import KINDS, VERDICT_MARK
    from .notebooks import claims_of, count_kinds

    rows = claims_of(notebook)
    if not rows:
        return "claims: no claims table in the executed notebook"
    n = count_kinds(rows)
    failing = [r["key"] for r in rows if r["verdict"].startswith(VERDICT_MARK["fails"].split()[0])]
    return ("claims: " + ", ".join(f"{n[k]} {VERDICT_MARK[k]}" for k in KINDS if n[k])
            + (f" (failing: {', '.join(failing)})" if failing else ""))


def cmd_book(args) -> int:
    from .core.store import REPO_ROOT
    from .notebooks import build_chapters, write_generated_pages

    build_chapters(jobs=args.jobs, force=args.force, only=args.only or None)
    write_generated_pages()
    if args.no_build:
        return EXIT_OK
    cmd = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(REPO_ROOT), "--warningiserror", "--nitpick", "--keep-going"]
    print("building:", " ".join(cmd))
    rc = subprocess.call(cmd, cwd=REPO_ROOT)
    if rc == 0:
        print(f"open {REPO_ROOT / '_build' / 'html' / 'index.html'}")
    return EXIT_OK if rc == 0 else EXIT_FAILED


def cmd_check(args) -> int:
    from .notebooks import check, machine_warnings

    problems = check()
    for p in problems:
        print(p)
    for w in machine_warnings():  # not a failure: the book is right for the machine that executed it
        print("warning: " + w, file=sys.stderr)
    print("attnlab check: " + ("ok" if not problems else f"{len(problems)} problem(s)"))
    return EXIT_FAILED if problems else EXIT_OK


def cmd_scorecard(args) -> int:
    from .notebooks import scorecard_markdown

    print(scorecard_markdown())
    return EXIT_OK


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("attnlab")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="attnlab", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.split("\n")[2:]))
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("list", help="every result with its chapter, status and CI time")
    p.add_argument("--paper", help="only this paper (e.g. 004)")
    p.set_defaults(fn=cmd_list)

    p = sub.add_parser("run", help="rerun one chapter (papermill) or its experiment (--headless)",
                       description="Rerun a chapter with new parameters. Without --headless the chapter's "
                                   "notebook is executed with papermill into --out (default runs/RESULT/TIME/); "
                                   "with --headless only the experiment runs (no Jupyter needed, e.g. on a GPU box). "
                                   "Results go to the result store (results/SCALE/), so a rerun resumes.")
    p.add_argument("result", help="result id, e.g. 004-memorization/fig1a-accuracy-vs-heads (see `attnlab list`)")
    p.add_argument("--scale", default="ci", help="preset: ci (default; seconds on one CPU thread) or full (the paper's "
                                                 "protocol); a few chapters also define medium (see `attnlab list`)")
    p.add_argument("-p", "--param", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="override a parameter, e.g. -p seeds 2 -p H_list '[1,4,8]' (repeatable)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], help="auto (default): CUDA when present")
    p.add_argument("--headless", action="store_true", help="run the experiment function only")
    p.add_argument("--backend", choices=["local", "ray"], default="local",
                   help="with --headless: local (default: this process) or ray (each program of a sweep a Ray task; "
                        "needs the optional extra: pip install -e .[ray])")
    p.add_argument("--address", help="with --backend ray: the cluster to join (HOST:PORT, or auto); "
                                     "default: start a local Ray instance on this machine's cores")
    p.add_argument("--out", help="output folder")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.set_defaults(fn=cmd_run)

    p = sub.add_parser("book", help="execute stale chapters (CI scale) and build the HTML book")
    p.add_argument("--jobs", type=int, default=2, help="worker processes, one torch thread each (default 2)")
    p.add_argument("--force", action="store_true", help="re-execute every chapter")
    p.add_argument("--only", nargs="*", help="only these result ids")
    p.add_argument("--no-build", action="store_true", help="execute chapters but do not build the HTML")
    p.set_defaults(fn=cmd_book)

    from . import campaign

    p = sub.add_parser("campaign", help="run the paper-scale presets in priority order, within a time budget",
                       description=campaign.__doc__.split("\n\n")[0] + " Exit 0: all done; 75: work left "
                                   "(rerun the same command to resume).")
    campaign.add_arguments(p)
    p.set_defaults(fn=campaign.command)

    p = sub.add_parser("check", help="fast static checks")
    p.set_defaults(fn=cmd_check)
    p = sub.add_parser("scorecard", help="print every claim with its verdict")
    p.set_defaults(fn=cmd_scorecard)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import signal

    # Ctrl-C (SIGINT) stops a run even when the parent started it with SIGINT ignored (a background job of a
    # non-interactive shell, a pytest-xdist worker), which Python would otherwise inherit.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return args.fn(args)
    except ParameterError as err:
        print(f"attnlab: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # Ctrl-C outside a run (a run says what it kept): one line, no traceback
        _clear_line()
        print("attnlab: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
