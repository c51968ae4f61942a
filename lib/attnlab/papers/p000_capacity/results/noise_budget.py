"""§5, Eqs. (1)-(2): the de-embedding noise N3 grows with the block size B a head serves, and the
single- vs multi-head key budget that follows. N3 is measured term by term on Algorithm 1's head
(GUN embeddings, Rademacher signatures) for blocks of B = d/2 ... m sources.
"""

from __future__ import annotations

import math

import numpy as np

from attnlab.core.claims import ClaimsTable, bound
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError, SEED

from .. import bounds
from .. import constructions as C
from .. import tasks as T

PARAMS = (
    Param("m", "int", "number of items", min=16, max=8192),
    Param("d_model", "int", "embedding dimension", min=4, max=4096),
    Param("d_k", "int", "per-head key width", min=1, max=1024),
    Param("blocks", "int_list", "block sizes B (sources served by one head)", min=1, max=8192),
    Param("sources", "int", "sources per block whose scores are measured", min=4, max=4096),
    SEED.described("seed"),
)
PRESETS = {
    "ci": {"m": 2048, "d_model": 128, "d_k": 64, "blocks": [64, 128, 256, 512, 1024, 2048], "sources": 256,
           "seed": 0},
    "full": {"m": 8192, "d_model": 256, "d_k": 128, "blocks": [128, 256, 512, 1024, 2048, 4096, 8192],
             "sources": 1024, "seed": 0},
}


def n3_terms(m: int, d: int, d_k: int, B: int, n_src: int, seed: int) -> dict:
    """One head serving the block V = range(B) (targets pi(V)): for n_src sources i in V and every
    target j, the four terms of the proof of Theorem B.2, Signal + N1 + N2 + N3 = S^(k)_ij
    (checked), and the statistics of N3: std and mean over all (i, j), and std over j of
    N3 - E[N3 | X] with E[N3 | X] = d_k <delta_i,V, delta_j,pi(V)>."""
    X = T.gun_embeddings(m, d, T.rng(seed, "X", m, d))
    perm = T.random_permutation(m, T.rng(seed, "perm", m))
    W = C.rademacher_signatures(m, d_k, T.rng(seed, "signatures", m, d_k))
    D = X @ X.T - np.eye(m)
    V = np.arange(B)
    Tk = perm[V]
    src = V[:n_src]
    # query side: u_i W'_Q = w_pi(i) + sum_{s in V} delta_i(s) w_pi(s); key side: u_j W'_K = w_j 1[j in T] + sum_t delta_j(t) w_t
    qd = D[np.ix_(src, V)] @ W[Tk]          # (n_src, d_k)
    kd = D[:, Tk] @ W[Tk]                   # (m, d_k)
    in_T = np.zeros(m, dtype=bool)
    in_T[Tk] = True
    wq = W[perm[src]]
    wk = W * in_T[:, None]
    signal, n1, n2, n3 = wq @ wk.T, wq @ kd.T, qd @ wk.T, qd @ kd.T
    c = C.from_matchings([V], [Tk], W, X.T, d_k / 2)
    S = C.head_scores(c, X, 0, rows=src)
    err = float(np.abs(signal + n1 + n2 + n3 - S).max() / np.abs(S).max())
    mean = d_k * (D[np.ix_(src, V)] @ D[:, Tk].T)
    leak = (D[np.ix_(src, V)] ** 2).sum(axis=1)
    return {"B": B, "n3_std": float(n3.std()), "n3_centred_std": float((n3 - mean).std()),
            "n3_mean_std": float(mean.std()), "n3_max": float(np.abs(n3).max()),
            "n1_std": float(n1.std()), "n2_std": float(n2.std()), "leak_mean": float(leak.mean()),
            "decomposition_error": err}


def compute(ctx: Context) -> dict:
    """Measures the four terms of the score decomposition for each block size B; the result holds
    `rows` (per B: std of N3, of its centred part and of its conditional mean, std of N1 and N2, the
    mean leakage mass and the relative error of Signal + N1 + N2 + N3 against the head's scores)."""
    cfg = ctx.config
    bad = [B for B in cfg["blocks"] if B > cfg["m"] or B < cfg["sources"] // 64]
    if bad or cfg["d_model"] > cfg["m"]:
        raise ParameterError(f"parameter 'blocks': {bad} must be <= m = {cfg['m']} (and d_model <= m)")
    rows = [ctx.unit({"what": "n3", "m": cfg["m"], "d": cfg["d_model"], "d_k": cfg["d_k"], "B": B,
                      "sources": min(cfg["sources"], B), "seed": cfg["seed"]},
                     lambda B=B: n3_terms(cfg["m"], cfg["d_model"], cfg["d_k"], B, min(cfg["sources"], B), cfg["seed"]))
            for B in sorted(cfg["blocks"])]
    return {"config": cfg, "rows": rows}


def slope(result: dict, key: str = "n3_std", min_B: int | None = None) -> float:
    """Least-squares slope of log(key) against log B (blocks B >= min_B, default d_model)."""
    d = result["config"]["d_model"]
    rows = [r for r in result["rows"] if r["B"] >= (min_B or d)]
    return float(np.polyfit(np.log([r["B"] for r in rows]), np.log([r[key] for r in rows]), 1)[0])


def claims(result: dict) -> ClaimsTable:
    cfg = result["config"]
    m, d, d_k = cfg["m"], cfg["d_model"], cfg["d_k"]
    t = ClaimsTable()
    err = max(r["decomposition_error"] for r in result["rows"])
    t.consistency("1", "Signal + N1 + N2 + N3 equals the head's score S^(k) (proof of Thm B.2), max relative error",
                  expected=0.0, ours=bound(err, 1e-12), holds=err < 1e-12, tolerance="< 1e-12", asserted=True)
    s = slope(result)
    t.add("2", f"Eq. (1): N3 grows linearly in the block size B (log–log slope of std N3 against B, B ≥ d = {d})",
          paper=1.0, ours=s, holds=0.85 <= s <= 1.15, tolerance="0.85 – 1.15", asserted=True, source="text")
    ratios = [r["n3_std"] / bounds.n3_scale(r["B"], d, d_k) for r in result["rows"] if r["B"] >= 2 * d]
    t.add("3", "Eq. (1) with constant 1: std(N3) / ((B/d) √d_k), B ≥ 2d", paper=1.0,
          ours=f"{min(ratios):.2f} – {max(ratios):.2f}" if ratios else None,
          holds=(0.9 <= min(ratios) and max(ratios) <= 1.4) if ratios else None,
          tolerance="0.9 – 1.4", asserted=bool(ratios), source="text")
    lk = [r["leak_mean"] / ((r["B"] - 1) / d) for r in result["rows"]]
    # E‖δ‖² over a block = (B − 1)/d follows from the embeddings' distribution: an identity checked by sampling
    t.consistency("4", "Lemma B.3 proof: the mean leakage mass over a block is (B − 1)/d (ratio, all B; an expectation "
                       "the embeddings' distribution fixes, checked by sampling)", expected=1.0,
                  ours=f"{min(lk):.3f} – {max(lk):.3f}", holds=all(abs(x - 1) < 0.1 for x in lk),
                  tolerance="within 10%", asserted=True, source="text")
    big = [r for r in result["rows"] if r["B"] >= 8 * d]
    n12 = max(max(r["n1_std"], r["n2_std"]) / r["n3_std"] for r in big) if big else None
    t.add("5", "§5: N3 is the dominant noise term for large blocks: max std(N1, N2) / std(N3), B ≥ 8d",
          paper="< 1", ours=n12, holds=None if n12 is None else n12 < 0.5, tolerance="< 0.5", asserted=big != [],
          source="text")
    single, multi = bounds.budget_single(m, d), bounds.budget_multi(m, d)
    t.consistency("6", f"Eq. (2) and §5: D_K(single, B = m) / D_K(multi, B = d, h = m/d) = m/d = {m // d}",
                  expected=m / d, ours=single / multi, holds=abs(single / multi - m / d) < 1e-9, asserted=True)
    lhs = bounds.n3_scale(d, d, d_k, m)
    t.consistency("7", "Eq. (1) at B = d is √(d_k log m); §5 prints Θ(√d_k log m) (ratio of the two at this m, d_k)",
                  expected=1.0, ours=(math.sqrt(d_k) * math.log(m)) / lhs, holds=False,
                  tolerance="typo: the text's form is larger by √(ln m)")
    return t


EXPERIMENTS = (Experiment(
    id="000-capacity/noise-budget", label="§5, Eqs. (1)–(2)",
    title="The de-embedding noise N3 grows with the block size; single- vs multi-head budgets",
    params=PARAMS, presets=PRESETS, compute=compute,
    summary="std(N3) ≈ (B/d)√d_k, so one head serving all m items needs (m/d)× the multi-head budget."),)
