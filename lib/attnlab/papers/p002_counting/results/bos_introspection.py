"""Figs. 3 and 15 of paper 002 (§5.1, App. D.6): relation-based counting in a trained bos+sftm
model with p = 2. The softmax weight on BOS is a proxy for the count, and the MLP reads only
that direction: f(α e_BOS + (1−α) e_X + e_Y) depends on α, not on the tokens X, Y.

Trains bos+sftm (T, L, d, p) for several seeds (the result store keeps the weights), picks the
most accurate model and measures: the embedding overlaps, the attention matrix of one sequence,
the mean BOS weight per count, and the BOS probe over a grid of α and token pairs.
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param

from .. import analysis as I
from .. import paper
from ..paper import PROBE_TOKENS  # the paper's B, C, D, E
from ..sweeps import (ACC_ATOL, FULL_TRAINING, TRAINING_PARAMS, Protocol, seed_list, run_sweep,
                      weights_from_json)
from ..tasks import sample_code

VARIANT = "bos+sftm"

PARAMS = (
    Param("T", "int", "alphabet size (paper 32)", min=5, max=1024),
    Param("L", "int", "sequence length (paper 10)", min=3, max=64),
    Param("d", "int", "embedding dimension (paper 45)", min=1, max=1024),
    Param("p", "int", "MLP width (paper 2)", min=1, max=1024),
    Param("seed_list", "int_list", "list of distinct seed ids: model seeds, trained as replicas; the most accurate "
          "model is analysed (the paper's protocol: best of 5 runs), every seed shows in the spread rows",
          min=0, max=2**31 - 1),
    Param("data_seed", "int", "seed of the training data stream", min=0, max=2**31 - 1),
    *TRAINING_PARAMS,
    Param("n_analysis", "int", "code-sampler sequences for the BOS weights per count", min=100, max=1_000_000),
    Param("n_alpha", "int", "points of the α grid of the BOS probe", min=3, max=10_001),
)

def compute_bos(ctx: Context) -> dict:
    """Trains (or loads) bos+sftm (T, L, d, p) for each seed, weights kept (`sweeps.run_sweep`, as `train_seeds`;
    at CI each seed on its own data stream),
    and analyses them in float64. The result holds config, models (per seed: accuracies, eval
    curve, mean and std BOS weight per count, monotone direction), best_seed, weights and chosen
    (the most accurate model), and that model's overlaps, example sequence and attention matrix,
    the BOS probe grid over alphas × probe_tokens², probe_agreement and probe_at_weights."""
    cfg = ctx.config
    T, L = cfg["T"], cfg["L"]
    proto = Protocol.from_config(cfg, keep_weights=True)
    rows = run_sweep(ctx, VARIANT, T, L, [(cfg["d"], cfg["p"])], seed_list(cfg), proto, joint=cfg["joint"],
                     data_seed=cfg["data_seed"], streams="per-seed")  # joint (CI): each seed its own data
    x = sample_code(cfg["n_analysis"], T, L, seed=cfg["data_seed"] + 1000)
    models = []
    for r in rows:
        w = weights_from_json(r["weights"])
        bw = I.bos_weight_by_count(w, x)
        models.append({"seed": r["seed"], "final_accuracy": r["final_accuracy"], "best_accuracy": r["best_accuracy"],
                       "eval_curve": r["eval_curve"], "counts": bw["counts"].tolist(),
                       "bos_mean": bw["mean"].tolist(), "bos_std": bw["std"].tolist(),
                       "monotone": I.strictly_monotone(bw["mean"]),
                       # the probes of every model, for the spread over seeds (the figures show the best)
                       "probe_modal": I.probe_agreement(I.bos_probe_grid(w, PROBE_TOKENS, np.linspace(0, 1, cfg["n_alpha"])))["modal"],
                       "probe_at_weights": I.probe_at_weights(w, PROBE_TOKENS, bw["mean"], bw["counts"])})
    best = I.pick_best(rows)
    w = weights_from_json(best["weights"])
    chosen = next(m for m in models if m["seed"] == best["seed"])
    alphas = np.linspace(0, 1, cfg["n_alpha"])
    grid = I.bos_probe_grid(w, PROBE_TOKENS, alphas)
    seq = I.example_sequence(L)
    ov = I.overlaps(w)
    return {
        "config": cfg, "models": models, "best_seed": best["seed"], "weights": best["weights"],
        "chosen": chosen,
        "overlaps": {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in ov.items()},
        "example": seq, "attention": I.attention_matrix(w, seq).tolist(),
        "alphas": alphas.tolist(), "probe_tokens": PROBE_TOKENS, "probe": grid.tolist(),
        "probe_agreement": I.probe_agreement(grid),
        "probe_at_weights": I.probe_at_weights(w, PROBE_TOKENS, np.array(chosen["bos_mean"]),
                                               np.array(chosen["counts"])),
    }


# the accuracies of every model, not only the best one: a model that trains poorly moves by up to 0.008 on
# another instruction set (make test-other-cpu, measured), so this row compares at 0.03
SPREAD_ATOL = 0.03


def claims_bos(result: dict) -> ClaimsTable:
    """Figs. 3 and 15 (§5.1, App. D.6): the BOS weight as a count proxy; the MLP reads only α.

    The paper's protocol is "best of 5 runs" (Fig. 3 shows the most accurate model), so the rows on
    the chosen model keep it and say so; the rows "… seeds" show the same statistics for every seed
    (`ClaimsTable.add_seeds`, not asserted): the spread that the best-of pick hides."""
    cfg = result["config"]
    paper_case = dict(T=cfg["T"], L=cfg["L"], d=cfg["d"], p=cfg["p"]) == paper.FIG3_MODEL
    ci = not paper_case
    t = ClaimsTable(rtol=TRAINED_RTOL)
    ch = result["chosen"]
    models = sorted(result["models"], key=lambda m: m["seed"])
    n = len(models)
    acc = ch["final_accuracy"]
    thr = 0.99 if paper_case else 0.95
    t.add("17 acc", f"accuracy of the best of {n} bos+sftm models (p = {cfg['p']}, d = {cfg['d']}; the paper's "
          "protocol: best of 5 runs)", paper=paper.FIG3_ACCURACY, ours=acc, holds=acc >= thr, tolerance=f"≥ {thr}",
          asserted=ci, source="text")
    t.add_seeds("17 acc seeds", f"accuracy of every bos+sftm model (p = {cfg['p']}, d = {cfg['d']}), per seed: the "
                "spread behind the best-of pick", paper=f"best of 5: {paper.FIG3_ACCURACY}",
                values=[m["final_accuracy"] for m in models], threshold=thr, rtol=0, atol=SPREAD_ATOL,
                tolerance=f"≥ {thr}", source="text")
    if not paper_case:
        t.not_run("17 paper", "Fig. 3: the best bos+sftm model with p = 2 at T = 32, L = 10, d = 45 (best of 5 runs)",
                  paper=f"{100 * paper.FIG3_ACCURACY:.1f} %", source="text",
                  command="attnlab run 002-counting/bos-introspection --scale full --headless")
    mono = ch["monotone"]
    means = ", ".join(f"{v:.2f}" for v in ch["bos_mean"])
    t.add("17 mono", f"mean BOS weight a_ℓ,0 per count k = {ch['counts'][0]}..{ch['counts'][-1]} "
          f"is strictly monotone (the best model, as Fig. 3: {means})", paper="count proxy (Fig. 3 middle)",
          ours=mono or "not monotone", holds=mono is not None, tolerance="strict", asserted=ci, source="figure")
    good = [m for m in models if m["final_accuracy"] >= 0.9]
    n_mono = sum(m["monotone"] is not None for m in good)
    dirs = sorted({m["monotone"] for m in good if m["monotone"]})
    if good:
        t.add_seeds("17 all", "models with accuracy ≥ 90 %: 1 if the mean BOS weight is strictly monotone in the count, "
                    f"0 if not, per seed (directions seen: {', '.join(dirs) or '–'}; seeds below 90 % left out)",
                    paper="count proxy (Fig. 3, one model)", values=[float(m["monotone"] is not None) for m in good],
                    threshold=0.5, rtol=0, tolerance="1 (monotone)", source="figure")
    else:
        t.inconclusive("17 all", "models with accuracy ≥ 90 % whose mean BOS weight is strictly monotone in the count",
                       paper="count proxy (Fig. 3, one model)", ours=f"{n_mono} of 0", source="figure",
                       why="no model reaches 90 %")
    ag = result["probe_agreement"]
    n_pairs = len(result["probe_tokens"]) ** 2
    t.add("17 probe", f"f(α e_BOS + (1−α) e_X + e_Y): share of ({n_pairs} token pairs × {len(result['alphas'])} α) "
          "points that equal the most common prediction at their α (the best model, as Fig. 15)",
          paper="depends on α only (Fig. 15)", ours=ag["modal"], holds=ag["modal"] >= 0.9, tolerance="≥ 0.9",
          asserted=ci, source="figure")
    if "probe_modal" in models[0]:
        t.add_seeds("17 probe seeds", "the same share for every model, per seed", paper="depends on α only (Fig. 15)",
                    values=[m["probe_modal"] for m in models], threshold=0.9, rtol=0, atol=ACC_ATOL,
                    tolerance="≥ 0.9", source="figure")
    t.add("17 unanimous", "share of α grid points at which all token pairs give the same prediction (the best model)",
          paper="1 (Fig. 15)", ours=ag["unanimous"], holds=ag["unanimous"] >= 0.8, tolerance="≥ 0.8",
          asserted=False, source="figure")
    pw = result["probe_at_weights"]
    t.add("17 lines", "the probe at α = the model's mean BOS weight for count k predicts k (share of counts × pairs; "
          "the best model, as Fig. 3)", paper="correct for all counts (Fig. 3 right)", ours=pw, holds=pw >= 0.8,
          tolerance="≥ 0.8", asserted=ci, source="figure")
    if "probe_at_weights" in models[0]:
        t.add_seeds("17 lines seeds", "the same share for every model, per seed", paper="correct for all counts (Fig. 3 right)",
                    values=[m["probe_at_weights"] for m in models], threshold=0.8, rtol=0, atol=0.03,  # the spread moved 0.012 on a lower instruction set
                    tolerance="≥ 0.8", source="figure")
    return t


EXPERIMENTS = [
    Experiment(
        id="002-counting/bos-introspection",
        label="Figs. 3, 15 (§5.1, App. D.6)",
        title="bos+sftm with p = 2: the BOS weight is a count proxy",
        params=PARAMS,
        presets={
            "ci": dict(T=8, L=6, d=16, p=2, seed_list=[0, 1, 2, 3, 4, 5], data_seed=0, joint=True, steps=1500,
                       batch_size=64, lr=1e-2, lr_end=1e-3, eval_n=2000, eval_every=0, checkpoint_every=0,
                       time_limit=0, n_analysis=3000, n_alpha=101),
            "full": dict(**paper.FIG3_MODEL, seed_list=paper.SEEDS, data_seed=0, **FULL_TRAINING, n_analysis=20_000,
                         n_alpha=201),
        },
        compute=compute_bos,
        summary="The softmax weight on BOS orders the counts and the MLP reads the BOS direction.",
    ),
]
