"""Paper-scale sweeps on a Ray cluster: `attnlab run RESULT --scale full --headless --backend ray`.

A sweep that gives `Context.units` a plan splits its missing units into groups, one tensor
program each. `RayBackend.run_groups` runs each group as one Ray task: the task gets the sweep's
`compute` closure and its group, pickled together (cloudpickle) with the closure's context
replaced by a worker context (same experiment and config, the worker's device, no store), runs
`list(compute(group))` and sends the rows back. The driver writes each unit to the store as its
task finishes (`ray.wait`), so:

- nothing is lost: a unit is stored as soon as its program ends; an interrupted driver resumes
  from the store like an in-process run (the groups are planned again from what is missing);
- nothing is done twice: a task whose worker dies (killed, out of memory, node lost) is retried by
  Ray (`max_retries`); a task's own exception is not retried: the driver stops submitting, stores
  what the running tasks finish, then raises it (`Incomplete` at a time limit: exit 75, rerun);
- two drivers on one sweep corrupt nothing (the store's writes are atomic); a driver skips a
  group another driver has stored meanwhile and never overwrites a unit already stored.

A task asks for one GPU when the cluster has GPUs (and the config's device is not "cpu"), else
for one CPU, and runs one torch thread. At most as many tasks are in flight as the cluster has
such slots (read again as tasks finish, so nodes that join get work). Long programs that save
checkpoints write them under the store's folder on the worker when it can write
there (one machine, or a shared file system: a retried task resumes from it), else under the
worker's temporary folder.

Ray is optional (`pip install -e .[ray]`): it is imported here only, when a backend starts.
"""

from __future__ import annotations

import io
import os
import pickle
import platform
import tempfile
import time
from collections import Counter, deque
from pathlib import Path
from typing import Any, Callable

from .device import select_device, set_threads
from .experiment import Context, Incomplete
from .progress import tqdm
from .store import git_commit

INSTALL = "pip install -e .[ray]"
_CONTEXT = "attnlab:context"  # the persistent id that stands for the sweep's context in a task payload


class RayUnavailable(RuntimeError):
    """Ray is not installed (it is an optional extra)."""


def import_ray():
    """The `ray` module, or RayUnavailable with the one line that installs it."""
    try:
        import ray
    except ImportError as err:
        raise RayUnavailable(f"--backend ray needs Ray, which is not installed: {INSTALL}") from err
    return ray


# ----------------------------------------------------------------------------- task payloads

def dumps_task(ctx: Context, compute: Callable, group: list[int]) -> bytes:
    """`(compute, group)` pickled by value (cloudpickle: closures included), with every reference
    to `ctx` (the closure's context) left out, to be filled in by `loads_task` on the worker."""
    from ray import cloudpickle

    class Pickler(cloudpickle.Pickler):
        def persistent_id(self, obj):
            return _CONTEXT if obj is ctx else None

    buf = io.BytesIO()
    Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump((compute, group))
    return buf.getvalue()


def loads_task(payload: bytes, ctx: Context) -> tuple[Callable, list[int]]:
    """The `(compute, group)` of `dumps_task`, its context references now pointing to `ctx`."""

    class Unpickler(pickle.Unpickler):
        def persistent_load(self, pid):
            if pid != _CONTEXT:
                raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
            return ctx

    return Unpickler(io.BytesIO(payload)).load()


class WorkerStore:
    """The store as a task sees it: a folder for checkpoints of long programs, and no units:
    the driver reads and writes those."""

    def __init__(self, folder: str | Path):
        self.dir = Path(folder)
        self.hits = 0
        self.computed = 0

    def get(self, config: dict) -> Any:
        raise RuntimeError("a Ray task does not read the result store: the driver does")

    def put(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a Ray task does not write the result store: the driver does")


def worker_folder(store_dir: str, result_id: str) -> Path:
    """The driver's store folder if this machine can write there (the same machine, or a shared
    file system), else a folder of this machine's temporary directory."""
    path = Path(store_dir)
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is not None and os.access(existing, os.W_OK | os.X_OK):
        return path
    return Path(tempfile.gettempdir()) / "attnlab-ray" / result_id


def run_group(meta: dict, payload: bytes) -> dict:
    """The body of a Ray task: train one group on this worker, return its rows and where it ran."""
    set_threads()  # $ATTNLAB_THREADS or 1
    device = select_device(meta["config"]["device"])
    ctx = Context(meta["experiment"], meta["config"], WorkerStore(worker_folder(meta["store_dir"], meta["experiment"].id)),
                  device, progress=False, backend="local")
    compute, group = loads_task(payload, ctx)
    start = time.perf_counter()
    rows = list(compute(group))
    return {"rows": rows, "host": platform.node(), "device": str(device), "commit": git_commit(),
            "seconds": time.perf_counter() - start}


# ----------------------------------------------------------------------------- the backend

class RayBackend:
    """Runs the planned groups of `Context.units` as Ray tasks. `address`: None starts a local Ray
    instance (`num_cpus`, default all cores); "auto" or "HOST:PORT" joins a running cluster.
    Use it as a context manager, or call `start()` and `close()`."""

    def __init__(self, address: str | None = None, num_cpus: int | None = None, max_retries: int = 3):
        self.address = address
        self.num_cpus = num_cpus
        self.max_retries = max_retries
        self._started = False  # True when this backend called ray.init (and so shuts it down)

    def __repr__(self) -> str:
        return f"RayBackend(address={self.address!r})"

    def start(self) -> "RayBackend":
        """Connect to Ray (start a local instance when there is no address). If this process is
        already connected (e.g. a test's fixture), that connection is used as it is."""
        ray = import_ray()
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report over the network
        if ray.is_initialized():
            return self
        if self.address:
            ray.init(address=self.address, logging_level="WARNING")
        else:
            ray.init(address="local", num_cpus=self.num_cpus or os.cpu_count(), include_dashboard=False,
                     logging_level="WARNING")
        self._started = True
        return self

    def close(self) -> None:
        if self._started:
            import_ray().shutdown()
            self._started = False

    def __enter__(self) -> "RayBackend":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def describe(self) -> str:
        """One line: the cluster's nodes, CPUs and GPUs."""
        ray = import_ray()
        res = ray.cluster_resources()
        nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
        return (f"Ray, {nodes} node{'s' if nodes != 1 else ''}, {int(res.get('CPU', 0))} CPUs, "
                f"{int(res.get('GPU', 0))} GPUs")

    def _uses_gpu(self, device: str) -> bool:
        gpus = import_ray().cluster_resources().get("GPU", 0)
        if device == "cuda" and not gpus:
            raise ValueError("device='cuda' was asked for but the Ray cluster has no GPU; use 'auto' or 'cpu'")
        return gpus > 0 and device != "cpu"

    def _slots(self, gpu: bool) -> int:
        return max(1, int(import_ray().cluster_resources().get("GPU" if gpu else "CPU", 1)))

    def run_groups(self, ctx: Context, keys: list[dict], compute: Callable, groups: list[list[int]],
                   desc: str = "") -> dict[int, Any]:
        """Run each group as a Ray task, in the plan's order, and store each unit as its task
        finishes. Returns {index: result} for every unit of `groups`."""
        ray = import_ray()
        self.start()
        gpu = self._uses_gpu(ctx.config["device"])
        task = ray.remote(run_group).options(num_cpus=1, num_gpus=1 if gpu else 0, max_retries=self.max_retries,
                                             retry_exceptions=False)
        meta = ray.put({"experiment": ctx.experiment, "config": ctx.config, "store_dir": str(ctx.store.dir)})
        commit = git_commit()
        pending, running = deque(groups), {}
        found: dict[int, Any] = {}
        per_node: Counter = Counter()
        start, failure, warned = time.monotonic(), None, set()
        bar = tqdm(total=sum(map(len, groups)), desc=desc or "units", unit="unit", disable=not ctx.progress,
                   dynamic_ncols=True)
        try:
            while running or (pending and failure is None):
                while pending and failure is None and len(running) < self._slots(gpu):
                    group = pending.popleft()
                    stored = {i: ctx.store.get(keys[i]) for i in group}
                    if all(r is not None for r in stored.values()):  # another driver trained it meanwhile
                        found.update(stored)
                        bar.update(len(group))
                        continue
                    running[task.remote(meta, dumps_task(ctx, compute, group))] = group
                if not running:
                    break
                ready, _ = ray.wait(list(running), num_returns=1)
                group = running.pop(ready[0])
                try:
                    out = ray.get(ready[0])
                except Exception as err:  # the task's own exception (a dead worker was retried already)
                    failure = failure or _cause(err)
                    if running and not isinstance(failure, Incomplete):
                        bar.write(f"attnlab: a Ray task failed ({type(failure).__name__}: {failure}); storing what "
                                  f"the {len(running)} running task(s) finish, then stopping (Ctrl-C stops now)")
                    continue
                if out["commit"] != commit and out["host"] not in warned:  # a worker process looks it up once
                    warned.add(out["host"])
                    bar.write(f"attnlab: note: a worker on {out['host']} started at commit {out['commit']}, the "
                              f"driver at {commit}: every node must run the same code")
                allowed = set(group)
                for i, result, seconds in out["rows"]:
                    if i not in allowed:
                        raise ValueError(f"compute(group) yielded unit {i}, which is not in its group {group}")
                    already = ctx.store.get(keys[i])  # two drivers: the first writer's unit stays
                    if already is not None:
                        found[i] = already
                        continue
                    ctx.store.put(keys[i], result, seconds=seconds, device=f"{out['device']} on {out['host']} (ray)",
                                  run=ctx.run_info)
                    ctx.store.computed += 1
                    found[i] = result
                per_node[out["host"]] += len(group)
                elapsed = max(time.monotonic() - start, 1e-9)
                bar.set_postfix({host: f"{n / elapsed:.3g}/s" for host, n in sorted(per_node.items())}, refresh=False)
                bar.update(len(group))
        finally:
            bar.close()
        if failure is not None:
            raise failure
        return found


def _cause(err: BaseException) -> BaseException:
    """The exception a task raised, unwrapped from Ray's RayTaskError."""
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, BaseException) else err
