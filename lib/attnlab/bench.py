"""Sweep throughput: a 64-model sweep trained as one replica-batched program against the plain loop.

    python -m attnlab.bench [--quick] [--only NAME ...] [--out results/bench/throughput.json] [--no-profile]

The baseline is what a user would write by hand: a plain `nn.Module` of the same math, one model
at a time, `torch.optim.Adam` (same betas, eps, learning-rate schedule), the same number of steps
on the same batches. Both sides get their batches from a list made before the clock starts (data
generation is not counted). One torch thread; every time is the minimum over `repeats` runs of the
process's CPU time (`time.process_time`): with one thread it is the compute the training did, and unlike
wall time it does not grow when other jobs share the machine.
Each paper declares its workloads in `papers/<paper>/bench.py` (`attnlab.core.benchmark.Workload`),
with its plain model there and a test beside it that the plain model computes the same function.

Per workload the record holds: the sweep as one program (`batched_s`), the 64 plain models one after
another (`plain_s`), their ratio (`speedup`), and one model alone both ways (`single_*`: the
replica program with one replica against that model's plain loop). `--quick` is a smoke run
(few steps, one repeat) that writes nothing unless `--out` is given.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import time
from pathlib import Path

import torch

from attnlab.core.benchmark import Workload
from attnlab.core.device import set_threads
from attnlab.core.progress import tqdm
from attnlab.core.store import REPO_ROOT

RECORD = REPO_ROOT / "results" / "bench" / "throughput.json"
STEPS, REPEATS = 300, 3
GROUP = 16  # models per program in the size-grouped variant (Workload.size_groups)

# --- the workloads: each paper's `bench.py` declares its own (attnlab.core.benchmark.Workload) ------------
def workloads(steps: int = STEPS) -> dict[str, Workload]:
    """Every paper's workloads, in book order, by name (a paper without a `bench` module has none)."""
    from attnlab.papers import PAPERS

    out: dict[str, Workload] = {}
    for pkg in PAPERS:
        name = f"attnlab.papers.{pkg}.bench"
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name == name:
                continue
            raise
        out.update({w.name: w for w in module.workloads(steps)})
    return out


def run_workload(w: Workload, steps: int, repeats: int) -> dict:
    """min-of-`repeats` times of the batched program, the plain loop over all models, and one model both ways."""
    set_threads(1)
    cfg, rows = w.config, w.models
    batches = w.batches(cfg, steps)
    w.train_batched(cfg, batches, min(steps, 5), [0, 1])  # warm-up (first-call costs)
    w.train_plain(cfg, batches, min(steps, 5), rows[0])
    batched = plain = single_batched = grouped = float("inf")
    plain_each = [float("inf")] * len(rows)
    for _ in tqdm(range(repeats), desc=w.name, leave=False):  # the minimum over repeats is the least noisy estimate
        batched = min(batched, w.train_batched(cfg, batches, steps, None))
        each = [w.train_plain(cfg, batches, steps, row) for row in rows]
        plain = min(plain, sum(each))
        plain_each = [min(a, b) for a, b in zip(plain_each, each)]
        single_batched = min(single_batched, w.train_batched(cfg, batches, steps, [w.single]))
        grouped = min(grouped, sum(w.train_batched(cfg, batches, steps, g) for g in w.size_groups(GROUP)))
    return {"models": len(rows), "steps": steps, "repeats": repeats,
            "batched_s": round(batched, 3), "plain_s": round(plain, 3), "speedup": round(plain / batched, 2),
            "single_model": rows[w.single], "single_batched_s": round(single_batched, 3),
            "single_plain_s": round(plain_each[w.single], 3),
            "single_speedup": round(plain_each[w.single] / single_batched, 2),
            "grouped_programs": len(w.size_groups(GROUP)), "grouped_s": round(grouped, 3),
            "grouped_speedup": round(plain / grouped, 2)}


def profile_workload(w: Workload, steps: int, top: int = 12) -> dict:
    """Where the 64-model program's time goes: torch.profiler's top ops by self CPU time."""
    from torch.profiler import ProfilerActivity, profile

    set_threads(1)
    batches = w.batches(w.config, steps)
    w.train_batched(w.config, batches, min(steps, 5), [0, 1])
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        w.train_batched(w.config, batches, steps, None)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    rows = sorted(events, key=lambda e: -e.self_cpu_time_total)[:top]
    return {"steps": steps, "total_self_cpu_ms": round(total / 1e3, 1),
            "top_ops [name, calls, self_ms, share]": [
                [e.key, e.count, round(e.self_cpu_time_total / 1e3, 1), round(e.self_cpu_time_total / total, 3)]
                for e in rows]}


def machine() -> dict:
    from attnlab.notebooks import cpu_name

    return {"platform": platform.platform(), "cpu": cpu_name(),
            "cores": os.cpu_count(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "device": "cpu"}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --- the README table -----------------------------------------------------------------------------------
def readme_table(record: dict | None = None) -> str:
    """The README's throughput table (Markdown), from the record (default: results/bench/throughput.json)."""
    rec = record if record is not None else json.loads(RECORD.read_text())
    m = rec["machine"]
    lines = ["| workload | one program | plain loop, one model after another | speedup | "
             "4 programs of 16, sorted by size | one model: program / plain loop |", "|---|---|---|---|---|---|"]
    for name, w in rec["workloads"].items():
        lines.append(f"| {w.get('describe', name)} | {w['batched_s']:.2f} s | {w['plain_s']:.2f} s | "
                     f"{w['speedup']:.1f}× | {w['grouped_s']:.2f} s ({w['grouped_speedup']:.1f}×) | "
                     f"{w['single_batched_s']:.2f} s / {w['single_plain_s']:.2f} s |")
    lines.append("")
    clock = "CPU time" if rec.get("clock") == "process_time" else "wall time"
    lines.append(f"One torch thread, {clock}, minimum of {rec['repeats']} runs, data generation not counted; {m['cpu']}, "
                 f"torch {m['torch']}, last run {rec['date']} (a run with --only updates its workloads), load average "
                 f"{rec['load_average_start'][0]} at its start and {rec['load_average_end'][0]} at its end on "
                 f"{m['cores']} cores shared with other jobs (each workload's load is in the record) "
                 f"(`python -m attnlab.bench`, `results/bench/throughput.json`).")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 10 steps, 1 repeat, no record written")
    parser.add_argument("--only", nargs="*", help="workload names (default: all)")
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--out", default=None, help=f"record path (default {RECORD.relative_to(REPO_ROOT)}; "
                                                    "--quick writes none unless given)")
    args = parser.parse_args(argv)
    set_threads(1)
    steps, repeats = (10, 1) if args.quick else (STEPS, REPEATS)
    out = args.out or (None if args.quick else str(RECORD))
    todo = workloads(steps)
    if args.only:
        unknown = sorted(set(args.only) - set(todo))
        if unknown:
            parser.error(f"unknown workload(s) {unknown}; known: {list(todo)}")
        todo = {k: v for k, v in todo.items() if k in args.only}
    record = {"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "repeats": repeats,
              "clock": "process_time",
              "load_average_start": _load(), "workloads": {}, "profiles": {}}
    if out and Path(out).exists() and args.only:  # a partial run updates the record
        old = json.loads(Path(out).read_text())
        record["workloads"], record["profiles"] = old.get("workloads", {}), old.get("profiles", {})
    for name, w in todo.items():
        res = run_workload(w, w.config["steps"], repeats)
        record["workloads"][name] = {"config": w.config, "describe": w.describe, **res, "load_average": _load()}
        print(f"{name}: program {res['batched_s']:.2f} s, plain loop {res['plain_s']:.2f} s, "
              f"{res['speedup']:.1f}x; {res['grouped_programs']} programs by size {res['grouped_s']:.2f} s "
              f"({res['grouped_speedup']:.1f}x); one model {res['single_batched_s']:.2f} s vs {res['single_plain_s']:.2f} s",
              flush=True)
        if w.profiled and not args.no_profile:
            record["profiles"][name] = profile_workload(w, w.config["steps"])
            for op in record["profiles"][name]["top_ops [name, calls, self_ms, share]"][:6]:
                print(f"    {op[0]:<32} {op[1]:>7} calls {op[2]:>9.1f} ms {100 * op[3]:5.1f} %")
    record["load_average_end"] = _load()
    if out:
        record["workloads"] = {k: record["workloads"][k] for k in workloads(steps) if k in record["workloads"]}
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
