"""App. B.3, Definition B.4, Theorem B.5, Algorithm 4, Corollaries B.6-B.7: Construction III for
general embeddings. The restricted self-incoherence parameters (eps_d, rho(B), gamma(B)) of Gaussian
unit-norm (GUN) and random binary (RBCE) embeddings, and Algorithm 4's exact recovery against the
block size B (h = ceil(m/B)), with X_inv = X^T / mu as in the paper and, for RBCE, a centred variant.
"""

from __future__ import annotations

import math

import numpy as np

from attnlab.core.claims import ClaimsTable, bound
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError, SEED
from attnlab.core.progress import tqdm

from .. import constructions as C
from .. import tasks as T

PARAMS = (
    Param("m", "int", "number of items", min=16, max=8192),
    Param("d_model", "int", "embedding dimension", min=4, max=4096),
    Param("gun_blocks", "int_list", "block sizes B for GUN embeddings", min=1, max=8192),
    Param("rbce_blocks", "int_list", "block sizes B for binary embeddings", min=1, max=8192),
    Param("dks", "int_list", "key widths d_k to sweep", min=1, max=4096),
    Param("c_p", "float", "RBCE density p_B = c_p ln m / d_model", min=0.1, max=100.0),
    Param("gamma_sources", "int", "sources i sampled for the gamma(B) estimate", min=1, max=1024),
    SEED.described("seed"),
)
PRESETS = {
    "ci": {"m": 512, "d_model": 256, "gun_blocks": [16, 32, 64, 128, 256], "rbce_blocks": [16, 64],
           "dks": [64, 128, 256], "c_p": 8.0, "gamma_sources": 8, "seed": 0},
    "full": {"m": 2048, "d_model": 512, "gun_blocks": [16, 32, 64, 128, 256, 512], "rbce_blocks": [4, 8, 16, 32, 64],
             "dks": [64, 128, 256, 512, 1024], "c_p": 8.0, "gamma_sources": 32, "seed": 0},
}


def embeddings(family: str, m: int, d: int, c_p: float, seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(X, X_inv, mu): GUN with X_inv = X^T (mu = 1); RBCE with p_B = c_p ln m / d, mu = d p_B and
    X_inv = X^T / mu (Cor. B.7); 'rbce-centred': X_inv = (X - p_B)^T / (d p_B) (this book's variant)."""
    if family == "gun":
        X = T.gun_embeddings(m, d, T.rng(seed, "X", m, d))
        return X, X.T, 1.0
    p_b = c_p * math.log(m) / d
    X = T.rbce_embeddings(m, d, p_b, T.rng(seed, "Xb", m, d, str(c_p)))
    mu = d * p_b
    return X, ((X - p_b) if family == "rbce-centred" else X).T / mu, mu


def incoherence(X: np.ndarray, X_inv: np.ndarray, blocks: list[int], n_src: int, seed: int) -> dict:
    """Definition B.4 on the embedding: eps_d = max |u_i(i) - 1|; rho(B) = max_i of the B largest
    delta_i(s)^2 (exact maximum over |S| <= B); gamma(B) = max over n_src sampled i, all j, of the
    best |S| <= B sum of delta_i(a) delta_j(a) (exact per pair); and the mean off-diagonal delta."""
    m = len(X)
    U = X @ X_inv
    eps = float(np.abs(np.diag(U) - 1).max())
    D = U - np.eye(m)
    np.fill_diagonal(D, 0.0)
    sq = -np.sort(-(D ** 2), axis=1)
    csq = np.cumsum(sq, axis=1)
    rho = {str(B): float(csq[:, B - 1].max()) for B in blocks}
    src = T.rng(seed, "gamma").choice(m, size=min(n_src, m), replace=False)
    gamma = {str(B): 0.0 for B in blocks}
    for i in src:
        P = D[i][None, :] * D            # (m, m): delta_i(a) delta_j(a) for every j
        P[i] = 0.0
        pos = np.cumsum(-np.sort(-np.clip(P, 0, None), axis=1), axis=1)
        neg = np.cumsum(-np.sort(-np.clip(-P, 0, None), axis=1), axis=1)
        for B in blocks:
            gamma[str(B)] = max(gamma[str(B)], float(max(pos[:, B - 1].max(), neg[:, B - 1].max())))
    return {"eps_d": eps, "rho": rho, "gamma": gamma, "mean_delta": float(D.sum() / (m * m - m)),
            "mu": None}


def _recover(family: str, m: int, d: int, c_p: float, B: int, d_k: int, seed: int) -> dict:
    X, X_inv, mu = embeddings(family, m, d, c_p, seed)
    perm = T.random_permutation(m, T.rng(seed, "perm", m))
    h = math.ceil(m / B)
    srcs = C.blocks(m, h)
    W = C.rademacher_signatures(m, d_k, T.rng(seed, "signatures", m, d_k, h))
    c = C.from_matchings(srcs, [perm[s] for s in srcs], W, X_inv, C.rademacher_tau(d_k))
    sep = C.separation(C.max_scores(c, X), perm, c.tau)
    return {"family": family, "B": B, "h": h, "d_k": d_k, "D_K": h * d_k, "exact": sep["exact"],
            "false_pos": sep["false_pos"], "false_neg": sep["false_neg"], "gap": sep["gap"] / d_k}


def compute(ctx: Context) -> dict:
    """Measures Definition B.4's parameters for GUN and RBCE and runs Algorithm 4 (Rademacher
    signatures, tau = d_k/2) over block sizes and widths; the result holds `incoherence` (per family:
    eps_d, rho(B), gamma(B), mean delta), `runs` (per (family, B, d_k): exact recovery, false
    positives/negatives, normalised gap) and `p_B`, `mu` of the binary family."""
    cfg = ctx.config
    m, d = cfg["m"], cfg["d_model"]
    if d > m or max(cfg["gun_blocks"] + cfg["rbce_blocks"]) > m:
        raise ParameterError(f"parameters 'd_model' {d} and block sizes must be <= m = {m}")
    p_b = cfg["c_p"] * math.log(m) / d
    if p_b >= 1:
        raise ParameterError(f"parameter 'c_p' {cfg['c_p']}: p_B = c_p ln m / d = {p_b:.2f} must be < 1")
    inc = {}
    for fam, blocks in (("gun", cfg["gun_blocks"]), ("rbce", cfg["rbce_blocks"]), ("rbce-centred", cfg["rbce_blocks"])):
        inc[fam] = ctx.unit({"what": "incoherence", "family": fam, "m": m, "d": d, "c_p": cfg["c_p"], "blocks": blocks,
                             "n_src": cfg["gamma_sources"], "seed": cfg["seed"]},
                            lambda fam=fam, blocks=blocks: incoherence(*embeddings(fam, m, d, cfg["c_p"], cfg["seed"])[:2],
                                                                       blocks, cfg["gamma_sources"], cfg["seed"]))
    jobs = [("gun", B, dk) for B in sorted(cfg["gun_blocks"]) for dk in sorted(cfg["dks"])]
    jobs += [(f, B, 256 if 256 in cfg["dks"] else max(cfg["dks"])) for f in ("rbce", "rbce-centred")
             for B in sorted(cfg["rbce_blocks"])]
    runs = [ctx.unit({"what": "recover", "family": f, "m": m, "d": d, "c_p": cfg["c_p"], "B": B, "d_k": dk,
                      "seed": cfg["seed"]}, lambda f=f, B=B, dk=dk: _recover(f, m, d, cfg["c_p"], B, dk, cfg["seed"]))
            for f, B, dk in tqdm(jobs, desc="Algorithm 4", disable=not ctx.progress)]
    return {"config": cfg, "incoherence": inc, "runs": runs, "p_B": p_b, "mu": d * p_b}


def min_budget(result: dict, family: str = "gun") -> dict[int, int | None]:
    """{B: smallest D_K = ceil(m/B) d_k with exact recovery} over the swept widths."""
    out: dict[int, int | None] = {}
    for r in result["runs"]:
        if r["family"] == family:
            best = out.get(r["B"])
            if r["exact"] and (best is None or r["D_K"] < best):
                out[r["B"]] = r["D_K"]
            out.setdefault(r["B"], None)
    return out


def claims(result: dict) -> ClaimsTable:
    cfg = result["config"]
    m, d = cfg["m"], cfg["d_model"]
    t = ClaimsTable()
    g = result["incoherence"]["gun"]
    t.consistency("1", "Cor. B.6: GUN rows are unit-norm, so ε_d = 0 (largest |u_i(i) − 1|)".replace("|", ""),
                  expected=0.0, ours=bound(g["eps_d"], 1e-12), holds=g["eps_d"] < 1e-12, tolerance="< 1e-12", asserted=True)
    ratio = [g["rho"][str(B)] * d / B for B in cfg["gun_blocks"] if B >= d // 2]
    small = [g["rho"][str(B)] * d / B for B in cfg["gun_blocks"] if B < d // 2]
    text2 = "Cor. B.6: ρ(B) ≲ B/d for GUN (ρ(B) d / B for B ≥ d/2; worst case over all i and all S)"
    if ratio:
        # for B ≥ d/2, B/d ≥ 1/2: any ρ(B) ≤ 2 keeps the ratio under 4, so this range of B cannot tell ρ ∝ B/d from
        # a ρ that does not shrink with B at all (the small blocks, row 2b, are where the scaling shows)
        t.inconclusive("2", text2, paper="O(1)", ours=f"{min(ratio):.2f} – {max(ratio):.2f}",
                       why="< 4 here, but at B ≥ d/2 any ρ(B) ≤ 2 passes: it cannot separate ρ ∝ B/d from a constant")
    else:
        t.add("2", text2, paper="O(1)", ours=None, holds=None, tolerance="< 4", source="text")
    if small:
        t.inconclusive("2b", "the same ratio for small blocks B < d/2 (the worst subset picks the largest coherences)",
                       paper="O(1)", ours=f"{min(small):.2f} – {max(small):.2f}",
                       why="for B ≲ log m the worst-case ρ(B) is ≈ (B/d) 2 ln(m/B), a log factor above B/d")
    gam = [g["gamma"][str(B)] / math.sqrt(B / d) for B in cfg["gun_blocks"]]
    t.add("3", "Cor. B.6: γ(B) ≲ √(B/d) for GUN (γ(B) / √(B/d), sampled sources)", paper="O(1)",
          ours=f"{min(gam):.2f} – {max(gam):.2f}", holds=max(gam) < 4, tolerance="< 4", asserted=True, source="text")
    budget = min_budget(result, "gun")
    ok = [B for B, v in budget.items() if v is not None]
    big = max(ok) if ok else None
    t.add("4", f"Cor. B.6: Algorithm 4 with GUN recovers every edge with blocks B = Θ(d) (largest exact B, d = {d})",
          paper=f"Θ({d})", ours=big, holds=big is not None and big >= d // 8, tolerance=f"≥ d/8 = {d // 8}",
          asserted=True, source="text")
    best = min(v for v in budget.values() if v is not None) if ok else None
    if best is not None:
        t.inconclusive("5", f"the cheapest exact GUN build D_K = (m/B) d_k, in units of m ln m / d = {m * math.log(m) / d:.0f}",
                       paper="Θ(1)", ours=best / (m * math.log(m) / d),
                       why="one (m, d): the constant of Θ(m log m / d), not its growth")
    r = result["incoherence"]["rbce"]
    # one μ: the ratio is bounded at this point, but a scaling in μ cannot be read from a single point
    t.inconclusive("6", f"Cor. B.7: ε_d ≲ 1/√μ for RBCE (ε_d √μ, μ = d p_B = {result['mu']:.1f})", paper="O(1)",
                   ours=r["eps_d"] * math.sqrt(result["mu"]),
                   why="< 5 here, but at one μ an ε_d that does not shrink with μ reads the same", source="text")
    t.consistency("7", "RBCE with X_inv = X^T/μ leaves a mean leakage: mean δ_i(s) over s ≠ i equals p_B",
                  expected=result["p_B"], ours=r["mean_delta"], holds=abs(r["mean_delta"] / result["p_B"] - 1) < 0.1,
                  tolerance="within 10%", asserted=True)
    raw = [x for x in result["runs"] if x["family"] == "rbce"]
    cen = [x for x in result["runs"] if x["family"] == "rbce-centred"]
    t.inconclusive("8", f"Cor. B.7: Algorithm 4 with RBCE (X_inv = X^T/μ) recovers every edge for B = Θ(d/log m); "
                        f"exact builds among B ∈ {cfg['rbce_blocks']}", paper="exact", ours=f"{sum(x['exact'] for x in raw)} of {len(raw)}",
                   why="the mean leakage p_B adds ≈ B p_B² d_k to every score; the constants needed are not given")
    t.consistency("9", "this book's centred inverse (X − p_B)^T/μ removes the mean leakage (mean δ, centred)",
                  expected=0.0, ours=result["incoherence"]["rbce-centred"]["mean_delta"],
                  holds=abs(result["incoherence"]["rbce-centred"]["mean_delta"]) < 0.1 * result["p_B"],
                  tolerance="< 0.1 p_B", asserted=True)
    t.consistency("10", "false positives summed over the RBCE block sizes: as stated vs centred", expected="fewer",
                  ours=f"{sum(x['false_pos'] for x in raw)} vs {sum(x['false_pos'] for x in cen)}",
                  holds=sum(x['false_pos'] for x in cen) < sum(x['false_pos'] for x in raw), tolerance="centred fewer")
    t.not_run("11", "m = 2048, d = 512, wider B and d_k grids", paper="D_K = Θ(m log m / d) (GUN), Θ(m log² m / d) (RBCE)",
              command="attnlab run 000-capacity/general-embeddings --scale full --headless")
    return t


EXPERIMENTS = (Experiment(
    id="000-capacity/general-embeddings", label="App. B.3, Theorem B.5, Algorithm 4, Cor. B.6–B.7",
    title="Construction III: restricted self-incoherence, Gaussian and binary embeddings",
    params=PARAMS, presets=PRESETS, compute=compute,
    summary="Block size against incoherence: GUN works with B = Θ(d); binary embeddings need centring."),)
