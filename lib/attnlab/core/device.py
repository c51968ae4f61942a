"""Device and thread selection.

Tiny models run 10-100x slower with two intra-op threads on two cores, so every process
uses one torch thread unless ATTNLAB_THREADS says otherwise; parallelism is across processes.
"""

from __future__ import annotations

import os

import torch

DEVICES = ("auto", "cpu", "cuda")


def set_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads to `n` (default: $ATTNLAB_THREADS or 1) and return it."""
    n = int(n if n is not None else os.environ.get("ATTNLAB_THREADS", "1"))
    if n < 1:
        raise ValueError(f"threads={n} must be >= 1")
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


def describe_device(device: torch.device) -> str:
    """A short human-readable name, e.g. 'cpu (1 thread)' or 'cuda: NVIDIA H100'."""
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    return f"cpu ({torch.get_num_threads()} thread{'s' if torch.get_num_threads() > 1 else ''})"
