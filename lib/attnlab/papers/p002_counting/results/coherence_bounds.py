"""§5.2 and App. B.2 of paper 002: mutual coherence, the Welch bound and the d < T bounds.

One experiment: the minimal-d table (exact formulas), Welch bound against d, coherence-optimised
frames for T tokens in each d of d_list (one resumable store unit per d), and the App. B.2
constructions built from them (lin p = T, dot p = T, dot p = 1), evaluated on sampler sequences
and on all two-token sequences (where gamma reaches its extremes).
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, SEED, STEPS
from attnlab.core.progress import tqdm

from .. import bounds, paper

PARAMS = (
    Param("T", "int", "alphabet size", min=2, max=256),
    Param("L", "int", "sequence length", min=3, max=64),
    Param("d_list", "int_list", "frame dimensions d (dot p = 1 uses d + 1)", min=1, max=256),
    STEPS.described("Adam steps of the coherence optimiser"),
    Param("restarts", "int", "random restarts per d (best kept)", min=1, max=256),
    Param("n_samples", "int", "sampler sequences for the accuracy", min=1, max=1_000_000),
    Param("alpha", "float", "counter coordinate of the dot p = 1 embeddings (eq. 51)", min=1e-6, max=0.5),
    SEED.described("seed of the frames and of the sampler"),
)

CONSTRUCTIONS = ("lin", "dot_pT", "dot_p1")


def _unit(ctx: Context, d: int) -> dict:
    cfg = ctx.config
    key = {k: cfg[k] for k in ("T", "L", "steps", "restarts", "n_samples", "alpha", "seed")}
    key["d"] = d

    def frame() -> dict:
        T, L = cfg["T"], cfg["L"]
        f = bounds.optimise_frame(T, d, cfg["steps"], cfg["restarts"], cfg["seed"])
        X = bounds.sample_sequences(T, L, cfg["n_samples"], cfg["seed"])
        return {"d": d, "coherence": f.coherence, "restart_coherences": f.coherences, "welch": f.welch,
                "constructions": {m: bounds.evaluate(m, f.frame, L, X, cfg["alpha"]) for m in CONSTRUCTIONS}}

    return ctx.unit(key, frame)


def compute_coherence_bounds(ctx: Context) -> dict:
    """Optimises a coherence-minimising frame of T vectors in each d of d_list (one stored unit per
    d) and evaluates the App. B.2 constructions built from it. The result holds config, table (the
    minimal-d formulas for the paper's (T, L) pairs), welch_curve, thresholds, frames (per d:
    coherence, Welch bound, construction accuracies) and simplex (the regular-simplex checks)."""
    cfg = ctx.config
    T, L = cfg["T"], cfg["L"]
    frames = [_unit(ctx, d) for d in tqdm(cfg["d_list"], desc="frames", disable=not ctx.progress)]
    X = bounds.sample_sequences(T, L, cfg["n_samples"], cfg["seed"])
    # regular simplex: T = d + 1 at (T, L) = (T, L), and outside the lin bound at (8, 6), d = 7
    simplex = {"T32": bounds.evaluate("lin", bounds.simplex_frame(T - 1), L, X)}
    X8 = bounds.sample_sequences(8, 6, cfg["n_samples"], cfg["seed"])
    simplex["T8_L6"] = bounds.evaluate("lin", bounds.simplex_frame(7), 6, X8)
    d_all = np.arange(1, T + 1)
    return {"config": cfg, "table": bounds.min_d_table(),
            "welch_curve": {"d": d_all.tolist(), "welch": bounds.welch(T, d_all).tolist()},
            "thresholds": {"lin": bounds.coherence_threshold("lin", L),
                           "dot_pT": bounds.coherence_threshold("dot_pT", L),
                           "dot_pT_one_sided": bounds.coherence_threshold_one_sided(L)},
            "frames": frames, "simplex": simplex}


def claims_coherence_bounds(result: dict) -> ClaimsTable:
    cfg, t = result["config"], ClaimsTable(rtol=TRAINED_RTOL)
    T, L = cfg["T"], cfg["L"]
    table = {(r["T"], r["L"]): r for r in result["table"]}
    r = table[(32, 10)]
    names = {"lin": "lin, lin+sftm p = T", "dot_p1": "dot, bos p = 1", "dot_pT": "dot, bos p = T"}
    for key, m, eq in (("3a", "lin", "50"), ("3b", "dot_p1", "62"), ("3c", "dot_pT", "72")):
        t.consistency(key, f"eq. {eq} at T = 32, L = 10 ({names[m]})", expected=r["paper"][m], ours=r[m],
              holds=r[m] == r["paper"][m], tolerance="exact", asserted=True)
    t.consistency("3d", "eq. 93 at T = 32, L = 10 (bos+sftm p = 1, dot+sftm p = T)", expected="⌈log₂ 33⌉ + 2 = 8",
          ours=r["softmax_binary"], holds=r["softmax_binary"] == 8, tolerance="exact", asserted=True)
    t.consistency("3e", "App. B.3.1 text: d = 7 for T = 32, L = 10 (erratum: eq. 93 gives 8)", expected=7,
          ours=r["softmax_binary"], holds=r["softmax_binary"] == 7, tolerance="exact", asserted=False)
    for (TT, LL), want in paper.MIN_D_FIG13_14.items():
        got = tuple(table[(TT, LL)][m] for m in bounds.MODELS)
        t.consistency("3f", f"eqs. 50 / 62 / 72 / 93 at T = {TT}, L = {LL} (Fig. {13 if TT == 64 else 14} setting)",
                      expected=" / ".join(map(str, want)), ours=" / ".join(map(str, got)), holds=got == want,
              tolerance="exact", asserted=True)
    consistent = all(row[m] == row[f"{m}_welch"] for row in result["table"] for m in ("lin", "dot_p1", "dot_pT"))
    t.consistency("3g", "closed forms = smallest d with W(T, d) below the threshold (every pair)", expected="equal",
          ours="equal" if consistent else "differ", holds=consistent, tolerance="exact", asserted=True)
    w = bounds.welch(32, 12)
    t.consistency("3h", "Welch W(32, 12)", expected=paper.WELCH_32_12, ours=w, holds=abs(w - paper.WELCH_32_12) < 5e-5,
          tolerance="± 5e-5", asserted=True)
    th = result["thresholds"]
    t.consistency("3i", f"thresholds at L = {L}: 1/(2L−3) and (2L−3)^(−1/2)",
                  expected="0.0588 / 0.2425" if L == 10 else "–", ours=f"{th['lin']:.4f} / {th['dot_pT']:.4f}",
          holds=(abs(th["lin"] - paper.THRESHOLD_LIN) < 5e-5 and abs(th["dot_pT"] - paper.THRESHOLD_DOT) < 5e-5)
          if L == 10 else True,
          tolerance="± 5e-5", asserted=True)
    frames = result["frames"]
    low = min(f["coherence"] / f["welch"] for f in frames if f["d"] < T) if any(
        f["d"] < T for f in frames) else float("nan")
    t.consistency("W", "every optimised frame (d < T) has M ≥ W(T, d) (Welch is a theorem)", expected="M ≥ W",
          ours=f"least M / W = {low:.3f}", holds=bool(low >= 1 - 1e-9), tolerance="M / W ≥ 1", asserted=True)
    ratio = max(f["coherence"] / f["welch"] for f in frames if f["welch"] > 0) if any(
        f["welch"] > 0 for f in frames) else float("nan")
    t.consistency("W2", "optimised frames come close to the Welch bound (largest M / W over d < T)",
                  expected="near W (Fickus & Mixon; gradient search)", ours=ratio, holds=bool(ratio <= 1.2),
          tolerance="≤ 1.2", asserted=False)
    # theorem check: construction exact whenever the frame's M is below the threshold
    for key, m, thr, label in (("9f", "dot_pT", th["dot_pT"], "dot p = T"), ("9g", "lin", th["lin"], "lin p = T"),
                               ("9h", "dot_p1", th["lin"], "dot p = 1")):
        ok = [f for f in frames if f["coherence"] < thr]
        if ok:
            worst = min(min(f["constructions"][m]["acc_paper_sample"], f["constructions"][m]["acc_paper_two_token"])
                        for f in ok)
            t.add(key, f"{label}: 100 % (paper readout) for every frame with M < {thr:.4f} "
                  f"(d ∈ {{{', '.join(str(f['constructions'][m]['d']) for f in ok)}}})",
                  paper="100 %", ours=worst, holds=worst == 1.0, tolerance="exact", asserted=True, source="text")
        else:
            t.inconclusive(key, f"{label}: 100 % for frames with M < {thr:.4f}", paper="100 %", ours="no such frame",
                           why="no optimised frame in d_list is below the threshold", source="text")
    by_d = {f["d"]: f for f in frames}
    if 16 in by_d:
        f = by_d[16]
        acc = min(f["constructions"]["dot_pT"]["acc_paper_sample"], f["constructions"]["dot_pT"]["acc_paper_two_token"])
        t.add("9a", "dot p = T at d = 16: optimiser reaches M < 0.2425 and the construction 100 %",
              paper="d ≥ 12 suffices", ours=f"M = {f['coherence']:.3f}, acc {acc:.3f}",
              holds=f["coherence"] < th["dot_pT"] and acc == 1.0, tolerance="100 %", asserted=False, source="text")
    lin_ok = [f["d"] for f in frames if f["constructions"]["lin"]["acc_paper_sample"] == 1.0
              and f["constructions"]["lin"]["acc_paper_two_token"] == 1.0]
    lin_bad = [f for f in frames if f["coherence"] >= th["lin"]]
    if lin_bad:
        worst = max(f["constructions"]["lin"]["acc_paper_two_token"] for f in lin_bad)
        t.consistency("9b", "lin p = T is < 100 % for every optimised frame with M ≥ 1/(2L−3) (measured "
                      "here; the paper proves only that M < 1/(2L−3) suffices)", expected="< 100 %",
                      ours=f"best {worst:.3f}", holds=worst < 1.0, tolerance="< 1", asserted=False)
    # the bound is sufficient only: a construction exact below it would not contradict the paper, so
    # this row describes our optimised frames, it cannot test the paper (a consistency check)
    t.consistency("9c", f"smallest d in d_list where lin p = T reaches 100 % with our optimised frames (the bound "
                  f"{table.get((T, L), {}).get('lin', '–')} is sufficient only: a smaller d would not contradict it)",
                  expected=f"≥ {table.get((T, L), {}).get('lin', '–')}", ours=min(lin_ok) if lin_ok else "none",
                  holds=bool(lin_ok) and (T, L) in table and min(lin_ok) >= table[(T, L)]["lin"],
                  tolerance="≥ the bound", asserted=False)
    s = result["simplex"]["T8_L6"]
    # our illustration that the bound is not necessary; the paper claims sufficiency only, so the row
    # cannot fail because of the paper (a consistency check)
    t.consistency("9d", "regular simplex (T = 8, d = 7, L = 6; M = 1/7 > 1/9): lin p = T 100 % with a calibrated "
                  "readout (the bound is sufficient only; our illustration, not a claim of the paper)",
                  expected="100 %", ours=min(s["acc_calibrated_sample"], s["acc_calibrated_two_token"]),
                  holds=s["acc_calibrated_two_token"] == 1.0 and s["acc_calibrated_sample"] == 1.0, tolerance="exact",
                  asserted=True)
    one = [f for f in frames if th["dot_pT"] <= f["coherence"] < th["dot_pT_one_sided"]]
    if one:
        worst = min(min(f["constructions"]["dot_pT"]["acc_calibrated_sample"],
                        f["constructions"]["dot_pT"]["acc_calibrated_two_token"]) for f in one)
        t.consistency("9e", f"dot p = T with {th['dot_pT']:.3f} ≤ M < 1/√(L−1) = {th['dot_pT_one_sided']:.3f} "
                      f"(d ∈ {{{', '.join(str(f['d']) for f in one)}}}): 100 % with a calibrated readout (outside "
                      "the paper's bound, eq. 71: our extension, not a claim of the paper)",
                      expected="100 %", ours=worst, holds=worst == 1.0, tolerance="exact", asserted=False)
    return t


EXPERIMENTS = [
    Experiment(
        id="002-counting/coherence-bounds",
        label="§5.2, App. B.2: mutual coherence and the d < T bounds",
        title="Mutual coherence, the Welch bound and the d < T bounds",
        params=PARAMS,
        presets={
            "ci": dict(T=32, L=10, d_list=[8, 12, 16, 20, 24, 29, 31, 32], steps=1000, restarts=4,
                       n_samples=2000, alpha=0.01, seed=0),
            "full": dict(T=32, L=10, d_list=list(range(4, 33)), steps=20000, restarts=32,
                         n_samples=20000, alpha=0.01, seed=0),
        },
        compute=compute_coherence_bounds,
        summary="d ≥ 29 / 30 / 12 / 8 at T = 32, L = 10; optimised frames sit slightly above Welch, "
                "so lin needs d ≈ 31 in practice while dot p = T works from d = 12.",
    ),
]
