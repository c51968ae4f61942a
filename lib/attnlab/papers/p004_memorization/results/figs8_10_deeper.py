"""Figs. 8-10 (App. B.2): deeper Transformers: accuracy against H, against d_h, and against 1 head + MLP.
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.fits import power_fit, presaturation
from attnlab.core.params import Param, ParameterError

from .. import bounds
from ..analysis import curve_row, full_command, values_at
from ..models_deep import DeepConfig
from ..paper import FIG10_MLP_ACCURACY, FIG8_ACCURACY, FIG8_H, FIG9_ACCURACY, FIG9_D, FIG9_DH, FIG9_H, FIG9_SSE, PAPER_LAYERS_CODE
from ..sweeps import mlp_width, train_deep_points, CI_RUN, FULL_RUN, TRAINING_PARAMS


DEPTH = (
    Param("layers", "int", "layers L (the code: 3; the paper text: 5; the full preset: constant lr 2.5e-3)",
          min=1, max=64),
    Param("d_list", "int_list", "embedding dimensions d = d_h of Figs. 8 and 10", min=1, max=1024),
    Param("H_list", "int_list", "heads per layer (Fig. 8); Fig. 10 MLP widths are w = 2d(H - 1)", min=1, max=1024),
    Param("fig9_d", "int", "Fig. 9: embedding dimension d", min=1, max=1024),
    Param("fig9_H", "int", "Fig. 9: heads per layer", min=1, max=1024),
    Param("dh_list", "int_list", "Fig. 9: head dimensions d_h (each <= fig9_d)", min=1, max=1024),
) + TRAINING_PARAMS


def compute_depth(ctx: Context) -> dict:
    """Trains L-layer AoTs over (d, H), over d_h, and 1-head + MLP models of matched width; the result
    holds the per-model accuracies, the untrained accuracy and the Figs. 8-10 curves with their fits."""
    cfg = ctx.config
    bad = [dh for dh in cfg["dh_list"] if dh > cfg["fig9_d"]]
    if bad:
        raise ParameterError(f"parameter 'dh_list': value {cfg['dh_list']} is not allowed; "
                             f"every d_h must be <= fig9_d = {cfg['fig9_d']} (paper 004, footnote 1)")
    seeds = range(cfg["seeds"])
    fig8 = [{"d": d, "d_h": d, "H": H, "w": 0} for d in cfg["d_list"] for H in cfg["H_list"]]
    fig9 = [{"d": cfg["fig9_d"], "d_h": dh, "H": cfg["fig9_H"], "w": 0} for dh in cfg["dh_list"]]
    fig10 = [{"d": d, "d_h": d, "H": 1, "w": mlp_width(d, H)} for d in cfg["d_list"] for H in cfg["H_list"]]
    unique = list({tuple(sorted(p.items())): p for p in fig8 + fig9 + fig10}.values())  # H = 1 is w = 0
    points = [{**p, "seed": s} for p in unique for s in seeds]
    rows = train_deep_points(ctx, points, "Figs. 8-10 sweep")
    metric = "accuracy" if cfg["batch_size"] == 0 else "tail_batch_accuracy"
    return {"config": cfg, "metric": metric, "points": rows,
            "untrained_accuracy": float(np.mean([r["untrained_accuracy"] for r in rows])),
            "analysis": analyse_depth(rows, cfg, metric)}


def _mean(rows: list[dict], metric: str, **where) -> float:
    vals = [r[metric] for r in rows if all(r[k] == v for k, v in where.items())]
    return float(np.mean(vals))


def _linear(x, y) -> dict:
    """The paper's pre-saturation linear fit (points up to the first above 0.95)."""
    n = presaturation(y)
    f = power_fit(np.asarray(x)[:n], np.asarray(y)[:n], 1.0) if n >= 2 else None
    return {"fit_points": n, "slope": f.a if f else float("nan"), "intercept": f.b if f else float("nan"),
            "r2": f.r2 if f else float("nan")}


def analyse_depth(rows: list[dict], cfg: dict, metric: str) -> dict:
    N, L, H = cfg["N"], cfg["layers"], np.array(cfg["H_list"])
    fig8, fig10 = {}, {}
    for d in cfg["d_list"]:
        acc = np.array([_mean(rows, metric, d=d, d_h=d, H=h, w=0) for h in H])
        fig8[d] = {"accuracy": acc.tolist(), **_linear(H, acc),
                   "bound_1layer": np.asarray(bounds.corollary2_accuracy(N, d, d, H)).tolist(),
                   "previous_1layer": np.asarray(bounds.previous_accuracy_bound(N, d, H)).tolist(),
                   "parameters": [DeepConfig(N, 2, L, d, d, int(h)).n_parameters for h in H]}
        widths = [mlp_width(d, int(h)) for h in H]
        mlp = np.array([_mean(rows, metric, d=d, d_h=d, H=1, w=w) for w in widths])
        gap = mlp - acc
        fig10[d] = {"widths": widths, "mlp_accuracy": mlp.tolist(), "aot_accuracy": acc.tolist(),
                    "mlp_parameters": [DeepConfig(N, 2, L, d, d, 1, w).n_parameters for w in widths],
                    "aot_parameters": fig8[d]["parameters"], "gap": gap.tolist(),
                    "mlp_r2": power_fit(fig8[d]["parameters"], mlp, 1.0).r2 if len(H) >= 3 else float("nan"),
                    "aot_r2": power_fit(fig8[d]["parameters"], acc, 1.0).r2 if len(H) >= 3 else float("nan")}
    dh = np.array(cfg["dh_list"])
    acc9 = np.array([_mean(rows, metric, d=cfg["fig9_d"], d_h=int(k), H=cfg["fig9_H"], w=0) for k in dh])
    fig9 = {"d_h": dh.tolist(), "accuracy": acc9.tolist(),
            "bound_1layer": [float(bounds.corollary2_accuracy(N, cfg["fig9_d"], int(k), cfg["fig9_H"])) for k in dh],
            "previous_1layer": [float(bounds.previous_accuracy_bound(N, int(k), cfg["fig9_H"])) for k in dh]}
    if len(dh) >= 3:
        for name, p in (("linear", 1.0), ("quadratic", 2.0)):
            f = power_fit(dh, acc9, p)
            fig9[name] = {"a": f.a, "b": f.b, "sse": f.sse, "r2": f.r2}
    return {"fig8": fig8, "fig9": fig9, "fig10": fig10}


def _worst_drop(acc) -> float:
    return max(0.0, float(-np.diff(acc).min(initial=0.0)))


def claims_depth(result: dict, full: dict | None = None) -> ClaimsTable:
    """Claims of App. B.2 ('similar results for experiments 1, 2 and 5' with L layers)."""
    cfg, an = result["config"], result["analysis"]
    fig8 = {int(k): v for k, v in an["fig8"].items()}
    fig10 = {int(k): v for k, v in an["fig10"].items()}
    fig9 = an["fig9"]
    t = ClaimsTable(rtol=0.3)  # measured across CPUs (AVX-512 vs AVX2 kernels): gaps move by up to 12 %
    drop = max(_worst_drop(v["accuracy"]) for v in fig8.values())
    t.add("8a", "Fig. 8: accuracy increases with H per layer (every d; noise 0.02 allowed)", paper="increasing",
          ours=f"largest drop {drop:.3f}", holds=drop <= 0.02, tolerance="drop ≤ 0.02", asserted=True, source="text")
    fitted = [v["r2"] for v in fig8.values() if v["fit_points"] >= 3]
    r2 = min(fitted) if fitted else float("nan")
    t.add("8b", "Fig. 8: linear in H before saturation (least R² over d)", paper="linear", ours=r2,
          holds=None if np.isnan(r2) else bool(r2 > 0.95), tolerance="R² > 0.95 (≥ 3 points)",
          asserted=False, source="text")  # at CI scale R² ranges 0.93-0.98 over task seeds: shown, not asserted
    drop9 = _worst_drop(fig9["accuracy"])
    if cfg["seeds"] > 1:
        t.add("9a", "Fig. 9: accuracy increases with d_h", paper="increasing", ours=f"largest drop {drop9:.3f}",
              holds=drop9 <= 0.02, tolerance="drop ≤ 0.02", asserted=False, source="data")
    else:  # one model seed: the seeds' own spread (drops 0.037, 0.031, 0, 0.042 for seeds 0-3) decides the verdict
        t.inconclusive("9a", "Fig. 9: accuracy increases with d_h", paper="increasing", ours=f"largest drop {drop9:.3f}",
                       why="one model seed: seeds 0-3 drop by 0.037, 0.031, 0 and 0.042 against the 0.02 allowed "
                           "(-p seeds 4 separates them)", source="data", atol=0.05)
    if "quadratic" in fig9:
        q, l = fig9["quadratic"]["sse"], fig9["linear"]["sse"]
        t.add("9b", "Fig. 9: quadratic in d_h (a·d_h² + b fits better than a·d_h + b: SSE ratio quad / lin)",
              paper=round(FIG9_SSE["quadratic"] / FIG9_SSE["linear"], 3), ours=q / l if l > 0 else float("nan"),
              holds=bool(q < l), tolerance="< 1", asserted=False, source="data")
    else:
        t.add("9b", "Fig. 9: quadratic in d_h", paper="quadratic", ours=None, holds=None,
              tolerance="≥ 3 values of d_h", source="data")
    early = [v["gap"][1] for v in fig10.values() if len(v["gap"]) >= 2]
    t.add("10a", "Fig. 10: 1 head + MLP beats the AoT at the first matched size (least gap MLP − AoT over d)",
          paper=round(min(FIG10_MLP_ACCURACY[d][1] - FIG8_ACCURACY[d][1] for d in FIG8_ACCURACY), 3),
          ours=min(early) if early else None, holds=(min(early) > 0) if early else None, tolerance="> 0",
          asserted=False, source="data")
    shrink = [max(v["gap"]) - v["gap"][-1] for v in fig10.values() if len(v["gap"]) >= 3]
    paper_shrink = min(max(np.subtract(FIG10_MLP_ACCURACY[d], FIG8_ACCURACY[d])) -
                       (FIG10_MLP_ACCURACY[d][-1] - FIG8_ACCURACY[d][-1]) for d in FIG8_ACCURACY)
    t.add("10b", "Fig. 10: then the MLP plateaus: the gap MLP − AoT shrinks from its peak to the largest size "
          "(least shrink over d)", paper=round(float(paper_shrink), 3), ours=min(shrink) if shrink else None,
          holds=(min(shrink) >= 0.02) if shrink else None, tolerance="≥ 0.02", asserted=False, source="data")
    r2s = [(v["aot_r2"], v["mlp_r2"]) for v in fig10.values() if not np.isnan(v["aot_r2"])]
    t.add("10c", "Fig. 10: the AoT is closer to linear in the parameter count than the MLP (R², every d)",
          paper="AoT ≥ MLP", ours=" / ".join(f"{a:.2f} vs {m:.2f}" for a, m in r2s) or None,
          holds=all(a >= m for a, m in r2s) if r2s else None, tolerance="AoT R² ≥ MLP R²", asserted=False, source="figure")
    u = result["untrained_accuracy"]
    t.add("19", "untrained models: accuracy ≈ 1/N", paper=round(1 / cfg["N"], 3), ours=u,
          holds=abs(u - 1 / cfg["N"]) <= 0.05, tolerance="± 0.05", asserted=True, source="text")
    _paper_scale_claims(t, full)
    return t


def _row(t: ClaimsTable, key: str, text: str, ref: float, ours: float | None) -> None:
    """A paper-scale row (the authors' released data): not run without the stored full run."""
    if ours is None:
        t.not_run(key, text, paper=ref, command=full_command("figs8-10-deeper"), source="data")
    else:
        t.add(key, text, paper=ref, ours=ours, holds=abs(ours - ref) <= 0.05, tolerance="± 0.05", asserted=False,
              source="data")


def _paper_scale_claims(t: ClaimsTable, full: dict | None) -> None:
    """The paper's numbers (the authors' released data), checked against the stored paper-scale run
    (N = 70, 3 layers)."""
    an = full["analysis"] if full else None
    H = full["config"]["H_list"] if full else []
    for h in (5, 21):
        a = {int(k): v for k, v in an["fig8"].items()}.get(10) if an else None
        ours = a["accuracy"][H.index(h)] if a and h in H else None
        ref = FIG8_ACCURACY[10][FIG8_H.index(h)]
        _row(t, f"E8{'a' if h == 5 else 'b'}", f"paper scale, Fig. 8, d = d_h = 10, H = {h}: accuracy", ref, ours)
    dh = full["analysis"]["fig9"]["d_h"] if full else []
    ours = full["analysis"]["fig9"]["accuracy"][dh.index(10)] if full and 10 in dh and \
        full["config"]["fig9_d"] == FIG9_D and full["config"]["fig9_H"] == FIG9_H else None
    _row(t, "E8c", "paper scale, Fig. 9, d = 10, H = 21, d_h = 10: accuracy", FIG9_ACCURACY[-1], ours)
    a = {int(k): v for k, v in an["fig10"].items()}.get(13) if an else None
    ours = a["mlp_accuracy"][H.index(9)] if a and 9 in H else None
    _row(t, "E8d", "paper scale, Fig. 10, d = 13, 1 head + MLP w = 16d: accuracy", FIG10_MLP_ACCURACY[13][2], ours)
    cmd, ds = full_command("figs8-10-deeper"), sorted(FIG8_ACCURACY)
    f8 = {int(k): v for k, v in an["fig8"].items()} if an else {}
    f10 = {int(k): v for k, v in an["fig10"].items()} if an else {}
    got8 = [values_at(H, f8[d]["accuracy"], FIG8_H) if d in f8 else None for d in ds]
    curve_row(t, "P8", f"paper scale, Fig. 8: the AoT curves d = d_h = {', '.join(map(str, ds))}, H = 1 … 21 "
              f"({len(ds) * len(FIG8_H)} accuracies)", [a for d in ds for a in FIG8_ACCURACY[d]],
              None if None in got8 else [a for g in got8 for a in g], cmd)
    ok9 = full is not None and full["config"]["fig9_d"] == FIG9_D and full["config"]["fig9_H"] == FIG9_H
    curve_row(t, "P9", f"paper scale, Fig. 9, d = {FIG9_D}, H = {FIG9_H}: accuracy at d_h = 1 … 10", FIG9_ACCURACY,
              values_at(dh, full["analysis"]["fig9"]["accuracy"], FIG9_DH) if ok9 else None, cmd)
    got10 = [values_at(H, f10[d]["mlp_accuracy"], FIG8_H) if d in f10 else None for d in ds]
    curve_row(t, "P10", f"paper scale, Fig. 10: the 1-head + MLP curves d = {', '.join(map(str, ds))}, w = 0 … 40d "
              f"({len(ds) * len(FIG8_H)} accuracies)", [a for d in ds for a in FIG10_MLP_ACCURACY[d]],
              None if None in got10 else [a for g in got10 for a in g], cmd)


EXPERIMENTS = (
    Experiment(
            id="004-memorization/figs8-10-deeper",
            label="Figs. 8–10 (App. B.2)",
            title="Deeper Transformers: accuracy against H, against d_h, and against 1 head + MLP",
            params=DEPTH,
            presets={
                "ci": dict(**CI_RUN, N=30, layers=3, d_list=[6], H_list=[1, 3, 5, 7], fig9_d=6, fig9_H=7,
                           dh_list=[1, 2, 3, 4, 5, 6], seeds=1, steps=300, batch_size=0, n_batches=1,
                           lr_start=1e-2, lr_end=5e-4, task_seed=0, chunk=64),
                "full": dict(**FULL_RUN, N=70, layers=PAPER_LAYERS_CODE, d_list=[7, 10, 13], H_list=FIG8_H, fig9_d=FIG9_D,
                             fig9_H=FIG9_H, dh_list=FIG9_DH, seeds=5, steps=8192, batch_size=512, n_batches=128,
                             lr_start=2.5e-3, lr_end=2.5e-3, task_seed=0, chunk=64),
            },
            compute=compute_depth,
            summary="With 3 layers, accuracy is still linear in H; 1 head + MLP per layer is better early, then plateaus.",
        ),
)
