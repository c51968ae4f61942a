"""Variable input lengths (App. D.1.4, Fig. 19): one model for every length 1 … n.

A list of length ℓ ≤ n uses the nodes of the first ℓ positions and the scratchpad, whose
positional-encoding rows are the first ℓ one-hot rows and the scratchpad's row (the authors' code).
`VariableTransformer` is `models.Transformer` built for n (⌈log₂ n⌉ + 1 layers, P = I_{n+1}) whose
forward takes a length: the list is padded to n with zeros, and in every layer the logits of the
padded keys are set to −∞ before the softmax (the softmax runs over the ℓ inputs and the
scratchpad only; renormalising the full softmax instead underflows to 0/0 for a standard model at
large c). The padded nodes still compute something, but no kept node ever reads it, and the loss
ignores them; so the output equals that of an (ℓ + 1)-node model with those P rows (tested:
independence of the padding values, and equality with the explicit ℓ-node model). Built here by
masking, in this module, without changing `models.py`.

`variable_lists` draws the training and test lists (lengths equally represented, §7's values and
App. E's rejection per list); `sweep_variable` trains (or loads) every unit through
`Context.units`, one program per architecture (and seed at paper scale).
"""

from __future__ import annotations

import os
import time
from typing import Sequence

import numpy as np
import torch

from attnlab.core.experiment import Context
from attnlab.core.hashing import derive_seed, stable_hash

from .models import ModelConfig, Transformer
from .sweeps import Protocol, model_key, train, variable_mse
from .tasks import sample_lists


class VariableTransformer(Transformer):
    """`Transformer` whose forward(x [B, n], length=ℓ) → [R, B, ℓ] runs lists of length ℓ ≤ n."""

    def __init__(self, configs: list[ModelConfig], seeds: list[int], **kw):
        for c in configs:
            default = {"positional": "value", "standard": "value+pe"}.get(c.kind)
            if c.pe != "onehot" or c.rope or default is None or c.input_features != default:
                raise ValueError(f"variable lengths are built for the one-hot positional and standard models only; "
                                 f"got {c}")
        super().__init__(configs, seeds, **kw)
        self._keep: torch.Tensor | None = None

    def attention(self, l: int, h: torch.Tensor | None = None) -> torch.Tensor:
        """The parent's attention (one-hot P, no RoPE) with the padded keys' logits set to −∞."""
        if self._keep is None:
            return super().attention(l, h)
        qW, qb, kW, kb = (self.w(f"{nm}{l}") for nm in ("q_W", "q_b", "k_W", "k_b"))
        if self.kind == "positional":
            q = self._from_P(qW) + qb.unsqueeze(2)
            k = self._from_P(kW) + kb.unsqueeze(2)
            logits = q @ k.transpose(-1, -2) * self.qk_scale.view(-1, 1, 1, 1)
        else:
            q = torch.einsum("rbne,rhek->rbhnk", h, qW) + qb[:, None, :, None, :]
            k = torch.einsum("rbne,rhek->rbhnk", h, kW) + kb[:, None, :, None, :]
            logits = q @ k.transpose(-1, -2) * self.qk_scale.view(-1, 1, 1, 1, 1)
        return torch.softmax(logits.masked_fill(self._keep == 0, float("-inf")), dim=-1)

    def forward(self, x: torch.Tensor, length: int | None = None, return_attention: bool = False):
        length = self.n if length is None else int(length)
        if not 1 <= length <= self.n:
            raise ValueError(f"length {length}: must be in 1..{self.n}")
        if length == self.n:
            return super().forward(x, return_attention)
        xp = torch.zeros(x.shape[0], self.n, dtype=x.dtype, device=x.device)
        xp[:, :length] = x[:, :length]
        keep = torch.zeros(self.n + 1, dtype=self.dtype, device=self.device)
        keep[:length] = 1
        keep[self.n] = 1  # the scratchpad
        self._keep = keep
        try:
            out = super().forward(xp, return_attention)
        finally:
            self._keep = None
        if return_attention:
            return out[0][:, :, :length], out[1]
        return out[:, :, :length]


def variable_lists(n: int, samples: int, c: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(x [samples, n] zero-padded, lengths [samples]): lengths 1 … n equally represented (the
    remainder to the shortest), each length's lists drawn as §7 at scale c (App. E's rejection for
    c > 1), seeded from (n, samples, c, seed) only."""
    per = [samples // n + (1 if i < samples % n else 0) for i in range(n)]
    x = np.zeros((samples, n))
    lengths = np.repeat(np.arange(1, n + 1), per)
    for ell in range(1, n + 1):
        rng = np.random.default_rng(derive_seed({"variable": True, "n": n, "samples": samples, "c": float(c),
                                                 "length": ell}, seed))
        x[lengths == ell, :ell] = sample_lists(rng, per[ell - 1], ell, float(c))
    return x, lengths


def evaluate_variable(model: VariableTransformer, task: str | Sequence[str], c_list: Sequence[float], samples: int,
                      seed: int) -> np.ndarray:
    """[R, len(c_list)] test MSE over every real position of `samples` variable-length lists per c."""
    out = []
    for c in c_list:
        x, lengths = variable_lists(model.n, samples, c, derive_seed({"test": True}, seed))
        out.append(variable_mse(model, task, x, lengths))
    return np.stack(out, axis=1)


def sweep_variable(ctx: Context, units: Sequence[tuple[ModelConfig, int, str]], protocol: Protocol,
                   desc: str = "programs") -> list[dict]:
    """Train (or load) every unit (config, seed, task) on variable-length lists (lengths 1 … config.n);
    one row per unit as `sweeps.sweep` returns them (test MSE over all lengths per c)."""
    keys = [{**model_key(c), "variable": True, "seed": int(s), "task": t, **protocol.key} for c, s, t in units]
    cfg = ctx.config
    limit = cfg.get("time_limit") or 0
    deadline = time.time() + 60 * limit if limit else None

    def ds(seed: int) -> int:
        return -1 if protocol.joint else int(seed)

    def plan(missing: list[int]) -> list[list[int]]:
        groups: dict[tuple, list[int]] = {}
        for i in missing:
            c, s, _ = units[i]
            groups.setdefault((c.kind, c.n, ds(s)), []).append(i)
        return [g for _, g in sorted(groups.items(), key=lambda kv: min(kv[1]))]

    def run(group: list[int]):
        cs, ss, ts = zip(*(units[i] for i in group))
        model = VariableTransformer(list(cs), list(ss), device=ctx.device)
        x, lengths = variable_lists(cs[0].n, protocol.samples, 1.0, ds(ss[0]))
        ck = os.path.join(ctx.store.dir, "checkpoints", stable_hash({"program": [keys[i] for i in group]}) + ".pt")
        log = train(model, list(ts), x, lengths=lengths, batch=protocol.batch, lr=protocol.lr, seed=ds(ss[0]),
                    epochs=protocol.epochs, steps=protocol.steps, scheduler=protocol.scheduler,
                    curve_every=max(1, (protocol.epochs or 0) // 100), checkpoint=ck,
                    checkpoint_every=cfg.get("checkpoint_every") or 0, deadline=deadline, progress=ctx.progress,
                    desc=f"{cs[0].kind} {len(group)} models")
        test = evaluate_variable(model, list(ts), protocol.c_list, protocol.test_samples, ds(ss[0]))
        if os.path.exists(ck):
            os.remove(ck)
        for r, i in enumerate(group):
            yield i, {"train_mse": log.train_mse[r], "test_mse": test[r].tolist(), "c_list": list(protocol.c_list),
                      "steps": log.steps[r], "final_lr": log.final_lr[r],
                      "curve": [round(pt[r], 7) for pt in log.curve], "seconds": round(log.seconds / len(group), 3)}, \
                log.seconds / len(group)

    return ctx.units(keys, run, plan, desc)
