"""Sweep throughput: a 64-model sweep trained as one replica-batched program against the plain loop.

    python -m attnlab.bench [--quick] [--only NAME ...] [--out results/bench/throughput.json] [--no-profile]
    python -m attnlab.bench --device cuda --models 1000 --plain-sample 32     # on a GPU (issue 18's 100x)

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
replica program with one replica against that model's plain loop), and a profile (`profile_workload`,
unless --no-profile): where the program's time goes, and how much of it, and of the plain loop's,
is matrix products (`time_split`: the second table of book/performance.md). `--quick` is a smoke run
(few steps, one repeat) that writes nothing unless `--out` is given.

On a GPU (`--device cuda`) the times are wall time after a synchronize (`core.benchmark.clock`), the
sweep can be widened to `--models N` replicas (the grid's rows cycled with new seeds), and the plain
loop can be timed on `--plain-sample K` of them, evenly spread, and scaled by N / K (a thousand plain
models one after another would take an hour); the record says so. The GPU record is
`results/bench/throughput-cuda.json`. Only torch and numpy are needed: it runs on a bare GPU machine.
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

from attnlab.core.benchmark import Workload, to_device
from attnlab.core.device import cpu_name, set_threads
from attnlab.core.progress import tqdm
from attnlab.core.store import REPO_ROOT

RECORD = REPO_ROOT / "results" / "bench" / "throughput.json"
GPU_RECORD = REPO_ROOT / "results" / "bench" / "throughput-cuda.json"
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


def _on_device(w: Workload, steps: int, device: str) -> tuple[dict, list]:
    """One torch thread; the workload's config (with "device" off the CPU) and its batches on the device."""
    set_threads(1)
    cfg = w.config if device == "cpu" else {**w.config, "device": device}
    return cfg, to_device(w.batches(cfg, steps), device)


def run_workload(w: Workload, steps: int, repeats: int, device: str = "cpu", plain_sample: int | None = None,
                 by_size: bool = True) -> dict:
    """min-of-`repeats` times of the batched program, the plain loop over all models (or over
    `plain_sample` of them, evenly spread, scaled to all), one model both ways, and (`by_size`) the
    sweep as programs of GROUP models of similar size."""
    cfg, batches = _on_device(w, steps, device)
    rows = w.models
    timed = list(range(len(rows)))
    if plain_sample and plain_sample < len(rows):
        timed = sorted({round(i * (len(rows) - 1) / (plain_sample - 1)) for i in range(plain_sample)}
                       if plain_sample > 1 else {w.single})
    w.train_batched(cfg, batches, min(steps, 5), [0, 1])  # warm-up (first-call costs)
    w.train_plain(cfg, batches, min(steps, 5), rows[0])
    batched = plain = single_batched = grouped = single_plain = float("inf")
    for _ in tqdm(range(repeats), desc=w.name, leave=False):  # the minimum over repeats is the least noisy estimate
        batched = min(batched, w.train_batched(cfg, batches, steps, None))
        each = {i: w.train_plain(cfg, batches, steps, rows[i]) for i in sorted(set(timed) | {w.single})}
        plain = min(plain, sum(each[i] for i in timed) * len(rows) / len(timed))
        single_plain = min(single_plain, each[w.single])
        single_batched = min(single_batched, w.train_batched(cfg, batches, steps, [w.single]))
        if by_size:
            grouped = min(grouped, sum(w.train_batched(cfg, batches, steps, g) for g in w.size_groups(GROUP)))
    out = {"models": len(rows), "steps": steps, "repeats": repeats,
           "batched_s": round(batched, 3), "plain_s": round(plain, 3), "speedup": round(plain / batched, 2),
           "single_model": rows[w.single], "single_batched_s": round(single_batched, 3),
           "single_plain_s": round(single_plain, 3),
           "single_speedup": round(single_plain / single_batched, 2)}
    if by_size:
        out.update(grouped_programs=len(w.size_groups(GROUP)), grouped_s=round(grouped, 3),
                   grouped_speedup=round(plain / grouped, 2))
    if len(timed) < len(rows):
        out["plain_timed_models"] = len(timed)  # plain_s = their sum × models / plain_timed_models
    return out


# The matrix products (and torch's fused attention kernels, the plain 003 model's): what a step cannot do
# without. Everything else (elementwise, reductions, gathers, copies, the optimizer) is "the rest".
def is_product(op: str) -> bool:
    """aten::mm, bmm, addmm, baddbmm(_), addbmm, _addmm_activation, and the scaled-dot-product kernels."""
    name = op.removeprefix("aten::").lstrip("_")
    return name.rstrip("_") in {"mm", "bmm", "addmm", "baddbmm", "addbmm", "addmm_activation"} or (
        name.startswith("scaled_dot_product") and op.startswith("aten::_"))


def _profiled(run, cuda: bool, top: int = 0) -> dict:
    """run() under torch.profiler: total and matrix-product self time (ms), and the top ops."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
        run()
    events = prof.key_averages()
    key = "self_device_time_total" if cuda else "self_cpu_time_total"
    total = sum(getattr(e, key) for e in events)
    products = sum(getattr(e, key) for e in events if is_product(e.key))
    out = {f"total_{key.removesuffix('_time_total')}_ms": round(total / 1e3, 1), "products_ms": round(products / 1e3, 1)}
    if top:
        rows = sorted(events, key=lambda e: -getattr(e, key))[:top]
        out["top_ops [name, calls, self_ms, share]"] = [
            [e.key, e.count, round(getattr(e, key) / 1e3, 1), round(getattr(e, key) / max(total, 1e-9), 3)]
            for e in rows]
    return out


def profile_workload(w: Workload, steps: int, top: int = 12, device: str = "cpu") -> dict:
    """Where the time goes: torch.profiler's self time (CPU, or CUDA on a GPU) of the program over all
    models, its top ops and its matrix products (`is_product`); and of the plain loop of the single model.

    The products' share p of the program bounds what removing everything else could give: the speedup
    would be at most speedup / p with these products (`ceiling`). The products' own gain is
    models × (plain products of one model) / (the program's products): near 1, batching the sweep
    cannot make its arithmetic faster, only the rest."""
    cuda = device != "cpu"
    cfg, batches = _on_device(w, steps, device)
    w.train_batched(cfg, batches, min(steps, 5), [0, 1])
    out = {"steps": steps, **_profiled(lambda: w.train_batched(cfg, batches, steps, None), cuda, top)}
    out["plain_one_model"] = _profiled(lambda: w.train_plain(cfg, batches, steps, w.models[w.single]), cuda)
    return out


def time_split(record: dict, name: str) -> dict | None:
    """From a workload's profile: the products' share of the program, the ceiling (speedup / share) and
    the products' own gain (models × plain products of one model / the program's products); None without
    a profile."""
    prof, w = record.get("profiles", {}).get(name), record["workloads"][name]
    if not prof or "products_ms" not in prof:
        return None

    def total(part: dict) -> float:  # total_self_cpu_ms, or total_self_device_ms on a GPU
        return next(v for k, v in part.items() if k.startswith("total_"))

    plain, share = prof["plain_one_model"], prof["products_ms"] / total(prof)
    return {"products_share": share, "ceiling": w["speedup"] / share,
            "products_gain": w["models"] * plain["products_ms"] / prof["products_ms"],
            "rest_gain": w["models"] * (total(plain) - plain["products_ms"]) / (total(prof) - prof["products_ms"])}


def machine(device: str = "cpu") -> dict:
    return {"platform": platform.platform(), "cpu": cpu_name(),
            "cores": os.cpu_count(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "device": device if device == "cpu" else f"{device}: {torch.cuda.get_device_name(device)}"}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --- the tables of book/performance.md -------------------------------------------------------------------
GPU_COMMAND = "python -m attnlab.bench --device cuda --models 1000 --plain-sample 32"


def performance_tables(record: dict | None = None, gpu_record: dict | None = None) -> str:
    """The throughput tables of the book's Performance page (written by `attnlab book` between the
    bench markers of book/performance.md), in Markdown, from the records (default:
    results/bench/throughput.json and, where it exists, results/bench/throughput-cuda.json)."""
    rec = record if record is not None else json.loads(RECORD.read_text())
    if gpu_record is None and record is None and GPU_RECORD.exists():
        gpu_record = json.loads(GPU_RECORD.read_text())
    out = _table(rec) + _split_table(rec)
    if gpu_record is not None:
        out += "\n\nOn a GPU:\n\n" + _table(gpu_record) + _split_table(gpu_record)
    else:
        out += (f"\n\nNo GPU record yet: `{GPU_COMMAND}` on a GPU machine writes "
                f"`{GPU_RECORD.relative_to(REPO_ROOT)}` and its tables here.")
    return out


def _table(rec: dict) -> str:
    m = rec["machine"]
    gpu = m.get("device", "cpu") != "cpu"
    lines = ["| workload | one program | plain loop, one model after another | speedup | "
             "4 programs of 16, sorted by size | one model: program / plain loop |", "|---|---|---|---|---|---|"]
    if gpu:
        lines[0] = lines[0].replace("4 programs of 16", "programs of 16")
    for name, w in rec["workloads"].items():
        describe = w.get("describe", name).replace("64 models", f"{w['models']} models")
        sampled = f" (from {w['plain_timed_models']} timed)" if "plain_timed_models" in w else ""
        lines.append(f"| {describe} | {w['batched_s']:.2f} s | {w['plain_s']:.2f} s{sampled} | "
                     f"{w['speedup']:.1f}× | "
                     + (f"{w['grouped_s']:.2f} s ({w['grouped_speedup']:.1f}×)" if "grouped_s" in w else "not timed")
                     + " | "
                     f"{w['single_batched_s']:.2f} s / {w['single_plain_s']:.2f} s |")
    lines.append("")
    clock = "CPU time" if rec.get("clock") == "process_time" else "wall time after a CUDA synchronize"
    where = f"{m['device']} (host {m['cpu']})" if gpu else m["cpu"]
    lines.append(f"One torch thread, {clock}, minimum of {rec['repeats']} runs, data generation not counted; {where}, "
                 f"torch {m['torch']}, last run {rec['date']} (a run with --only updates its workloads), load average "
                 f"{rec['load_average_start'][0]} at its start and {rec['load_average_end'][0]} at its end on "
                 f"{m['cores']} cores shared with other jobs (each workload's load is in the record) "
                 f"(`python -m attnlab.bench{' --device cuda' if gpu else ''}`, "
                 f"`{(GPU_RECORD if gpu else RECORD).relative_to(REPO_ROOT)}`).")
    return "\n".join(lines)


def _split_table(rec: dict) -> str:
    """Where the time goes, per profiled workload (`time_split`): empty when no workload has a profile."""
    rows = [(name, w, time_split(rec, name)) for name, w in rec["workloads"].items()]
    rows = [(name, w, t) for name, w, t in rows if t]
    if not rows:
        return ""
    lines = ["", "", "Where the time goes (torch.profiler's self time in one run of the program, and in the plain "
             "loop of the single model times the number of models; the profiler's own cost inflates small "
             "operations):", "",
             "| workload | speedup | matrix products' share of the program | products' gain: plain loop / program | "
             "the rest's gain | ceiling if all but the products were free |", "|---|---|---|---|---|---|"]
    for name, w, t in rows:
        lines.append(f"| {name} | {w['speedup']:.1f}× | {100 * t['products_share']:.0f} % | "
                     f"{t['products_gain']:.1f}× | {t['rest_gain']:.1f}× | {t['ceiling']:.0f}× |")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 10 steps, 1 repeat, no record written")
    parser.add_argument("--only", nargs="*", help="workload names (default: all)")
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--repeats", type=int, default=None,
                        help=f"timed repeats, the minimum is kept (default {REPEATS}; 1 with --quick)")
    parser.add_argument("--no-grouped", action="store_true",
                        help="skip the size-grouped variant (programs of 16 models; on a GPU, 1,000 models make 63 programs)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where the models train (default cpu; cuda times wall clock after a synchronize)")
    parser.add_argument("--models", type=int, default=64,
                        help="replicas per sweep (default 64; e.g. 1000 on a GPU: the grid's rows cycled, new seeds)")
    parser.add_argument("--plain-sample", type=int, default=None, metavar="K",
                        help="time the plain loop on K models, evenly spread, and scale to all (default: all)")
    parser.add_argument("--out", default=None, help=f"record path (default {RECORD.relative_to(REPO_ROOT)}, on cuda "
                                                    f"{GPU_RECORD.relative_to(REPO_ROOT)}; --quick writes none unless given)")
    args = parser.parse_args(argv)
    if args.models < 2:
        parser.error(f"--models {args.models}: a sweep needs at least 2 models")
    if args.plain_sample is not None and args.plain_sample < 1:
        parser.error(f"--plain-sample {args.plain_sample}: time at least 1 plain model")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device here")
    default_record = RECORD if args.device == "cpu" else GPU_RECORD
    if default_record == RECORD and not args.out and not args.quick and (args.models != 64 or args.plain_sample):
        parser.error(f"the CPU record ({RECORD.relative_to(REPO_ROOT)}) is the 64-model sweep with every plain model "
                     "timed; give --out for another configuration")
    set_threads(1)
    steps, repeats = (10, 1) if args.quick else (STEPS, REPEATS)
    if args.repeats is not None:
        if args.repeats < 1:
            parser.error(f"--repeats {args.repeats}: at least 1")
        repeats = args.repeats
    out = args.out or (None if args.quick else str(default_record))
    todo = workloads(steps)
    if args.only:
        unknown = sorted(set(args.only) - set(todo))
        if unknown:
            parser.error(f"unknown workload(s) {unknown}; known: {list(todo)}")
        todo = {k: v for k, v in todo.items() if k in args.only}
    if args.models != 64:
        todo = {k: v.with_models(args.models) for k, v in todo.items()}
    record = {"machine": machine(args.device), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "repeats": repeats, "clock": "process_time" if args.device == "cpu" else "wall_time_synchronized",
              "load_average_start": _load(), "workloads": {}, "profiles": {}}
    if out and Path(out).exists() and args.only:  # a partial run updates the record
        old = json.loads(Path(out).read_text())
        record["workloads"], record["profiles"] = old.get("workloads", {}), old.get("profiles", {})
    def write() -> None:  # after every workload: an interrupted run keeps what it measured
        record["load_average_end"] = _load()
        if out:
            record["workloads"] = {k: record["workloads"][k] for k in workloads(steps) if k in record["workloads"]}
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            Path(out).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")

    for name, w in todo.items():
        res = run_workload(w, w.config["steps"], repeats, args.device, args.plain_sample, not args.no_grouped)
        record["workloads"][name] = {"config": w.config, "describe": w.describe, **res, "load_average": _load()}
        print(f"{name}: program {res['batched_s']:.2f} s, plain loop {res['plain_s']:.2f} s, "
              f"{res['speedup']:.1f}x; "
              + (f"{res['grouped_programs']} programs by size {res['grouped_s']:.2f} s ({res['grouped_speedup']:.1f}x); "
                 if "grouped_s" in res else "")
              + f"one model {res['single_batched_s']:.2f} s vs {res['single_plain_s']:.2f} s",
              flush=True)
        if not args.no_profile:
            record["profiles"][name] = profile_workload(w, w.config["steps"], device=args.device)
            for op in record["profiles"][name]["top_ops [name, calls, self_ms, share]"][:6]:
                print(f"    {op[0]:<32} {op[1]:>7} calls {op[2]:>9.1f} ms {100 * op[3]:5.1f} %")
        write()
    write()
    if out:
        print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
