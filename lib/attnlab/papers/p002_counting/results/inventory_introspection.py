"""Figs. 4, 5 and 9 of paper 002 (§5.1, App. A.4): inventory-based counting in trained dot+sftm
and lin+sftm models with p ≥ T.

Trains dot+sftm (Fig. 4) and lin+sftm (Fig. 5) for several seeds (the result store keeps the
weights) and analyses the most accurate model of each: the attention matrix of one sequence
(dot+sftm) or the learned softmax(A) (lin+sftm), and the simplex plots argmax_c f(Σ_t α_t e_t + e_X)
over three tokens. Fig. 9: the logits of every lin+sftm model on x = [t,…,t, v,…,v] against the
count of t, with the R² of straight-line fits (the construction's logits are exactly linear).
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError

from .. import analysis as I
from .. import paper
from ..paper import SIMPLEX_TOKENS  # the paper's B, C, D
from ..sweeps import (ACC_ATOL, RATIO_RTOL, FULL_TRAINING, TRAINING_PARAMS, Protocol, seed_list, run_sweep,
                      weights_from_json)

PARAMS = (
    Param("L", "int", "sequence length (paper 10)", min=3, max=64),
    Param("dot_model", "int_list", "dot+sftm [T, d, p] (Fig. 4: [32, 32, 32])", min=1, max=4096),
    Param("lin_model", "int_list", "lin+sftm [T, d, p] (Fig. 5: [64, 128, 128])", min=1, max=4096),
    Param("seed_list", "int_list", "list of distinct seed ids: model seeds per variant, trained as replicas; the most "
          "accurate model is analysed (the paper's protocol: best of 5 runs), every seed shows in the spread rows",
          min=0, max=2**31 - 1),
    Param("data_seed", "int", "seed of the training data stream", min=0, max=2**31 - 1),
    *TRAINING_PARAMS,
    Param("n_simplex", "int", "simplex grid resolution (points per edge − 1)", min=2, max=400),
    Param("fig9_tokens", "int", "tokens t overlaid per Fig. 9 panel", min=1, max=4096),
)

def _model(cfg: dict, name: str) -> tuple[int, int, int]:
    v = cfg[name]
    if len(v) != 3 or v[0] < 4:
        raise ParameterError(f"parameter {name!r}: value {v!r} is not allowed; expected [T, d, p] with T >= 4")
    return tuple(v)


def _simplex(w, n: int) -> dict:
    alphas = I.simplex_points(n)
    preds = [I.simplex_predictions(w, SIMPLEX_TOKENS, X, alphas) for X in SIMPLEX_TOKENS]
    purity = [I.band_purity(alphas, p, col) for col, p in enumerate(preds)]
    return {"alphas": alphas.tolist(), "tokens": SIMPLEX_TOKENS, "predictions": [p.tolist() for p in preds],
            "purity": purity}


def _fig9(w, n_tokens: int) -> dict:
    lv = I.logits_vs_count(w, list(range(min(n_tokens, w.T))))
    k = lv["counts"]
    curves = np.swapaxes(lv["logits"][:, :, 1:], 1, 2)  # [n_t, C−1, L−1] (class 0 unused)
    return {"counts": k.tolist(), "logits": lv["logits"].round(4).tolist(), "gamma": lv["gamma"].round(5).tolist(),
            "prediction": lv["prediction"].tolist(), "accuracy": float((lv["prediction"] == k[None]).mean()),
            "r2_gamma": I.linear_r2(k, lv["gamma"]).tolist(), "r2_logits": I.linear_r2(k, curves).tolist(),
            "line_dev": I.line_deviation(k, curves).tolist()}


def compute_inventory(ctx: Context) -> dict:
    """Trains (or loads) dot+sftm (dot_model) and lin+sftm (lin_model) for each seed, weights kept
    (`sweeps.run_sweep`, as `train_seeds`; at CI each seed on its own data stream), and analyses
    the most accurate of each. The result holds config and,
    per variant: T, d, p, best_seed, weights, models (per seed: accuracies; for lin+sftm also the
    softmax(A) statistics and Fig. 9's logits against the count), simplex (the simplex plots and
    their band purity) and the attention matrix of the example sequence (dot+sftm) or softmax(A)."""
    cfg = ctx.config
    L = cfg["L"]
    seeds = seed_list(cfg)
    proto = Protocol.from_config(cfg, keep_weights=True)
    out = {"config": cfg}
    for variant, name in (("dot+sftm", "dot_model"), ("lin+sftm", "lin_model")):
        T, d, p = _model(cfg, name)
        rows = run_sweep(ctx, variant, T, L, [(d, p)], seeds, proto, joint=cfg["joint"],
                         data_seed=cfg["data_seed"], streams="per-seed")  # joint (CI): each seed its own data
        best = I.pick_best(rows)
        w = weights_from_json(best["weights"])
        res = {"T": T, "d": d, "p": p, "best_seed": best["seed"], "weights": best["weights"],
               "models": [{"seed": r["seed"], "final_accuracy": r["final_accuracy"],
                           "best_accuracy": r["best_accuracy"]} for r in rows],
               "simplex": _simplex(w, cfg["n_simplex"])}
        for m, r in zip(res["models"], rows):  # every model's band purity, for the spread over seeds
            m["purity"] = float(np.mean(_simplex(weights_from_json(r["weights"]), cfg["n_simplex"])["purity"]))
        if variant == "dot+sftm":
            seq = I.example_sequence(L)
            res.update(example=seq, attention=I.attention_matrix(w, seq).tolist())
        else:
            res["mixing"] = I.attention_matrix(w, []).tolist()
            for m, r in zip(res["models"], rows):
                wr = weights_from_json(r["weights"])
                m["mixing"] = I.softmax_mixing_stats(wr)
                m["fig9"] = _fig9(wr, cfg["fig9_tokens"])
        out[variant] = res
    return out


def _acc(res: dict) -> float:
    return next(m for m in res["models"] if m["seed"] == res["best_seed"])["final_accuracy"]


def _seed_rows(t: ClaimsTable, key: str, text: str, models: list[dict], field, **kw) -> None:
    """A spread row over every seed's model (`add_seeds`, never asserted); skipped when an older result
    lacks the field."""
    models = sorted(models, key=lambda m: m["seed"])
    try:
        values = [field(m) for m in models]
    except KeyError:
        return
    t.add_seeds(key, text, values=values, **kw)


def claims_inventory(result: dict) -> ClaimsTable:
    """Fig. 5, left (§5.1: the learned lin+sftm mixing, rows 16), the accuracies of Figs. 4-5, the simplex
    plots' dependence on the residual token, and Fig. 9's non-linear logits.

    The paper's protocol is "best of 5 runs" (Figs. 4, 5 show the most accurate model), so the rows on
    the chosen model keep it and say so; the rows "… seeds" show the same statistics for every seed
    (`ClaimsTable.add_seeds`, not asserted): the spread that the best-of pick hides."""
    cfg = result["config"]
    dot, lin = result["dot+sftm"], result["lin+sftm"]
    paper_case = cfg["L"] == paper.L and [dot["T"], dot["d"], dot["p"]] == paper.FIG4_MODEL and \
        [lin["T"], lin["d"], lin["p"]] == paper.FIG5_MODEL
    ci = not paper_case
    n = len(cfg["seed_list"])
    t = ClaimsTable(rtol=TRAINED_RTOL)
    acc = dict(rtol=0, atol=ACC_ATOL)
    a = _acc(dot)
    t.add("4 acc", f"accuracy of the best of {n} dot+sftm models (T = {dot['T']}, d = p = {dot['d']}; the paper's "
          "protocol: best of 5 runs)", paper=paper.FIG4_ACCURACY,
          ours=a, holds=a >= 0.95, tolerance="≥ 0.95", asserted=ci, source="text")
    _seed_rows(t, "4 acc seeds", "accuracy of every dot+sftm model, per seed: the spread behind the best-of pick",
               dot["models"], lambda m: m["final_accuracy"], paper=f"best of 5: {paper.FIG4_ACCURACY}", threshold=0.95,
               tolerance="≥ 0.95", source="text", **acc)
    a = _acc(lin)
    t.add("5 acc", f"accuracy of the best of {n} lin+sftm models (T = {lin['T']}, d = p = {lin['d']}; the paper's "
          "protocol: best of 5 runs)", paper=paper.FIG5_ACCURACY,
          ours=a, holds=a >= 0.99, tolerance="≥ 0.99", asserted=ci, source="text")
    _seed_rows(t, "5 acc seeds", "accuracy of every lin+sftm model, per seed: the spread behind the best-of pick",
               lin["models"], lambda m: m["final_accuracy"], paper=f"best of 5: {paper.FIG5_ACCURACY}", threshold=0.99,
               tolerance="≥ 0.99", source="text", **acc)
    if not paper_case:
        cmd = "attnlab run 002-counting/inventory-introspection --scale full --headless"
        t.not_run("4 paper", "Fig. 4: dot+sftm at T = 32, L = 10, d = p = 32 (best of 5 runs)",
                  paper=f"{100 * paper.FIG4_ACCURACY:.2f} %", source="text", command=cmd)
        t.not_run("5 paper", "Fig. 5: lin+sftm at T = 64, L = 10, d = p = 128 (best of 5 runs)",
                  paper=f"{100 * paper.FIG5_ACCURACY:.2f} %", source="text", command=cmd)
    chosen = next(m for m in lin["models"] if m["seed"] == lin["best_seed"])
    s = chosen["mixing"]
    t.consistency("16 rows", "softmax(A) rows sum to 1 (largest |row sum − 1|)", expected="yes",
                  ours="< 1e-9" if s["row_sum_err"] < 1e-9 else s["row_sum_err"],  # rounding noise: not printed
                  holds=s["row_sum_err"] < 1e-9, tolerance="< 1e-9", asserted=True)
    t.add("16 const", "off-diagonal of softmax(A) nearly constant: std / mean (the best model, as Fig. 5)",
          paper="≈ 0.11 each (Fig. 5)", ours=s["off_cv"], holds=s["off_cv"] < 0.05, tolerance="< 0.05", asserted=ci,
          source="figure")
    t.add("16 diag", f"diagonal below the off-diagonal: mean diagonal vs off-diagonal (off = {s['off']:.3f}; the "
          "best model, as Fig. 5)", paper="0.08 < 0.11", ours=s["diag"], holds=s["diag_max"] < s["off"] - 2 * s["off_std"],
          tolerance="every diagonal entry < off − 2 std", asserted=ci, source="figure")
    _seed_rows(t, "16 const seeds", "the off-diagonal's std / mean for every lin+sftm model, per seed",
               lin["models"], lambda m: m["mixing"]["off_cv"], paper="≈ 0.11 each (Fig. 5)", threshold=0.05,
               above=False, tolerance="< 0.05", source="figure", rtol=RATIO_RTOL)
    _seed_rows(t, "16 diag seeds", "every lin+sftm model, per seed: (off − 2 std − largest diagonal entry) / off",
               lin["models"], lambda m: (m["mixing"]["off"] - 2 * m["mixing"]["off_std"] - m["mixing"]["diag_max"])
               / m["mixing"]["off"], paper="0.08 < 0.11 (Fig. 5)", threshold=0, tolerance="> 0 (diagonal lower)",
               source="figure", rtol=0, atol=0.01)
    pl, pd = float(np.mean(lin["simplex"]["purity"])), float(np.mean(dot["simplex"]["purity"]))
    t.add("5 bands", "lin+sftm simplex plot: share of points explained by the residual token's own coefficient "
          "α_X (1 = straight bands; mean over X = B, C, D; the best model, as Fig. 5)",
          paper="bands nearly straight (Fig. 5 right)", ours=pl, holds=pl >= 0.9, tolerance="≥ 0.9", asserted=False,
          source="figure")
    t.add("4 bands", "dot+sftm simplex plot: the same share (the prediction depends mostly on α_X; the best model, "
          "as Fig. 4)", paper="strongly on α_X, weakly on the others (Fig. 4 right)", ours=pd, holds=pd >= 0.8,
          tolerance="≥ 0.8", asserted=False, source="figure")
    t.add("4/5 bends", "the dot+sftm bands bend more than the lin+sftm ones: share above, lin+sftm minus dot+sftm "
          "(the best model of each)", paper="dot+sftm boundaries bend (softmax), lin+sftm nearly straight",
          ours=pl - pd, holds=pl - pd > 0.03, tolerance="> 0.03", source="figure",
          # not asserted: with a data stream per seed it depends on the seeds (seeds 4-7, data seed 1: -0.008)
          asserted=False)
    lm, dm = (sorted(x["models"], key=lambda m: m["seed"]) for x in (lin, dot))
    if all("purity" in m for m in lm + dm):
        t.add_seeds("4/5 bends seeds", "the same difference for the models of every seed (lin+sftm and dot+sftm of one "
                    "seed index paired)", paper="dot+sftm boundaries bend (softmax), lin+sftm nearly straight",
                    values=[a["purity"] - b["purity"] for a, b in zip(lm, dm)], threshold=0.03, tolerance="> 0.03",
                    source="figure", **acc)
    acc9 = [m for m in lin["models"] if m["fig9"]["accuracy"] == 1.0]
    if acc9:
        dev = max(max(max(r) for r in m["fig9"]["line_dev"]) for m in acc9)
        r2g = min(min(m["fig9"]["r2_gamma"]) for m in acc9)
        t.add("9 nonlin", f"lin+sftm models exact on the block inputs of Fig. 9 ({len(acc9)}): largest RMS residual of "
              "a line fitted to a logit against the count, relative to the logits' spread (construction: 0; "
              f"smallest R² of γ against the count: {r2g:.2f}, construction: 1)",
              paper="not necessarily linear", ours=dev, holds=dev > 0.02, tolerance="> 0.02", asserted=False,
              source="figure")
    else:
        t.inconclusive("9 nonlin", "no lin+sftm model is exact on the block inputs of Fig. 9",
                       paper="not necessarily linear", ours="–", source="figure",
                       why="Fig. 9 is about exact models; none here")
    return t


EXPERIMENTS = [
    Experiment(
        id="002-counting/inventory-introspection",
        label="Figs. 4, 5, 9 (§5.1, App. A.4)",
        title="dot+sftm and lin+sftm with p ≥ T: inventory-based counting",
        params=PARAMS,
        presets={
            "ci": dict(L=6, dot_model=[8, 16, 16], lin_model=[8, 16, 16], seed_list=[0, 1, 2, 3], data_seed=0, joint=True,
                       steps=1500, batch_size=64, lr=1e-2, lr_end=1e-3, eval_n=2000, eval_every=0,
                       checkpoint_every=0, time_limit=0, n_simplex=60, fig9_tokens=8),
            "full": dict(L=paper.L, dot_model=paper.FIG4_MODEL, lin_model=paper.FIG5_MODEL, seed_list=paper.SEEDS,
                         data_seed=0, **FULL_TRAINING, n_simplex=120, fig9_tokens=8),
        },
        compute=compute_inventory,
        summary="With p ≥ T the MLP projects the mixed token onto the alphabet; lin+sftm learns a flat mixing "
                "with a lower diagonal.",
    ),
]
