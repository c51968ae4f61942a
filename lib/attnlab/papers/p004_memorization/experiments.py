"""One function per result of paper 004 (Dana, Pydi, Chevaleyre: Memorization in Attention-only
Transformers). Each `Experiment` carries its parameters and presets; `compute` reads and
writes the result store, so reruns resume. Analyses and claims tables live here too, so a
chapter notebook is parameters, one call, plots and the claims table.
"""

from __future__ import annotations


import numpy as np
import torch
from attnlab.core.progress import tqdm

from attnlab.core.claims import ClaimsTable
from attnlab.core.experiment import Context, Experiment, MissingResult
from attnlab.core.fits import power_fit, presaturation
from attnlab.core.params import Param
from attnlab.core.train import linear_lr, train_replicas

from . import bounds, paper
from .models import AoTConfig, ReplicaAoT
from .tasks import full_batches, lookup_table_task, paper_batches

# ---------------------------------------------------------------------------------------------
# Fig. 1a and Fig. 2b (Experiments 1 and 4): accuracy against the number of heads, d = d_h.

TRAINING_PARAMS = (
    Param("N", "int", "vocabulary size; the sequences are all N^2 bigrams", min=2, max=2000),
    Param("seeds", "int", "parameter seeds per point (the paper: 5)", min=1, max=100),
    Param("steps", "int", "optimizer steps", min=1, max=1_000_000),
    Param("batch_size", "int", "sequences per batch; 0 = the whole population every step (CI protocol)", min=0),
    Param("n_batches", "int", "paper protocol: batches per epoch of the fixed sample", min=1),
    Param("lr_start", "float", "learning rate at the start (linear decay, stepped per epoch)", min=0.0, max=1.0),
    Param("lr_end", "float", "learning rate at the end", min=0.0, max=1.0),
    Param("task_seed", "int", "seed of the random look-up table (shared by all replicas)", min=0),
    Param("chunk", "int", "replicas per tensor program: one resumable unit of work", min=1, max=4096),
)

FIG1A = (
    Param("d_list", "int_list", "embedding dimensions, d = d_h", min=1, max=1024),
    Param("H_list", "int_list", "numbers of heads", min=1, max=1024),
) + TRAINING_PARAMS


def _train_points(ctx: Context, points: list[dict], desc: str) -> list[dict]:
    """Train every point (one AoT replica each) not yet in the store, `chunk` replicas at a time.

    A point is {d, d_h, H, seed} plus optional keys: param ("paper" | "repo", default "paper"),
    mlp_width (default 0: attention only) and lr_end (default: the config's). Defaults are left
    out of the store key, so plain points keep their keys. Replicas of one program share `param`;
    each replica follows its own learning-rate schedule.
    """
    cfg = ctx.config
    common = {k: cfg[k] for k in ("N", "steps", "batch_size", "n_batches", "lr_start", "lr_end", "task_seed")}
    defaults = {"param": "paper", "mlp_width": 0}
    keys = [{"model": "aot", "S": 2, **common, **{k: v for k, v in p.items() if defaults.get(k, None) != v}}
            for p in points]
    found = {i: ctx.store.get(k) for i, k in enumerate(keys)}  # each point looked up once
    todo = [k for i, k in enumerate(keys) if found[i] is None]
    if todo and ctx.readonly:
        raise MissingResult(f"{len(todo)} of {len(keys)} points are not in {ctx.store.dir}")
    todo.sort(key=lambda k: (k["d"], k["d_h"], k.get("mlp_width", 0), k["H"]))  # similar sizes share a program
    tokens, targets = lookup_table_task(cfg["N"], 2, cfg["task_seed"])
    tokens, targets = tokens.to(ctx.device), targets.to(ctx.device)
    chunks = []  # one program per (param, with or without MLP): attention-only replicas skip the padded MLP
    kind = lambda k: (k.get("param", "paper"), k.get("mlp_width", 0) > 0)  # noqa: E731
    for group_kind in sorted({kind(k) for k in todo}):
        group = [k for k in todo if kind(k) == group_kind]
        chunks += [group[i:i + cfg["chunk"]] for i in range(0, len(group), cfg["chunk"])]
    spe = 1 if cfg["batch_size"] == 0 else cfg["n_batches"]
    for chunk in tqdm(chunks, desc=desc, disable=not ctx.progress or len(chunks) < 2):
        model = ReplicaAoT([AoTConfig(cfg["N"], 2, k["d"], k["d_h"], k["H"], k["seed"], k.get("param", "paper"),
                                      k.get("mlp_width", 0)) for k in chunk], device=ctx.device)
        if cfg["batch_size"] == 0:
            batches = full_batches(tokens, targets)
        else:
            batches = paper_batches(tokens, targets, cfg["batch_size"], cfg["n_batches"], cfg["task_seed"])
        ends = sorted({k["lr_end"] for k in chunk})
        if len(ends) == 1:
            lr = linear_lr(cfg["lr_start"], ends[0], cfg["steps"], spe)
        else:  # a replica's schedule is exactly the one it would follow alone
            schedules = [linear_lr(k["lr_start"], k["lr_end"], cfg["steps"], spe) for k in chunk]
            lr = lambda step: torch.tensor([f(step) for f in schedules], dtype=torch.float64)  # noqa: E731
        log = train_replicas(model, batches, cfg["steps"], lr, progress=ctx.progress, desc=f"{len(chunk)} replicas")
        with torch.no_grad():
            acc = (model(tokens).argmax(-1) == targets).float().mean(1).tolist()
        for r, key in enumerate(chunk):
            found[keys.index(key)] = row = {"accuracy": acc[r], "tail_batch_accuracy": log.tail_batch_accuracy[r],
                                            "final_loss": log.final_loss[r], "steps": log.steps_trained[r]}
            ctx.store.put(key, row, seconds=log.seconds / len(chunk), device=str(ctx.device))
            ctx.store.computed += 1
    return [{**p, **found[i]} for i, p in enumerate(points)]


def untrained_accuracy(N: int, configs: list[AoTConfig], task_seed: int = 0) -> float:
    """Mean all-pairs accuracy of freshly initialised AoTs (the random baseline is 1/N)."""
    tokens, targets = lookup_table_task(N, 2, task_seed)
    with torch.no_grad():
        return float((ReplicaAoT(configs)(tokens).argmax(-1) == targets).float().mean())


def compute_fig1a(ctx: Context) -> dict:
    cfg = ctx.config
    points = [{"d": d, "d_h": d, "H": H, "seed": s} for d in cfg["d_list"] for H in cfg["H_list"]
              for s in range(cfg["seeds"])]
    rows = _train_points(ctx, points, "Fig. 1a sweep")
    metric = "accuracy" if cfg["batch_size"] == 0 else "tail_batch_accuracy"
    baseline = untrained_accuracy(cfg["N"], [AoTConfig(cfg["N"], 2, p["d"], p["d_h"], p["H"], p["seed"])
                                             for p in points], cfg["task_seed"])
    return {"config": cfg, "metric": metric, "points": rows, "untrained_accuracy": baseline,
            "analysis": analyse_fig1a(rows, cfg, metric)}


def analyse_fig1a(rows: list[dict], cfg: dict, metric: str) -> dict:
    """Per d: mean accuracy over seeds against H, the paper's pre-saturation linear fit, and the
    Corollary 2 bound; across d (Exp. 4): the slope's quadratic and cubic fits."""
    N, H = cfg["N"], np.array(cfg["H_list"])
    per_d = {}
    for d in cfg["d_list"]:
        acc = np.array([np.mean([r[metric] for r in rows if r["d"] == d and r["H"] == h]) for h in H])
        n = presaturation(acc)
        fit = power_fit(H[:n], acc[:n], 1.0) if n >= 2 else None
        bound = bounds.corollary2_accuracy(N, d, d, H)
        bound_slope = (1 - 1 / N) * d / N ** 2
        per_d[d] = {"accuracy": acc.tolist(), "fit_points": n,
                    "slope": fit.a if fit else float("nan"), "intercept": fit.b if fit else float("nan"),
                    "r2": fit.r2 if fit else float("nan"), "bound": np.asarray(bound).tolist(),
                    "previous": np.asarray(bounds.previous_accuracy_bound(N, d, H)).tolist(),
                    "bound_slope": bound_slope,
                    "slope_over_bound": (fit.a / bound_slope) if fit else float("nan")}
    ds = np.array(cfg["d_list"], dtype=float)
    slopes = np.array([per_d[d]["slope"] for d in cfg["d_list"]])
    exp4 = {}
    if len(ds) >= 2 and np.all(np.isfinite(slopes)):
        for name, p in (("linear", 1.0), ("quadratic", 2.0), ("cubic", 3.0)):
            f = power_fit(ds, slopes, p)
            exp4[name] = {"a": f.a, "b": f.b, "sse": f.sse}
        ok = slopes > 0
        exp4["loglog_slope"] = float(np.polyfit(np.log(ds[ok]), np.log(slopes[ok]), 1)[0]) if ok.sum() >= 2 else float("nan")
    return {"per_d": per_d, "exp4": exp4}


def claims_fig1a(result: dict, full: dict | None = None) -> ClaimsTable:
    """Digest claims 13, 14, 19 (asserted at every scale) and 20 (paper numbers, at paper scale)."""
    cfg, an = result["config"], result["analysis"]
    per_d = {int(k): v for k, v in an["per_d"].items()}
    t = ClaimsTable()
    worst_drop = max(max(0.0, float(-np.diff(v["accuracy"]).min(initial=0.0))) for v in per_d.values())
    t.add("13a", "accuracy increases with H (every d; noise 0.02 allowed)", paper="increasing",
          ours=f"largest drop {worst_drop:.3f}", holds=worst_drop <= 0.02, tolerance="drop ≤ 0.02", asserted=True)
    min_r2 = min(v["r2"] for v in per_d.values() if v["fit_points"] >= 3) if any(
        v["fit_points"] >= 3 for v in per_d.values()) else float("nan")
    t.add("13b", "linear in H before saturation (least R² over d)", paper="linear", ours=min_r2,
          holds=None if np.isnan(min_r2) else bool(min_r2 > 0.95), tolerance="R² > 0.95 (≥ 3 points)",
          asserted=True)
    margin = min(min(np.subtract(v["accuracy"], v["bound"])) for v in per_d.values())
    t.add("13c", "trained accuracy above the Corollary 2 bound at every H", paper="above",
          ours=f"least margin {margin:.3f}", holds=margin > 0, tolerance="> 0", asserted=True)
    big = [d for d in per_d if d >= 6]
    if big:
        ratio = min(per_d[d]["slope_over_bound"] for d in big)
        t.add("13d", f"slope / bound slope for d = d_h ≥ 6 (least; d = {min(big)})",
              paper=paper.EXP4_SLOPE_OVER_BOUND.get(min(big)), ours=ratio, holds=ratio > 3,
              tolerance="> 3", asserted=True)
    if 4 in per_d and 8 in per_d:
        r = per_d[8]["slope"] / per_d[4]["slope"]
        t.add("14", "Exp. 4: slope(d=8) / slope(d=4), super-linear in d",
              paper=round(paper.EXP4_SLOPE[8] / paper.EXP4_SLOPE[4], 2), ours=r, holds=r > 2,
              tolerance="> 2", asserted=True)
    if an["exp4"]:
        e = an["exp4"]
        t.add("4", "Exp. 4: log-log growth of the slope with d ('between quadratic and cubic')",
              paper="2 to 3 (2.45)", ours=e["loglog_slope"], holds=bool(1.5 <= e["loglog_slope"] <= 3.5),
              tolerance="1.5 – 3.5", asserted=False)
    t.add("19", "untrained model: accuracy ≈ 1/N", paper=round(1 / cfg["N"], 3), ours=result["untrained_accuracy"],
          holds=abs(result["untrained_accuracy"] - 1 / cfg["N"]) <= 0.05, tolerance="± 0.05", asserted=True)
    _paper_scale_claims(t, full)
    return t


def _paper_scale_claims(t: ClaimsTable, full: dict | None) -> None:
    """Claim 20: the paper's d = 10 curve at N = 50 (needs the stored paper-scale run)."""
    per_d = {int(k): v for k, v in full["analysis"]["per_d"].items()} if full else {}
    H = full["config"]["H_list"] if full else []
    for h in (11, 21):
        ours = per_d[10]["accuracy"][H.index(h)] if 10 in per_d and h in H else None
        ref = paper.EXP1_ACCURACY[10][paper.EXP1_H.index(h)]
        t.add("20", f"paper scale, N = 50, d = d_h = 10, H = {h}: accuracy", paper=ref, ours=ours,
              holds=None if ours is None else abs(ours - ref) <= 0.05, tolerance="± 0.05", asserted=False)


EXPERIMENTS = [
    Experiment(
        id="004-memorization/fig1a-accuracy-vs-heads",
        label="Fig. 1a, Fig. 2b (Exps. 1 and 4)",
        title="Accuracy against the number of heads, and the slope against d",
        params=FIG1A,
        presets={
            "ci": dict(N=30, d_list=[4, 6, 8], H_list=[1, 3, 5, 7, 9, 11], seeds=1, steps=400, batch_size=0,
                       n_batches=1, lr_start=1e-2, lr_end=5e-4, task_seed=0, chunk=64),
            "full": dict(N=50, d_list=list(range(3, 14)), H_list=[1, 6, 11, 16, 21, 26, 31], seeds=5, steps=4096,
                         batch_size=256, n_batches=64, lr_start=1e-2, lr_end=5e-4, task_seed=0, chunk=77),
        },
        compute=compute_fig1a,
        summary="Accuracy grows linearly in H, far above the Corollary 2 bound; the slope grows like d^2 to d^3.",
    ),
]


# ---------------------------------------------------------------------------------------------
# Theorem 1 (eps = 0) and Corollary 1: the explicit AoT that memorizes H d_h + d associations.

THM1 = (
    Param("configs", "int_rows", "model configs [N, S, d, d_h, H] (S may exceed d)", min=1, width=5),
    Param("offsets", "int_list", "T_0 - capacity values to build at (capacity = H d_h + d)", min=-10_000),
    Param("rank_sweep", "int_rows", "configs [N, S, d, d_h, H] whose rank of F is traced for T_0 = d + 1 ... cap + 10",
          min=1, width=5),
    Param("qk", "str", "W_QK of each head: rank1 (Remark 2) or full (d_h x d factors)", choices=("rank1", "full")),
    Param("seed", "int", "seed of the generic draws and of the look-up table", min=0),
)


def _build(ctx: Context, N: int, S: int, d: int, d_h: int, H: int, T_0: int, qk: str, skip: bool = True,
           allow_dh_gt_d: bool = False) -> dict:
    """One construction, stored by its config: the report's scalar diagnostics."""
    from .construction import build_memorizing_aot, random_association_task

    key = {"N": N, "S": S, "d": d, "d_h": d_h, "H": H, "T_0": T_0, "qk": qk, "skip": skip,
           "seed": ctx.config["seed"], "allow_dh_gt_d": allow_dh_gt_d}

    def compute():
        tokens, targets = random_association_task(N, S, T_0, seed=ctx.config["seed"])
        _, rep = build_memorizing_aot(tokens, targets, N, d, d_h, H, seed=ctx.config["seed"], qk=qk,
                                      skip_trick=skip, allow_dh_gt_d=allow_dh_gt_d)
        return {"capacity": rep.capacity, "rank_F": rep.rank_F, "sigma_min_F": rep.sigma_min_F,
                "lstsq_residual": rep.lstsq_residual, "cond_W_OV": rep.cond_W_OV, "accuracy": rep.accuracy,
                "max_residual_error": rep.max_residual_error, "n_params": rep.n_params}

    return {**key, **ctx.unit(key, compute)}


def compute_thm1(ctx: Context) -> dict:
    from .construction import paper_parameter_count

    cfg = ctx.config
    builds = []
    for N, S, d, d_h, H in tqdm(cfg["configs"], desc="constructions", disable=not ctx.progress):
        cap = H * min(d, d_h) + d
        for off in cfg["offsets"]:
            if 1 <= cap + off <= N ** S:
                builds.append(_build(ctx, N, S, d, d_h, H, cap + off, cfg["qk"]))
        if cap <= N ** S and d_h <= d:
            builds.append(_build(ctx, N, S, d, d_h, H, H * d_h + d, cfg["qk"], skip=False))
        builds[-1]["formula_params"] = paper_parameter_count(N, S, d, d_h, H, qk=cfg["qk"])
    sweep = [_build(ctx, N, S, d, d_h, H, T_0, cfg["qk"])
             for N, S, d, d_h, H in cfg["rank_sweep"]
             for T_0 in range(d + 1, min(H * d_h + d + 10, N ** S) + 1)]  # T_0 <= d: W_OV singular
    dh_gt_d = _build(ctx, 10, 2, 2, 5, 20, 100, cfg["qk"], allow_dh_gt_d=True)
    return {"config": cfg, "builds": builds, "rank_sweep": sweep, "dh_gt_d": dh_gt_d}


def claims_thm1(result: dict) -> ClaimsTable:
    """Digest claims 1-4, 6, 7 (all deterministic, float64, asserted at every scale)."""
    from .construction import corollary1_parameters, paper_parameter_count

    b = result["builds"]
    within = [r for r in b if r["skip"] and r["T_0"] <= r["capacity"]]
    over1 = [r for r in b if r["skip"] and r["T_0"] == r["capacity"] + 1]
    noskip = [r for r in b if not r["skip"]]
    long_ctx = [r for r in within if r["S"] > r["d"]]
    t = ClaimsTable()
    t.add("1", f"T_0 ≤ H d_h + d: accuracy 1 on all sequences ({len(within)} builds)", paper=1.0,
          ours=min(r["accuracy"] for r in within), holds=all(r["accuracy"] == 1.0 for r in within),
          tolerance="exact", asserted=True)
    worst = max(r["max_residual_error"] for r in within)
    t.add("1b", "… and the residual stream equals its target E (largest error)", paper=0.0,
          ours="< 1e-8" if worst < 1e-8 else worst,
          holds=worst < 1e-6, tolerance="< 1e-6", asserted=True)
    t.add("1c", f"… for any context length: builds with S > d ({len(long_ctx)}; largest S = "
          f"{max(r['S'] for r in long_ctx)})", paper="any S", ours=min(r["accuracy"] for r in long_ctx),
          holds=bool(long_ctx) and all(r["accuracy"] == 1.0 for r in long_ctx), tolerance="accuracy 1",
          asserted=True)
    rank_ok = all(r["rank_F"] == min(r["T_0"], r["capacity"]) for r in b + result["rank_sweep"] if r["skip"])
    t.add("2", "rank F = min(T_0, H d_h + d) (every build and the rank sweep)", paper="min(T_0, H d_h + d)",
          ours="all equal" if rank_ok else "mismatch", holds=rank_ok, tolerance="exact", asserted=True)
    least = min(r["lstsq_residual"] for r in over1)
    t.add("2b", "one association more (T_0 = H d_h + d + 1): the linear system has no exact solution",
          paper="fails", ours=f"least residual {least:.3g}", holds=least > 1e-3, tolerance="> 1e-3", asserted=True)
    least_ns = min(r["lstsq_residual"] for r in noskip)
    t.add("3", "without the skip connection the capacity is H d_h: fails at T_0 = H d_h + d", paper="fails",
          ours=f"least residual {least_ns:.3g}", holds=least_ns > 1e-3, tolerance="> 1e-3", asserted=True)
    g = result["dh_gt_d"]
    t.add("4", "d_h > d adds nothing: d = 2, d_h = 5, H = 20 gives rank H·d + d", paper=42, ours=g["rank_F"],
          holds=g["rank_F"] == 42, tolerance="exact", asserted=True)
    cond = max(r["cond_W_OV"] for r in within)
    t.add("6", "the solved skip block W_OV is invertible (largest condition number)", paper="invertible",
          ours=float(f"{cond:.2g}"), holds=cond < 1e6, tolerance="< 1e6", asserted=True)
    counts_ok = all(r["n_params"] == paper_parameter_count(r["N"], r["S"], r["d"], r["d_h"], r["H"],
                                                           qk=result["config"]["qk"]) for r in within)
    formula = "d(S + 2N + 2(d_h + 1)H)" if result["config"]["qk"] == "rank1" else "d(S + 2N + 4 d_h H)"
    t.add("7", f"parameter count of the built tensors = {formula}", paper=formula,
          ours="all equal" if counts_ok else "mismatch", holds=counts_ok, tolerance="exact", asserted=True)
    S, N, T0 = 16, 50, 34
    t.add("7b", "Corollary 1 (d = 2): 2(S + 2N + 4(T_0 − 2)) = 2S + 4N + 8T_0 − 16 (S=16, N=50, T_0=34)",
          paper=2 * S + 4 * N + 8 * T0 - 16, ours=corollary1_parameters(S, N, T0),
          holds=corollary1_parameters(S, N, T0) == 2 * S + 4 * N + 8 * T0 - 16, tolerance="exact", asserted=True)
    return t


# ---------------------------------------------------------------------------------------------
# Table 1 and section 7: memorization capacity against prior bounds.

TABLE1 = (
    Param("S", "int", "context length", min=1),
    Param("N", "int", "vocabulary size", min=2),
    Param("d", "int", "embedding dimension", min=2),
    Param("d_h", "int", "head dimension (≤ d)", min=1),
    Param("H_max", "int", "largest number of heads", min=1),
    Param("eps", "float", "approximation level for the ε-rows", min=1e-12, max=0.999),
)


def compute_table1(ctx: Context) -> dict:
    c = ctx.config
    if c["d_h"] > c["d"]:
        from attnlab.core.params import ParameterError
        raise ParameterError(f"parameter 'd_h': value {c['d_h']} is not allowed; must be <= d = {c['d']}")
    H = np.arange(1, c["H_max"] + 1)
    ours, prev = bounds.capacity_ours(H, c["d_h"], c["d"]), bounds.capacity_mahdavi(H, c["d_h"])
    T0 = np.unique(np.geomspace(max(c["d"] + 1, 3), 10 * int(ours[-1]), 60).astype(int))
    curves = {}
    for row in bounds.table1_rows():
        try:
            curves[row.key] = np.asarray(bounds.parameters_for_capacity(row, T0, c["S"], c["N"], c["d"],
                                                                        c["eps"]), float).tolist()
        except ValueError as err:
            curves[row.key] = str(err)
    return {"config": c, "H": H.tolist(), "ours": np.asarray(ours).tolist(), "previous": np.asarray(prev).tolist(),
            "T0": T0.tolist(), "parameters": curves,
            "footnote5": {m: bounds.mahdavi_applicable(S, d) for m, (S, d) in bounds.FOOTNOTE5_MODELS.items()}}


def claims_table1(result: dict) -> ClaimsTable:
    from .construction import corollary1_parameters

    c = result["config"]
    gap = np.subtract(result["ours"], result["previous"])
    expected = np.array(result["H"]) + c["d"] - 1
    t = ClaimsTable()
    t.add("8c", f"ours − previous capacity = H + d − 1 for H = 1 … {c['H_max']}", paper="H + d − 1",
          ours="all equal" if np.array_equal(gap, expected) else "mismatch", holds=bool(np.array_equal(gap, expected)),
          tolerance="exact", asserted=True)
    v = bounds.corollary2_accuracy(50, 10, 10, 31)
    t.add("8a", "Corollary 2 at N = 50, d = d_h = 10, H = 31", paper="0.14544", ours=f"{v:.5f}",
          holds=abs(v - 0.14544) < 5e-6, tolerance="± 5e-6", asserted=True)
    v = bounds.previous_accuracy_bound(50, 10, 31)
    t.add("8b", "previous bound (Mahdavi et al.) at the same point", paper="0.12976", ours=f"{v:.5f}",
          holds=abs(v - 0.12976) < 5e-6, tolerance="± 5e-6", asserted=True)
    v = bounds.corollary2_accuracy(10, 2, 2, 21)
    t.add("8d", "Corollary 2 at N = 10, d = d_h = 2, H = 21", paper=0.496, ours=float(v),
          holds=abs(v - 0.496) < 5e-4, tolerance="± 5e-4", asserted=True)
    f5 = result["footnote5"]
    t.add("fn5", "Mahdavi et al. need S ≤ d: not applicable to GPT-2 (S 1024 > d 768), applicable to GPT-3",
          paper="no / yes", ours=f"{'yes' if f5['GPT-2'] else 'no'} / {'yes' if f5['GPT-3'] else 'no'}",
          holds=(not f5["GPT-2"]) and f5["GPT-3"], tolerance="exact", asserted=True)
    n = corollary1_parameters(c["S"], c["N"], 100)
    t.add("§7", f"Corollary 1 uses 2S + 4N + 8T_0 parameters (−16; S = {c['S']}, N = {c['N']}, T_0 = 100)",
          paper=2 * c["S"] + 4 * c["N"] + 800 - 16, ours=n, holds=n == 2 * c["S"] + 4 * c["N"] + 800 - 16,
          tolerance="exact", asserted=True)
    return t


EXPERIMENTS.insert(0, Experiment(
    id="004-memorization/thm1-exact-construction",
    label="Theorem 1 (ε = 0), Corollary 1",
    title="An explicit AoT memorizes exactly H·d_h + d associations, for any context length",
    params=THM1,
    presets={
        "ci": dict(configs=[[20, 8, 4, 2, 6], [50, 16, 4, 3, 10], [10, 32, 2, 2, 20], [100, 64, 8, 4, 25],
                            [50, 2, 10, 10, 31]], offsets=[-1, 0, 1, 10], rank_sweep=[[10, 32, 2, 2, 20]],
                   qk="rank1", seed=0),
        "full": dict(configs=[[20, 8, 4, 2, 6], [50, 16, 4, 3, 10], [10, 32, 2, 2, 20], [100, 64, 8, 4, 25],
                              [50, 2, 10, 10, 31], [50, 2, 10, 10, 249], [200, 128, 8, 4, 100]],
                     offsets=[-1, 0, 1, 10], rank_sweep=[[10, 32, 2, 2, 20], [50, 16, 4, 3, 10]],
                     qk="rank1", seed=0),
    },
    compute=compute_thm1,
    summary="Exact memorization of H d_h + d associations for any S; one more breaks the linear system.",
))
EXPERIMENTS.append(Experiment(
    id="004-memorization/table1-capacity-bounds",
    label="Table 1, §7",
    title="Memorization capacity against prior bounds",
    params=TABLE1,
    presets={"ci": dict(S=16, N=50, d=8, d_h=8, H_max=32, eps=0.01),
             "full": dict(S=16, N=50, d=8, d_h=8, H_max=32, eps=0.01)},
    compute=compute_table1,
    summary="H d_h + d beats Mahdavi et al.'s H(d_h - 1) + 1 by H + d - 1, without needing S <= d.",
))
