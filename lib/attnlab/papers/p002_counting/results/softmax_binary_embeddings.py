"""§5.2 and App. B.3.1 of paper 002: the bos+sftm construction (p = 1) with binary token codes
and an inverse temperature κ, built as weights of the plain forward pass (float64) and checked.

Units of work in the result store: one per (frame, variant, κ) accuracy point of the sweep, one
per exhaustive (T, L) check, and one per T of the precision study (the d' = 2 frame in float32).
"""

from __future__ import annotations

import math

import numpy as np

from attnlab.core.claims import ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError, SEED
from attnlab.core.progress import tqdm

from .. import binary as B
from .. import bounds, paper, tasks

PARAMS = (
    Param("T", "int", "alphabet size (paper 32)", min=3, max=1024),
    Param("L", "int", "sequence length (paper 10)", min=3, max=64),
    Param("alpha", "float", "the α coordinate of the token embeddings (paper 0.01)", min=1e-8, max=0.5),
    Param("kappas", "float_list", "inverse temperatures of the binary-code sweep", min=1e-3, max=1e9),
    Param("circle_kappas", "float_list", "inverse temperatures for the d' = 2 frame", min=1e-3, max=1e12),
    Param("circle_alpha", "float", "α of the d' = 2 frame construction (authors: 1e-5)", min=1e-9, max=0.5),
    Param("exhaustive", "int_rows", "[T, L] checked on all T^L sequences at 1.01 κ* (and 0.99 κ*)", min=3, max=64, width=2),
    Param("precision_T", "int_list", "alphabet sizes of the d' = 2 float32 study (κ = 2 κ*)", min=3, max=1_000_000),
    Param("n_sampled", "int", "code-sampler sequences added to all two-token sequences", min=10, max=1_000_000),
    SEED.described("sampler seed"),
)


def _test_set(cfg: dict) -> np.ndarray:
    T, L = cfg["T"], cfg["L"]
    return np.concatenate([tasks.sample_code(cfg["n_sampled"], T, L, cfg["seed"]), tasks.two_token_sequences(T, L)])


def _point(c: B.BinaryConstruction, x: np.ndarray) -> dict:
    r = B.check(c, x)
    r["accuracy_float32"] = B.accuracy_float32(c, x)
    r["separation"] = B.separation(c.kappa, c.eps, x.shape[1], c.alpha)
    return r


def compute_binary(ctx: Context) -> dict:
    """Builds the binary-code and d' = 2 constructions (no training) and checks them: one stored
    unit per (frame, variant, κ) point, per exhaustive (T, L, κ/κ*) check and per T of the float32
    study. The result holds config, d_prime, the ε and κ* of the codes (actual and the paper's
    bound) and of the circle frame, dims (eq. 93 and the variants' d), sweep, circle, exhaustive
    and precision (one row per unit: accuracy, float32 accuracy, separation of the γ ranges)."""
    cfg = ctx.config
    T, L, alpha = cfg["T"], cfg["L"], cfg["alpha"]
    for Te, Le in cfg["exhaustive"]:
        if Te ** Le > 2_000_000:
            raise ParameterError(f"parameter 'exhaustive': T^L = {Te ** Le} for [{Te}, {Le}] is too many (max 2e6)")
    V = B.binary_codes(T)
    eps, eps_paper = B.epsilon(V), B.paper_epsilon(T)
    Vc = B.circle_frame(T)
    eps_c = B.epsilon(Vc)
    out = {"config": cfg, "d_prime": B.code_dim(T), "eps": eps, "eps_paper": eps_paper, "eps_circle": eps_c,
           "kappa_star": B.kappa_threshold(eps, L), "kappa_star_paper": B.kappa_threshold(eps_paper, L),
           "kappa_star_circle": B.kappa_threshold(eps_c, L),
           "dims": {"eq93": bounds.min_d_formula("softmax_binary", T, L), "d'+2": B.model_dim(T, "d'+2"),
                    "d'+1": B.model_dim(T, "d'+1"), "circle": B.model_dim(T, "d'+2", "circle")}}
    base = {"T": T, "L": L, "n": cfg["n_sampled"], "seed": cfg["seed"]}
    x = None
    kap = sorted(set(cfg["kappas"]) | {out["kappa_star"] * 0.999, out["kappa_star"] * 1.001, out["kappa_star_paper"]})
    sweep = []
    jobs = [(v, k) for v in B.VARIANTS for k in kap]
    for variant, k in tqdm(jobs, desc="κ sweep", disable=not ctx.progress):
        key = {**base, "frame": "binary", "variant": variant, "kappa": float(k), "alpha": alpha}

        def fn():
            nonlocal x
            x = _test_set(cfg) if x is None else x
            return _point(B.build(T, L, k, alpha, variant), x)
        sweep.append({**key, **ctx.unit(key, fn)})
    circle = []
    for k in cfg["circle_kappas"]:
        key = {**base, "frame": "circle", "variant": "d'+2", "kappa": float(k), "alpha": cfg["circle_alpha"]}

        def fn():
            nonlocal x
            x = _test_set(cfg) if x is None else x
            return _point(B.build(T, L, k, cfg["circle_alpha"], "d'+2", "circle"), x)
        circle.append({**key, **ctx.unit(key, fn)})
    exhaustive = []
    for Te, Le in cfg["exhaustive"]:
        for variant in B.VARIANTS:
            ks = B.kappa_threshold(B.epsilon(B.binary_codes(Te)), Le)
            for f in (0.99, 1.01):
                key = {"T": Te, "L": Le, "frame": "binary", "variant": variant, "kappa_over_star": f, "alpha": alpha,
                       "set": "exhaustive"}
                row = ctx.unit(key, lambda: B.check(B.build(Te, Le, f * ks, alpha, variant), tasks.all_sequences(Te, Le)))
                exhaustive.append({**key, **row})
    precision = []
    for Tp in cfg["precision_T"]:
        key = {"T": Tp, "L": L, "frame": "circle", "kappa_over_star": 2.0, "alpha": cfg["circle_alpha"], "set": "nearest-pair"}

        def fn():
            Vp = B.circle_frame(Tp)
            ep = B.epsilon(Vp)
            ks = B.kappa_threshold(ep, L)
            c = B.build(Tp, L, 2 * ks, cfg["circle_alpha"], "d'+2", "circle")
            xp = B.nearest_pair_sequences(Vp, L)
            r = B.check(c, xp)
            v32 = Vp.astype(np.float32)
            return {"eps": ep, "kappa": 2 * ks, "accuracy": r["accuracy"], "accuracy_float32": B.accuracy_float32(c, xp),
                    "eps_float32": float(1 - (v32[1:] * v32[:-1]).sum(1).max())}  # adjacent tokens overlap most
        precision.append({**key, **ctx.unit(key, fn)})
    out.update(sweep=sweep, circle=circle, exhaustive=exhaustive, precision=precision)
    return out


def claims_binary(result: dict) -> ClaimsTable:
    """App. B.3.1 with binary codes (rows 7) and with the d' = 2 frame of the remark after eq. 93 (rows 8),
    and the dimension formulas (eq. 93, d' + 1, d' = 2 frame)."""
    cfg = result["config"]
    T, L = cfg["T"], cfg["L"]
    t = ClaimsTable()
    paper_case = (T, L) == (paper.T, paper.L)
    d = result["dims"]
    t.consistency("dims", f"d = ⌈log₂(T+1)⌉ + 2 (eq. 93) at T = {T}; the d′+1 variant; the d′ = 2 frame (full model)",
                  expected="8 (text: 7), –, 4" if paper_case else "eq. 93",
          ours=f"{d['eq93']}, {d[B.VARIANTS[1]]}, {d['circle']}",
          holds=d["eq93"] == d["d'+2"] == math.ceil(math.log2(T + 1)) + 2 and d["d'+1"] == d["eq93"] - 1 and d["circle"] == 4,
          tolerance="exact", asserted=True)
    ks = result["kappa_star_paper"]
    t.consistency("7 κ*", "κ* (eq. 92) at ε = 1 − √(1 − 1/d′) (the paper's bound, eq. 78; our evaluation, below "
                  "the table)", expected="25.22" if paper_case else "eq. 92", ours=f"{ks:.3f}",
          holds=abs(ks - paper.KAPPA_STAR) < 0.01 if paper_case else True, tolerance="± 0.01", asserted=paper_case,
          source="derived" if paper_case else "")
    above = [r for r in result["sweep"] if r["kappa"] > result["kappa_star"]]
    acc = min(r["accuracy"] for r in above)
    t.add("7 above", f"accuracy above κ* = {result['kappa_star']:.2f} (the codes' actual ε = {result['eps']:.4f}), "
          f"d′+2 and d′+1, {len(above)} (variant, κ) points, all two-token + sampled sequences", paper=1.0, ours=acc,
          holds=acc == 1.0 and all(r["separated"] and r["inside_ranges"] for r in above), tolerance="exact", asserted=True,
          source="text")
    below = [r for r in result["sweep"] if r["kappa"] < result["kappa_star"]]
    sep = any(r["separated"] for r in below)
    # the paper claims κ* is sufficient (row "7 above"); that it is also necessary for these codes is our
    # finding, which a false sufficiency claim would not make fail: a consistency check
    t.consistency("7 sharp", "below κ* the observed γ ranges of counts 1 and 2 overlap (no readout is exact; the "
                  "paper claims only that κ* suffices: our finding that it is sharp for these codes)",
                  expected="overlap (κ* necessary here)", ours="overlap at every κ < κ*" if not sep else "separated somewhere",
                  holds=not sep and all(r["inside_ranges"] for r in below), tolerance="exact", asserted=True)
    k10 = [r["accuracy"] for r in result["sweep"] if r["kappa"] == 10.0]
    if k10:
        t.consistency("7 κ=10", "accuracy at κ = 10 (our calibration measured < 70 %)", expected="< 0.7",
                      ours=min(k10), holds=max(k10) < 0.7, tolerance="< 0.7", asserted=False)
    exh = [r for r in result["exhaustive"] if r["kappa_over_star"] > 1]
    if exh:
        t.add("7 exhaustive", "every sequence, " + ", ".join(sorted({f"T={r['T']}, L={r['L']}" for r in exh}))
              + ", at 1.01 κ*, both variants", paper=1.0, ours=min(r["accuracy"] for r in exh),
              holds=all(r["accuracy"] == 1.0 and r["counts"] == list(range(1, r["L"] + 1)) for r in exh),
              tolerance="exact", asserted=True, source="text")
    t.consistency("8 ε", "d′ = 2 frame: ε vs 1/(2T²) (the text: rate 1/T)", expected="≈ 1/(2T²) = %.3g" % (1 / (2 * T * T)),
          ours="%.4g" % result["eps_circle"], holds=abs(result["eps_circle"] * 2 * T * T - 1) < 1.5 / T,
          tolerance="ratio within 1.5/T", asserted=True)
    kc = result["kappa_star_circle"]
    t.consistency("8 κ*", "d′ = 2 frame: κ* (eq. 92 at the frame's ε; our evaluation, below the table)",
                  expected="≈ 4,494" if paper_case else "eq. 92", ours=f"{kc:,.1f}",
          holds=abs(kc - paper.KAPPA_STAR_CIRCLE) < 1 if paper_case else True, tolerance="± 1", asserted=paper_case,
          source="derived" if paper_case else "")
    for r in result["circle"]:
        exp = r["kappa"] > kc
        ok = (r["accuracy"] == 1.0 and r["accuracy_float32"] == 1.0) if exp else r["accuracy"] < 0.8
        text, ours = f"d′ = 2 frame, κ = {r['kappa']:g}: accuracy float64 / float32", \
            f"{r['accuracy']:.4f} / {r['accuracy_float32']:.4f}"
        if exp:
            t.add(f"8 κ={r['kappa']:g}", text, paper="1.0 (float32 too)", ours=ours, holds=ok, tolerance="exact",
                  asserted=True, source="text")
        else:  # below κ*: the paper claims nothing; our calibration measured < 0.8
            t.consistency(f"8 κ={r['kappa']:g}", text + " (below κ*: our calibration measured < 0.8)", expected="< 0.8",
                          ours=ours, holds=ok, tolerance="< 0.8", asserted=False)
    return t


EXPERIMENTS = [
    Experiment(
        id="002-counting/softmax-binary-embeddings",
        label="§5.2, App. B.3: softmax with binary embeddings",
        title="Softmax with binary embeddings: exact counting in d = ⌈log₂(T+1)⌉ + 2 dimensions",
        params=PARAMS,
        presets={"ci": dict(T=paper.T, L=paper.L, alpha=paper.BINARY_ALPHA,
                            kappas=[1, 2, 5, 10, 15, 18, 20, 22, 25, 30, 50, 100, 200],
                            circle_kappas=[3000, 30000, 300000], circle_alpha=paper.CIRCLE_ALPHA,
                            exhaustive=[[5, 5], [7, 6]], precision_T=[32, 256, 1024, 2048, 4096, 8192],
                            n_sampled=5000, seed=0),
                 "full": dict(T=paper.T, L=paper.L, alpha=paper.BINARY_ALPHA,
                              kappas=[1, 2, 3, 5, 7, 10, 12, 15, 17, 18, 19, 20, 21, 22, 23, 25, 30, 40, 50, 100, 200, 500],
                              circle_kappas=[1000, 3000, 4000, 5000, 10000, 30000, 300000],
                              circle_alpha=paper.CIRCLE_ALPHA,
                              exhaustive=[[5, 5], [7, 6], [6, 7]], precision_T=[32, 256, 1024, 2048, 4096, 8192, 16384],
                              n_sampled=100_000, seed=0)},
        compute=compute_binary,
        summary="Binary codes + a large enough inverse temperature count exactly with d = ⌈log₂(T+1)⌉ + 2 (7 suffice).",
    ),
]
