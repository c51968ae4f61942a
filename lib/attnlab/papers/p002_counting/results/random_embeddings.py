"""App. D.3 and Fig. 12 of paper 002: learned embeddings against embeddings frozen at random vectors.

The same (d, p) sweep is trained twice per variant (`sweeps.run_sweep`): once with learned
embeddings (the Fig. 1 protocol) and once with the embeddings frozen at random μ_t ~ N(0, I/d),
BOS included (`Protocol(frozen_embeddings=True)`). Fig. 12 shows the difference of the mean
final accuracies, learned − random, per (d, p).

Not implemented: the authors also perturb each input embedding with small noise,
(μ_x + 10⁻³ ν)/√(1 + 10⁻⁶), ν ~ N(0, I/d) [repo]. At that size it changes the inputs by ~0.1 %.
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError

from .. import paper
from ..reference import VARIANTS, parse_variants
from ..sweeps import (ACC_ATOL, DATA_SEED, FULL_TRAINING, TRAINING_PARAMS, Protocol, grid_array, run_sweep, seed_list,
                      seed_param)

PARAMS = (
    Param("T", "int", "alphabet size (paper 32)", min=2, max=4096),
    Param("L", "int", "sequence length (paper 10)", min=3, max=64),
    Param("d_list", "int_list", "embedding dimensions (paper: the 14-value grid)", min=1, max=4096),
    Param("p_list", "int_list", "MLP widths (paper: the 14-value grid)", min=1, max=4096),
    Param("variants", "str", "comma-separated models, from: " + ", ".join(VARIANTS)),
    seed_param("per configuration; paper: 5 runs"),
    DATA_SEED,
    *TRAINING_PARAMS,
)


def compute_random_embeddings(ctx: Context) -> dict:
    """Trains (or loads) the (d, p, seed) sweep of each variant twice (`sweeps.run_sweep`): with
    learned embeddings and with embeddings frozen at random N(0, I/d) vectors. The result holds
    config, d_list, p_list and models (per variant: learned and random {runs, mean (over seeds),
    best (over seeds and evals)} as [d, p] grids, and diff = learned − random of the means)."""
    cfg = ctx.config
    T, L = cfg["T"], cfg["L"]
    if L > T:
        raise ParameterError(f"parameter 'L': value {L} is not allowed; the task needs L <= T = {T}")
    d_list, p_list = sorted(set(cfg["d_list"])), sorted(set(cfg["p_list"]))
    dp = [(d, p) for d in d_list for p in p_list]
    seeds = seed_list(cfg)
    out = {"config": cfg, "d_list": d_list, "p_list": p_list, "models": []}
    for v in parse_variants(cfg["variants"]):
        entry = {"variant": v}
        for mode, frozen in (("learned", False), ("random", True)):
            rows = run_sweep(ctx, v, T, L, dp, seeds, Protocol.from_config(cfg, frozen_embeddings=frozen),
                             data_seed=cfg["data_seed"], joint=cfg["joint"],
                             streams="per-seed")  # joint (CI): each seed its own data, as the paper's runs
            rows = [{k: r[k] for k in ("d", "p", "seed", "final_accuracy", "best_accuracy", "n_params")} for r in rows]
            entry[mode] = {"runs": rows, "mean": grid_array(rows, d_list, p_list).tolist(),
                           "best": grid_array(rows, d_list, p_list, "best_accuracy", "max").tolist()}
        entry["diff"] = (np.array(entry["learned"]["mean"]) - np.array(entry["random"]["mean"])).tolist()
        out["models"].append(entry)
    return out


def region_means(result: dict, variant: str, seed: int | None = None) -> tuple[float, float]:
    """Mean of learned − random (mean over seeds, or one seed) over the cells d < T and d ≥ T."""
    T = result["config"]["T"]
    m = next(m for m in result["models"] if m["variant"] == variant)
    d_list, p_list = result["d_list"], result["p_list"]
    if seed is None:
        diff = np.array(m["diff"])
    else:
        pick = lambda mode: grid_array([r for r in m[mode]["runs"] if r["seed"] == seed], d_list, p_list)  # noqa: E731
        diff = pick("learned") - pick("random")
    small = np.array(d_list) < T
    lo = float(diff[small].mean()) if small.any() else float("nan")
    hi = float(diff[~small].mean()) if (~small).any() else float("nan")
    return lo, hi


def claims_random_embeddings(result: dict) -> ClaimsTable:
    """App. D.3: learned embeddings beat random ones for d < T (most for bos+sftm); for d ≥ T the
    difference is ≈ 0. Every row is judged over the seeds (`ClaimsTable.add_seeds`): learned − random
    of the same seed index, one value per seed, ✅ or ❌ only when every seed agrees."""
    cfg = result["config"]
    T = cfg["T"]
    ci = cfg["scale"] == "ci"
    seeds = sorted(cfg["seed_list"])
    t = ClaimsTable(rtol=TRAINED_RTOL)
    acc = dict(rtol=0, atol=ACC_ATOL)
    variants = [m["variant"] for m in result["models"]]
    lo = {v: [region_means(result, v, s)[0] for s in seeds] for v in variants}
    hi = {v: [region_means(result, v, s)[1] for s in seeds] for v in variants}
    for v in variants:
        t.add_seeds(f"{v} d<T", f"{v}: learned − random, mean over the d < T cells, per seed", paper="> 0 (purple)",
                    values=lo[v], threshold=0, tolerance="> 0", asserted=ci, source="figure", **acc)
    if "bos+sftm" in lo:
        t.add_seeds("bos+sftm strong", "bos+sftm gains strongly for d < T (mean over the d < T cells, per seed)",
                    paper="up to ≈ +0.5 per cell", values=lo["bos+sftm"], threshold=0.08, tolerance="≥ 0.08",
                    asserted=False, source="figure", **acc)
        others = [v for v in variants if v != "bos+sftm"]
        if others:
            t.add_seeds("bos+sftm most", f"bos+sftm gains the most for d < T: its gain minus the largest of "
                        f"{', '.join(others)}, per seed", paper="yes",
                        values=[lo["bos+sftm"][i] - max(lo[v][i] for v in others) for i in range(len(seeds))],
                        threshold=0, tolerance="> 0", asserted=False, source="figure", **acc)
    for v in variants:
        t.add_seeds(f"{v} d≥T", f"{v}: |learned − random|, mean over the d ≥ T cells, per seed", paper="≈ 0",
                    values=[abs(x) for x in hi[v]], threshold=0.05, above=False, tolerance="≤ 0.05", asserted=False,
                    source="figure", **acc)
        t.add_seeds(f"{v} d<T vs d≥T", f"{v}: the gain is specific to d < T: mean gain over the d < T cells minus that "
                    "over the d ≥ T cells, per seed (learned embeddings that help everywhere pass the d < T row but "
                    "not this one)", paper="gain at d < T, ≈ 0 at d ≥ T", values=[a - b for a, b in zip(lo[v], hi[v])],
                    threshold=0, tolerance="> 0", asserted=False, source="figure", **acc)
    if T != paper.T:
        t.not_run("F12", "Fig. 12 at T = 32, L = 10 (Fig. 1's grid, 5 runs, all six models): learned − random "
                  "largest for bos+sftm at d ≈ 4–8, ≈ 0 for d ≥ T", paper=f"up to ≈ +{paper.FIG12_BOS_SFTM_GAIN}",
                  source="figure", command="attnlab run 002-counting/random-embeddings --scale full --headless")
    return t


EXPERIMENTS = [
    Experiment(
        id="002-counting/random-embeddings",
        label="Fig. 12 (App. D.3)",
        title="Learned against random frozen embeddings: the difference of the phase diagrams",
        params=PARAMS,
        presets={"ci": dict(T=8, L=6, d_list=[2, 4, 8, 16], p_list=[8, 16], variants="bos+sftm,dot+sftm,dot",
                            seed_list=[0, 1, 2], data_seed=0, steps=800, batch_size=32, lr=1e-2, lr_end=1e-3,
                            eval_n=2000, eval_every=0, checkpoint_every=0, time_limit=0.0, joint=True),
                 "full": dict(T=paper.T, L=paper.L, d_list=paper.GRID, p_list=paper.GRID,
                              variants="bos+sftm,dot+sftm,lin+sftm,bos,dot,lin", seed_list=paper.SEEDS, data_seed=0,
                              **FULL_TRAINING)},
        compute=compute_random_embeddings,
        summary="With d < T the models gain from learning their embeddings (most bos+sftm); with d ≥ T hardly.",
    ),
]
