"""Theorem 2: an explicit sequence encoder for noisy look-up tables, and its (sign-corrected) KL upper bound.
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, require_memory, SEED
from attnlab.core.progress import tqdm

from .. import theorem2 as t2
from ..paper import REFERENCE_MEAN_BOUND


THM2 = (
    Param("configs", "int_rows", "[N, d] pairs: vocabulary size and embedding dimension", min=2, max=100_000,
          width=2),
    Param("eta_max", "float_list", "noise levels: eta ~ U(0, eta_max) per sequence", min=1e-12, max=1.0),
    Param("eta_grid", "float_list", "fixed noise levels of the curve against eta", min=1e-12, max=1.0),
    Param("n_seq", "int", "sequences per (config, noise level)", min=2, max=100_000),
    Param("alpha", "float", "Dirichlet concentration of the noise q on the N - 1 other tokens", min=1e-6,
          max=1e6),
    SEED.described("seed of W, g and the noise"),
)


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
    """Builds (no training) Theorem 2's encoder for each (N, d) and evaluates the KL and the bound on
    sampled sequences over the eta grid; the result holds one row per config and the two-level example."""
    cfg = ctx.config
    for N, d in cfg["configs"]:  # W [N, d], its coherence [N, N] and [n_seq, N] distributions, float64
        require_memory(8 * (3 * N * N + 6 * cfg["n_seq"] * N + 2 * N * d), "a row of 'configs'",
                       {"configs": [N, d], "n_seq": cfg["n_seq"]}, device=ctx.device)
    rows = [_thm2_config(ctx, N, d) for N, d in tqdm(cfg["configs"], desc="Theorem 2 configs",
                                                       disable=not ctx.progress)]
    return {"config": cfg, "rows": rows, "two_level": t2.two_level_q_example()}


def thm2_table(result: dict) -> list[dict]:
    """One line per (config, eta_max): the chapter's table (means over the sequences)."""
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
    """Theorem 2 (corrected, rows 11: the construction's KL below the bound, which falls with the entropy),
    the checks of the construction, and erratum 2 (deterministic, float64)."""
    rows, table = result["rows"], thm2_table(result)
    t = ClaimsTable()
    n = sum(r["n"] for r in table) + sum(len(r["grid"]) * result["config"]["n_seq"] for r in rows)
    hold = all(r["all_hold"] for r in table) and all(g["all_hold"] for r in rows for g in r["grid"].values())
    worst = max(r["worst_ratio"] for r in table)
    t.add("11a", f"KL of the construction ≤ the corrected per-sequence bound, every sequence ({n})",
          paper="≤", ours=f"largest KL/bound {worst:.3f}", holds=hold, tolerance="every sequence", asserted=True, source="text")
    for (N, d, e), ref in REFERENCE_MEAN_BOUND.items():
        ours = next((r["bound"] for r in table if (r["N"], r["d"], r["eta_max"]) == (N, d, e)), None)
        if ours is not None:
            t.consistency("11b", f"mean bound, N = {N}, d = {d}, η_max = {e}, against our earlier evaluation of the "
                          "same formula with other draws (below the table; the paper gives no number)", expected=ref,
                          ours=ours, holds=abs(ours / ref - 1) <= 0.2, tolerance="± 20 %", source="derived")
    mono = all(np.all(np.diff([r["bound"] for r in sorted((x for x in table if (x["N"], x["d"]) == (R["N"], R["d"])),
                                                            key=lambda x: x["eta_max"])]) > 0) for R in rows)
    t.consistency("11c", "the mean bound decreases as η_max decreases (every [N, d]; an evaluation of the bound's "
                  "closed form, not of the construction)", expected="decreasing",
                  ours="decreasing (every [N, d])" if mono else "not monotone", holds=mono, tolerance="strict",
                  asserted=True, source="text")
    eta_min = min(result["config"]["eta_grid"])
    at_min = max(r["grid"][str(eta_min)]["bound"] for r in rows)
    grid_mono = all(np.all(np.diff([r["grid"][str(e)]["bound"] for e in sorted(result["config"]["eta_grid"])]) > 0)
                    for r in rows)
    t.consistency("11d", f"bound → 0 as η → 0 (increasing in η; largest bound at η = {eta_min:g}; an evaluation of "
                  "the bound's closed form)", expected="→ 0", ours=at_min, holds=grid_mono and at_min < 1e-2,
                  tolerance="monotone, < 1e-2", asserted=True, source="text")
    u = max(max(r["uniform"].values()) for r in rows)
    t.consistency("11e", "uniform π_t (H = log N): λ = 0, KL = 0 and bound = 0", expected=0.0,
                  ours="< 1e-12" if u < 1e-12 else u, holds=u < 1e-12, tolerance="< 1e-12", asserted=True,
                  source="text")
    res = max(s["max_residual"] for r in rows for s in r["random_eta"].values())
    t.consistency("λ", "λ-solver: largest residual of log Σ_j exp(λ a_j) = H(π_t)", expected=0.0,
                  ours="< 1e-12" if res < 1e-12 else res, holds=res < 1e-12, tolerance="< 1e-12", asserted=True)
    err = max(s["max_kl_formula_error"] for r in rows for s in r["random_eta"].values())
    t.consistency("KL", "exact KL λ Σ_k π(k)(W_g − W_k)ᵀW_g = KL(π_t ‖ softmax f) computed directly",
                  expected="equal", ours="< 1e-12" if err < 1e-12 else err, holds=err < 1e-10, tolerance="< 1e-10",
                  asserted=True)
    jl = all(r["C_emp"] <= r["C_jl"] for r in rows)
    t.add("JL", "the draw satisfies ‖WWᵀ − I_N‖_max ≤ C_JL = sqrt(32 log(N+1)/d) (every [N, d])",
          paper="exists", ours="; ".join(f"{r['C_emp']:.3f} ≤ {r['C_jl']:.3f}" for r in rows), holds=jl,
          tolerance="C_emp ≤ C_JL", asserted=True, source="text")
    vac = [f"{r['N']}/{r['d']}" for r in rows if r["C_jl"] >= 0.5]
    t.consistency("C", "the theorem's C_JL < 1/2, which the bound needs (1 − 2C > 0); N/d where it is not",
                  expected="C < 1/2", ours=", ".join(vac) or "none", holds=not vac,
                  tolerance="d > 128 log(N+1)", source="text")
    simp = all(r["simplified"] >= r["kl"] for r in table)
    t.add("simp", "the simplified bound stays above the mean KL of the construction (every row)",
          paper="≥", ours="yes" if simp else "no", holds=simp, tolerance="every row", asserted=False, source="text")
    p = [r["printed"] for r in rows]
    no_sol = not any(x["printed_has_solution"] for x in p)
    t.consistency("E2a", "erratum 2: the printed −H(π_t) = log Σ_j exp(λ a_j) has no solution (min over λ of the "
                  "right side)", expected="no real λ", ours=f"min {min(x['min_rhs'] for x in p):.3g} > −H",
                  holds=no_sol, tolerance="no real λ", asserted=True, source="text")
    neg = max(x["max_printed_log_argument"] for x in p)
    t.consistency("E2b", "erratum 2: the printed log((N−1)/(e^{−H} − 1)) has a negative argument (largest)",
                  expected="< 0", ours=neg, holds=neg < 0, tolerance="< 0 for every H > 0", asserted=True,
                  source="text")
    return t


EXPERIMENTS = (
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
)
