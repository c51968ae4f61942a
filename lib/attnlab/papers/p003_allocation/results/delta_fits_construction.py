"""Lemma B.1 and the construction of Theorem 4.1 (App. B, App. C): exponential sums that
approximate the delta function 1(s = T), and the explicit one-layer Transformer built from them
for the 4-gram task, its measured error against the bound."""

from __future__ import annotations

import math

import numpy as np

from attnlab.core.claims import ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, SEED
from attnlab.core.progress import tqdm
from attnlab.papers.p003_allocation import bounds, constructions as C, expsums as E, paper

PARAMS = (
    Param("lags", "int_list", "targets T of the delta fits", min=1, max=64),
    Param("terms", "int_list", "numbers of exponentials m of the delta fits", min=1, max=64),
    Param("two_term_rates", "int", "random rate pairs in the exact two-term search", min=1, max=100000),
    Param("d", "int", "token dimension of the 4-gram task (the paper: 8)", min=1, max=64),
    Param("L", "int", "sequence length of the construction's inputs", min=5, max=1024),
    Param("pad", "int", "zero tokens before each sequence (the paper's zero padding)", min=0, max=4096),
    Param("n_seqs", "int", "random input sequences", min=1, max=1000),
    Param("max_coef", "float", "largest |alpha| of the fits used in the construction (float64 rounding)",
          min=1.0, max=1e12),
    Param("proj_draws", "int", "Monte Carlo draws for Lemma B.2 (D = 64)", min=10, max=100000),
    SEED.described("random seed (projections, inputs, rate pairs)"),
)
PRESETS = {"ci": {"lags": [1, 2, 3, 4], "terms": [1, 2, 4, 8, 16], "two_term_rates": 300, "d": 8, "L": 64,
                  "pad": 64, "n_seqs": 8, "max_coef": 1e6, "proj_draws": 1000, "seed": 0}}
PRESETS["full"] = {**PRESETS["ci"], "terms": [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64], "two_term_rates": 20000,
                   "L": 256, "pad": 256, "n_seqs": 64, "proj_draws": 20000}

# (label, D, groups (H_m, d_m)): Corollary 4.1's optima for the 4-gram task, and a compressed one
ALLOCATIONS = (("D = 256, Cor. 4.1 optimum", 256, ((8, 8),) * 4), ("D = 128, Cor. 4.1 optimum", 128, ((4, 8),) * 4),
               ("D = 64, Cor. 4.1 optimum", 64, ((2, 8), (3, 8), (3, 8))), ("D = 128, d_m = 4 < d", 128, ((8, 4),) * 4))


def _fit(f: E.ExpSum) -> dict:
    return {"l1": f.l1, "max_alpha": float(max(abs(a) for a in f.alpha)), "method": f.method}


def compute(ctx: Context) -> dict:
    """Fits and builds (no training). Result: `c1` (Lemma B.1's constant, ours), `fits` (T -> m ->
    l1 error and largest coefficient of the uncapped fit), `vandermonde` (T -> eps -> error and
    largest coefficient with m = T + 1 terms), `two_term` (T -> smallest exact l1 error over the
    random rate pairs), `constructions` (label -> per pad: measured (2,inf) error, deterministic
    bound, Theorem 4.1's bound with the lemma's term and with the achieved fit errors)."""
    key = {"what": ctx.experiment.id, **{k: v for k, v in ctx.config.items() if k != "device"}}
    return ctx.unit(key, lambda: _evaluate(ctx))


def _evaluate(ctx: Context) -> dict:
    cfg = ctx.config
    rng = np.random.default_rng(cfg["seed"])
    sups = bounds.bump_derivative_sups(2)
    c1 = {"sup_psi": sups[0], "sup_dpsi": sups[1], "C1": bounds.lemma_b1_constant(1), "C2": bounds.lemma_b1_constant(2)}
    fits = {}
    for T in tqdm(cfg["lags"], desc="delta fits", disable=not ctx.progress, leave=False):
        fits[str(T)] = {str(m): _fit(E.fit_delta(T, m)) for m in cfg["terms"]}
    vand = {str(T): {f"{eps:g}": _fit(E.vandermonde_delta(T, T + 1, eps)) for eps in (0.1, 0.01, 0.001)}
            for T in cfg["lags"]}
    u = rng.uniform(size=(cfg["two_term_rates"], 2))
    v = 10.0 ** (-4 * rng.uniform(size=u.shape))
    rates = np.clip(np.where(rng.uniform(size=u.shape) < 0.5, u, np.where(u < 0.5, v, 1 - v)), 1e-6, 1 - 1e-6)
    two = {str(T): float(E.best_l1_two_terms(T, rates).min()) for T in cfg["lags"] if T >= 2}
    d = cfg["d"]
    rho = [np.eye(d)] * paper.NGRAM_LAGS
    Xs = []
    for _ in range(cfg["n_seqs"]):
        X = rng.normal(size=(d, cfg["L"]))
        Xs.append(math.sqrt(d) * X / np.linalg.norm(X, axis=0))  # on the sphere of radius sqrt(d): identity covariance
    B = math.sqrt(d)
    cons = {}
    for label, D, groups in tqdm(ALLOCATIONS, desc="constructions", disable=not ctx.progress, leave=False):
        gfits = [E.fit_delta(m, H, max_coef=cfg["max_coef"]) for m, (H, _) in enumerate(groups, start=1)]
        P = [C.random_projection(dm, d, rng) for _, dm in groups]
        model = C.build(gfits, groups, rho[:len(groups)], d, D, P)
        rounding = 64 * np.finfo(float).eps * B * sum(abs(a) / -np.expm1(-b) for f in gfits for a, b in zip(f.alpha, f.beta))
        min_d = min(dm for _, dm in groups)
        eps_d = bounds.eps_delta(len(groups), cfg["L"], 0.05, min_d)
        row = {"D": D, "groups": [list(g) for g in groups], "fit_l1": [f.l1 for f in gfits], "rounding": float(rounding),
               "bound_lemma": bounds.thm41_bound([1.0] * 4, groups, d, B).total,
               "bound_lemma_eps": bounds.thm41_bound([1.0] * 4, groups, d, B, eps=eps_d).total,
               "bound_fits": bounds.thm41_bound([1.0] * 4, groups, d, B, attn_errors=[f.l1 for f in gfits]).total}
        for pad in sorted({0, cfg["pad"]}):
            errs = [C.error_per_position(model, X, rho, pad) for X in Xs]
            dets = [C.deterministic_bound(X, gfits, P, rho, pad) for X in Xs]
            row[f"pad{pad}"] = {"error": float(max(e.max() for e in errs)),
                                "det_bound": float(max(b.max() for b in dets)),
                                "worst_excess": float(max((e - b).max() for e, b in zip(errs, dets))),
                                "error_by_t": np.max(errs, axis=0).tolist()}
        cons[label] = row
    proj = {}
    for dm in (8, 16, 32, 48):
        r = C.projection_residuals(64, dm, cfg["proj_draws"], rng)
        proj[str(dm)] = {"mean": float(r.mean()), "q95": float(np.quantile(r, 0.95)), "expected": math.sqrt(1 - dm / 64),
                         "bound95": math.sqrt(1 - dm / 64) * (1 + math.sqrt(2 * math.log(2 / 0.05) / dm))}
    return {"config": cfg, "c1": c1, "fits": fits, "vandermonde": vand, "two_term": two, "constructions": cons,
            "projection": proj}


def claims(result: dict) -> ClaimsTable:
    cfg = result["config"]
    t = ClaimsTable()
    c1 = result["c1"]["C1"]
    t.consistency("1", "Lemma B.1: C(1) = max(sup|Ψ|, sup|Ψ'|) / (1 - 1/e) ≈ 1.3", expected=paper.C1_PAPER,
                  ours=round(c1, 4), holds=1.25 <= c1 <= 1.30, tolerance="in [1.25, 1.30]", source="text")
    ok, total = 0, 0
    for T, row in result["fits"].items():
        for m, f in row.items():
            if int(m) >= int(T) + 1:
                total += 1
                ok += f["l1"] <= bounds.attention_term(int(T), int(m))
    # with m >= T + 1 terms and free coefficients the error can be made arbitrarily small (row 4), so this case of
    # the lemma holds for any bound > 0: the row checks our fits, it cannot test the lemma's 1/m rate
    t.consistency("2", "Lemma B.1 for m >= T + 1 terms: error <= 1.3 e^{0.02T}/m (our fits: pairs (T, m) within the "
                  "bound; any bound > 0 holds here, row 4, so this checks the fits, not the lemma's rate)",
                  expected="all", ours=f"{ok} of {total}", holds=ok == total, tolerance="every pair", asserted=True,
                  source="text")
    if result["two_term"]:
        worst = min(result["two_term"].values())
        lemma = min(bounds.attention_term(int(T), 2) for T in result["two_term"])
        t.add("3", "Lemma B.1 for m = 2 <= T: some 2-term sum has error <= 1.3 e^{0.02T}/2 ≈ 0.68 (best found, T = 2..4)",
              paper=round(lemma, 3), ours=round(worst, 4), holds=worst <= lemma,
              tolerance=f"<= bound ({cfg['two_term_rates']} random rate pairs, exact coefficients)", source="text")
    v = [f["l1"] for row in result["vandermonde"].values() for f in row.values()]
    shrink = all(row["0.001"]["l1"] < row["0.01"]["l1"] < row["0.1"]["l1"] for row in result["vandermonde"].values())
    t.consistency("4", "with m = T + 1 terms and free coefficients the error tends to 0 (eps = 0.1, 0.01, 0.001)",
                  expected="-> 0", ours=f"{min(v):.1e} at eps = 0.001", holds=shrink, tolerance="decreasing in eps",
                  asserted=True)
    pj = result["projection"]
    dev = max(abs(v["mean"] - v["expected"]) for v in pj.values())
    t.consistency("4b", "Lemma B.2's scale: E||(I - P^T P)x|| / ||x|| ≈ sqrt(1 - d_m/D) (D = 64, d_m = 8, 16, 32, 48; "
                  "largest gap; E||(I - P^T P)x||^2 = (1 - d_m/D)||x||^2 is an identity, the lemma's claim is row 4c)",
                  expected="sqrt(1 - d_m/D)", ours=round(dev, 4), holds=dev <= 0.01, tolerance="<= 0.01", asserted=True,
                  source="text")
    q_ok = all(v["q95"] <= v["bound95"] for v in pj.values())
    t.add("4c", "Lemma B.2: the 95% quantile is below sqrt(1 - d_m/D)(1 + sqrt(2 log(2/δ)/d_m)), δ = 0.05",
          paper="<= bound", ours="all d_m" if q_ok else "not all", holds=q_ok, tolerance="every d_m", source="text")
    cons = result["constructions"]
    pad = cfg["pad"]
    det_ok = all(r[f"pad{p}"]["worst_excess"] <= r["rounding"] + 1e-12 for r in cons.values() for p in {0, pad})
    t.consistency("5", "construction: error_t <= the proof's deterministic bound, every position, input and allocation",
                  expected="<= 0 excess", ours="holds" if det_ok else "violated", holds=det_ok,
                  tolerance="float64 rounding of the coefficients", asserted=True)
    if pad > 0:
        lab = ALLOCATIONS[0][0]  # the paper's D = 256 (not the first key: a result read back from the store has them sorted)
        r = cons[lab]
        t.add("6", f"Theorem 4.1 ({lab}, zero-padded past): error <= the bound with the lemma's term",
              paper=round(r["bound_lemma"], 3), ours=round(r[f"pad{pad}"]["error"], 4),
              holds=r[f"pad{pad}"]["error"] <= r["bound_lemma"], tolerance="<= bound", asserted=True, source="text")
        below = sum(r[f"pad{pad}"]["error"] <= r["bound_lemma_eps"] for r in cons.values())
        t.add("7", "Theorem 4.1, every allocation, zero-padded past: error <= bound (with ε_δ, δ = 0.05)",
              paper="all", ours=f"{below} of {len(cons)}", holds=below == len(cons), tolerance="every allocation",
              source="text")
    r = cons[ALLOCATIONS[0][0]]
    t.consistency("8", "without padding the proof's fixed W_V normaliser misses the short windows at the start",
                  expected=f"> {r['bound_lemma']:.2f}", ours=round(r["pad0"]["error"], 2),
                  holds=r["pad0"]["error"] > r["bound_lemma"], tolerance="error above the bound")
    return t


EXPERIMENTS = (Experiment(id="003-allocation/delta-fits-construction", label="Lemma B.1, Theorem 4.1 (App. B, C)",
                          title="Exponential sums for the delta function, and the explicit construction of Theorem 4.1",
                          params=PARAMS, presets=PRESETS, compute=compute),)
