"""The trained model variants of App. D.1.5–D.1.8 (compact standard models, positional encodings,
ablations, V-only fine-tuning): their shared parameters, protocol, sweep and summaries.

A chapter names its variants as ModelConfig options (`models.py`); `run_variants` trains every
(variant, task, seed) with `sweeps.sweep`, grouping into one tensor program every model that
`models.Transformer` can hold together (same n, kind, heads and depth; replicas may differ in
widths, positional encoding, features and RoPE), and returns the test MSE per scale c.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnlab.core.claims import ClaimsTable, seed_summary
from attnlab.core.params import BATCH, LR, Param, ParameterError, SEED, SEEDS, STEPS

from .models import ModelConfig
from .sweeps import Protocol, sweep
from .tasks import TASKS

TRAIN_PARAMS = (
    Param("n", "int", "input length (the paper: 8)", min=2, max=32),
    Param("tasks", "str", f"comma-separated tasks among {', '.join(TASKS)}", choices=TASKS, sep=","),
    SEEDS.described("models per (variant, task) (the paper: 10 runs)"),
    SEED.described("the first seed: the models are seeds seed … seed + seeds − 1 (their initialisation; at "
          "paper scale also each run's data); 0 gives the stored runs, another value other seeds"),
    Param("samples", "int", "training lists (the paper: 30,000)", min=16, max=200000),
    STEPS.described("Adam steps (CI); null: `epochs`", nullable=True),
    Param("epochs", "int", "epochs (the paper: 2000); null: `steps`", min=1, max=5000, nullable=True),
    BATCH.described("batch size (the authors' code: 1000)"),
    LR.described("initial (plateau) or peak (onecycle) Adam learning rate (the paper: 5e-4)"),
    Param("scheduler", "str", "plateau (the authors' code), onecycle or constant",
          choices=("plateau", "onecycle", "constant")),
    Param("embed", "int", "embedding dimension E (the paper: 64)", min=2, max=512),
    Param("hidden", "int", "MLP hidden width (the paper: 64)", min=1, max=1024),
    Param("c_list", "float_list", "test scale factors c (the paper: 1 … 10)", min=1.0, max=100.0),
    Param("test_samples", "int", "test lists per scale (the paper: 1,000)", min=10, max=100000),
)

# how long programs run (operational: they may differ from the preset): paper-scale programs save a
# checkpoint every `checkpoint_every` steps and stop after `time_limit` minutes; a rerun resumes
OPERATIONAL_PARAMS = (
    Param("checkpoint_every", "int", "steps between checkpoints of a program (0 = none)", min=0, max=10_000_000),
    Param("time_limit", "float", "minutes after which a run stops at a checkpoint (0 = no limit; rerun resumes)",
          min=0.0, max=10_000.0),
)
CI_OPS = dict(checkpoint_every=0, time_limit=0.0)
FULL_OPS = dict(checkpoint_every=6000, time_limit=7.0)

# the paper's protocol (§7, App. D.1.1; batch and scheduler from the authors' code)
FULL = dict(n=8, seeds=10, seed=0, samples=30000, steps=None, epochs=2000, batch=1000, lr=5e-4, scheduler="plateau",
            embed=64, hidden=64, c_list=[float(c) for c in range(1, 11)], test_samples=1000)
# CI: n = 4 (L = 3), E = hidden = 16, 300 steps of 64 at a OneCycle peak of 1e-2 (calibrated: the
# c = 10 gap of one-hot positional vs standard is ~100× on cumsum there; see the chapters)
CI = dict(n=4, seeds=3, seed=0, samples=2048, steps=300, epochs=None, batch=64, lr=1e-2, scheduler="onecycle",
          embed=16, hidden=16, c_list=[1.0, 2.0, 5.0, 10.0], test_samples=500)


def seed_range(cfg: dict) -> range:
    """The model seeds of a config: `seed` … `seed` + `seeds` − 1 (seed 0 … seeds − 1 are the stored runs)."""
    return range(cfg.get("seed", 0), cfg.get("seed", 0) + cfg["seeds"])


def task_list(cfg: dict) -> list[str]:
    """The `tasks` parameter as a list; ParameterError naming it for an unknown task."""
    tasks = [t.strip() for t in cfg["tasks"].split(",") if t.strip()]
    bad = [t for t in tasks if t not in TASKS]
    if not tasks or bad or len(set(tasks)) != len(tasks):
        raise ParameterError(f"parameter 'tasks': value {cfg['tasks']!r} is not allowed; give distinct tasks "
                             f"among {', '.join(TASKS)}, comma-separated")
    return tasks


def protocol(cfg: dict) -> Protocol:
    """The sweep protocol of a config: independent runs (each seed its own training set, data order and
    test lists, as the paper's runs); at CI scale every seed of a program trains as a replica of one tensor
    program (`mix_seeds`), at paper scale one program per seed."""
    if (cfg["steps"] is None) == (cfg["epochs"] is None):
        raise ParameterError(f"parameters 'steps' and 'epochs': values {cfg['steps']!r}, {cfg['epochs']!r} are "
                             "not allowed; give exactly one (the other null)")
    return Protocol(samples=cfg["samples"], batch=cfg["batch"], lr=cfg["lr"], epochs=cfg["epochs"],
                    steps=cfg["steps"], scheduler=cfg["scheduler"], c_list=tuple(cfg["c_list"]),
                    test_samples=cfg["test_samples"], mix_seeds=cfg["scale"] == "ci")


def mixable(c: ModelConfig) -> tuple:
    """What one Transformer program must share (its replicas may differ in the rest)."""
    return (c.n, c.kind, c.heads, c.depth, c.input_features == "diag")


def run_variants(ctx, variants: dict[str, dict[str, Any]], tasks: list[str] | None = None,
                 desc: str = "programs") -> dict:
    """Train every (variant, task, seed): `variants` maps a name to ModelConfig options (n, embed
    and hidden come from the config unless the variant sets them). Returns
    {name: {task: {"test": [seeds][c] MSE, "train": [seeds] MSE}}}."""
    cfg = ctx.config
    tasks = tasks or task_list(cfg)
    proto = protocol(cfg)
    units, where = [], []
    for name, opts in variants.items():
        c = ModelConfig(**{"n": cfg["n"], "embed": cfg["embed"], "hidden": cfg["hidden"], **opts})
        for task in tasks:
            for s in seed_range(cfg):
                units.append((c, s, task))
                where.append((name, task))
    rows = sweep(ctx, units, proto, program=mixable, desc=desc)
    out: dict = {name: {t: {"test": [], "train": []} for t in tasks} for name in variants}
    for (name, task), row in zip(where, rows):
        out[name][task]["test"].append(row["test_mse"])
        out[name][task]["train"].append(row["train_mse"])
    return out


def band(test: list[list[float]]) -> dict:
    """Median and 10th / 90th percentiles over seeds, per c (the paper's curves and bands)."""
    a = np.asarray(test, dtype=float)
    return {"median": np.median(a, 0).tolist(), "p10": np.percentile(a, 10, 0).tolist(),
            "p90": np.percentile(a, 90, 0).tolist()}


def at(cfg: dict, test: list[list[float]], c: float) -> float:
    """The median over seeds of the test MSE at scale c."""
    return float(np.median(np.asarray(test, dtype=float)[:, list(cfg["c_list"]).index(float(c))]))


def per_seed(cfg: dict, test: list[list[float]], c: float) -> np.ndarray:
    """The test MSE at scale c, one per seed (in seed order)."""
    return np.asarray(test, dtype=float)[:, list(cfg["c_list"]).index(float(c))]


def add_direction(t: ClaimsTable, key: str, text: str, *, paper, values, separates: float, asserted: bool = False,
                  source: str = "", unit: str = "×") -> ClaimsTable:
    """A ratio claim ('> 1') judged over seeds with a band of `separates`× either way (the seed rule,
    `ClaimsTable.add_seeds`, on each side): ✅ when every seed is ≥ separates, ❌ when every seed is
    ≤ 1 / separates (each beyond the row's precision), ❔ otherwise (the tolerance column counts the
    seeds on each side and in between). `values`: one ratio per seed."""
    v = [float(x) for x in values]
    lo = 1 / separates
    for threshold, verdict in ((separates, "reproduced"), (lo, "fails")):
        probe = ClaimsTable(rtol=t.rtol, atol=t.atol)
        probe.add_seeds(key, text, paper=paper, values=v, threshold=threshold, asserted=asserted, source=source,
                        tolerance=f"≥ {separates:g}{unit}" if verdict == "reproduced" else
                        f"> {lo:.3g}{unit} (≤ {lo:.3g}{unit}: the opposite direction)")
        if probe.rows[0].verdict == verdict:
            t.rows.append(probe.rows[0])
            return t
    above, below = sum(x >= separates for x in v), sum(x <= lo for x in v)
    return t.inconclusive(key, text, paper=paper, ours=seed_summary(v), source=source,
                          why=f"≥ {separates:g}{unit} in every seed, or ≤ {lo:.3g}{unit} in every seed: {above} of "
                              f"{len(v)} seeds ≥ {separates:g}{unit}, {below} ≤ {lo:.3g}{unit}, "
                              f"{len(v) - above - below} within {separates:g}{unit} either way (or the row's precision)")


def full_command(slug: str) -> str:
    return f"attnlab run 001-positional/{slug} --scale full --headless"


def plot_band(ax, c_list, test: list[list[float]], color: str, label: str, ls: str = "-") -> None:
    """The paper's curve: median over seeds against c, the 10–90 % band shaded (log-y)."""
    b = band(test)
    ax.plot(c_list, b["median"], ls, color=color, marker="o", ms=3, label=label)
    if len(test) > 1:
        ax.fill_between(c_list, b["p10"], b["p90"], color=color, alpha=0.2, lw=0)
    ax.set_yscale("log")
    ax.set_xlabel("OOD scale factor c")
    ax.set_ylabel("test MSE")


def plot_c2(ax, c_list, at_one: float) -> None:
    """A grey c² reference line through the value at c = 1 (an accurate model's MSE grows ∝ c²)."""
    c = np.asarray(c_list, dtype=float)
    ax.plot(c, at_one * c ** 2, ":", color="grey", lw=1, label="∝ c²")
