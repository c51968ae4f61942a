"""Table 2 (App. D.1.9): GCN and GAT on complete and star graphs fail even in distribution; the
analytic position-agnostic baseline explains the whole in-distribution column, and small GNNs
trained here plateau at it; their OOD error grows ∝ c²."""

from __future__ import annotations

import math

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable, seed_summary
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import BATCH, LR, Param, ParameterError, SEEDS, STEPS

from .. import gnn as G
from .. import paper
from .. import sweeps as S
from ..tasks import targets

PARAMS = (
    Param("n", "int", "input length (the paper: 8)", min=2, max=32),
    Param("embed", "int", "GNN width E (every layer; GAT: 2 heads of E/2)", min=2, max=256),
    Param("samples", "int", "training lists", min=64, max=100_000),
    BATCH.described("mini-batch size"),
    LR.described("Adam learning rate (peak for onecycle, initial for plateau)"),
    STEPS.described("Adam steps (give steps or epochs)", nullable=True),
    Param("epochs", "int", "epochs (give steps or epochs)", min=1, max=5000, nullable=True),
    Param("scheduler", "str", "learning-rate schedule", choices=S.SCHEDULERS),
    SEEDS.described("seeds per (architecture, graph, task)"),
    Param("c_list", "float_list", "OOD scale factors of the test (Table 2: 1, 2, 3, 4, 5, 10)", min=1.0, max=100.0),
    Param("test_samples", "int", "test lists per scale (the paper: 1,000)", min=100, max=100_000),
    Param("mc_samples", "int", "lists of the least-squares check of the exact baseline", min=1000, max=2_000_000),
    S.SEED_PARAM,
)
PRESETS = {
    # three seeds as replicas of one program per architecture (each seed its own data). The former
    # preset (one seed, 150 steps, 1,000 test lists) cost 15 s; three seeds at 150 steps 20 s of compute. At
    # 110 steps (13.5 s) the models were not yet on the plateau (row 6: 1.06, row 6b failed), and with 500 test
    # lists one seed's slope (row 7) came within the row's precision of the band; so 150 steps, 1,000 test lists
    # at c = 1, 2, 5, 10 (not 3 and 4) and 20,000 lists for the least-squares check (100,000)
    "ci": {"n": 8, "embed": 16, "samples": 4096, "batch": 128, "lr": 5e-3, "steps": 150, "epochs": None,
           "scheduler": "onecycle", "seeds": 3, "c_list": [1.0, 2.0, 5.0, 10.0], "test_samples": 1000,
           "mc_samples": 20_000, "seed": 0},
    # the paper's protocol for the Transformers of §7 (App. D.1.1; the paper gives none for the GNNs)
    "full": {"n": 8, "embed": 64, "samples": 30_000, "batch": 1000, "lr": 5e-4, "steps": None, "epochs": 2000,
             "scheduler": "plateau", "seeds": 10, "c_list": [1.0, 2.0, 3.0, 4.0, 5.0, 10.0], "test_samples": 1000,
             "mc_samples": 1_000_000, "seed": 0},
}
TASKS = G.BASELINE_TASKS  # Table 2: cumulative sum and sorting
KINDS, GRAPHS = G.KINDS, G.GRAPHS
SLOPE_BAND = (1.6, 2.6)  # "∝ c²": log-log slope from c = 2 to the largest c


def protocol(cfg: dict) -> S.Protocol:
    if (cfg["steps"] is None) == (cfg["epochs"] is None):
        raise ParameterError(f"parameters 'steps' = {cfg['steps']} and 'epochs' = {cfg['epochs']}: give exactly one")
    if cfg["batch"] > cfg["samples"]:
        raise ParameterError(f"parameter 'batch' = {cfg['batch']} is larger than 'samples' = {cfg['samples']}")
    return S.Protocol(samples=cfg["samples"], batch=cfg["batch"], lr=cfg["lr"], epochs=cfg["epochs"],
                      steps=cfg["steps"], scheduler=cfg["scheduler"], c_list=tuple(cfg["c_list"]),
                      test_samples=cfg["test_samples"], mix_seeds=cfg["scale"] == "ci")


def _bayes_on_test_lists(cfg: dict, task: str, seed: int, features: str = "xs") -> list[float]:
    """The position-agnostic optimum's MSE (features 'xs'; 's': the optimum from S alone) on the very
    test lists a model of `seed` is tested on."""
    bx, bs = (float(v) for v in G.baseline(task, cfg["n"], features)["coef"])
    out = []
    for c in cfg["c_list"]:
        x = S.test_lists(cfg["n"], c, cfg["test_samples"], seed)
        pred = bx * x + bs * x.sum(1, keepdims=True)
        out.append(float(((pred - targets(task, x)) ** 2).mean()))
    return out


def compute(ctx: Context) -> dict:
    """Computes the exact position-agnostic baseline of both tasks (ID, and at every c) and checks it
    by least squares on `mc_samples` lists; trains GCN and GAT on the complete and the star graph
    for both tasks (one program per architecture: at CI its seeds too, each on its own data; at
    paper scale one per architecture and seed, `sweeps.sweep`) and tests them at every
    c. The result holds `baseline` (per task: exact ID MSE, the S-only variant, coefficients, curve
    over c, least-squares check) and `runs` (one row per model: kind, graph, task, seed, test MSE
    per c, and the optimum's MSE on the same test lists)."""
    cfg = ctx.config
    prot = protocol(cfg)
    base = {}
    for task in TASKS:
        exact = G.baseline(task, cfg["n"])
        ls = ctx.unit({"what": "least-squares", "task": task, "n": cfg["n"], "samples": cfg["mc_samples"]},
                      lambda task=task: G.baseline_least_squares(task, cfg["n"], cfg["mc_samples"], seed=0))
        base[task] = {"mse": float(exact["mse"]), "mse_fraction": str(exact["mse"]),
                      "coef": [float(v) for v in exact["coef"]],
                      "mse_s_only": float(G.baseline(task, cfg["n"], "s")["mse"]),
                      "curve": G.baseline_curve(task, cfg["n"], cfg["c_list"]),
                      "curve_table2": G.baseline_curve(task, 8, paper.TABLE2_SCALES),
                      "least_squares": ls}
    units = [(G.GNNConfig(n=cfg["n"], kind=k, graph=g, embed=cfg["embed"]), s, t)
             for k in KINDS for s in S.seed_list(cfg) for g in GRAPHS for t in TASKS]
    rows = S.sweep(ctx, units, prot, build=lambda cs, ss, dev: G.GNN(cs, ss, device=dev), program=G.program_of,
                   desc="GNN programs")
    runs = []
    bayes = {}
    for (c, s, t), row in zip(units, rows):
        if (t, s) not in bayes:
            bayes[(t, s)] = [_bayes_on_test_lists(cfg, t, S.data_seed(prot, s), f) for f in ("xs", "s")]
        runs.append({"kind": c.kind, "graph": c.graph, "task": t, "seed": s, "test_mse": row["test_mse"],
                     "train_mse": row["train_mse"], "optimum_same_lists": bayes[(t, s)][0],
                     "optimum_s_same_lists": bayes[(t, s)][1]})
    return {"config": cfg, "baseline": base, "runs": runs}


def median_curve(result: dict, kind: str, graph: str, task: str, key: str = "test_mse") -> np.ndarray:
    """Median over seeds of a model's curve over c."""
    rs = [r[key] for r in result["runs"] if (r["kind"], r["graph"], r["task"]) == (kind, graph, task)]
    return np.median(np.array(rs), axis=0)


def _slope(c: list[float], y) -> float:
    """Least-squares slope of log MSE against log c over the scales c ≥ 2."""
    c, y = np.asarray(c), np.asarray(y)
    keep = c >= 2
    return float(np.polyfit(np.log(c[keep]), np.log(y[keep]), 1)[0]) if keep.sum() >= 2 else float("nan")


def analysis(result: dict) -> dict:
    cfg = result["config"]
    ratios, slopes = {}, {}
    for k in KINDS:
        for g in GRAPHS:
            for t in TASKS:
                rs = [r for r in result["runs"] if (r["kind"], r["graph"], r["task"]) == (k, g, t)]
                ratios[(k, g, t)] = float(np.median([r["test_mse"][0] / r["optimum_same_lists"][0] for r in rs]))
                slopes[(k, g, t)] = _slope(cfg["c_list"], median_curve(result, k, g, t))
    paper_slopes = [_slope(list(paper.TABLE2_SCALES), paper.TABLE2[t][g][k]) for t in TASKS for g in GRAPHS
                    for k in KINDS]
    return {"ratios": ratios, "slopes": slopes, "paper_slopes": paper_slopes}


def claims(result: dict) -> ClaimsTable:
    cfg, base = result["config"], result["baseline"]
    a = analysis(result)
    t = ClaimsTable(rtol=TRAINED_RTOL)
    for key, task in (("1", "cumsum"), ("2", "sort")):
        b, ls = base[task], base[task]["least_squares"]
        ok = abs(ls["mse"] - b["mse"]) <= 4 * ls["stderr"]
        t.consistency(key, f"{task}: the best position-agnostic predictor of y_i from (x_i, Σx), exact "
                      f"({b['mse_fraction']}, coefficients {b['coef'][0]:g}, {b['coef'][1]:g}), against least squares "
                      f"on {cfg['mc_samples']:,} lists (± 4 s.e.)", expected=b["mse"], ours=ls["mse"], holds=ok,
                      tolerance=f"± {4 * ls['stderr']:.2g}", asserted=True)
    if cfg["n"] == 8:
        for key, task in (("3", "cumsum"), ("4", "sort")):
            b = base[task]
            col = [paper.TABLE2[task][g][k][0] for g in GRAPHS for k in KINDS]
            rel = 2 * b["least_squares"]["stderr"] * math.sqrt(cfg["mc_samples"] / 1000) / b["mse"]  # 2 s.e. at 1,000
            ok = all(abs(v - b["mse"]) <= rel * b["mse"] for v in col)
            t.consistency(key, f"Table 2, c = 1, {task}: all four of the paper's GNN entries (GCN, GAT × complete, "
                          f"star) sit at our closed-form position-agnostic optimum (derived above: "
                          f"{paper.TABLE2_BASELINE_DERIVED[task]:.3g}); the paper's numbers against our formula, "
                          "nothing trained", expected=f"{min(col):g}–{max(col):g}" if min(col) < max(col)
                          else f"{col[0]:g} (all four)", ours=b["mse"], holds=ok,
                          tolerance=f"each within ± {100 * rel:.0f} % (2 s.e. of a 1,000-list test)", asserted=True,
                          source="text")
        worst = min(paper.TABLE2[tk][g][k][j] / base[tk]["curve_table2"][j] for tk in TASKS for g in GRAPHS
                    for k in KINDS for j in range(1, len(paper.TABLE2_SCALES)))
        t.consistency("5", "every OOD entry of Table 2 (c = 2…10) is at least the bound (c² + 1) × optimum that no "
                      "position-agnostic model can beat (smallest ratio; App. E's rejection makes the data moments "
                      "(c² + 1)×)", expected="≥ 0.92", ours=worst, holds=worst >= 0.92,
                      tolerance="≥ 0.92 (test noise)", asserted=True, source="text")
    seeds = S.seed_list(cfg)
    per = {s: [r for r in result["runs"] if r["seed"] == s] for s in seeds}
    ratio = {s: [r["test_mse"][0] / r["optimum_same_lists"][0] for r in rs] for s, rs in per.items()}
    hi = [max(v) for v in ratio.values()]
    lo = min(min(v) for v in ratio.values())
    models = len(next(iter(ratio.values())))
    # a model on the optimum's plateau: its ratio is pinned near 1 (seen: 1.001–1.023 over models), so its
    # precision is the test's, not a trained curve's (TRAINED_RTOL)
    t.add_seeds("6", "GNNs trained here plateau at the optimum in distribution: per seed, the largest test MSE / the "
                f"optimum's MSE on the same lists over all {models} (architecture, graph, task)",
                paper="≈ 1 (Table 2 vs 3.89, 0.194)", values=hi, threshold=1.10, above=False, tolerance="≤ 1.10",
                asserted=True, source="text", rtol=0.05)
    t.consistency("6a", "… and none beats it (it is the optimum of every position-agnostic model): least ratio over "
                  "every model and seed", expected="≥ 0.99 (test noise)", ours=lo, holds=lo >= 0.99,
                  tolerance="≥ 0.99", asserted=True)
    gc = [r["test_mse"][0] / r["optimum_s_same_lists"][0] for r in result["runs"]
          if (r["kind"], r["graph"], r["task"]) == ("gcn", "complete", "cumsum")]
    t.consistency("6b", "GCN on the complete graph (Â = 11ᵀ/(n+1): every node the same features) can use S only; on "
                  f"cumsum its optimum is then {base['cumsum']['mse_s_only']:.4g} (63/16, 1.25 % above 35/9): its ID MSE over "
                  "that optimum on the same lists, per seed", expected=1.0, ours=seed_summary(gc),
                  holds=all(0.99 <= v <= 1.02 for v in gc), tolerance="within [0.99, 1.02] in every seed", asserted=True)
    c = np.asarray(cfg["c_list"])
    dev = [max(abs(_slope(c, r["test_mse"]) - 2.1) for r in rs) for rs in per.values()]
    ps = a["paper_slopes"]
    sl = [_slope(c, r["test_mse"]) for r in result["runs"]]
    t.add_seeds("7", f"OOD error grows ∝ c²: log-log slope of the MSE from c = 2 to c = {max(cfg['c_list']):g}, every "
                f"trained GNN (slopes {min(sl):.2f}–{max(sl):.2f}); per seed, the largest distance of a slope from 2.1",
                paper=f"slopes {min(ps):.2f}–{max(ps):.2f}", values=dev, threshold=0.5, above=False,
                tolerance=f"≤ 0.5 (every slope in [{SLOPE_BAND[0]}, {SLOPE_BAND[1]}])", asserted=True, source="text")
    t.not_run("8", "Table 2 at the Transformers' protocol (E = 64, 30,000 lists, 2000 epochs, 10 seeds)",
              paper="Table 2", source="text",
              command="attnlab run 001-positional/gnn-baselines --scale full --headless")
    return t


EXPERIMENTS = (Experiment(id="001-positional/gnn-baselines", label="Table 2 (App. D.1.9)",
                          title="GNN baselines: GCN and GAT on complete and star graphs",
                          params=PARAMS, presets=PRESETS, compute=compute),)
