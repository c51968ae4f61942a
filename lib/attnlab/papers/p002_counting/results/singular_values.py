"""Fig. 6 of paper 002 (§5.1): the singular values of the first MLP layer W₁ of accurate models
with d, p ≥ T, for the six variants (Fig. 6: a drop after the T-th singular value for the
inventory-only models, a flatter decline for dot and bos).

Inventory-based counting (App. A.3) needs one hidden unit per token: W₁ then has (about) T large
singular values and a drop after the T-th. Relation-based counting reads one direction, so the
spectrum need not drop at T. The statistic is σ_T / σ_{T+1} of the descending singular values
(W₁ is [d, p] here, `fc1.weight` [p, d] in the authors' code: the same singular values).
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable, seed_summary
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError
from attnlab.core.progress import tqdm

from .. import paper, sweeps
from ..analysis import drop_ratio, spectrum
from ..paper import ORDER
from ..sweeps import DATA_SEED, RATIO_RTOL, seed_list, seed_param, weights_from_json

PARAMS = (
    Param("T", "int", "alphabet size (paper 32)", min=2, max=1024),
    Param("L", "int", "sequence length (paper 10)", min=3, max=64),
    Param("dims", "int_list", "d and p values, all pairs (each ≥ T; σ_T/σ_(T+1) needs min(d, p) > T)", min=2,
          max=4096),
    seed_param(),
    DATA_SEED,
    Param("min_accuracy", "float", "models kept for the spectra (paper: 99 %)", min=0.0, max=1.0),
    *sweeps.TRAINING_PARAMS,
)


def compute_svd(ctx: Context) -> dict:
    """Trains (or loads) every variant at each (d, p) of dims × dims for each seed, weights kept
    (`sweeps.run_sweep`), and takes the singular values of each W₁. The result holds config and
    models (one per trained model: variant, d, p, seed, accuracy, kept (accuracy ≥ min_accuracy),
    singular_values and ratio σ_T/σ_(T+1))."""
    cfg = ctx.config
    T = cfg["T"]
    dims = sorted(set(cfg["dims"]))
    if dims[0] < T or dims[-1] <= T:
        raise ParameterError(f"parameter 'dims': value {cfg['dims']} is not allowed; every value must be ≥ T = {T} "
                             "and one > T")
    seeds = seed_list(cfg)
    proto = sweeps.Protocol.from_config(cfg, keep_weights=True)
    dp = [(d, p) for d in dims for p in dims]
    models = []
    for v in tqdm(ORDER, desc="variants", disable=not ctx.progress):
        rows = sweeps.run_sweep(ctx, v, T, cfg["L"], dp, seeds, proto, joint=cfg["joint"],
                                data_seed=cfg["data_seed"], streams="per-seed")  # joint (CI): each seed its own data
        for r in rows:
            s = spectrum(weights_from_json(r["weights"]).W1)
            models.append({"variant": v, "d": r["d"], "p": r["p"], "seed": r["seed"],
                           "accuracy": round(r["final_accuracy"], 5),
                           "kept": r["final_accuracy"] >= cfg["min_accuracy"],
                           "singular_values": s.round(6).tolist(),
                           "ratio": round(drop_ratio(s, T), 5) if len(s) > T else None})
    return {"config": cfg, "models": models}


def _by_seed(result: dict, variants, reduce) -> list[list[float]]:
    """Per seed, [reduce of its kept ratios of `variants`] or [] when none is kept (seeds aligned)."""
    out = []
    for s in sorted({m["seed"] for m in result["models"]}):
        r = [m["ratio"] for m in result["models"] if m["seed"] == s and m["variant"] in variants and m["kept"]
             and m["ratio"] is not None]
        out.append([float(reduce(r))] if r else [])
    return out


def ratios(result: dict, variant: str) -> list[float]:
    """σ_T/σ_{T+1} of the kept models of `variant` (those with min(d, p) > T)."""
    return [m["ratio"] for m in result["models"] if m["variant"] == variant and m["kept"] and m["ratio"] is not None]


def seed_ratios(result: dict, variants, reduce=min) -> list[float]:
    """Per seed (in seed order), `reduce` over the kept models of `variants` of σ_T/σ_(T+1); seeds with no
    kept model of these variants are left out."""
    out = []
    for s in sorted({m["seed"] for m in result["models"]}):
        r = [m["ratio"] for m in result["models"] if m["seed"] == s and m["variant"] in variants and m["kept"]
             and m["ratio"] is not None]
        if r:
            out.append(float(reduce(r)))
    return out


def claims_svd(result: dict) -> ClaimsTable:
    """Fig. 6 (§5.1) on the models with accuracy ≥ min_accuracy. Every row is judged over the seeds
    (`ClaimsTable.add_seeds`): one value per seed from that seed's kept models."""
    cfg = result["config"]
    T, ci = cfg["T"], cfg["T"] < 32
    t = ClaimsTable(rtol=TRAINED_RTOL)
    kept = {v: len(ratios(result, v)) for v in ORDER}
    n = sum(1 for m in result["models"] if m["variant"] == "lin" and m["ratio"] is not None)

    def counts(vs):
        return ", ".join(f"{v} {kept[v]}/{n}" for v in vs)

    def row(key, text, vals, **kw):
        if vals:
            t.add_seeds(key, text, values=vals, rtol=RATIO_RTOL, source="figure", **kw)
        else:
            t.inconclusive(key, text, paper=kw["paper"], ours="–", why="no model kept (accuracy below min_accuracy)",
                           source="figure")

    inv, rel = ("lin", "lin+sftm"), ("dot", "bos")
    row("15 inventory", f"σ_{T}/σ_{T + 1} of W₁, the lower of lin and lin+sftm, per seed (models kept: {counts(inv)})",
        seed_ratios(result, inv, min), paper="visible dip after σ_T (≥ 2.0)", threshold=2.0, tolerance="≥ 2.0",
        asserted=ci)
    row("15 relation", f"σ_{T}/σ_{T + 1} of W₁, the higher of dot and bos, per seed (models kept: {counts(rel)})",
        seed_ratios(result, rel, max), paper="less marked decline (≤ 1.6)", threshold=1.6, above=False,
        tolerance="≤ 1.6", asserted=False)
    pairs = [(a, b) for a, b in zip(_by_seed(result, inv, min), _by_seed(result, rel, max)) if a and b]
    row("15 contrast", "the lower σ_T/σ_(T+1) of lin, lin+sftm over the higher of dot, bos, per seed: inventory-only "
        "models drop more", [a[0] / b[0] for a, b in pairs], paper="dip vs less marked decline", threshold=1.5,
        tolerance="≥ 1.5", asserted=ci)
    row("15 softmax", f"σ_{T}/σ_{T + 1} of W₁, dot+sftm, per seed (models kept: {counts(('dot+sftm',))})",
        seed_ratios(result, ("dot+sftm",), min), paper="dot+sftm dips (inventory-only)", threshold=2.0,
        tolerance="≥ 2.0", asserted=False)
    bs = seed_ratios(result, ("bos+sftm",), min)
    t.inconclusive("15 bos+sftm", f"σ_{T}/σ_{T + 1} of W₁, bos+sftm, per seed (models kept: {counts(('bos+sftm',))})",
                   paper="some bos+sftm look like the inventory models", ours=seed_summary(bs) if bs else "–",
                   why="the paper states no share or size: any spread of ratios agrees with 'some'", source="figure")
    if T != paper.T:
        t.not_run("15 paper", "Fig. 6 at T = 32: every model with d, p ∈ {32, 64} and accuracy ≥ 99 %; singular values "
                  "of W₁ dip after the 32nd for lin, lin+sftm, dot+sftm, less for dot, bos",
                  paper="dip after σ₃₂", source="figure",
                  command="attnlab run 002-counting/singular-values --scale full --headless")
    return t


EXPERIMENTS = [
    Experiment(
        id="002-counting/singular-values",
        label="Fig. 6 (§5.1)",
        title="Singular values of W₁: inventory-based models drop after the T-th",
        params=PARAMS,
        presets={
            "ci": dict(T=8, L=6, dims=[16], seed_list=[0, 1, 2, 3, 4], data_seed=0, joint=True, min_accuracy=0.99,
                       steps=600, batch_size=64, lr=3e-2, lr_end=1e-3, eval_n=3000, eval_every=0,
                       checkpoint_every=0, time_limit=0.0),
            "full": dict(T=paper.T, L=paper.L, dims=[32, 64], seed_list=paper.SEEDS, data_seed=0, min_accuracy=0.99,
                         **sweeps.FULL_TRAINING),
        },
        compute=compute_svd,
        summary="lin and lin+sftm (inventory) show σ_T/σ_(T+1) ≫ 1; dot and bos (relation-capable) do not.",
    ),
]
