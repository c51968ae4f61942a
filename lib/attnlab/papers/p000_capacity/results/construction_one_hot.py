"""Construction I (§4, Algorithm 3, Theorem B.1): one-hot inputs, a permutation graph, one head.

Exact recovery of all m^2 ordered pairs against d_k for Rademacher (tau = d_k/2) and Bernoulli(p)
(tau = (p+p^2)/2 d_k) signatures, the growth of the smallest sufficient d_k with ln m, the score
distribution, and the constants of Theorem B.1's union bound.
"""

from __future__ import annotations

import math

import numpy as np

from attnlab.core.claims import ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError, SEED
from attnlab.core.progress import tqdm

from .. import bounds, paper
from .. import constructions as C
from .. import tasks as T

PARAMS = (
    Param("ms", "int_list", "vocabulary sizes m (d_model = m, one-hot)", min=8, max=4096),
    Param("dks", "int_list", "key widths d_k to sweep", min=1, max=2048),
    Param("trials", "int", "independent draws (permutation, signatures) per (m, d_k)", min=1, max=100),
    Param("p", "float", "Bernoulli signature density (the paper: 1/4)", min=0.01, max=0.49),
    SEED.described("base seed"),
)
PRESETS = {
    "ci": {"ms": [64, 256, 1024], "dks": [16, 32, 48, 64, 96, 128, 192, 256, 384], "trials": 10,
           "p": paper.BERNOULLI_P, "seed": 0},
    "full": {"ms": [64, 256, 1024, 4096], "dks": [16, 32, 48, 64, 96, 128, 160, 192, 256, 320, 384, 512],
             "trials": 20, "p": paper.BERNOULLI_P, "seed": 0},
}
FAMILIES = ("rademacher", "bernoulli")


def build(family: str, m: int, d_k: int, p: float, seed: int, trial: int):
    """The permutation and Construction I of one trial (seeded from (seed, trial, m, d_k) only)."""
    perm = T.random_permutation(m, T.rng(seed, "perm", m, trial))
    g = T.rng(seed, "signatures", family, m, d_k, trial)
    if family == "rademacher":
        W = C.rademacher_signatures(m, d_k, g)
        return perm, C.one_hot(perm, W, C.rademacher_tau(d_k))
    W = C.bernoulli_signatures(m, d_k, p, g)
    return perm, C.one_hot(perm, W, C.bernoulli_tau(d_k, p))


def _cell(family: str, m: int, d_k: int, p: float, seed: int, trials: int) -> dict:
    exact, gaps = 0, []
    for t in range(trials):
        perm, c = build(family, m, d_k, p, seed, t)
        sep = C.separation(C.max_scores(c, None), perm, c.tau)
        exact += sep["exact"]
        gaps.append(sep["gap"] / d_k)
    return {"family": family, "m": m, "d_k": d_k, "exact": exact, "trials": trials,
            "gap_mean": float(np.mean(gaps)), "gap_min": float(np.min(gaps))}


def _histogram(m: int, d_k: int, seed: int) -> dict:
    """Score histogram of one Rademacher build: true scores and off-target scores (integers)."""
    perm, c = build("rademacher", m, d_k, 0.25, seed, 0)
    S = C.max_scores(c, None)
    truth = np.zeros((m, m), dtype=bool)
    truth[np.arange(m), perm] = True
    off = S[~truth]
    values, counts = np.unique(off, return_counts=True)
    return {"m": m, "d_k": d_k, "true_min": float(S[truth].min()), "true_max": float(S[truth].max()),
            "off_values": values.tolist(), "off_counts": counts.tolist(),
            "off_mean": float(off.mean()), "off_std": float(off.std()), "off_max": float(off.max())}


def _theorem_dk(m: int, p: float, seed: int, trials: int) -> dict:
    """Bernoulli(p) at the proof's d_k = ceil(C ln m) with the corrected C (bounds.theorem_b1_C)."""
    d_k = math.ceil(bounds.theorem_b1_C(p)["needed"] * math.log(m))
    return _cell("bernoulli", m, d_k, p, seed + 1000, trials)


def _contexts(m: int, d_k: int, seed: int) -> dict:
    """Monotonicity under context restriction: an exact build has F1 = 1 on sampled contexts."""
    perm, c = build("rademacher", m, d_k, 0.25, seed, 0)
    S = C.max_scores(c, None)
    sep = C.separation(S, perm, c.tau)
    ctxs = T.sample_contexts(perm, 500, 16, 0.5, T.rng(seed, "contexts", m))
    pred = S[ctxs[:, :, None], ctxs[:, None, :]] > c.tau
    y = C.context_labels(ctxs, perm)
    return {"m": m, "d_k": d_k, "exact": sep["exact"], "f1": C.micro_f1(pred, y),
            "positives": int(y.sum()), "pairs": int(y.size)}


def compute(ctx: Context) -> dict:
    """Builds Construction I for every (family, m, d_k, trial) and checks exact recovery on the
    full m x m score matrix; the result holds `grid` (exact-recovery counts and normalised gaps
    (min true - max false)/d_k per cell), `hist` (one score histogram), `theorem` (Bernoulli at the
    proof's d_k) and `contexts` (F1 on sampled contexts of an exact build)."""
    cfg = ctx.config
    if len(set(cfg["ms"])) != len(cfg["ms"]) or len(set(cfg["dks"])) != len(cfg["dks"]):
        raise ParameterError(f"parameters 'ms' {cfg['ms']} and 'dks' {cfg['dks']}: values must be distinct")
    cells = [(f, m, dk) for f in FAMILIES for m in sorted(cfg["ms"]) for dk in sorted(cfg["dks"])]
    grid = [ctx.unit({"what": "cell", "family": f, "m": m, "d_k": dk, "p": cfg["p"], "seed": cfg["seed"],
                      "trials": cfg["trials"]},
                     lambda f=f, m=m, dk=dk: _cell(f, m, dk, cfg["p"], cfg["seed"], cfg["trials"]))
            for f, m, dk in tqdm(cells, desc="Construction I", disable=not ctx.progress)]
    m_hist = sorted(cfg["ms"])[-1]
    hist = ctx.unit({"what": "hist", "m": m_hist, "d_k": 128, "seed": cfg["seed"]},
                    lambda: _histogram(m_hist, 128, cfg["seed"]))
    m_thm = sorted(cfg["ms"])[0]
    theorem = ctx.unit({"what": "theorem", "m": m_thm, "p": cfg["p"], "seed": cfg["seed"]},
                       lambda: _theorem_dk(m_thm, cfg["p"], cfg["seed"], 3))
    contexts = ctx.unit({"what": "contexts", "m": 256, "d_k": 128, "seed": cfg["seed"]},
                        lambda: _contexts(256, 128, cfg["seed"]))
    return {"config": cfg, "grid": grid, "hist": hist, "theorem": theorem, "contexts": contexts}


def min_dk(result: dict, family: str, m: int, rate: float = 0.9) -> int | None:
    """Smallest swept d_k with exact recovery in >= rate of the trials (None if none)."""
    ok = [c["d_k"] for c in result["grid"] if c["family"] == family and c["m"] == m
          and c["exact"] >= rate * c["trials"]]
    return min(ok) if ok else None


def claims(result: dict) -> ClaimsTable:
    cfg = result["config"]
    t = ClaimsTable()
    ms = sorted(cfg["ms"])
    lo, hi = ms[0], ms[-1]
    d_lo, d_hi = min_dk(result, "rademacher", lo), min_dk(result, "rademacher", hi)
    ratio = d_hi / d_lo if d_lo and d_hi else float("nan")
    log_ratio = math.log(hi) / math.log(lo)
    t.add("1", f"d_k = Θ(log m) suffices with one head (Rademacher, τ = d_k/2): smallest d_k with exact recovery "
               f"in ≥ 90% of trials, ratio m = {hi} vs m = {lo}, against ln-ratio {log_ratio:.2f} (m-ratio {hi // lo})",
          paper=log_ratio, ours=ratio, holds=ratio <= 1.5 * log_ratio, tolerance="≤ 1.5 × ln-ratio",
          asserted=True, source="text")
    d_hb = min_dk(result, "bernoulli", lo)
    d_hb_hi = min_dk(result, "bernoulli", hi)
    ratio_b = d_hb_hi / d_hb if d_hb and d_hb_hi else float("nan")
    t.add("2", f"the same for Bernoulli({cfg['p']:g}) signatures (Algorithm 3, τ = (p+p²)d_k/2), m = {hi} vs {lo}",
          paper=log_ratio, ours=ratio_b, holds=ratio_b <= 1.5 * log_ratio, tolerance="≤ 1.5 × ln-ratio",
          asserted=True, source="text")
    hb = bounds.hoeffding_dk(hi, 0.1)
    cells_h = [c for c in result["grid"] if c["family"] == "rademacher" and c["m"] == hi and c["d_k"] >= hb]
    rate = (sum(c["exact"] for c in cells_h) / sum(c["trials"] for c in cells_h)) if cells_h else None
    # a proven bound checked by simulation far above the d_k exact recovery needs (row 1): it cannot fail
    # while the derivation is right, so it is a consistency check, not a reproduction
    if rate is None:
        t.add("3", f"Hoeffding union bound (our derivation from §4's sketch, written out below the table): at "
                   f"d_k ≥ 8 ln(10 m(m−1)) = {hb} (m = {hi}) the failure probability is ≤ 0.1", paper=0.9, ours=None,
              holds=None, tolerance="exact-recovery rate ≥ 0.9 (no d_k of the grid reaches the bound)", source="derived")
    else:
        t.consistency("3", f"Hoeffding union bound (our derivation from §4's sketch, written out below the table): at "
                           f"d_k ≥ 8 ln(10 m(m−1)) = {hb} (m = {hi}) the failure probability is ≤ 0.1 (a proven bound, "
                           "simulated far above the d_k exact recovery needs)", expected=0.9, ours=rate,
                      holds=rate >= 0.9, tolerance="exact-recovery rate ≥ 0.9", asserted=True, source="derived")
    th = result["theorem"]
    # Theorem B.1 simulated at its own (huge) d_k: a proven statement far above the d_k rows 1-2 measure, so a
    # consistency check of the construction's code, not a reproduction
    t.consistency("4", f"Theorem B.1: Bernoulli(1/4) at d_k = ⌈C ln m⌉ = {th['d_k']} (m = {th['m']}) recovers every edge "
                       "(a proven statement simulated far above the d_k exact recovery needs)",
                  expected=1.0, ours=th["exact"] / th["trials"], holds=th["exact"] == th["trials"],
                  tolerance="all trials exact", asserted=True, source="text")
    Cs = bounds.theorem_b1_C(cfg["p"])
    c1, c2 = bounds.chernoff_constants(cfg["p"])
    ratio_paper = (1024 * 1024 ** (-c1 * Cs["paper"]) + 1024 ** 2 * 1024 ** (-c2 * Cs["paper"])) / 1024 ** -3.0
    t.consistency("5", f"Theorem B.1's rule C > max{{3/c1, 2/c2}} = {Cs['paper']:.1f} (p = 1/4) makes the union "
                       "bound m e^{−c1 d_k} + m² e^{−c2 d_k} at most m⁻³ (ratio bound / m⁻³ at m = 1024)",
                  expected=1.0, ours=ratio_paper, holds=ratio_paper <= 1, tolerance="ratio ≤ 1")
    fixed = max((mm * mm ** (-c1 * Cs["needed"]) + mm ** 2 * mm ** (-c2 * Cs["needed"])) / mm ** -3.0
                for mm in (64, 256, 1024, 4096))
    t.consistency("6", f"with C > max{{4/c1, 5/c2}} = {Cs['needed']:.1f} the bound is ≤ 2 m⁻³ (the corrected rule; "
                       "largest ratio to m⁻³)", expected=2.0, ours=fixed, holds=fixed <= 2 + 1e-9,
                  tolerance="ratio ≤ 2", asserted=True)
    h = result["hist"]
    t.consistency("7", f"true-edge score S_i,π(i) = d_k exactly (Rademacher, m = {h['m']}, d_k = {h['d_k']})",
                  expected=h["d_k"], ours=h["true_min"], holds=h["true_min"] == h["true_max"] == h["d_k"],
                  asserted=True)
    z = h["off_std"] / math.sqrt(h["d_k"])
    # a sum of d_k independent ±1 products has variance d_k exactly: an identity checked by sampling
    t.consistency("8", "off-target scores are O(√d_k): standard deviation / √d_k (sum of d_k Rademacher products; "
                       "its variance is d_k exactly, an identity checked by sampling)",
                  expected=1.0, ours=z, holds=abs(z - 1) <= 0.05, tolerance="within 5% of 1", asserted=True,
                  source="text")
    cx = result["contexts"]
    t.consistency("9", f"monotonicity under context restriction: an exact build (m = {cx['m']}) has micro-F1 = 1 on "
                       "500 sampled contexts (ℓ = 16, ρ = 0.5)", expected=1.0, ours=cx["f1"],
                  holds=(not cx["exact"]) or cx["f1"] == 1.0, asserted=True)
    if 4096 not in cfg["ms"]:
        t.not_run("10", "the same growth up to m = 4096", paper="Θ(log m)",
                  command="attnlab run 000-capacity/construction-one-hot --scale full --headless")
    return t


EXPERIMENTS = (Experiment(
    id="000-capacity/construction-one-hot", label="§4, Algorithm 3, Theorem B.1",
    title="Construction I: one-hot inputs, one head, d_k = Θ(log m)",
    params=PARAMS, presets=PRESETS, compute=compute,
    summary="Exact recovery of a permutation graph by one head of width Θ(log m), two signature families."),)
