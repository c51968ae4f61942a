"""The paper-scale campaign: every full preset, planned, then run in priority order in resumable chunks.

    attnlab campaign --dry-run                      # what a run would do, with the plan's estimates
    attnlab campaign --device cuda --budget 10      # run for at most 10 minutes; exit 75 with work left
    attnlab campaign --write-plan                   # regenerate results/campaign.toml (`attnlab book` does)

**The plan** (`results/campaign.toml`, generated from the registry and the executed book, checked by a
test) lists every chapter with a `full` preset: the claim rows it unlocks (its "not run" rows), its size
(models × steps × batch, read from the preset's grid: the product of its list-valued knobs times its
seeds), and three costs:

- `cpu_s`: one CPU thread, *scaled*: the chapter's measured CI time (book/timings.csv) times the ratio of
  the full preset's size to the CI preset's; or *measured*: the seconds its stored CPU entries record;
- `gpu_s`: one GPU, *launch-bound*: a step dispatches the same kernels whatever the replica count, so
  one program costs its steps times the paper's measured per-step time of a 1,000-replica program
  (results/bench/throughput-cuda.json); or *measured*: the seconds its stored GPU entries record;
- `priority`: claim rows per GPU-minute, each paper's headline figure first.

**The run** goes through the plan in priority order (CPU: cheapest first), skipping what is stored
(`Experiment.stored`) and what needs a package that is absent (the pretrained-model chapters need
`transformers`). Each chapter runs as `attnlab run ID --scale full --headless` in a child process with
the time left (`-p time_limit` where the chapter has one, and a hard stop at the budget's end): what a
chunk finishes is stored at once (results/full/), so the same command resumes, after the budget or a
SIGKILL. On a GPU the first minute is the throughput record (`attnlab.bench --device cuda`). Each run
is logged with its provenance to results/full/campaign-log.jsonl. Exit codes: 0 all done, 75 work left.

Only torch and numpy are needed: a bare GPU machine runs it with `PYTHONPATH=lib python -m attnlab.campaign`.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .core.store import git_commit, REPO_ROOT

PLAN = REPO_ROOT / "results" / "campaign.toml"
GPU_RECORD = REPO_ROOT / "results" / "bench" / "throughput-cuda.json"
EXIT_MORE = 75  # EX_TEMPFAIL: the budget ended with work left; the same command resumes
MIME = "application/vnd.attnlab.claims+json"
# The papers' headline results: run first whatever their cost (each paper's abstract names them).
HEADLINES = ("001-positional/ood-scale", "004-memorization/fig1a-accuracy-vs-heads",
             "000-capacity/capacity-law", "002-counting/phase-diagrams-softmax",
             "003-allocation/fig4-head-compression")
SEED_KEYS = ("seeds", "trials", "runs")
STEP_KEYS = ("steps", "iterations", "aot_steps", "max_iter")
CHUNK_KEYS = ("chunk", "max_replicas")
TEST_AXES = ("c_list", "syn_lengths", "ells", "circle_N", "compare_heads", "test_lengths")  # evaluated, not trained
BATCH_KEYS = ("batch_size", "batch", "n_test", "contexts")
GPU_CHUNKS = (4096, 1024, 256, 64, None)  # replicas per program tried on a GPU, largest first (None: the preset's)
BENCH_S = 90  # the GPU throughput record's share of a window (one repeat, 32 plain models timed)


# --- the plan ---------------------------------------------------------------------------------------------
def size(config: dict) -> dict[str, int]:
    """models × steps × batch of a preset, read from its grid (an upper bound where a chapter trains a
    window of it): models = seeds × the product of the lengths of its list-valued knobs (sizes, heads,
    tasks; not the scales it only evaluates at); steps from the usual knob names, or epochs × batches per
    epoch; programs = models / replicas per program where the preset says (else 1: one program)."""
    models = 1
    for key, value in config.items():
        if key in SEED_KEYS and isinstance(value, int):
            models *= max(value, 1)
        elif isinstance(value, list) and value and key not in TEST_AXES:
            models *= len(value)
        elif key == "tasks" and isinstance(value, str):
            models *= len([t for t in value.split(",") if t])
    steps = next((int(config[k]) for k in STEP_KEYS if isinstance(config.get(k), (int, float)) and config[k]), 1)
    batch = next((int(config[k]) for k in BATCH_KEYS if isinstance(config.get(k), int) and config[k]), 1)
    if isinstance(config.get("epochs"), int) and config["epochs"]:
        steps = config["epochs"] * max(math.ceil(int(config.get("samples") or batch) / batch), 1)
    chunk = next((int(config[k]) for k in CHUNK_KEYS if isinstance(config.get(k), int) and config[k]), models)
    return {"models": models, "steps": steps, "batch": batch, "programs": math.ceil(models / max(chunk, 1))}


def _not_run_rows(executed: Path) -> int:
    """The "not run" rows of an executed chapter's claims tables (read as JSON: no Jupyter needed)."""
    if not executed.exists():
        return 0
    nb = json.loads(executed.read_text())
    return sum(row.get("verdict") == "not run" for cell in nb["cells"] for out in cell.get("outputs", [])
               for row in out.get("data", {}).get(MIME, {}).get("rows", []))


def _ci_seconds() -> dict[str, float]:
    path = REPO_ROOT / "book" / "timings.csv"
    if not path.exists():
        return {}
    with path.open() as f:
        return {r["result"]: float(r["seconds"]) for r in csv.DictReader(f)}


def _gpu_step_s() -> dict[str, float]:
    """Seconds per step of a 1,000-replica program on the GPU, per paper (the slowest of its bench
    workloads), from the GPU throughput record."""
    if not GPU_RECORD.exists():
        return {}
    rec = json.loads(GPU_RECORD.read_text())
    out: dict[str, float] = {}
    for name, w in rec.get("workloads", {}).items():
        paper = name.split()[0]
        out[paper] = max(out.get(paper, 0.0), w["batched_s"] / w["steps"])
    return out


def _stored_seconds(exp_id: str) -> dict[str, float]:
    """Seconds recorded by the stored paper-scale entries of a chapter, by device kind ('cpu', 'cuda')."""
    folder = REPO_ROOT / "results" / "full" / exp_id
    out: dict[str, float] = {}
    for path in sorted(folder.rglob("*.json")) if folder.exists() else []:
        if "checkpoints" in path.parts:
            continue
        try:
            prov = json.loads(path.read_text()).get("provenance", {})
        except (OSError, ValueError):
            continue
        kind = str(prov.get("device", "cpu")).split(":")[0].split(" ")[0] or "cpu"
        out[kind] = out.get(kind, 0.0) + float(prov.get("seconds") or 0.0)
    return out


def needs(exp: Any) -> list[str]:
    """Packages beyond torch and numpy that a chapter's full preset needs (read from its module's source)."""
    module = sys.modules.get(exp.compute.__module__)
    source = Path(module.__file__).read_text() if module and getattr(module, "__file__", None) else ""
    return ["transformers"] if ("transformers" in source or "pretrained" in source) else []


def plan_rows() -> list[dict]:
    """One row per chapter with a full preset, in priority order (headlines first, then rows per GPU-minute)."""
    from .papers import registry

    ci_s, step_s = _ci_seconds(), _gpu_step_s()
    exps = [e for e in registry().values() if "full" in e.presets]
    for exp in exps:  # a paper without a GPU bench record: its step time measured on its stored GPU runs
        fs, cuda = size(exp.config("full")), _stored_seconds(exp.id).get("cuda")
        if cuda and fs["steps"] > 1 and exp.paper[:3] not in step_s:
            step_s[exp.paper[:3] + "*"] = max(step_s.get(exp.paper[:3] + "*", 0.0), cuda / (fs["programs"] * fs["steps"]))
    step_s = {k.rstrip("*"): v for k, v in sorted(step_s.items(), key=lambda kv: kv[0].endswith("*"))}
    slowest = max(step_s.values(), default=0.01)
    rows = []
    for exp in exps:
        full, ci = exp.config("full"), exp.config("ci")
        fs, cs = size(full), size(ci)
        ratio = (fs["models"] * fs["steps"] * fs["batch"]) / max(cs["models"] * cs["steps"] * cs["batch"], 1)
        stored = _stored_seconds(exp.id)
        cpu = ({"cpu_s": max(round(stored["cpu"]), 1), "cpu_basis": "measured"} if "cpu" in stored else
               {"cpu_s": round(ci_s.get(exp.id, 45.0) * max(ratio, 1.0)), "cpu_basis": "scaled from CI"})
        paper = exp.paper[:3]
        if "cuda" in stored:
            gpu = {"gpu_s": max(round(stored["cuda"]), 1), "gpu_basis": "measured"}
        elif fs["steps"] <= 1:
            gpu = {"gpu_s": cpu["cpu_s"], "gpu_basis": "not a training program: the CPU estimate, no speedup assumed"}
        else:
            per = step_s.get(paper)
            gpu = {"gpu_s": round(fs["programs"] * fs["steps"] * (per or slowest) + 5),
                   "gpu_basis": f"launch-bound, {fs['programs']} program(s) × steps × the paper's step time"
                                + ("" if per else f" (paper {paper} not benched: the slowest paper's)")}
        unlocks = _not_run_rows(exp.executed)
        rows.append({"id": exp.id, "label": exp.label, "unlocks": unlocks, **fs, **cpu, **gpu,
                     "needs": needs(exp), "headline": exp.id in HEADLINES,
                     "priority": round(unlocks / max(gpu["gpu_s"] / 60, 1 / 60), 3)})
    rows.sort(key=lambda r: (not (r["headline"] and r["unlocks"]), -r["priority"], r["gpu_s"], r["id"]))
    return rows


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return json.dumps(str(v), ensure_ascii=False)


def plan_toml(rows: list[dict] | None = None) -> str:
    """The plan as TOML: one [[preset]] table per chapter, in run order."""
    rows = plan_rows() if rows is None else rows
    head = ["# The paper-scale campaign: generated by `attnlab campaign --write-plan` (and `attnlab book`) from",
            "# the registry, book/timings.csv, the executed chapters, results/bench/throughput-cuda.json and the",
            "# stored results/full entries; tests/test_campaign.py checks it is current. Do not edit by hand.",
            "# cpu_s: one CPU thread; gpu_s: one GPU; *_basis says how each was obtained (see attnlab/campaign.py).",
            f"# {len(rows)} full presets, {sum(r['unlocks'] for r in rows)} claim rows to unlock, "
            f"{sum(r['gpu_s'] for r in rows if r['unlocks']) / 3600:.1f} GPU-hours for the chapters with rows left.", ""]
    body = []
    for r in rows:
        body.append("[[preset]]")
        body += [f"{k} = {_toml_value(v)}" for k, v in r.items()]
        body.append("")
    return "\n".join(head + body)


def read_plan(path: Path = PLAN) -> list[dict]:
    import tomllib

    return tomllib.loads(path.read_text())["preset"]


def write_plan() -> Path:
    PLAN.write_text(plan_toml())
    return PLAN


# --- the run ----------------------------------------------------------------------------------------------
def log_path(scale: str = "full") -> Path:
    """The campaign's log: one JSON line per run, with its provenance (results/full/campaign-log.jsonl)."""
    from .core.store import default_root

    return default_root(scale) / "campaign-log.jsonl"


def _completed(scale: str) -> set[str]:
    path = log_path(scale)
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []
    return {e["run"] for e in lines if e.get("rc") == 0 and e.get("scale") == scale}


def _done(row: dict, scale: str) -> bool:
    """Whether a chapter's run of `scale` is complete, without computing anything: it has stored entries,
    and either a campaign run of it ended well (the log) or, at paper scale, its executed chapter has no
    "not run" row left (a run made by hand, judged by `attnlab book`)."""
    from .core.store import default_root

    folder = default_root(scale) / row["id"]
    if not (folder.exists() and any(folder.rglob("*.json"))):
        return False
    return (scale == "full" and row["unlocks"] == 0) or row["id"] in _completed(scale)


def _device_line(device: str) -> dict:
    import torch

    info = {"device": device, "torch": torch.__version__, "commit": git_commit(), "host": os.uname().nodename}
    if device == "cuda":
        info.update(gpu=torch.cuda.get_device_name(), cuda=torch.version.cuda)
    return info


def _log(entry: dict, log: Path) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as f:
        f.write(json.dumps(entry, ensure_ascii=False) + "\n")


def _child(argv: list[str], timeout: float) -> int:
    """`attnlab <argv>` in a child process (its own imports, its own memory), stopped at `timeout` seconds."""
    code = "import sys; from attnlab.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "lib"), os.environ.get("PYTHONPATH", "")])}
    try:
        return subprocess.run([sys.executable, "-c", code, *argv], env=env, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return 124


def run(device: str, budget_min: float, *, dry_run: bool = False, only: list[str] | None = None,
        scale: str = "full", bench: bool = True, plan: list[dict] | None = None, archive: Path | None = None,
        out=print) -> int:
    """Run the plan for at most `budget_min` minutes on `device`; 0 when nothing is left, 75 otherwise."""
    start = time.monotonic()
    left = lambda: budget_min * 60 - (time.monotonic() - start)  # noqa: E731
    rows = plan if plan is not None else read_plan()
    if only:
        rows = [r for r in rows if r["id"] in only]
    if device == "cpu":  # what fits a CPU runs cheapest first (the chapters with rows to unlock before the others)
        rows = sorted(rows, key=lambda r: (not r["unlocks"], r["cpu_s"], r["id"]))
    cost = "gpu_s" if device == "cuda" else "cpu_s"
    todo = [r for r in rows if not _done(r, scale)]
    log = log_path(scale)
    missing = lambda r: [m for m in r.get("needs", []) if importlib.util.find_spec(m) is None]  # noqa: E731
    out(f"campaign on {device}, budget {budget_min:g} min: {len(todo)} of {len(rows)} presets to run "
        f"({sum(r['unlocks'] for r in todo)} claim rows, estimated {sum(r[cost] for r in todo) / 60:.1f} min)")
    if dry_run:
        t, started = (BENCH_S if device == "cuda" and bench else 0), False
        for r in todo:
            skip = missing(r)
            fits = t + r[cost] <= budget_min * 60
            what = "skip" if skip else ("run " if fits and not started else ("later" if started else "part"))
            started = started or (not skip and not fits)
            out(f"  {what:<5} {r['id']:<48} {r['unlocks']:>2} rows  "
                f"~{r[cost] / 60:7.1f} min ({r[cost.replace('_s', '_basis')]})"
                + (f"  needs {', '.join(skip)}" if skip else ""))
            t += 0 if skip else r[cost]
        return 0 if not todo else EXIT_MORE
    if device == "cuda" and bench and left() > 2 * BENCH_S:
        rc = _child_bench(min(BENCH_S, left() / 4))
        _log({**_device_line(device), "run": "bench", "rc": rc, "written": _now()}, log)
    for r in todo:
        skip = missing(r)
        if skip:
            out(f"skip {r['id']}: needs {', '.join(skip)}")
            continue
        if left() < 30:
            break
        limit = max(left() - 20, 10)
        argv = ["run", r["id"], "--scale", scale, "--headless", "--device", device, "-q",
                "--out", str(REPO_ROOT / "runs" / "campaign" / r["id"])]
        from .papers import registry

        if "time_limit" in registry()[r["id"]].names:
            argv += ["-p", "time_limit", f"{max(limit - 10, 5) / 60:.2f}"]
        out(f"run  {r['id']} ({left() / 60:.1f} min left, estimated {r[cost] / 60:.1f} min)")
        t0 = time.monotonic()
        # on a GPU a step costs about the same whatever the replica count: as few programs as memory allows
        # (the chunk is not part of any store key; a chunk the memory estimate refuses exits 2 at once)
        for chunk in (GPU_CHUNKS if device == "cuda" and "chunk" in registry()[r["id"]].names else (None,)):
            rc = _child(argv + (["-p", "chunk", str(chunk)] if chunk else []), max(left() - 20, 10))
            if rc != 2:
                break
        wall = time.monotonic() - t0
        _log({**_device_line(device), "run": r["id"], "scale": scale, "rc": rc, "wall_s": round(wall, 1),
              "steps": r["steps"], "steps_per_s": round(r["steps"] / wall, 2) if rc == 0 else None,
              "estimate_s": r[cost], "written": _now()}, log)
        if archive:
            pack(archive)
        out(f"     rc={rc} after {wall:.0f} s" + {0: "", EXIT_MORE: " (stopped at its time limit, resumable)",
                                                  124: " (stopped at the budget; finished programs are stored)"}
            .get(rc, " (failed: see above)"))
    if archive:
        out(f"packed results/full and results/bench into {pack(archive)}")
    left_over = [r["id"] for r in todo if not missing(r) and not _done(r, scale)]
    out(f"{len(left_over)} preset(s) left" + (": rerun the same command to resume" if left_over else ""))
    return EXIT_MORE if left_over else 0


def _child_bench(timeout: float) -> int:
    code = "import sys; from attnlab.bench import main; main(sys.argv[1:])"
    argv = ["--device", "cuda", "--models", "1000", "--plain-sample", "32", "--repeats", "1", "--no-grouped",
            "--no-profile"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "lib")}
    try:
        return subprocess.run([sys.executable, "-c", code, *argv], env=env, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return 124  # the record keeps every workload measured before the stop


def pack(archive: Path) -> Path:
    """results/full (entries, checkpoints, the log) and results/bench as one .tar.gz, written atomically:
    a machine that hands back only a folder's top level (a GPU box's $OUT) returns everything in one file.
    Unpack it at the repository's root (`tar xzf FILE`) and commit what it adds to results/."""
    import tarfile

    archive = Path(archive)
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(archive.name + ".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for folder in ("results/full", "results/bench"):
            if (REPO_ROOT / folder).exists():
                tar.add(REPO_ROOT / folder, arcname=folder)
    os.replace(tmp, archive)
    return archive


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda", help="where the presets train (default cuda)")
    p.add_argument("--budget", type=float, default=10.0, metavar="MINUTES",
                   help="stop after this many minutes (default 10); exit 75 with work left, rerun to resume")
    p.add_argument("--dry-run", action="store_true", help="print what would run, with the plan's estimates")
    p.add_argument("--only", nargs="*", help="only these result ids")
    p.add_argument("--no-bench", action="store_true", help="skip the GPU throughput record")
    p.add_argument("--archive", type=Path, metavar="FILE.tar.gz",
                   help="after each chapter, pack results/full (with checkpoints) and results/bench into this file "
                        "(e.g. $OUT/results.tar.gz on a machine that returns only files at a folder's top level)")
    p.add_argument("--write-plan", action="store_true", help=f"regenerate {PLAN.relative_to(REPO_ROOT)} and exit")
    p.add_argument("--scale", default="full", help=argparse.SUPPRESS)  # tests run the machinery on CI presets


def command(args: argparse.Namespace) -> int:
    if args.write_plan:
        print(f"wrote {write_plan().relative_to(REPO_ROOT)}")
        return 0
    if args.budget <= 0:
        raise SystemExit(f"attnlab campaign: error: --budget {args.budget:g}: give a positive number of minutes")
    if args.device == "cuda" and not args.dry_run:
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("attnlab campaign: error: --device cuda: torch sees no CUDA device here "
                             "(use --device cpu, or --dry-run to see the plan)")
    if not PLAN.exists():
        raise SystemExit(f"attnlab campaign: error: no plan at {PLAN}: run `attnlab campaign --write-plan`")
    if args.only:
        known = {r["id"] for r in read_plan()}
        unknown = sorted(set(args.only) - known)
        if unknown:
            raise SystemExit(f"attnlab campaign: error: --only {' '.join(unknown)}: not in the plan; "
                             f"known: e.g. {', '.join(sorted(known)[:3])} (see --dry-run)")
    return run(args.device, args.budget, dry_run=args.dry_run, only=args.only, scale=args.scale,
               bench=not args.no_bench, archive=args.archive)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="attnlab campaign", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return command(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
