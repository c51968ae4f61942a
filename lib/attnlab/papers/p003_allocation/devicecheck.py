"""Catch tensors left on the wrong device without a GPU (a test helper).

On CUDA, an operation whose tensor arguments live on two devices fails ("Expected all tensors to be
on the same device"); on a CPU-only machine every tensor is on the CPU and such a bug stays hidden.
`check_on_meta` moves a model to torch's `meta` device (shapes without data) and runs its forward
and backward under `SameDevice`, a dispatch mode that raises on any operation mixing devices, as
CUDA would. A tensor the model made on the CPU and kept outside its parameters and buffers (an
index list in a plain attribute, a mask made without `device=`) then shows up as cpu next to meta.
0-dim CPU tensors are allowed, as CUDA allows them.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class DeviceMismatch(RuntimeError):
    """An operation received tensors on two devices."""


class SameDevice(TorchDispatchMode):
    """Raise DeviceMismatch on any operation (forward or backward) whose tensor arguments are on
    more than one device, ignoring 0-dim CPU tensors."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        flat, _ = tree_flatten((args, kwargs))
        devices = {t.device for t in flat if isinstance(t, torch.Tensor) and not (t.dim() == 0 and t.device.type == "cpu")}
        if len(devices) > 1:
            shapes = [(tuple(t.shape), str(t.device)) for t in flat if isinstance(t, torch.Tensor)]
            raise DeviceMismatch(f"{func} got tensors on {sorted(map(str, devices))}: {shapes}")
        return func(*args, **kwargs)


def check_on_meta(model: torch.nn.Module, *inputs: torch.Tensor,
                  loss: Callable[[torch.Tensor], torch.Tensor] = lambda out: out.sum()) -> torch.Tensor:
    """Move `model` (in place) and `inputs` to the meta device, run forward and backward under
    SameDevice; returns the (meta) output. Raises DeviceMismatch where CUDA would fail."""
    model.to("meta")
    inputs = tuple(x.to("meta") for x in inputs)
    with SameDevice():
        out = model(*inputs)
        loss(out).backward()
    return out
