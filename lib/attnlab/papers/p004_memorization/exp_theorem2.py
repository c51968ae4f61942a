"""Paper 004: Theorem 2 (the KL upper bound for noisy look-up tables) and Fig. 4 (Experiment 6).

Theorem 2 is deterministic (numpy float64, `theorem2.py`); Fig. 4 trains AoTs with N = 10 and
d = 2 through the shared replica-batched training path of `experiments._train_points`.
"""

from __future__ import annotations

import math

import numpy as np

from attnlab.core.claims import ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.fits import power_fit, presaturation
from attnlab.core.params import Param, ParameterError
from attnlab.core.progress import tqdm

from . import bounds, theorem2 as t2
from .experiments import TRAINING_PARAMS, _train_points

# ---------------------------------------------------------------------------------------------
# Theorem 2: KL of the explicit encoder against the (sign-corrected) bound.

THM2 = (
    Param("configs", "int_rows", "[N, d] pairs: vocabulary size and embedding dimension", min=2, width=2),
    Param("eta_max", "float_list", "noise levels: eta ~ U(0, eta_max) per sequence", min=1e-12, max=1.0),
    Param("eta_grid", "float_list", "fixed noise levels of the curve against eta", min=1e-12, max=1.0),
    Param("n_seq", "int", "sequences per (config, noise level)", min=2, max=100_000),
    Param("alpha", "float", "Dirichlet concentration of the noise q on the N - 1 other tokens", min=1e-6),
    Param("seed", "int", "seed of W, g and the noise", min=0),
)

# Digest section 3.8 (measured with C_emp; 100 sequences, eta ~ U(0, eta_max)): mean bounds.
DIGEST_MEAN_BOUND = {(1000, 256, 0.1): 1.524, (1000, 256, 0.01): 0.205}


def _sequences(N: int, eta: np.ndarray, cfg: dict, W: np.ndarray, C: float, C_jl: float) -> dict:
    g, pi = t2.noisy_lookup(N, eta, cfg["alpha"], seed=cfg["seed"])
    H = t2.entropy(pi)
    lam, res = t2.solve_lambda(W, g, H)
    kl = t2.construction_kl(W, g, pi, lam)
    finite = np.isfinite(lam)
    direct = t2.direct_kl(W, g[finite], pi[finite], lam[finite])
    out = {"eta": eta.tolist(), "entropy": H.tolist(), "lam": lam.tolist(), "kl": kl.tolist(),
           "bound": t2.per_sequence_bound(pi, g, C).tolist(),
           "lam_bound": t2.lambda_bound(H, N, C).tolist(),
           "simplified": t2.simplified_bound(pi, g, C),
           "max_residual": float(res.max()),
           "max_kl_formula_error": float(np.abs(direct - kl[finite]).max()) if finite.any() else 0.0}
    if C_jl < 0.5:
        out["bound_jl"] = t2.per_sequence_bound(pi, g, C_jl).tolist()
        out["simplified_jl"] = t2.simplified_bound(pi, g, C_jl)
    return out


def _thm2_config(ctx: Context, N: int, d: int) -> dict:
    """Every sequence set of one [N, d] (one unit of work in the store)."""
    cfg = ctx.config
    key = {"N": N, "d": d, "eta_max": cfg["eta_max"], "eta_grid": cfg["eta_grid"], "n_seq": cfg["n_seq"],
           "alpha": cfg["alpha"], "seed": cfg["seed"]}

    def compute() -> dict:
        W = t2.near_orthogonal_unembedding(N, d, cfg["seed"])
        C, C_jl = t2.coherence(W), t2.c_jl(N, d)
        rng = np.random.default_rng([N, d, cfg["seed"], 5])
        random_eta = {str(e): _sequences(N, rng.uniform(0, e, cfg["n_seq"]), cfg, W, C, C_jl)
                      for e in cfg["eta_max"]}
        grid = {}
        for e in cfg["eta_grid"]:
            s = _sequences(N, np.full(cfg["n_seq"], e), cfg, W, C, C_jl)
            grid[str(e)] = {"kl": float(np.mean(s["kl"])), "bound": float(np.mean(s["bound"])),
                            "simplified": s["simplified"], "all_hold": bool(np.all(np.less_equal(s["kl"], s["bound"]))),
                            "bound_jl": float(np.mean(s["bound_jl"])) if "bound_jl" in s else None,
                            "max_residual": s["max_residual"]}
        g, pi = t2.noisy_lookup(N, np.full(8, (N - 1) / N), seed=cfg["seed"])  # eta = (N-1)/N: uniform
        pi[:] = 1.0 / N
        lam_u, _ = t2.solve_lambda(W, g, t2.entropy(pi))
        uniform = {"lam": float(np.abs(lam_u).max()), "kl": float(np.abs(t2.construction_kl(W, g, pi, lam_u)).max()),
                   "bound": float(np.abs(t2.per_sequence_bound(pi, g, C)).max())}
        gs, pis = t2.noisy_lookup(N, rng.uniform(0, max(cfg["eta_max"]), 20), seed=cfg["seed"] + 1)
        printed = t2.printed_sign_check(W, gs, pis)
        return {"C_emp": C, "C_jl": C_jl, "random_eta": random_eta, "grid": grid, "uniform": uniform,
                "printed": printed}

    return {"N": N, "d": d, **ctx.unit(key, compute)}


def compute_thm2(ctx: Context) -> dict:
    cfg = ctx.config
    rows = [_thm2_config(ctx, N, d) for N, d in tqdm(cfg["configs"], desc="Theorem 2 configs",
                                                       disable=not ctx.progress)]
    return {"config": cfg, "rows": rows, "two_level": t2.two_level_q_example()}


def thm2_table(result: dict) -> list[dict]:
    """One line per (config, eta_max): the digest's table (means over the sequences)."""
    out = []
    for r in result["rows"]:
        for e, s in r["random_eta"].items():
            kl, b = np.array(s["kl"]), np.array(s["bound"])
            out.append({"N": r["N"], "d": r["d"], "C_emp": r["C_emp"], "C_jl": r["C_jl"], "eta_max": float(e),
                        "kl": float(kl.mean()), "bound": float(b.mean()), "simplified": s["simplified"],
                        "bound_jl": float(np.mean(s["bound_jl"])) if "bound_jl" in s else None,
                        "all_hold": bool(np.all(kl <= b)), "n": len(kl),
                        "worst_ratio": float(np.max(np.where(b > 0, kl / np.where(b > 0, b, 1), 0)))})
    return out


def claims_thm2(result: dict) -> ClaimsTable:
    """Digest claim 11, the checks of the construction, and erratum 2 (deterministic, float64)."""
    rows, table = result["rows"], thm2_table(result)
    t = ClaimsTable()
    n = sum(r["n"] for r in table) + sum(len(r["grid"]) * result["config"]["n_seq"] for r in rows)
    hold = all(r["all_hold"] for r in table) and all(g["all_hold"] for r in rows for g in r["grid"].values())
    worst = max(r["worst_ratio"] for r in table)
    t.add("11a", f"KL of the construction ≤ the corrected per-sequence bound, every sequence ({n})",
          paper="≤", ours=f"largest KL/bound {worst:.3f}", holds=hold, tolerance="every sequence", asserted=True)
    for (N, d, e), ref in DIGEST_MEAN_BOUND.items():
        ours = next((r["bound"] for r in table if (r["N"], r["d"], r["eta_max"]) == (N, d, e)), None)
        t.add("11b", f"mean bound, N = {N}, d = {d}, η_max = {e} (digest, measured)", paper=ref, ours=ours,
              holds=None if ours is None else abs(ours / ref - 1) <= 0.2, tolerance="± 20 %", asserted=False)
    mono = all(np.all(np.diff([r["bound"] for r in sorted((x for x in table if (x["N"], x["d"]) == (R["N"], R["d"])),
                                                            key=lambda x: x["eta_max"])]) > 0) for R in rows)
    t.add("11c", "the mean bound decreases as η_max decreases (every [N, d])", paper="decreasing",
          ours="decreasing" if mono else "not monotone", holds=mono, tolerance="strict", asserted=True)
    eta_min = min(result["config"]["eta_grid"])
    at_min = max(r["grid"][str(eta_min)]["bound"] for r in rows)
    grid_mono = all(np.all(np.diff([r["grid"][str(e)]["bound"] for e in sorted(result["config"]["eta_grid"])]) > 0)
                    for r in rows)
    t.add("11d", f"bound → 0 as η → 0 (increasing in η; largest bound at η = {eta_min:g})", paper="→ 0",
          ours=at_min, holds=grid_mono and at_min < 1e-2, tolerance="monotone, < 1e-2", asserted=True)
    u = max(max(r["uniform"].values()) for r in rows)
    t.add("11e", "uniform π_t (H = log N): λ = 0, KL = 0 and bound = 0", paper=0.0,
          ours="< 1e-12" if u < 1e-12 else u, holds=u < 1e-12, tolerance="< 1e-12", asserted=True)
    res = max(s["max_residual"] for r in rows for s in r["random_eta"].values())
    t.add("λ", "λ-solver: largest residual of log Σ_j exp(λ a_j) = H(π_t)", paper=0.0,
          ours="< 1e-12" if res < 1e-12 else res, holds=res < 1e-12, tolerance="< 1e-12", asserted=True)
    err = max(s["max_kl_formula_error"] for r in rows for s in r["random_eta"].values())
    t.add("KL", "exact KL λ Σ_k π(k)(W_g − W_k)ᵀW_g = KL(π_t ‖ softmax f) computed directly", paper="equal",
          ours="< 1e-12" if err < 1e-12 else err, holds=err < 1e-10, tolerance="< 1e-10", asserted=True)
    jl = all(r["C_emp"] <= r["C_jl"] for r in rows)
    t.add("JL", "the draw satisfies ‖WWᵀ − I_N‖_max ≤ C_JL = sqrt(32 log(N+1)/d) (every [N, d])",
          paper="exists", ours="; ".join(f"{r['C_emp']:.3f} ≤ {r['C_jl']:.3f}" for r in rows), holds=jl,
          tolerance="C_emp ≤ C_JL", asserted=True)
    vac = [f"{r['N']}/{r['d']}" for r in rows if r["C_jl"] >= 0.5]
    t.add("C", "the theorem's C_JL < 1/2, which the bound needs (1 − 2C > 0); N/d where it is not",
          paper="C < 1/2", ours=", ".join(vac) or "none", holds=not vac,
          tolerance="d > 128 log(N+1)", asserted=False)
    simp = all(r["simplified"] >= r["kl"] for r in table)
    t.add("simp", "the simplified bound stays above the mean KL of the construction (every row)",
          paper="≥", ours="yes" if simp else "no", holds=simp, tolerance="every row", asserted=False)
    p = [r["printed"] for r in rows]
    no_sol = not any(x["printed_has_solution"] for x in p)
    t.add("E2a", "erratum 2: the printed −H(π_t) = log Σ_j exp(λ a_j) has no solution (min over λ of the right side)",
          paper="solvable", ours=f"min {min(x['min_rhs'] for x in p):.3g} > −H", holds=no_sol,
          tolerance="no real λ", asserted=True)
    neg = max(x["max_printed_log_argument"] for x in p)
    t.add("E2b", "erratum 2: the printed log((N−1)/(e^{−H} − 1)) has a negative argument (largest)",
          paper="> 0", ours=neg, holds=neg < 0, tolerance="< 0 for every H > 0", asserted=True)
    return t


# ---------------------------------------------------------------------------------------------
# Fig. 4 (Experiment 6): N = 10, d = 2, accuracy against H next to Corollary 2.

FIG4 = (
    Param("d", "int", "embedding dimension (the paper: 2)", min=1, max=1024),
    Param("d_h_list", "int_list", "head dimensions; the figure has d_h = d = 2, the text d_h = 5 > d", min=1, max=1024),
    Param("H_list", "int_list", "numbers of heads", min=1, max=1024),
) + TRAINING_PARAMS

# Fig. 4 from the authors' released data (digest E6; 20 reps, d = d_h = 2, N = 10).
EXP6_H = [1, 5, 9, 13, 17, 21]
EXP6_ACCURACY = [0.330, 0.497, 0.633, 0.734, 0.857, 0.858]
EXP6_SLOPE_RATIO_TEXT = 1.3   # caption: "a slope relative difference of 1.3"
EXP6_SLOPE_RATIO_DATA = 1.51  # linear fit of the released numbers: 0.0273 / 0.0180


def compute_fig4(ctx: Context) -> dict:
    cfg = ctx.config
    if cfg["d"] < 2:
        raise ParameterError(f"parameter 'd': value {cfg['d']} is not allowed; must be >= 2 (Corollary 1 needs d >= 2)")
    points = [{"d": cfg["d"], "d_h": dh, "H": H, "seed": s} for dh in cfg["d_h_list"] for H in cfg["H_list"]
              for s in range(cfg["seeds"])]
    rows = _train_points(ctx, points, "Fig. 4 sweep")
    metric = "accuracy" if cfg["batch_size"] == 0 else "tail_batch_accuracy"
    return {"config": cfg, "metric": metric, "points": rows, "analysis": analyse_fig4(rows, cfg, metric)}


def analyse_fig4(rows: list[dict], cfg: dict, metric: str) -> dict:
    """Per d_h: accuracy over seeds, the linear fit, Corollary 2 (as printed and the valid one)."""
    N, d, H = cfg["N"], cfg["d"], np.array(cfg["H_list"])
    out = {}
    for dh in cfg["d_h_list"]:
        per_seed = np.array([[r[metric] for r in rows if r["d_h"] == dh and r["H"] == h] for h in H])  # [H, seeds]
        acc = per_seed.mean(1)
        sem = per_seed.std(1, ddof=1) / math.sqrt(per_seed.shape[1]) if per_seed.shape[1] > 1 else np.zeros(len(H))
        n = presaturation(acc)
        fit = power_fit(H[:n], acc[:n], 1.0) if n >= 2 else None
        printed = bounds.corollary2_accuracy(N, d, dh, H, dh_gt_d="as_printed")  # clipped at 1, as in the plot
        valid = bounds.corollary2_accuracy(N, d, dh, H, dh_gt_d="effective")
        bound_slope = (1 - 1 / N) * dh / N ** 2  # slope of the printed (unclipped) line
        out[dh] = {"accuracy": acc.tolist(), "sem": sem.tolist(), "fit_points": n,
                   "slope": fit.a if fit else float("nan"), "intercept": fit.b if fit else float("nan"),
                   "r2": fit.r2 if fit else float("nan"), "bound_printed": np.asarray(printed).tolist(),
                   "bound_valid": np.asarray(valid).tolist(),
                   "previous": np.asarray(bounds.previous_accuracy_bound(N, dh, H)).tolist(),
                   "bound_slope": bound_slope, "slope_over_bound": fit.a / bound_slope if fit else float("nan"),
                   "valid": dh <= d}
    return out


def claims_fig4(result: dict, full: dict | None = None) -> ClaimsTable:
    """Digest claim 18 (asserted), the slope ratio (erratum 7), the d_h = 5 text (errata 6, 13, 15)."""
    cfg, an = result["config"], {int(k): v for k, v in result["analysis"].items()}
    H, d = cfg["H_list"], cfg["d"]
    t = ClaimsTable()
    if d in an:
        a = an[d]
        margin = float(np.min(np.subtract(a["accuracy"], a["bound_valid"])))
        t.add("18a", f"d = d_h = {d}: trained accuracy above Corollary 2 at every H", paper="above",
              ours=f"least margin {margin:.3f}", holds=margin > 0, tolerance="> 0", asserted=True)
        gain = a["accuracy"][-1] - a["accuracy"][0]
        t.add("18b", f"accuracy gain from H = {H[0]} to H = {H[-1]}", paper=round(EXP6_ACCURACY[-1] - EXP6_ACCURACY[0], 3),
              ours=gain, holds=gain > 0.25, tolerance="> 0.25", asserted=True)
        r = a["slope_over_bound"]
        t.add("E7", "fitted slope / Corollary 2 slope ('slope relative difference of 1.3'; released data 1.51)",
              paper=EXP6_SLOPE_RATIO_TEXT, ours=r, holds=bool(abs(r - EXP6_SLOPE_RATIO_TEXT) <= 0.3),
              tolerance="1.3 ± 0.3", asserted=False)
    for dh in (k for k in an if k > d):
        a = an[dh]
        below = int(np.sum(np.less(a["accuracy"], a["bound_printed"])))
        t.add("E6", f"text's d_h = {dh} > d: accuracy above its printed 'bound' H·d_h + d at every H",
              paper="above", ours=f"below at {below} of {len(H)} H", holds=below == 0,
              tolerance="every H (bound not valid: d_h > d)", asserted=False)
        h_one = next((h for h in H if bounds.capacity_ours(h, dh, d, "as_printed") >= cfg["N"] ** 2), None)
        if h_one is not None:
            acc = a["accuracy"][H.index(h_one)]
            t.add("E15", f"d_h = {dh}: 'exactly 1 accuracy' once H·d_h + d ≥ N² (H = {h_one})", paper=1.0, ours=acc,
                  holds=acc >= 0.99, tolerance="≥ 0.99", asserted=False)
        margin = float(np.min(np.subtract(a["accuracy"], a["bound_valid"])))
        t.add("E13", f"d_h = {dh}: above the valid bound H·min(d, d_h) + d at every H", paper="above",
              ours=f"least margin {margin:.3f}", holds=margin > 0, tolerance="> 0", asserted=False)
    fa = {int(k): v for k, v in full["analysis"].items()} if full else {}
    for h in (1, 21):
        ours = fa[2]["accuracy"][full["config"]["H_list"].index(h)] if 2 in fa and h in full["config"]["H_list"] else None
        ref = EXP6_ACCURACY[EXP6_H.index(h)]
        t.add("20", f"paper scale, d = d_h = 2, H = {h}: accuracy (released data)", paper=ref, ours=ours,
              holds=None if ours is None else abs(ours - ref) <= 0.05, tolerance="± 0.05", asserted=False)
    return t


EXPERIMENTS = [
    Experiment(
        id="004-memorization/thm2-kl-upper-bound",
        label="Theorem 2",
        title="An explicit sequence encoder for noisy look-up tables, and its KL upper bound",
        params=THM2,
        presets={
            "ci": dict(configs=[[10, 400], [1000, 256], [2000, 512]], eta_max=[0.1, 0.03, 0.01, 0.001],
                       eta_grid=[1e-5, 1e-4, 1e-3, 1e-2, 3e-2, 0.1, 0.3], n_seq=100, alpha=1.0, seed=0),
            "full": dict(configs=[[10, 400], [1000, 256], [2000, 512], [5000, 1024]],
                         eta_max=[0.1, 0.03, 0.01, 0.001],
                         eta_grid=[1e-6, 1e-5, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3], n_seq=1000, alpha=1.0,
                         seed=0),
        },
        compute=compute_thm2,
        summary="The corrected bound holds for every sequence, and goes to 0 with the noise η.",
    ),
    Experiment(
        id="004-memorization/fig4-small-dimension",
        label="Fig. 4 (Exp. 6)",
        title="Small dimension (N = 10, d = 2): accuracy against H next to Corollary 2",
        params=FIG4,
        presets={
            "ci": dict(N=10, d=2, d_h_list=[2, 5], H_list=[1, 5, 9, 13, 17, 21], seeds=5, steps=600, batch_size=0,
                       n_batches=1, lr_start=1e-2, lr_end=5e-4, task_seed=0, chunk=64),
            "full": dict(N=10, d=2, d_h_list=[2, 5], H_list=[1, 5, 9, 13, 17, 21], seeds=20, steps=4096,
                         batch_size=256, n_batches=64, lr_start=1e-2, lr_end=5e-4, task_seed=0, chunk=240),
        },
        compute=compute_fig4,
        summary="At d = d_h = 2 the trained AoT stays above Corollary 2 with a similar slope.",
    ),
]
