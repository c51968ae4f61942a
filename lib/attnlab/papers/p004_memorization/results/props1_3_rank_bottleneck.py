"""Propositions 1-3: the rank-d bottleneck of sequence encoders (min KL against d, the transition
at d = N - 1) and the circle encoder.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlab.core.claims import ClaimsTable, bound
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import SEED, SEEDS, Param, ParameterError
from attnlab.core.progress import tqdm

from .. import approx, constructions, encoders
from ..models import AoTConfig
from ..sweeps import train_aot_kl
from ..tasks import conditional_distribution


PROPS = (
    Param("N", "int", "vocabulary size", min=2, max=64),
    Param("S", "int", "context length; the sequences are all N^S of them", min=1, max=4),
    Param("alpha", "float", "Dirichlet concentration of the conditionals pi_t", min=1e-3, max=1e3),
    Param("pi_seed", "int", "seed of the conditionals", min=0, max=2**31 - 1),
    Param("d_list", "int_list", "embedding dimensions of the optimal-encoder fits", min=1, max=64),
    Param("restarts", "int", "LBFGS runs per d (the first from the SVD start)", min=1, max=20),
    Param("max_iter", "int", "LBFGS iterations per run", min=1, max=100_000),
    Param("aot_d_list", "int_list", "d = d_h of the trained AoTs (Prop. 1 check)", min=1, max=64),
    Param("aot_H", "int", "heads of the trained AoTs", min=1, max=256),
    Param("aot_steps", "int", "full-batch Adam steps on the KL loss", min=1, max=1_000_000),
    Param("aot_lr", "float", "Adam learning rate (linear decay to lr/10)", min=1e-6, max=1.0),
    SEEDS.described("seeds of the trained AoTs (initialisations; the task π is fixed by pi_seed): replicas of the "
                    "one training program; row P1 is judged over them"),
    SEED.described("the first AoT seed: the AoTs use seeds seed, seed + 1, …, seed + seeds − 1 (0: the book's run)"),
    Param("circle_N", "int_list", "vocabulary sizes of the circle construction (Prop. 3)", min=2, max=100_000),
    Param("n_lam", "int", "lambda grid points, log-spaced in [0.1, 1e4]", min=2, max=10_000),
)


def compute_props(ctx: Context) -> dict:
    """Fits the optimal rank-d sequence encoder (LBFGS) for each d, trains AoTs to the same conditional
    distribution, and evaluates the circle encoder; the result holds the min KL per d (`fits`), the
    AoTs' KL (`aot`) and the circle KLs in closed form and directly (`circle`)."""
    cfg = ctx.config
    N, S = cfg["N"], cfg["S"]
    if N**S > 4096:
        raise ParameterError(f"parameters 'N', 'S': N^S = {N**S} sequences; at most 4096 allowed")
    bad = [d for d in cfg["aot_d_list"] if d not in cfg["d_list"]]
    if bad:
        raise ParameterError(f"parameter 'aot_d_list': value {bad} is not allowed; each d must be in d_list {cfg['d_list']}")
    pi_key = {"N": N, "S": S, "alpha": cfg["alpha"], "pi_seed": cfg["pi_seed"], "prior": "uniform"}
    prior, cond = conditional_distribution(N, S, cfg["alpha"], cfg["pi_seed"])
    fits = {}
    for d in tqdm(cfg["d_list"], desc="optimal encoders (LBFGS)", disable=not ctx.progress):
        key = {"unit": "encoder", **pi_key, "d": d, "restarts": cfg["restarts"], "max_iter": cfg["max_iter"]}

        def compute(d=d):
            f = encoders.fit_encoder(prior, cond, d, cfg["restarts"], cfg["max_iter"], seed=cfg["pi_seed"])
            exact = None
            if d >= N - 1:
                W, E = encoders.exact_encoder(cond, d)
                exact = encoders.encoder_kl(prior, cond, W, E)
            return {"kl": f.kl, "kl_restarts": f.kl_restarts, "evaluations": f.evaluations, "exact_kl": exact}

        fits[d] = ctx.unit(key, compute)

    aot_key = {"unit": "aot", **pi_key, "d_list": cfg["aot_d_list"], "H": cfg["aot_H"], "steps": cfg["aot_steps"],
               "lr": cfg["aot_lr"]}
    if (cfg["seeds"], cfg["seed"]) != (1, 0):  # one seed from 0 keeps the key of the stored runs (the full preset)
        aot_key.update(seeds=cfg["seeds"], seed=cfg["seed"])

    def train():
        tokens = torch.as_tensor(approx.all_sequences(N, S))
        configs = [AoTConfig(N, S, d, d, cfg["aot_H"], seed=cfg["seed"] + k) for k in range(cfg["seeds"])
                   for d in cfg["aot_d_list"]]
        return train_aot_kl(configs, tokens, prior, cond, cfg["aot_steps"], cfg["aot_lr"], ctx.device,
                            progress=ctx.progress)

    aot = ctx.unit(aot_key, train)

    lam = np.geomspace(0.1, 1e4, cfg["n_lam"]).tolist()
    circle = {}
    for Nc in cfg["circle_N"]:
        key = {"unit": "circle", "N": Nc, "lam": lam, "seed": cfg["pi_seed"]}

        def circ(Nc=Nc):
            g = constructions.random_association_task(Nc, 2, min(Nc * Nc, 1000), seed=cfg["pi_seed"])[1]
            points = [1.0, 10.0, 100.0, 1000.0]
            return {"closed": encoders.circle_kl_closed_form(Nc, lam).tolist(),
                    "direct": encoders.circle_kl_direct(Nc, lam, g).tolist(),
                    "points": points, "closed_points": encoders.circle_kl_closed_form(Nc, points).tolist(),
                    "direct_points": encoders.circle_kl_direct(Nc, points, g).tolist(), "n_seq": len(g)}

        circle[Nc] = ctx.unit(key, circ)
    return {"config": cfg, "fits": {str(d): v for d, v in fits.items()}, "aot": aot, "lam": lam,
            "circle": {str(n): v for n, v in circle.items()}}


def aot_margins(result: dict) -> np.ndarray:
    """KL(trained AoT) − KL*(d), one row per seed (in seed order), one column per d of aot_d_list; the AoT
    unit holds its replicas seed-major (all d of the first seed, then the next seed)."""
    cfg = result["config"]
    ds = cfg["aot_d_list"]
    kl = np.array(result["aot"]["kl"]).reshape(-1, len(ds))
    return kl - np.array([result["fits"][str(d)]["kl"] for d in ds])[None, :]


def circle_agreement(result: dict) -> tuple[float, float]:
    """Largest relative |closed - direct| / closed where closed >= 1e-6, and largest absolute difference."""
    rel = absdiff = 0.0
    for c in result["circle"].values():
        a, b = np.array(c["closed"]), np.array(c["direct"])
        m = a >= 1e-6
        rel = max(rel, float(np.max(np.abs(a[m] - b[m]) / a[m])))
        absdiff = max(absdiff, float(np.max(np.abs(a - b))))
    return rel, absdiff


def claims_props(result: dict) -> ClaimsTable:
    """Prop. 3 (rows 9: the circle encoder's closed-form KL, App. A.5), Prop. 2 (rows 10: the rank
    bottleneck, d ≥ N − 1), and Prop. 1 on trained AoTs."""
    cfg = result["config"]
    N = cfg["N"]
    ds = sorted(int(d) for d in result["fits"])
    kl = {d: result["fits"][str(d)]["kl"] for d in ds}
    t = ClaimsTable()
    rises = [(a, b) for a, b in zip(ds, ds[1:]) if kl[b] > kl[a] + 1e-9]
    t.consistency("10a", "Prop. 2: min-KL(d) is non-increasing in d (a rank-d encoder is a rank-(d + 1) one: this "
                  "checks our optimiser, not the proposition)", expected="non-increasing",
                  ours="yes" if not rises else f"rises at d = {rises[0][1]}", holds=not rises, tolerance="1e-9",
                  asserted=True, source="text")
    below = [d for d in ds if d <= N - 2]
    if below:
        least = min(kl[d] for d in below)
        t.add("10b", f"Prop. 2: min-KL > 0 for d ≤ N − 2 = {N - 2} (least, at d = {max(below)})", paper="> 0",
              ours=least, holds=least > 1e-3, tolerance="> 1e-3", asserted=True, source="text")
    if N - 1 in kl:
        v = max(kl[N - 1], 0.0)
        t.add("10c", f"Prop. 2: min-KL = 0 at d = N − 1 = {N - 1} (LBFGS)", paper=0.0, ours=float(f"{v:.1e}"),
              holds=v < 1e-6, tolerance="< 1e-6", asserted=True, source="text")
        ex = max(abs(result["fits"][str(d)]["exact_kl"]) for d in ds if d >= N - 1)
        t.add("10d", "Prop. 2's explicit encoder (W spans 1⊥, E = centred log π_t) for d ≥ N − 1", paper=0.0,
              ours=bound(ex, 1e-12), holds=ex < 1e-12, tolerance="< 1e-12", asserted=True, source="text")
    margins = aot_margins(result)
    t.add_seeds("P1", f"Prop. 1: a trained AoT (H = {cfg['aot_H']}, d = d_h ∈ {cfg['aot_d_list']}) has KL ≥ KL*(d), "
                "our LBFGS estimate (per seed, the least margin KL − KL*(d) over d: a small one means the AoT "
                "reached the bound and stopped there)", paper="≥ 0", values=margins.min(1).tolist(), threshold=0.0,
                atol=1e-6, asserted=True, source="text")
    circ = result["circle"]
    dec = all(np.all(np.diff(np.array(c["closed"])[np.array(c["closed"]) > 0]) < 0) for c in circ.values())
    t.consistency("9a", "Prop. 3: KL(λ) of the circle encoder, in closed form, is strictly decreasing in λ (where > 0 "
                  "in float64)", expected="→ 0", ours="yes" if dec else "no", holds=dec, tolerance="strict",
                  asserted=True, source="text")
    rel, absdiff = circle_agreement(result)
    t.consistency("9b", "closed form log(1 + Σ_k e^{−λ(1 − cos 2πk/N)}) = direct softmax: largest rel. diff "
                  "(KL ≥ 1e-6)", expected="equal", ours=bound(rel, 1e-9), holds=rel < 1e-9, tolerance="< 1e-9",
                  asserted=True)
    t.consistency("9b", "… and largest absolute diff over the whole λ grid (float64 cancellation in the direct form)",
                  expected="equal", ours=bound(absdiff, 1e-10), holds=absdiff < 1e-10, tolerance="< 1e-10",
                  asserted=True)
    if "10" in circ:
        c = circ["10"]
        for lam_, ref, tol, tol_text in ((10.0, 0.2610, 0.01 * 0.2610, "1 %"),
                                         (100.0, 1.0e-8, 0.05e-8, "± 0.05e-8 (its 2 digits)")):
            v = c["closed_points"][c["points"].index(lam_)]
            t.consistency("9c", f"N = 10: KL(λ = {lam_:g}) in closed form against our hand evaluation of the same "
                          "formula (below the table; the paper gives no number)", expected=ref, ours=v,
                          holds=abs(v - ref) <= tol, tolerance=tol_text, asserted=True, source="derived")
    return t


EXPERIMENTS = (
    Experiment(
            id="004-memorization/props1-3-rank-bottleneck",
            label="Propositions 1–3",
            title="The rank-d bottleneck of sequence encoders, and the circle encoder",
            params=PROPS,
            presets={"ci": dict(N=8, S=2, alpha=1.0, pi_seed=0, d_list=[1, 2, 3, 4, 5, 6, 7, 8], restarts=1,
                                max_iter=400, aot_d_list=[2, 4, 6], aot_H=16, aot_steps=500, aot_lr=0.05,
                                seeds=3, seed=0, circle_N=[10, 50], n_lam=121),
                     "full": dict(N=16, S=2, alpha=1.0, pi_seed=0, d_list=list(range(1, 17)), restarts=3,
                                  max_iter=3000, aot_d_list=[2, 4, 8, 12], aot_H=8, aot_steps=5000, aot_lr=0.02,
                                  seeds=1, seed=0, circle_N=[10, 50, 1000], n_lam=401)},
            compute=compute_props,
            added_since_stored={"seeds": 1, "seed": 0},  # the stored full run trained one AoT seed, 0
            summary="min-KL over rank-d encoders vanishes exactly at d = N - 1; the circle encoder reaches 0 at d = 2.",
        ),
)
