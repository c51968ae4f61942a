"""Replica-batched parameters: R independent models of different sizes in one tensor program.

Each parameter is stored padded to the largest replica, with a leading replica axis and a
0/1 mask of the same shape. Forward passes use `w(name) = param * mask`, so padded entries
never influence a replica and receive zero gradient. Each replica is initialised from its
own generator, seeded by (its config, its seed) only: a replica trained alone equals the
same replica trained inside any batch.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn

from .hashing import derive_seed


class ReplicaModule(nn.Module):
    """Base class: `add` a padded parameter, `place` one replica's tensor into it, `w` to read it."""

    def __init__(self, n_replicas: int, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"):
        super().__init__()
        self.R, self.dtype, self.device = n_replicas, dtype, torch.device(device)
        self._names: list[str] = []

    def add(self, name: str, shape: Sequence[int]) -> None:
        shape = (self.R, *shape)
        self.register_parameter(name, nn.Parameter(torch.zeros(shape, dtype=self.dtype, device=self.device)))
        self.register_buffer(name + "_mask", torch.zeros(shape, dtype=self.dtype, device=self.device))
        self._names.append(name)

    @torch.no_grad()
    def place(self, name: str, r: int, value: torch.Tensor) -> None:
        """Put replica r's unpadded tensor in the top-left corner of the padded parameter."""
        param, mask = getattr(self, name), getattr(self, name + "_mask")
        if value.dim() != param.dim() - 1 or any(v > p for v, p in zip(value.shape, param.shape[1:])):
            raise ValueError(f"{name}: replica {r} tensor of shape {tuple(value.shape)} does not fit "
                             f"padded shape {tuple(param.shape[1:])}")
        idx = (r, *(slice(0, n) for n in value.shape))
        param[idx] = value.to(param)
        mask[idx] = 1

    def w(self, name: str) -> torch.Tensor:
        return getattr(self, name) * getattr(self, name + "_mask")

    def replica_state(self, r: int) -> dict[str, torch.Tensor]:
        """Replica r's parameters with padding removed (by its mask's extent)."""
        out = {}
        for name in self._names:
            mask = getattr(self, name + "_mask")[r]
            if mask.numel() == 0:  # a zero-width parameter (e.g. no MLP in any replica)
                extent = list(mask.shape)
            else:
                extent = [int(mask.amax(dim=[j for j in range(mask.dim()) if j != i]).sum()) if mask.dim() > 1
                          else int(mask.sum()) for i in range(mask.dim())]
            out[name] = getattr(self, name)[r][tuple(slice(0, n) for n in extent)].detach().clone()
        return out


def replica_generator(config: dict, seed: int) -> torch.Generator:
    """A CPU generator seeded by (config, seed) only."""
    return torch.Generator().manual_seed(derive_seed(config, seed))


def uniform_init(gen: torch.Generator, shape: tuple[int, ...], fan_in: float) -> torch.Tensor:
    """PyTorch's default initialisation, U(−1/√fan_in, 1/√fan_in), in float64 from `gen`."""
    bound = 1 / math.sqrt(fan_in)
    return (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound
