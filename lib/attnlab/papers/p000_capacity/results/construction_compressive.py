"""Construction II (§4, Algorithm 1, Theorem 4.1 = B.2, Lemma B.3): compressive Gaussian unit-norm
embeddings, max over heads. At a fixed total key dimension D_K, split into h heads of width D_K/h
(blocks of m/h sources each): exact separation at tau = d_k/2, normalised margins, context-level F1,
and the leakage statistics of Lemma B.3 that drive the proof.
"""

from __future__ import annotations

import math

import numpy as np

from attnlab.core.claims import ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError, SEEDS
from attnlab.core.progress import tqdm

from .. import paper
from .. import constructions as C
from .. import tasks as T

PARAMS = (
    Param("m", "int", "number of items", min=16, max=8192),
    Param("d_model", "int", "embedding dimension (m/d_model = the theorem's head count)", min=4, max=4096),
    Param("D_K", "int", "total key dimension, fixed across head counts", min=2, max=16384),
    Param("heads", "int_list", "head counts h (each must divide D_K)", min=1, max=1024),
    SEEDS.described("number of seeds (embeddings, permutation, signatures)"),
    Param("contexts", "int", "sampled contexts (ell = 16, rho = 0.5) for micro-F1", min=10, max=20000),
    Param("lemma_m", "int", "m of the Lemma B.3 check", min=16, max=8192),
    Param("lemma_d", "int", "d_model of the Lemma B.3 check (block size B = d_model)", min=4, max=4096),
)
PRESETS = {
    "ci": {"m": 1024, "d_model": 512, "D_K": 2048, "heads": [1, 2, 4, 8, 16], "seeds": 3,
           "contexts": 2000, "lemma_m": 1024, "lemma_d": 128},
    "full": {"m": 4096, "d_model": 1024, "D_K": 4096, "heads": [1, 2, 4, 8, 16, 32, 64], "seeds": 10,
             "contexts": 2000, "lemma_m": 4096, "lemma_d": 256},
}


def draw(m: int, d: int, seed: int):
    """(X, pi) of one seed: GUN embeddings and a uniform permutation."""
    return T.gun_embeddings(m, d, T.rng(seed, "X", m, d)), T.random_permutation(m, T.rng(seed, "perm", m))


def _cell(m: int, d: int, D_K: int, h: int, seed: int, n_ctx: int) -> dict:
    X, perm = draw(m, d, seed)
    d_k = D_K // h
    c = C.compressive(perm, X, h, C.rademacher_signatures(m, d_k, T.rng(seed, "signatures", m, d_k, h)))
    S = C.max_scores(c, X)
    sep = C.separation(S, perm, c.tau)
    ctxs = T.sample_contexts(perm, n_ctx, paper.CONTEXT_LENGTH, paper.RHO, T.rng(seed, "contexts", m))
    y = C.context_labels(ctxs, perm)
    Sc = S[ctxs[:, :, None], ctxs[:, None, :]]
    truth = np.zeros((m, m), dtype=bool)
    truth[np.arange(m), perm] = True
    return {"h": h, "d_k": d_k, "seed": seed, "exact": sep["exact"], "false_pos": sep["false_pos"],
            "false_neg": sep["false_neg"], "gap": sep["gap"] / d_k, "min_true": sep["min_true"] / d_k,
            "max_false": sep["max_false"] / d_k, "max_abs_false": float(np.abs(S[~truth]).max()) / d_k,
            "f1_tau": C.micro_f1(Sc > c.tau, y)}


def lemma_b3(m: int, d: int, seed: int) -> dict:
    """Lemma B.3 with blocks of size B = d (h = m/d): (2) the leakage mass sum_{s in S} <x_i, x_s>^2
    for S in {V_k minus i, T_k}, its max (claimed <= C2 = 2) and mean (= B/d in expectation);
    (3) the cross term max |sum_{s in V_k} delta_i(s) delta_j(pi(s))| (claimed <= C3 sqrt(log m/d)),
    which is E[N3 | X]/d_k in the proof."""
    X, perm = draw(m, d, seed)
    D = X @ X.T - np.eye(m)
    mx, means, cross = 0.0, [], 0.0
    for V in C.blocks(m, m // d):
        Tk = perm[V]
        for S in (V, Tk):
            sq = (D[:, S] ** 2).sum(axis=1)
            mx, means = max(mx, float(sq.max())), means + [float(sq.mean())]
        cross = max(cross, float(np.abs(D[:, V] @ D[:, Tk].T).max()))
    return {"m": m, "d": d, "B": d, "max_leak": mx, "mean_leak": float(np.mean(means)), "cross": cross,
            "C3": cross / math.sqrt(math.log(m) / d)}


def compute(ctx: Context) -> dict:
    """Builds Algorithm 1 with h heads of width D_K/h for every head count and seed, evaluates the
    full m x m max-over-heads scores and sampled contexts; the result holds `cells` (per (h, seed):
    exact recovery at tau = d_k/2, false positives, normalised gap (min true - max false)/d_k, min true
    and max false score over d_k, micro-F1 at tau on contexts) and `lemma` (Lemma B.3 statistics)."""
    cfg = ctx.config
    bad = [h for h in cfg["heads"] if cfg["D_K"] % h or h > cfg["m"]]
    if bad:
        raise ParameterError(f"parameter 'heads': {bad} do not divide D_K = {cfg['D_K']} (or exceed m); "
                             "every head count must divide D_K")
    if cfg["d_model"] > cfg["m"] or cfg["lemma_d"] > cfg["lemma_m"] or cfg["lemma_m"] % cfg["lemma_d"]:
        raise ParameterError(f"parameters 'd_model' {cfg['d_model']} / 'lemma_d' {cfg['lemma_d']}: need d_model <= m "
                             "and lemma_d dividing lemma_m")
    jobs = [(h, s) for h in sorted(cfg["heads"]) for s in range(cfg["seeds"])]
    cells = [ctx.unit({"what": "cell", "m": cfg["m"], "d": cfg["d_model"], "D_K": cfg["D_K"], "h": h, "seed": s,
                       "contexts": cfg["contexts"]},
                      lambda h=h, s=s: _cell(cfg["m"], cfg["d_model"], cfg["D_K"], h, s, cfg["contexts"]))
             for h, s in tqdm(jobs, desc="Construction II", disable=not ctx.progress)]
    lemma = ctx.unit({"what": "lemma_b3", "m": cfg["lemma_m"], "d": cfg["lemma_d"], "seed": 0},
                     lambda: lemma_b3(cfg["lemma_m"], cfg["lemma_d"], 0))
    return {"config": cfg, "cells": cells, "lemma": lemma}


def by_head(result: dict, key: str) -> dict[int, list]:
    """{h: [value per seed]} of one field of the cells."""
    out: dict[int, list] = {}
    for c in result["cells"]:
        out.setdefault(c["h"], []).append(c[key])
    return out


def claims(result: dict) -> ClaimsTable:
    cfg = result["config"]
    m, d, D_K = cfg["m"], cfg["d_model"], cfg["D_K"]
    n = cfg["seeds"]
    t = ClaimsTable()
    exact = {h: sum(v) for h, v in by_head(result, "exact").items()}
    gap = {h: float(np.mean(v)) for h, v in by_head(result, "gap").items()}
    h_thm = m // d
    multi = [h for h in exact if h > 1]
    best = max(multi, key=lambda h: (exact[h], gap[h]))
    if h_thm in exact:
        t.add("1", f"Theorem 4.1: h = m/d = {h_thm} heads (block size B = d = {d}), d_k = {D_K // h_thm}, τ = d_k/2 "
                   f"separates every pair (seeds exact, of {n})", paper=n, ours=exact[h_thm], holds=exact[h_thm] == n,
              tolerance="all seeds", asserted=True, source="text")
    t.add("2", f"§5: at the same D_K = {D_K} a single head does not separate at τ = d_k/2 (seeds exact, of {n})",
          paper=0, ours=exact[1], holds=exact[1] <= n // 5, tolerance=f"≤ {n // 5}", asserted=True, source="text")
    t.add("3", f"§5: the best multi-head split (h = {best}) separates in every seed", paper=n, ours=exact[best],
          holds=exact[best] == n, tolerance="all seeds", asserted=True, source="text")
    adv = max(gap[h] for h in multi) - gap[1]
    t.add("4", "§5: more heads localise the leakage: normalised margin (min true − max false)/d_k, best h minus h = 1",
          paper="> 0", ours=adv, holds=adv >= 0.08, tolerance="≥ 0.08", asserted=True, source="text")
    f1 = {h: float(np.mean(v)) for h, v in by_head(result, "f1_tau").items()}
    # exact on the full m × m score matrix implies exact in every context (restriction only removes
    # distractors): a logical consequence checked on sampled contexts, so a consistency check
    t.consistency("5", f"monotonicity: an exact build is exact in every context, micro-F1 at τ = d_k/2 (ℓ = 16, ρ = 0.5), "
                       f"h = {best} (implied by exactness on the full score matrix)",
                  expected=1.0, ours=f1[best], holds=f1[best] == 1.0, tolerance="= 1",
                  asserted=True, source="text")
    if h_thm in exact:
        tr = min(by_head(result, "min_true")[h_thm])
        fa = max(by_head(result, "max_abs_false")[h_thm])
        lem = result["lemma"]
        need = (16 * lem["C3"]) ** 2 * math.log(m)
        t.inconclusive("6", f"proof of Thm 4.1, (7): true scores > 3d_k/4 and non-edge scores within ±d_k/4 (h = {h_thm}); "
                            "min true / d_k and max abs(false) / d_k", paper="0.75 / 0.25", ours=f"{tr:.2f} / {fa:.2f}",
                       why=f"needs C3 √(ln m/d) ≤ 1/16, i.e. d ≥ {need:.0f}; here d = {d}")
    lem = result["lemma"]
    t.add("7", f"Lemma B.3(2): max over i, k, S ∈ {{V_k∖i, T_k}} of ‖δ_i,S‖² ≤ C2 = 2 (m = {lem['m']}, B = d = {lem['d']})",
          paper=paper.LEMMA_B3_C2, ours=lem["max_leak"], holds=lem["max_leak"] <= paper.LEMMA_B3_C2,
          tolerance="≤ 2", asserted=True, source="text")
    # E‖δ_i,S‖² = |S|/d follows from the embeddings' distribution: an identity checked by sampling
    t.consistency("8", "Lemma B.3 proof: the mean leakage mass is (size of S)/d = 1 (an expectation the embeddings' "
                       "distribution fixes, checked by sampling)", expected=1.0, ours=lem["mean_leak"],
                  holds=abs(lem["mean_leak"] - 1) <= 0.05, tolerance="within 5%", asserted=True, source="text")
    t.consistency("9", "Lemma B.3(3): the cross term max abs(Σ δ_i(s) δ_j(π(s))) in units of √(ln m / d) (the constant C3)",
                  expected="O(1)", ours=lem["C3"], holds=lem["C3"] < 5, tolerance="< 5")
    t.not_run("10", "the same at m = 4096, d = 1024, h up to 64, 10 seeds", paper="multi-head exact",
              command="attnlab run 000-capacity/construction-compressive --scale full --headless")
    return t


EXPERIMENTS = (Experiment(
    id="000-capacity/construction-compressive", label="§4, Algorithm 1, Theorem 4.1, Lemma B.3",
    title="Construction II: compressive embeddings, exact separation and margins against h",
    params=PARAMS, presets=PRESETS, compute=compute,
    summary="At a fixed D_K, splitting the de-embedded signatures over more heads separates all pairs."),)
