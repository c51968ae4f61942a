"""Sweep throughput: a 64-model sweep trained as one replica-batched program against the plain loop.

    python -m attnlab.bench [--quick] [--only NAME ...] [--out results/bench/throughput.json] [--no-profile]

The baseline is what a user would write by hand: a plain `nn.Module` of the same math, one model
at a time, `torch.optim.Adam` (same betas, eps, learning-rate schedule), the same number of steps
on the same batches. Both sides get their batches from a list made before the clock starts (data
generation is not counted). One torch thread; every time is the minimum over `repeats` runs.

Per workload the record holds: the sweep as one program (`batched_s`), the 64 plain models one after
another (`plain_s`), their ratio (`speedup`), and one model alone both ways (`single_*`: the
replica program with one replica against that model's plain loop). `--quick` is a smoke run
(few steps, one repeat) that writes nothing unless `--out` is given.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from attnlab.core.device import set_threads
from attnlab.core.store import REPO_ROOT

RECORD = REPO_ROOT / "results" / "bench" / "throughput.json"
STEPS, REPEATS = 300, 3

# --- the workloads ----------------------------------------------------------------------------------
COUNTING_GRID = [1, 2, 3, 4, 6, 8, 11, 16]  # the first 8 values of paper 002's (d, p) grid (paper.GRID)


def workloads() -> dict[str, dict]:
    """Every workload's configuration (JSON-serialisable; the record stores it and the test compares)."""
    out = {}
    for variant in ("dot", "lin+sftm"):
        out[f"002 counting {variant}"] = {
            "paper": "002", "variant": variant, "T": 8, "L": 6, "batch_size": 128, "steps": STEPS,
            "lr": 1e-3, "betas": [0.9, 0.98], "eps": 1e-9,
            "models [d, p, seed]": [[d, p, 0] for d in COUNTING_GRID for p in COUNTING_GRID]}
    # 004, the paper's sizes (Fig. 1a's range): N = 50, d = 4..11, H = 1..8, d_h = d - (H - 1) % 4 (<= d)
    out["004 AoT paper sizes"] = {
        "paper": "004", "N": 50, "S": 2, "batch_size": 256, "n_batches": 64, "steps": STEPS,
        "lr_start": 1e-2, "lr_end": 5e-4, "betas": [0.9, 0.999], "eps": 1e-8,
        "models [d, d_h, H, seed]": [[d, d - (H - 1) % 4, H, 0] for d in range(4, 12) for H in range(1, 9)]}
    # 004, Experiment 6's sweep (Fig. 4): N = 10, d = d_h = 2, H = 1..21, seeds 0, 1, 2, ... (first 64)
    out["004 AoT Exp. 6"] = {
        "paper": "004", "N": 10, "S": 2, "batch_size": 256, "n_batches": 64, "steps": STEPS,
        "lr_start": 1e-2, "lr_end": 5e-4, "betas": [0.9, 0.999], "eps": 1e-8,
        "models [d, d_h, H, seed]": [[2, 2, H, s] for s in range(4) for H in range(1, 22)][:64]}
    return out


SINGLE = {"002 counting dot": 36, "002 counting lin+sftm": 36, "004 AoT paper sizes": 35, "004 AoT Exp. 6": 9}
"""The model timed alone (index into the workload's models): a mid-sized one (002: d = p = 6 -> index
4 * 8 + 4 = 36; 004: d = 8, H = 4; Exp. 6: H = 10)."""
GROUP = 16  # models per program in the size-grouped variant (`size_groups`)
PROFILED = ("002 counting dot", "004 AoT paper sizes")


# --- the plain models (what a user writes) ------------------------------------------------------------
class PlainCounting(nn.Module):
    """Paper 002's counting model, §3, written directly (reference.forward in torch)."""

    def __init__(self, variant: str, T: int, L: int, d: int, p: int):
        super().__init__()
        self.variant, self.d = variant, d
        self.emb = nn.Embedding(T, d)
        if variant.startswith("lin"):
            self.A = nn.Parameter(torch.empty(L, L).uniform_(-1 / math.sqrt(L), 1 / math.sqrt(L)))
        else:
            self.W_Q, self.W_K = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.W1, self.W2 = nn.Linear(d, p), nn.Linear(p, L + 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xb = self.emb(x)  # [B, L, d]
        if self.variant.startswith("lin"):
            A = self.A.softmax(-1) if self.variant.endswith("sftm") else self.A
        else:
            A = self.W_Q(xb) @ self.W_K(xb).transpose(1, 2) / math.sqrt(self.d)
            A = A.softmax(-1) if self.variant.endswith("sftm") else A
        return self.W2(torch.relu(self.W1(xb + A @ xb)))  # [B, L, C]


class PlainAoT(nn.Module):
    """Paper 004's one-layer attention-only Transformer (Eqs. 1-2, per-head maps), written directly."""

    def __init__(self, N: int, S: int, d: int, d_h: int, H: int):
        super().__init__()
        self.E, self.P = nn.Embedding(N, d), nn.Parameter(torch.randn(S, d))
        b = 1 / math.sqrt(d)
        self.W_Q, self.W_K, self.W_V = (nn.Parameter(torch.empty(H, d_h, d).uniform_(-b, b)) for _ in range(3))
        self.W_O = nn.Parameter(torch.empty(H, d, d_h).uniform_(-1 / math.sqrt(d_h), 1 / math.sqrt(d_h)))
        self.W_U = nn.Linear(d, N, bias=False)
        self.scale = 1 / math.sqrt(d_h)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        x = self.E(t) + self.P  # [B, S, d]
        q = torch.einsum("bd,hkd->bhk", x[:, -1], self.W_Q) * self.scale
        k = torch.einsum("bsd,hkd->bhsk", x, self.W_K)
        v = torch.einsum("bsd,hkd->bhsk", x, self.W_V)
        a = torch.einsum("bhk,bhsk->bhs", q, k).softmax(-1)
        o = torch.einsum("bhs,bhsk->bhk", a, v)
        return self.W_U(x[:, -1] + torch.einsum("bhk,hdk->bd", o, self.W_O))


# --- one workload: data, the two ways of training -------------------------------------------------------
def _batches(cfg: dict, steps: int) -> list:
    """The batches, made before any clock starts: 002 token batches [B, L]; 004 (tokens, targets)."""
    if cfg["paper"] == "002":
        from attnlab.papers.p002_counting.models import counting_batches

        it = counting_batches(cfg["T"], cfg["L"], cfg["batch_size"])
    else:
        from attnlab.papers.p004_memorization.tasks import lookup_table_task, paper_batches

        tokens, targets = lookup_table_task(cfg["N"], cfg["S"])
        it = paper_batches(tokens, targets, cfg["batch_size"], cfg["n_batches"])
    return [next(it) for _ in range(steps)]


def _schedule(cfg: dict, steps: int):
    from attnlab.core.train import linear_lr

    if cfg["paper"] == "002":
        return lambda step: cfg["lr"]
    return linear_lr(cfg["lr_start"], cfg["lr_end"], steps)


def _models(cfg: dict, idx=None) -> list:
    rows = cfg["models [d, p, seed]"] if cfg["paper"] == "002" else cfg["models [d, d_h, H, seed]"]
    return rows if idx is None else [rows[i] for i in idx]


def size_groups(cfg: dict, size: int = GROUP) -> list[list[int]]:
    """The models as programs of `size`, sorted by their largest size (as the sweeps plan them): less padding."""
    rows = _models(cfg)
    order = sorted(range(len(rows)), key=lambda i: (max(rows[i][:-1]), tuple(rows[i])))
    return [order[j:j + size] for j in range(0, len(order), size)]


def train_batched(cfg: dict, batches: list, steps: int, idx=None) -> float:
    """Seconds to train the models (all, or those at `idx`) as one replica-batched program."""
    lr = _schedule(cfg, steps)
    if cfg["paper"] == "002":
        from attnlab.papers.p002_counting.models import CountingConfig, ReplicaCounting, train_counting

        model = ReplicaCounting([CountingConfig(cfg["variant"], cfg["T"], cfg["L"], d, p, s)
                                 for d, p, s in _models(cfg, idx)])
        start = time.perf_counter()  # the final eval runs on one batch (128 sequences): negligible
        train_counting(model, iter(batches), steps, lr, eval_set=batches[0], betas=tuple(cfg["betas"]),
                       eps=cfg["eps"])
        return time.perf_counter() - start
    from attnlab.core.train import train_replicas
    from attnlab.papers.p004_memorization.models import AoTConfig, ReplicaAoT

    model = ReplicaAoT([AoTConfig(cfg["N"], cfg["S"], d, dh, H, s) for d, dh, H, s in _models(cfg, idx)])
    start = time.perf_counter()
    train_replicas(model, iter(batches), steps, lr, progress=False)
    return time.perf_counter() - start


def train_plain(cfg: dict, batches: list, steps: int, row: list) -> float:
    """Seconds to train one plain model with torch.optim.Adam on the same batches and schedule."""
    torch.manual_seed(row[-1])
    if cfg["paper"] == "002":
        from attnlab.papers.p002_counting.models import hist_torch

        d, p, _ = row
        model = PlainCounting(cfg["variant"], cfg["T"], cfg["L"], d, p)
    else:
        d, d_h, H, _ = row
        model = PlainAoT(cfg["N"], cfg["S"], d, d_h, H)
    lr = _schedule(cfg, steps)
    opt = torch.optim.Adam(model.parameters(), lr=lr(0), betas=tuple(cfg["betas"]), eps=cfg["eps"])
    start = time.perf_counter()
    for step in range(steps):
        if cfg["paper"] == "002":
            x = batches[step]
            logits, y = model(x), hist_torch(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        else:
            x, y = batches[step]
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        for g in opt.param_groups:
            g["lr"] = lr(step)
        opt.step()
    return time.perf_counter() - start


def run_workload(name: str, cfg: dict, steps: int, repeats: int) -> dict:
    """min-of-`repeats` times of the batched program, the plain loop over all models, and one model both ways."""
    set_threads(1)
    batches = _batches(cfg, steps)
    n = len(_models(cfg))
    single = SINGLE[name]
    train_batched(cfg, batches, min(steps, 5), [0, 1])  # warm-up (first-call costs)
    train_plain(cfg, batches, min(steps, 5), _models(cfg)[0])
    batched = plain = single_batched = grouped = float("inf")
    plain_each = [float("inf")] * n
    for _ in range(repeats):  # the minimum over repeats is the least noisy estimate (as timeit does)
        batched = min(batched, train_batched(cfg, batches, steps))
        each = [train_plain(cfg, batches, steps, row) for row in _models(cfg)]
        plain = min(plain, sum(each))
        plain_each = [min(a, b) for a, b in zip(plain_each, each)]
        single_batched = min(single_batched, train_batched(cfg, batches, steps, [single]))
        grouped = min(grouped, sum(train_batched(cfg, batches, steps, g) for g in size_groups(cfg)))
    return {"models": n, "steps": steps, "repeats": repeats,
            "batched_s": round(batched, 3), "plain_s": round(plain, 3), "speedup": round(plain / batched, 2),
            "single_model": _models(cfg)[single], "single_batched_s": round(single_batched, 3),
            "single_plain_s": round(plain_each[single], 3),
            "single_speedup": round(plain_each[single] / single_batched, 2),
            "grouped_programs": len(size_groups(cfg)), "grouped_s": round(grouped, 3),
            "grouped_speedup": round(plain / grouped, 2)}


def profile_workload(name: str, cfg: dict, steps: int, top: int = 12) -> dict:
    """Where the 64-model program's time goes: torch.profiler's top ops by self CPU time."""
    from torch.profiler import ProfilerActivity, profile

    set_threads(1)
    batches = _batches(cfg, steps)
    train_batched(cfg, batches, min(steps, 5), [0, 1])
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        train_batched(cfg, batches, steps)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    rows = sorted(events, key=lambda e: -e.self_cpu_time_total)[:top]
    return {"steps": steps, "total_self_cpu_ms": round(total / 1e3, 1),
            "top_ops [name, calls, self_ms, share]": [
                [e.key, e.count, round(e.self_cpu_time_total / 1e3, 1), round(e.self_cpu_time_total / total, 3)]
                for e in rows]}


def machine() -> dict:
    cpu = ""
    try:
        cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                    if ln.startswith("model name")), "")
    except OSError:
        pass
    return {"platform": platform.platform(), "cpu": cpu or platform.processor() or platform.machine(),
            "cores": os.cpu_count(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "device": "cpu"}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --- the README table -----------------------------------------------------------------------------------
def _describe(name: str, cfg: dict) -> str:
    n = len(_models(cfg))
    if cfg["paper"] == "002":
        return (f"002 counting `{cfg['variant']}`, T = {cfg['T']}, L = {cfg['L']}, 8 × 8 grid of (d, p), "
                f"{n} models, {cfg['steps']} steps of batch {cfg['batch_size']}")
    what = "paper's sizes: N = 50, d 4..11, d_h ≤ d, H 1..8" if "paper" in name else \
        "Exp. 6: N = 10, d = d_h = 2, H 1..21"
    return f"004 AoT, {what}, {n} models, {cfg['steps']} steps of batch {cfg['batch_size']}"


def readme_table(record: dict | None = None) -> str:
    """The README's throughput table (Markdown), from the record (default: results/bench/throughput.json)."""
    rec = record if record is not None else json.loads(RECORD.read_text())
    m = rec["machine"]
    lines = ["| workload | one program | plain loop, one model after another | speedup | "
             "4 programs of 16, sorted by size | one model: program / plain loop |", "|---|---|---|---|---|---|"]
    for name, w in rec["workloads"].items():
        lines.append(f"| {_describe(name, w['config'])} | {w['batched_s']:.2f} s | {w['plain_s']:.2f} s | "
                     f"{w['speedup']:.1f}× | {w['grouped_s']:.2f} s ({w['grouped_speedup']:.1f}×) | "
                     f"{w['single_batched_s']:.2f} s / {w['single_plain_s']:.2f} s |")
    lines.append("")
    lines.append(f"One torch thread, minimum of {rec['repeats']} runs, data generation not counted; {m['cpu']}, "
                 f"torch {m['torch']}, {rec['date']}, load average {rec['load_average_start'][0]} at the start "
                 f"and {rec['load_average_end'][0]} at the end on {m['cores']} cores shared with other jobs "
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
    todo = workloads()
    if args.only:
        todo = {k: v for k, v in todo.items() if k in args.only}
    record = {"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "repeats": repeats,
              "load_average_start": _load(), "workloads": {}, "profiles": {}}
    if out and Path(out).exists() and args.only:  # a partial run updates the record
        old = json.loads(Path(out).read_text())
        record["workloads"], record["profiles"] = old.get("workloads", {}), old.get("profiles", {})
    for name, cfg in todo.items():
        cfg = {**cfg, "steps": steps}
        res = run_workload(name, cfg, steps, repeats)
        record["workloads"][name] = {"config": cfg, **res, "load_average": _load()}
        print(f"{name}: program {res['batched_s']:.2f} s, plain loop {res['plain_s']:.2f} s, "
              f"{res['speedup']:.1f}x; {res['grouped_programs']} programs by size {res['grouped_s']:.2f} s "
              f"({res['grouped_speedup']:.1f}x); one model {res['single_batched_s']:.2f} s vs {res['single_plain_s']:.2f} s",
              flush=True)
        if name in PROFILED and not args.no_profile:
            record["profiles"][name] = profile_workload(name, cfg, steps)
            for op in record["profiles"][name]["top_ops [name, calls, self_ms, share]"][:6]:
                print(f"    {op[0]:<32} {op[1]:>7} calls {op[2]:>9.1f} ms {100 * op[3]:5.1f} %")
    record["load_average_end"] = _load()
    if out:
        record["workloads"] = {k: record["workloads"][k] for k in workloads() if k in record["workloads"]}
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
