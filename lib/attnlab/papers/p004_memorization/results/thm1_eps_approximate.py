"""Theorem 1 with eps > 0: approximate distribution memorization, KL(AoT) against KL* as the heads grow.
"""

from __future__ import annotations

import math

import numpy as np

from attnlab.core.claims import ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError, SEED
from attnlab.core.progress import tqdm

from .. import approx, encoders
from ..tasks import conditional_distribution


THM1EPS = (
    Param("N", "int", "vocabulary size", min=2, max=32),
    Param("S", "int", "context length (all N^S sequences)", min=1, max=6),
    Param("d", "int", "embedding dimension (d < N - 1: KL* > 0)", min=2, max=64),
    Param("d_h", "int", "head dimension (<= d)", min=1, max=64),
    Param("H_list", "int_list", "numbers of heads; K = H d_h + d sequences are interpolated", min=0, max=10_000),
    Param("zipf", "float", "Zipf exponent of the prior over sequences (ranks in random order)", min=0.0, max=10.0),
    Param("alpha", "float", "Dirichlet concentration of the conditionals", min=1e-3, max=1e3),
    Param("pi_seed", "int", "seed of the prior and the conditionals", min=0, max=2**31 - 1),
    Param("restarts", "int", "LBFGS runs of the optimal-encoder fit", min=1, max=20),
    Param("max_iter", "int", "LBFGS iterations per run", min=1, max=100_000),
    SEED.described("seed of the generic draws of the construction"),
    Param("qk", "str", "W_QK of each head", choices=("rank1", "full")),
)


def compute_thm1eps(ctx: Context) -> dict:
    """Fits the optimal rank-d encoder (KL*) and builds the eps > 0 construction for each H with both
    solves; the result holds KL(AoT), the Eq.-13/14 bounds and constants per H (`builds`) and KL*."""
    cfg = ctx.config
    N, S, d, d_h = cfg["N"], cfg["S"], cfg["d"], cfg["d_h"]
    if d_h > d:
        raise ParameterError(f"parameter 'd_h': value {d_h} is not allowed; must be <= d = {d} (footnote 1)")
    if N**S > 5000:
        raise ParameterError(f"parameters 'N', 'S': N^S = {N**S} sequences; at most 5000 allowed")
    pi_key = {"N": N, "S": S, "alpha": cfg["alpha"], "pi_seed": cfg["pi_seed"], "prior": "zipf", "zipf": cfg["zipf"]}
    prior, cond = conditional_distribution(N, S, cfg["alpha"], cfg["pi_seed"], "zipf", cfg["zipf"])
    enc_key = {"unit": "encoder", **pi_key, "d": d, "restarts": cfg["restarts"], "max_iter": cfg["max_iter"]}

    def fit():
        f = encoders.fit_encoder(prior, cond, d, cfg["restarts"], cfg["max_iter"], seed=cfg["pi_seed"])
        return {"kl": f.kl, "kl_restarts": f.kl_restarts, "W": f.W.tolist(), "E": f.E.tolist()}

    enc = ctx.unit(enc_key, fit)
    tokens = approx.all_sequences(N, S)
    builds = []
    for H in tqdm(cfg["H_list"], desc="constructions", disable=not ctx.progress):
        key = {"unit": "thm1eps", **enc_key, "d_h": d_h, "H": H, "seed": cfg["seed"], "qk": cfg["qk"]}

        def build(H=H):
            out = {}
            for solve in approx.SOLVES:
                _, r = approx.build_distribution_aot(tokens, prior.numpy(), cond.numpy(), enc["W"], enc["E"], d_h, H,
                                                     seed=cfg["seed"], qk=cfg["qk"], solve=solve)
                out[solve] = {k: getattr(r, k) for k in ("K", "eps", "kl_aot", "kl_encoder", "eq13_inf", "eq13",
                                                         "eq14_app", "eq14_main", "C_app", "C_main", "norm_WE",
                                                         "max_fit_error", "cond_W_OV", "rank_F")}
            return out

        builds.append({"H": H, **ctx.unit(key, build)})
    p = np.sort(prior.numpy())[::-1]
    return {"config": cfg, "T": len(tokens), "kl_star": enc["kl"], "kl_restarts": enc["kl_restarts"],
            "builds": builds, "mass_curve": np.cumsum(p).tolist()}


def claims_thm1eps(result: dict) -> ClaimsTable:
    """Theorem 1 with ε > 0 (App. A.2, Eqs. 13-14; rows 12, asserted), the constant-C erratum, and the honest
    ε > 0 behaviour (reported)."""
    T, ks = result["T"], result["kl_star"]
    b = [r["interpolate"] for r in result["builds"]]
    H = [r["H"] for r in result["builds"]]
    t = ClaimsTable()
    gaps = [abs(r["kl_aot"] - r["kl_encoder"]) for r in b]
    ok = all(g <= r["eq13_inf"] + 1e-12 for g, r in zip(gaps, b))
    t.add("12a", f"gap abs(KL(AoT) − KL*) ≤ Eq. (13) bound at every H ({len(b)} values)", paper="≤",
          ours="all" if ok else "violated", holds=ok, tolerance="+1e-12", asserted=True, source="text")
    # Absolute slack 1e-7: at K >= T the construction is exact (Eq. 14's right side is 0) and Eq. 13's middle
    # term is the float64 residual of the interpolating solve, measured 0.6e-9 to 1.3e-9 on three CPUs (the
    # former slack, 1e-9, failed on one); a real violation is of the order of ε‖WE‖ (1e-2 and more here).
    chain = all(r["eq13_inf"] <= r["eq13"] + 1e-7 and r["eq13"] <= r["eq14_app"] * (1 + 1e-9) + 1e-7
                and r["eq14_app"] <= r["eq14_main"] * (1 + 1e-9) + 1e-12 for r in b)
    t.add("12b", "chain (13) ≤ 2Σπ‖W(W_O W_V A′ − E)‖ ≤ 2ε‖WE‖C_app (Eq. 14) ≤ 2ε‖WE‖C_main", paper="≤",
          ours="all" if chain else "violated", holds=chain, tolerance="1e-7 (the exact solve's float64 residual)",
          asserted=True, source="text")
    exact = [r for r in b if r["K"] >= T]
    if exact:
        worst = max(abs(r["kl_aot"] - ks) for r in exact)
        t.add("12c", f"KL(AoT) = KL* once H d_h + d ≥ T = {T}", paper=ks, ours=min(r["kl_aot"] for r in exact),
              holds=worst < 1e-6, tolerance="± 1e-6", asserted=True, source="text")
    below = min(r["kl_aot"] - ks for r in b)
    t.consistency("P1", "Prop. 1: KL(AoT) ≥ KL* at every H (least margin; the AoT is built from the encoder that "
                  "attains KL*, so this checks that our KL* is the minimum, not the proposition)", expected="≥ 0",
                  ours="0 (abs. margin < 1e-12)" if abs(below) < 1e-12 else below,  # rounding-level sign is not stable
                  holds=below >= -1e-6, tolerance="≥ −1e-6", asserted=True, source="text")
    app_le_main = all(r["C_app"] <= r["C_main"] * (1 + 1e-9) for r in b if r["eps"] > 0)
    t.consistency("err3", "constant C: App. Eq. (14)'s ≤ the main text's (both valid; they differ)", expected="differ",
                  ours="C_app ≤ C_main" if app_le_main else "violated", holds=app_le_main, tolerance="exact",
                  asserted=True, source="text")
    pos = [(h, r) for h, r in zip(H, b) if r["eps"] > 0]
    g = [abs(r["kl_aot"] - ks) for _, r in pos]
    rise = next((pos[i + 1][0] for i in range(len(g) - 1) if g[i + 1] > g[i]), None)
    t.add("12d", "the gap abs(KL(AoT) − KL*) shrinks monotonically as ε → 0 (more heads)", paper="bound ∝ ε",
          ours="yes" if rise is None else f"rises at H = {rise}", holds=rise is None, tolerance="monotone",
          asserted=False, source="text")
    if pos:
        logN = math.log(result["config"]["N"])
        least = min(r["eq14_app"] for _, r in pos)
        t.add("12e", f"the Eq. (14) bound is informative for ε > 0 (< log N = {logN:.2f}; least over H)",
              paper="C 'hard to control'", ours=least, holds=least < logN, tolerance="< log N", asserted=False, source="text")
    return t


EXPERIMENTS = (
    Experiment(
            id="004-memorization/thm1-eps-approximate",
            label="Theorem 1 (ε > 0)",
            title="Approximate distribution memorization: KL(AoT) against KL* as the heads grow",
            params=THM1EPS,
            presets={"ci": dict(N=5, S=3, d=3, d_h=2, H_list=[0, 5, 10, 20, 30, 40, 50, 60, 61], zipf=1.5, alpha=1.0,
                                pi_seed=0, restarts=1, max_iter=1000, seed=0, qk="rank1"),
                     "full": dict(N=6, S=3, d=3, d_h=2, H_list=[0, 5, 10, 20, 40, 60, 80, 100, 106, 107], zipf=1.5,
                                  alpha=1.0, pi_seed=0, restarts=3, max_iter=3000, seed=0, qk="rank1")},
            compute=compute_thm1eps,
            summary="Exact at eps = 0 (KL = KL*); for eps > 0 the Eq.-13 bound holds but is vacuous and the gap is not monotone.",
        ),
)
