"""§5 of paper 002: phase diagrams over (d, p) — Fig. 1 (mean final accuracy), Fig. 2 (accuracy
against the parameter count), Fig. 10 (best accuracy) and Fig. 11 (std over seeds).

Two chapters share one compute function: `phase-diagrams-softmax` (bos+sftm, dot+sftm, lin+sftm:
the top rows of Figs. 1, 10, 11 and Fig. 2 left) and `phase-diagrams-no-softmax` (bos, dot, lin:
the bottom rows and Fig. 2 right). The split exists only for the CI time budget. Every
(variant, T, L, d, p, seed) is one stored unit (`sweeps.sweep_grid`), so reruns resume; the
At CI scale (`joint`) each seed trains on its own data stream, as the paper's runs draw fresh
data each (`sweeps.run_sweep`, streams="per-seed"). The
figures are drawn by `plots.plot_phase_row` and `plots.plot_params`, which the chapter of
Figs. 13, 14 uses too.
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param

from .. import paper
from ..reference import has_softmax
from ..sweeps import (ACC_ATOL, DATA_SEED, FULL_TRAINING, RATIO_RTOL, TRAINING_PARAMS, grids, min_params_reaching,
                      seed_list, seed_param, seed_sweeps, sweep_grid)

SOFTMAX = paper.FIG1_TOP_ROW  # bos+sftm, dot+sftm, lin+sftm
NO_SOFTMAX = paper.FIG1_BOTTOM_ROW  # bos, dot, lin
RELATIONAL = ("bos", "dot", "bos+sftm")  # can count with p = 1 once d ≥ T (§5.1, App. A.2)
INVENTORY = ("lin", "lin+sftm", "dot+sftm")  # need p ≥ T (§5.1, App. A.3)

GRID_PARAMS = (
    Param("T", "int", "alphabet size (paper 32)", min=2, max=4096),
    Param("L", "int", "sequence length (paper 10)", min=2, max=256),
    Param("d_list", "int_list", "embedding dimensions d of the grid (paper: the 14 values 1 … 128)", min=1, max=4096),
    Param("p_list", "int_list", "MLP widths p of the grid (paper: the same 14 values)", min=1, max=4096),
    seed_param("per (d, p); paper: 5 runs"),
    DATA_SEED,
)
PARAMS = GRID_PARAMS + TRAINING_PARAMS

TRAIN_CI = dict(steps=800, batch_size=32, lr=3e-2, lr_end=1e-3, eval_n=1000, eval_every=100, checkpoint_every=0,
                time_limit=0.0, joint=True)


def compute_phase(ctx: Context, variants) -> dict:
    """Trains (or loads) every (d, p, seed) of the grid for each of `variants` (`sweeps.sweep_grid`).
    The result holds config, variants, T, L, d_list, p_list, seeds, majority (2/L), rows {variant:
    one row per run: d, p, seed, final_accuracy, best_accuracy, n_params} and bounds {variant: the
    §5.2 bounds on d drawn in the figures}."""
    cfg = ctx.config
    out = sweep_grid(ctx, variants, cfg["T"], cfg["L"], cfg["d_list"], cfg["p_list"], seed_list(cfg),
                     data_seed=cfg["data_seed"], streams="per-seed")  # joint (CI): each seed its own data
    out.update(config=cfg, variants=list(variants))
    return out


# ------------------------------------------------------------------------------------ claims

def _cells(sweep: dict, variant: str, field: str, pred) -> list[float]:
    g = grids(sweep, variant)[field]
    return [float(g[i, j]) for i, d in enumerate(sweep["d_list"]) for j, p in enumerate(sweep["p_list"])
            if pred(d, p) and np.isfinite(g[i, j])]


def _max(vals: list[float]) -> float | None:
    return max(vals) if vals else None


def _min(vals: list[float]) -> float | None:
    return min(vals) if vals else None


def _ge(x: float | None, thr: float) -> bool | None:
    return None if x is None else x >= thr


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def _ratio(sweep: dict, rel, invs, thr: float) -> float | None:
    """Fewest parameters of an inventory run reaching `thr` over the fewest of a relation-based one
    (inf: no inventory run reaches it; 0: only inventory runs do; None: none does)."""
    r_min = min((x for v in rel if (x := min_params_reaching(sweep["rows"][v], thr)) is not None), default=None)
    i_min = min((x for v in invs if (x := min_params_reaching(sweep["rows"][v], thr)) is not None), default=None)
    if r_min is None:
        return None if i_min is None else 0.0
    return float("inf") if i_min is None else i_min / r_min


def claims_phase(result: dict) -> ClaimsTable:
    """Fig. 1's regimes (rows 13: the inventory models' p, d ≥ T quadrant, dot at small p, no model at
    d = 1) and Fig. 2's parameter efficiency (rows 14), the parts that concern this chapter's variants,
    and the qualitative statements of Figs. 1, 10, 11 (§5.1, App. D.1, D.2), phrased relative to T so that they
    read the same at CI scale (T = 8) and at paper scale (T = 32). Every trained row but F11 (a spread
    over seeds itself) is judged over the seeds (`ClaimsTable.add_seeds`): its statistic is taken on
    each seed's grid (a cell's mean is then the seed's final accuracy, its best the seed's best over
    evals), and the row is ✅ or ❌ only when every seed agrees."""
    variants, T, L = result["variants"], result["T"], result["L"]
    sftm = all(has_softmax(v) for v in variants)
    ci = result["config"]["scale"] == "ci"
    d_list, p_list = result["d_list"], result["p_list"]
    dmax = max(d_list)
    n_seeds = len(result["seeds"])
    per = seed_sweeps(result)
    t = ClaimsTable(rtol=TRAINED_RTOL)
    acc = dict(rtol=0, atol=ACC_ATOL)

    def each(fn) -> list:
        return [fn(sw) for sw in per]

    # claim 13 (3): nothing can be learnt at d = 1
    if 1 in d_list:
        t.add_seeds("13 d=1", f"every model at d = 1, best over evals, per seed (largest over {', '.join(variants)})",
                    paper="≈ floor (Fig. 10)", values=each(lambda sw: max(_max(_cells(sw, v, "best", lambda d, p: d == 1))
                                                                 for v in variants)),
                    threshold=0.55, above=False, tolerance="≤ 0.55", asserted=ci, source="figure", **acc)

    # majority floor 2/L (Fig. 2's ≈ 20% at L = 10): the failed runs sit at it, almost none below
    def accs(sw):
        return np.array([r["final_accuracy"] for v in variants for r in sw["rows"][v]])
    n_runs = accs(per[0]).size
    t.add_seeds("floor", f"runs that fail sit at the majority class 2/L = {_pct(2 / L)}: lowest final accuracy of "
                f"the {n_runs} runs of a seed", paper=f"floor ≈ 2/L = {_pct(2 / L)}",
                values=each(lambda sw: float(accs(sw).min())), threshold=2 / L + 0.03, above=False,
                tolerance="≤ 2/L + 0.03", asserted=ci, source="figure", **acc)
    t.add_seeds("floor below", "share of a seed's runs more than 3 points below the majority class 2/L",
                paper="none below the floor (Fig. 2)", values=each(lambda sw: float(np.mean(accs(sw) < 2 / L - 0.03))),
                threshold=0.05, above=False, tolerance="≤ 0.05", asserted=ci, source="figure", **acc)

    # inventory models: only in the d ≥ T, p ≥ T quadrant (Fig. 1 / claim 13 (1))
    for v in [v for v in variants if v in ("lin", "lin+sftm")]:
        def gap(sw, v=v):
            inside = _max(_cells(sw, v, "best", lambda d, p: d >= T and p >= T))
            outside = _max(_cells(sw, v, "best", lambda d, p: p < T))
            return inside - outside
        t.add_seeds(f"13 {v}", f"{v}: best accuracy (over evals) in the quadrant d ≥ T, p ≥ T minus that anywhere "
                    "with p < T, per seed", paper="≈ 100% vs < 100% (p ≥ T needed)", values=each(gap), threshold=0.25,
                    tolerance="≥ 0.25 (25 points apart)", asserted=ci, source="figure", **acc)

    # relation-based models succeed at p < T once d ≥ T (Fig. 1 bottom row; §5.1)
    for v in [v for v in variants if v in ("dot", "bos")]:
        p_small = [p for p in p_list if 2 <= p < T]
        if p_small and any(d >= T for d in d_list):
            t.add_seeds(f"F1 {v}", f"{v}: lowest final accuracy over the cells d ≥ T, 2 ≤ p < T (p ∈ {p_small}), per seed",
                        paper="≈ 100% for d ≳ 16, p ≥ 2–3 (T = 32)",
                        values=each(lambda sw, v=v: min(_cells(sw, v, "mean", lambda d, p: d >= T and 2 <= p < T))),
                        threshold=0.9, tolerance="≥ 0.9", asserted=False, source="figure", **acc)
    if "dot" in variants and 4 in p_list and 4 < T and any(d >= 8 for d in d_list):
        t.add_seeds("13 dot", "dot: lowest best accuracy (over evals) at d ≥ 8, p = 4, per seed",
                    paper="≈ 100% for d ≳ 16, p ≥ 2–3 (T = 32)",
                    values=each(lambda sw: min(_cells(sw, "dot", "best", lambda d, p: d >= 8 and p == 4))),
                    threshold=0.95, tolerance="≥ 0.95 (our CPU pilot's bar)", asserted=False, source="figure", **acc)
    if "bos+sftm" in variants and any(d >= T for d in d_list) and any(2 <= p < T for p in p_list):
        t.add_seeds("F1 bos+sftm", "bos+sftm: best accuracy over d ≥ T, 2 ≤ p < T (relation-based: no need for p ≥ T), "
                    "per seed", paper="high for d ≳ 8–11, p ≳ 2–4",
                    values=each(lambda sw: _max(_cells(sw, "bos+sftm", "best", lambda d, p: d >= T and 2 <= p < T))),
                    threshold=0.9, tolerance="≥ 0.9", asserted=False, source="figure", **acc)
    if "dot+sftm" in variants:
        below = each(lambda sw: _max(_cells(sw, "dot+sftm", "best", lambda d, p: p < T)))
        above = each(lambda sw: _max(_cells(sw, "dot+sftm", "best", lambda d, p: d >= T and p >= T)))
        t.add_seeds("F1 dot+sftm", "dot+sftm: best accuracy (over evals) anywhere with p < T, per seed (inventory: "
                    "fails at p < T)", paper="≤ 40–60%", values=below, threshold=0.75, above=False,
                    tolerance="≤ 0.75", asserted=False, source="figure", **acc)
        t.add_seeds("F1 dot+sftm gap", "dot+sftm: best accuracy in d ≥ T, p ≥ T minus that anywhere with p < T, per seed",
                    paper="≈ 100% vs ≤ 40–60%", values=[a - b for a, b in zip(above, below)], threshold=0.2,
                    tolerance="≥ 0.2 (20 points apart)", asserted=False, source="figure", **acc)

    # relation vs inventory at p < T, d ≥ T, within the chapter
    rel = [v for v in variants if v in RELATIONAL]
    invs = [v for v in variants if v in INVENTORY]
    if rel and invs:
        def split(sw):
            best = {v: _max(_cells(sw, v, "mean", lambda d, p: d >= T and p < T)) for v in rel + invs}
            return min(best[v] for v in rel) - max(best[v] for v in invs)
        t.add_seeds("p<T", "best cell with d ≥ T, p < T (final accuracy): the weakest relation-based model ("
                    + ", ".join(rel) + ") minus the strongest inventory one (" + ", ".join(invs) + "), per seed",
                    paper="relation-based ≈ 100%, inventory fails", values=each(split), threshold=0.15,
                    tolerance="≥ 0.15 (15 points apart)",
                    # asserted without softmax only: gaps of 30-34 points for seeds {0, 1} and {2, 3}; with
                    # softmax 18-19 points, too close to the threshold
                    asserted=ci and not sftm, source="figure", **acc)

        # claim 14: parameter efficiency (Fig. 2)
        for thr in (0.99, 0.9):
            paper_says = ("bos+sftm ≈ 300–400 vs dot+sftm ≈ 2,000, lin+sftm ≈ 4,000–5,000 (≈ 100 %)" if sftm
                          else "dot, bos ≈ 700–1,000 vs lin ≈ 3,000 (≈ 100 %)")
            text = (f"fewest parameters of a run with final accuracy ≥ {thr:.0%}, inventory ({', '.join(invs)}) over "
                    f"relation-based ({', '.join(rel)}), per seed (inf: no inventory run reaches it)"
                    + ("" if thr == 0.99 else " (a lower bar than the paper's ≈ 100 %)"))
            ratios = [x for x in each(lambda sw: _ratio(sw, rel, invs, thr)) if x is not None]
            if not ratios:
                t.inconclusive(f"14 @{thr:.0%}", text, paper=paper_says, ours="–", source="figure",
                               why=f"no run of any seed reaches {thr:.0%}")
            else:
                t.add_seeds(f"14 @{thr:.0%}", text, paper=paper_says, values=ratios, threshold=1.5, rtol=RATIO_RTOL,
                            tolerance="≥ 1.5× (seeds where no run reaches it are left out)", asserted=False,
                            source="figure")

    # Fig. 11: run-to-run std is largest at small p for the relational models (a spread over the seeds
    # itself: one value per chapter, not judged per seed)
    if n_seeds >= 2:
        small = {v: float(np.mean(_cells(result, v, "std", lambda d, p: p <= 2 and d >= min(4, dmax)) or [np.nan]))
                 for v in variants}
        rest = {v: float(np.mean(_cells(result, v, "std", lambda d, p: p >= T) or [np.nan])) for v in variants}
        focus = [v for v in variants if v in RELATIONAL]
        others = [v for v in variants if v not in RELATIONAL]
        top = max(small[v] for v in focus)
        text = (f"mean std over the {n_seeds} seeds at p ≤ 2, d ≥ 4 / at p ≥ T: largest for {', '.join(focus)} "
                "at small p (a statistic of the seeds' spread itself)")
        paper_says = ("bos+sftm 20–40 points at p ≲ 2–3; lin, dot+sftm ≲ 10" if sftm
                      else "bos, dot high at p ≤ 2, d ≳ 10; lin ≲ 10")
        ours = ", ".join(f"{v} {100 * small[v]:.0f}/{100 * rest[v]:.0f}" for v in variants)
        holds = all(top > small[v] for v in others) and all(top > rest[v] for v in focus)
        if ci:  # one std of a few seeds: no spread to judge it against (issue 27)
            t.inconclusive("F11", text, paper=paper_says, ours=ours + (" (ordering as the paper's)" if holds
                                                                       else " (ordering not the paper's)"),
                           source="figure",
                           why=f"a std over {n_seeds} seeds is one draw with no spread of its own to judge it "
                               "against; the softmax chapter's ordering flipped (✅ to ❌) when the seeds moved "
                               "from one shared data stream to their own streams")
        else:
            t.add("F11", text, paper=paper_says, ours=ours, holds=holds, tolerance="qualitative",
                  asserted=False, source="figure")

    # the paper's own numbers (T = 32, L = 10, the 14 x 14 grid): measured at paper scale, else not run
    paper_scale = (T, L) == (paper.T, paper.L) and d_list == paper.GRID and p_list == paper.GRID
    for v in variants:
        lo, hi = paper.FIG2_PARAMS_AT_100[v]
        read = f"≈ {lo:,}" + (f"–{hi:,}" if hi != lo else "")
        text = f"Fig. 2: {v}, fewest parameters at which the running best reaches ≈ 100 % (≥ 99 %), T = 32, L = 10"
        if paper_scale:
            got = min_params_reaching(result["rows"][v], 0.99)
            t.add(f"F2 {v}", text, paper=read, ours="never" if got is None else got,
                  holds=got is not None and lo / 2 <= got <= 2 * hi, tolerance="within a factor 2 of the read-off",
                  source="figure")
        else:
            t.not_run(f"F2 {v}", text, paper=read, source="figure", command=_command(sftm))
    if not paper_scale:
        t.not_run("F1 T=32", "Fig. 1 " + ("top" if sftm else "bottom") + " row at T = 32, L = 10 (14 × 14 grid, 5 runs "
                  "per cell): the regimes above, at the paper's size",
                  paper=("bos+sftm high for d ≳ 8–11, p ≳ 2–4; dot+sftm ≥ 99 % only for d ≳ T, p ≳ 23–32; "
                         "lin+sftm only for p ≳ T, d ≳ 23–32") if sftm else
                  "bos, dot ≈ 100 % for d ≳ 11–16, p ≥ 2–3; lin only for p ≳ T, d ≳ T",
                  source="figure", command=_command(sftm))
    return t


def _command(sftm: bool) -> str:
    return f"attnlab run 002-counting/phase-diagrams-{'softmax' if sftm else 'no-softmax'} --scale full --headless"


# ------------------------------------------------------------------------------- experiments

CI_GRID = dict(T=8, L=6, d_list=[1, 2, 4, 8, 16], p_list=[1, 2, 4, 8, 16], seed_list=[0, 1, 2], data_seed=0)
FULL_GRID = dict(T=paper.T, L=paper.L, d_list=paper.GRID, p_list=paper.GRID, seed_list=paper.SEEDS, data_seed=0)
MEDIUM = dict(T=32, L=10, d_list=[1, 2, 4, 8, 16, 32, 64, 128], p_list=[1, 2, 4, 8, 16, 32, 64, 128], seed_list=[0, 1], data_seed=0,
              steps=31_300, batch_size=32, lr=1e-3, lr_end=1e-3, eval_n=3000, eval_every=313,
              checkpoint_every=10_000, time_limit=7.0, joint=False)


def _experiment(slug: str, variants, label: str, title: str, summary: str) -> Experiment:
    return Experiment(
        id=f"002-counting/{slug}", label=label, title=title, params=PARAMS,
        presets={"ci": {**CI_GRID, **TRAIN_CI}, "medium": MEDIUM, "full": {**FULL_GRID, **FULL_TRAINING}},
        compute=_compute_for(variants), summary=summary)


def _compute_for(variants):
    """compute_phase for one row of Fig. 1 (`variants`), with compute_phase's docstring."""
    def compute(ctx: Context) -> dict:
        return compute_phase(ctx, variants)
    compute.__doc__ = compute_phase.__doc__
    return compute


EXPERIMENTS = [
    _experiment("phase-diagrams-softmax", SOFTMAX, "Figs. 1, 2, 10, 11 (§5, App. D.1–D.2): with softmax",
                "Phase diagrams over (d, p) with softmax: bos+sftm, dot+sftm, lin+sftm",
                "With a softmax only bos+sftm counts relationally (small p); dot+sftm and lin+sftm need p ≥ T."),
    _experiment("phase-diagrams-no-softmax", NO_SOFTMAX, "Figs. 1, 2, 10, 11 (§5, App. D.1–D.2): without softmax",
                "Phase diagrams over (d, p) without softmax: bos, dot, lin",
                "Without softmax dot and bos count relationally at small p once d ≳ T; lin needs p ≥ T and d ≥ T."),
]
