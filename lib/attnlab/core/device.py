"""Device and thread selection.

Tiny models run 10-100x slower with two intra-op threads on two cores, so every process
uses one torch thread unless ATTNLAB_THREADS says otherwise; parallelism is across processes.
"""

from __future__ import annotations

import os

import torch

DEVICES = ("auto", "cpu", "cuda")


_HEAP_KEPT = False


def keep_freed_memory() -> bool:
    """Keep freed tensor memory in the process's heap (glibc `mallopt`; a no-op elsewhere).

    By default glibc serves blocks above its mmap threshold (128 KB at first) with fresh pages and
    gives them back on free, so a training step that frees and reallocates megabyte-sized activations
    page-faults them in again every step (~160,000 minor faults in a 300-step 002 sweep). Raising the
    mmap and trim thresholds keeps them (PyTorch's CPU tuning guide gets the same from jemalloc or
    tcmalloc): 12 % off the 002 sweep, 6 % off 001's (one thread). Returns whether it took effect."""
    global _HEAP_KEPT
    if not _HEAP_KEPT:
        try:
            import ctypes

            libc = ctypes.CDLL("libc.so.6")
            M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
            _HEAP_KEPT = bool(libc.mallopt(M_MMAP_THRESHOLD, 1 << 30)) and bool(libc.mallopt(M_TRIM_THRESHOLD, 1 << 30))
        except (OSError, AttributeError):
            _HEAP_KEPT = False
    return _HEAP_KEPT


def set_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads to `n` (default: $ATTNLAB_THREADS or 1) and return it; also
    `keep_freed_memory` (both are per-process settings for training)."""
    n = int(n if n is not None else os.environ.get("ATTNLAB_THREADS", "1"))
    if n < 1:
        raise ValueError(f"threads={n} must be >= 1")
    keep_freed_memory()
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


def select_device(name: str = "auto") -> torch.device:
    """'auto': CUDA when present, else CPU. 'cuda' without a GPU is an error."""
    if name not in DEVICES:
        raise ValueError(f"device={name!r} is not allowed; choose one of {', '.join(DEVICES)}")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was asked for but torch sees no CUDA device; use 'auto' or 'cpu'")
    return torch.device(name)


def cpu_name() -> str:
    """This machine's CPU model (Linux /proc/cpuinfo, else platform), e.g. 'Intel(R) Xeon(R) Processor'."""
    import platform

    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def numpy_blas() -> str:
    """numpy's BLAS library, its version and the kernel it picked for this CPU (OpenBLAS's core type,
    which OPENBLAS_CORETYPE overrides), e.g. 'openblas 0.3.31 Haswell'."""
    import numpy  # noqa: F401  (loads the BLAS that threadpoolctl then finds)

    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown"
    for lib in threadpool_info():
        if lib.get("user_api") == "blas":
            return " ".join(str(x) for x in (lib.get("internal_api"), lib.get("version"), lib.get("architecture")) if x)
    return "unknown"


def machine() -> dict[str, str]:
    """What decides a float32 or float64 result's last digits on a CPU: its model, its instruction set as
    torch sees it (ATEN_CPU_CAPABILITY overrides it), torch's version and numpy's BLAS kernel."""
    from importlib.metadata import version

    return {"cpu": cpu_name(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch": version("torch"), "numpy_blas": numpy_blas()}


def describe_device(device: torch.device) -> str:
    """A short human-readable name, e.g. 'cpu (1 thread)' or 'cuda: NVIDIA H100'."""
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    return f"cpu ({torch.get_num_threads()} thread{'s' if torch.get_num_threads() > 1 else ''})"


def provenance(device: torch.device | str) -> str:
    """The device as a stored entry records it: 'cpu', or on a GPU its name with torch's and CUDA's
    versions, e.g. 'cuda: NVIDIA H100 80GB HBM3 (torch 2.13.0, CUDA 12.8)'."""
    device = torch.device(device)
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)} (torch {torch.__version__}, CUDA {torch.version.cuda})"
    return str(device)
