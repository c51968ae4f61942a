"""attnlab: list, run, book, check and scorecard the companion book's chapters.

  attnlab list                              every result: paper, figure, chapter, status, CI time
  attnlab run RESULT [--scale ci|medium|full] [-p NAME VALUE]... [--device D] [--headless]
              [--backend local|ray [--address ADDR]]   ray: each program of a sweep a Ray task
  attnlab book [--jobs 2] [--force] [--no-build]
  attnlab check                             fast static checks (toc, staleness, contract, timings)
  attnlab scorecard                         every claim with its verdict

Exit codes: 0 success, 1 a check or claim failed, 2 bad usage or bad parameter, 75 a headless
run stopped at its time limit (-p time_limit MINUTES) after saving progress: rerun to resume.
"""

from __future__ import annotations

import os

# Tiny models: one BLAS/OpenMP thread per process (set before numpy or torch load their libraries).
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, os.environ.get("ATTNLAB_THREADS", "1"))

import argparse  # noqa: E402
import ast  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from .core.params import ParameterError  # noqa: E402

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INCOMPLETE = 75  # sysexits EX_TEMPFAIL: stopped at the time limit, rerun to resume


def parse_value(text: str):
    """'-p NAME VALUE' values as papermill does: numbers, lists, booleans, else a string."""
    lowered = {"true": True, "false": False, "none": None, "null": None}
    if text.lower() in lowered:
        return lowered[text.lower()]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
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
    from .papers import get

    exp = get(args.result)
    overrides = {}
    for name, value in args.param:
        overrides[name] = parse_value(value)
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
        from .core.experiment import Context, Incomplete

        backend = "local"
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
        try:
            with Context.using(backend):
                result = exp.run(config, progress=not args.quiet)
        except Incomplete as err:
            print(f"attnlab: {exp.id} incomplete: {err}", file=sys.stderr)
            return EXIT_INCOMPLETE
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
              + (f"; result in {out / 'result.json'}" if out else ""))
        return EXIT_OK
    from .notebooks import execute

    from papermill.exceptions import PapermillExecutionError

    out = Path(args.out or Path("runs") / exp.id / time.strftime("%Y%m%d-%H%M%S"))
    notebook = out / f"{Path(exp.id).name}.ipynb"
    params = {"scale": args.scale, **overrides}
    try:
        seconds = execute(exp, notebook, parameters=params, cwd=Path.cwd())
    except PapermillExecutionError as err:
        print(f"attnlab: {exp.id} stopped: {err.ename}: {err.evalue.splitlines()[0] if err.evalue else ''} "
              f"(executed notebook: {notebook})", file=sys.stderr)
        return EXIT_FAILED
    print(f"{exp.id}: executed in {seconds:.1f} s -> {notebook}")
    print(claims_summary(notebook))
    return EXIT_OK


def claims_summary(notebook: Path) -> str:
    """One line: how many claims of the executed chapter are reproduced, fail, … (its claims table)."""
    from .core.claims import KINDS
    from .notebooks import claims_of, count_kinds

    rows = claims_of(notebook)
    if not rows:
        return "claims: no claims table in the executed notebook"
    n = count_kinds(rows)
    return "claims: " + ", ".join(f"{n[k]} {k}" for k in KINDS if n[k])


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

    p = sub.add_parser("check", help="fast static checks")
    p.set_defaults(fn=cmd_check)
    p = sub.add_parser("scorecard", help="print every claim with its verdict")
    p.set_defaults(fn=cmd_scorecard)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except ParameterError as err:
        print(f"attnlab: error: {err}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
