"""Standard against positional Transformer over a data setting (§7.1, App. D.1.2-D.1.3): the runs
of the chapters sample-size (training-set size N) and input-length (list length n).

`run_archs` trains both architectures on every (task, seed) for one (n, N) with `sweeps.sweep`
(one tensor program per architecture, and per seed at paper scale) and returns, per architecture
and task, the final training MSE and the test MSE per scale c, each [seed]-indexed. `summary`
reduces a list of such runs (one per setting) to medians and 10-90 % percentiles per setting.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from attnlab.core.experiment import Context

from .models import ModelConfig
from .sweeps import sweep
from .variant_runs import protocol, seed_range

ARCHS = ("standard", "positional")
COLORS = {"standard": "tab:red", "positional": "tab:blue"}  # the paper's colours


def run_archs(ctx: Context, tasks: Sequence[str], n: int, samples: int, desc: str = "architectures") -> dict:
    """{arch: {task: {"train": [seed], "test": [seed][c]}}} for lists of length n and `samples`
    training lists; everything else (widths, steps, seeds, c_list, ...) from ctx.config."""
    cfg = ctx.config
    proto = protocol({**cfg, "samples": samples})
    units = [(ModelConfig(n=n, kind=a, embed=cfg["embed"], hidden=cfg["hidden"]), s, t)
             for a in ARCHS for t in tasks for s in seed_range(cfg)]
    rows = sweep(ctx, units, proto, desc=desc)
    out = {a: {t: {"train": [], "test": []} for t in tasks} for a in ARCHS}
    for (c, _, t), row in zip(units, rows):
        out[c.kind][t]["train"].append(row["train_mse"])
        out[c.kind][t]["test"].append(row["test_mse"])
    return out


def summary(runs: list[dict], arch: str, task: str, what: str, c_index: int | None = None) -> dict:
    """Median and 10th / 90th percentiles over seeds, one value per setting (per run of `runs`):
    what = "train" (final training MSE) or "test" (test MSE at c_list[c_index])."""
    vals = [np.asarray(r[arch][task]["train"] if what == "train" else np.asarray(r[arch][task]["test"])[:, c_index],
                       dtype=float) for r in runs]
    return {"median": [float(np.median(v)) for v in vals], "p10": [float(np.percentile(v, 10)) for v in vals],
            "p90": [float(np.percentile(v, 90)) for v in vals]}


def per_seed(runs: list[dict], arch: str, task: str, what: str, c_index: int | None = None) -> np.ndarray:
    """[setting, seed]: the final training MSE (what = "train") or the test MSE at c_list[c_index]
    (what = "test") of every seed, one row per setting (per run of `runs`)."""
    return np.array([np.asarray(r[arch][task]["train"], dtype=float) if what == "train" else
                     np.asarray(r[arch][task]["test"], dtype=float)[:, c_index] for r in runs])


def plot_setting(ax, x, s: dict, color: str, label: str) -> None:
    """Median against the setting (N or n) with the 10-90 % band, log-y."""
    ax.plot(x, s["median"], "o-", color=color, ms=3, label=label)
    if any(a != b for a, b in zip(s["p10"], s["p90"])):
        ax.fill_between(x, s["p10"], s["p90"], color=color, alpha=0.2, lw=0)
    ax.set_yscale("log")


def curves(runs: list[dict], c_list: Sequence[float], arch: str, task: str) -> dict:
    """{"train", "id", "ood"}: median and 10-90 % band per setting, for a c_list [1, c_ood] (in
    either order): the three panels of Figs. 9-18."""
    cs = [float(c) for c in c_list]
    i1 = cs.index(1.0)
    return {"train": summary(runs, arch, task, "train"), "id": summary(runs, arch, task, "test", i1),
            "ood": summary(runs, arch, task, "test", 1 - i1)}
