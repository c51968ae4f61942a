"""§5 of paper 002: phase diagrams over (d, p) — Fig. 1 (mean final accuracy), Fig. 2 (accuracy
against the parameter count), Fig. 10 (best accuracy) and Fig. 11 (std over seeds).

Two chapters share one compute function: `phase-diagrams-softmax` (bos+sftm, dot+sftm, lin+sftm:
the top rows of Figs. 1, 10, 11 and Fig. 2 left) and `phase-diagrams-no-softmax` (bos, dot, lin:
the bottom rows and Fig. 2 right). The split exists only for the CI time budget. Every
(variant, T, L, d, p, seed) is one stored unit (`sweeps.sweep_grid`), so reruns resume; the
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
from ..sweeps import FULL_TRAINING, TRAINING_PARAMS, grids, min_params_reaching, sweep_grid

SOFTMAX = paper.FIG1_TOP_ROW  # bos+sftm, dot+sftm, lin+sftm
NO_SOFTMAX = paper.FIG1_BOTTOM_ROW  # bos, dot, lin
RELATIONAL = ("bos", "dot", "bos+sftm")  # can count with p = 1 once d ≥ T (§5.1, App. A.2)
INVENTORY = ("lin", "lin+sftm", "dot+sftm")  # need p ≥ T (§5.1, App. A.3)

GRID_PARAMS = (
    Param("T", "int", "alphabet size (paper 32)", min=2, max=4096),
    Param("L", "int", "sequence length (paper 10)", min=2, max=256),
    Param("d_list", "int_list", "embedding dimensions d of the grid (paper: the 14 values 1 … 128)", min=1, max=4096),
    Param("p_list", "int_list", "MLP widths p of the grid (paper: the same 14 values)", min=1, max=4096),
    Param("seed_list", "int_list", "list of seed ids: seeds (initialisation and training data) per (d, p) (paper: 5 runs)", min=0, max=2**31 - 1),
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
    out = sweep_grid(ctx, variants, cfg["T"], cfg["L"], cfg["d_list"], cfg["p_list"], cfg["seed_list"])
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


def claims_phase(result: dict) -> ClaimsTable:
    """Fig. 1's regimes (rows 13: the inventory models' p, d ≥ T quadrant, dot at small p, no model at
    d = 1) and Fig. 2's parameter efficiency (rows 14), the parts that concern this chapter's variants,
    and the qualitative statements of Figs. 1, 10, 11 (§5.1, App. D.1, D.2), phrased relative to T so that they
    read the same at CI scale (T = 8) and at paper scale (T = 32)."""
    variants, T, L = result["variants"], result["T"], result["L"]
    sftm = all(has_softmax(v) for v in variants)
    ci = result["config"]["scale"] == "ci"
    d_list, p_list = result["d_list"], result["p_list"]
    dmax = max(d_list)
    n_seeds = len(result["seeds"])
    t = ClaimsTable(rtol=TRAINED_RTOL)

    # claim 13 (3): nothing can be learnt at d = 1
    if 1 in d_list:
        top = max(_max(_cells(result, v, "best", lambda d, p: d == 1)) for v in variants)
        t.add("13 d=1", f"every model at d = 1, best over seeds and evals ({', '.join(variants)})",
              paper="≈ floor (Fig. 10)", ours=_pct(top), holds=top <= 0.55, tolerance="≤ 55%", asserted=ci,
              source="figure")

    # majority floor 2/L (Fig. 2's ≈ 20% at L = 10): the failed runs sit at it, almost none below
    accs = np.array([r["final_accuracy"] for v in variants for r in result["rows"][v]])
    below = float(np.mean(accs < 2 / L - 0.03))
    t.add("floor", f"runs that fail sit at the majority class 2/L: lowest final accuracy of {accs.size} runs; "
          f"share more than 3 points below 2/L", paper=f"floor ≈ 2/L = {_pct(2 / L)}",
          ours=f"{_pct(accs.min())}; {100 * below:.1f}%", holds=accs.min() <= 2 / L + 0.03 and below <= 0.05,
          tolerance="min ≤ 2/L + 3 points; ≤ 5% below", asserted=ci, source="figure")

    # inventory models: only in the d ≥ T, p ≥ T quadrant (Fig. 1 / claim 13 (1))
    inv = [v for v in variants if v in ("lin", "lin+sftm")]
    for v in inv:
        inside = _max(_cells(result, v, "best", lambda d, p: d >= T and p >= T))
        outside = _max(_cells(result, v, "best", lambda d, p: p < T))
        gap = None if inside is None or outside is None else inside - outside
        t.add(f"13 {v}", f"{v}: best accuracy in the quadrant d ≥ T, p ≥ T vs anywhere with p < T",
              paper="≈ 100% vs < 100% (p ≥ T needed)", ours=f"{_pct(inside)} vs {_pct(outside)}",
              holds=_ge(gap, 0.25), tolerance="≥ 25 points apart", asserted=ci, source="figure")

    # relation-based models succeed at p < T once d ≥ T (Fig. 1 bottom row; §5.1)
    for v in [v for v in variants if v in ("dot", "bos")]:
        p_small = [p for p in p_list if 2 <= p < T]
        vals = _cells(result, v, "mean", lambda d, p: d >= T and 2 <= p < T)
        lo = min(vals) if vals else None
        t.add(f"F1 {v}", f"{v}: mean final accuracy at every d ≥ T with 2 ≤ p < T (p ∈ {p_small})",
              paper="≈ 100% for d ≳ 16, p ≥ 2–3 (T = 32)", ours=_pct(lo),
              holds=None if lo is None else lo >= 0.9, tolerance="≥ 90%", asserted=False, source="figure")
    if "dot" in variants and 4 in p_list and 4 < T:
        vals = _cells(result, "dot", "best", lambda d, p: d >= 8 and p == 4)
        lo = _min(vals)
        t.consistency("13 dot", "dot: best-of-seeds final accuracy at d ≥ 8, p = 4 (our CPU pilot's threshold)",
                      expected="≥ 95% (CI pilot)", ours=_pct(lo), holds=lo is not None and lo >= 0.95,
                      tolerance="≥ 95%", asserted=False)
    if "bos+sftm" in variants:
        vals = _cells(result, "bos+sftm", "best", lambda d, p: d >= T and 2 <= p < T)
        t.add("F1 bos+sftm", "bos+sftm: best accuracy over d ≥ T, 2 ≤ p < T (relation-based: no need for p ≥ T)",
              paper="high for d ≳ 8–11, p ≳ 2–4", ours=_pct(_max(vals)), holds=_ge(_max(vals), 0.9),
              tolerance="≥ 90%", asserted=False, source="figure")
    if "dot+sftm" in variants:
        below = _max(_cells(result, "dot+sftm", "best", lambda d, p: p < T))
        above = _max(_cells(result, "dot+sftm", "best", lambda d, p: d >= T and p >= T))
        ok = None if below is None or above is None else (below <= 0.75 and above - below >= 0.2)
        t.add("F1 dot+sftm", "dot+sftm: best accuracy anywhere with p < T vs in d ≥ T, p ≥ T (inventory)",
              paper="≤ 40–60% vs ≈ 100%", ours=f"{_pct(below)} vs {_pct(above)}",
              holds=ok, tolerance="≤ 75%, ≥ 20 points apart", asserted=False, source="figure")

    # relation vs inventory at p < T, d ≥ T, within the chapter
    rel = [v for v in variants if v in RELATIONAL]
    invs = [v for v in variants if v in INVENTORY]
    if rel and invs:
        r_best = {v: _max(_cells(result, v, "mean", lambda d, p: d >= T and p < T)) for v in rel}
        i_best = {v: _max(_cells(result, v, "mean", lambda d, p: d >= T and p < T)) for v in invs}
        vals = list(r_best.values()) + list(i_best.values())
        ok = None if None in vals else min(r_best.values()) - max(i_best.values())
        t.add("p<T", "best cell mean (over seeds) with d ≥ T, p < T: relation-based "
              + ", ".join(rel) + " vs inventory " + ", ".join(invs),
              paper="relation-based ≈ 100%, inventory fails",
              ours=", ".join(_pct(x) for x in r_best.values()) + " vs " + ", ".join(_pct(x) for x in i_best.values()),
              holds=_ge(ok, 0.15), tolerance="≥ 15 points apart",
              # asserted without softmax only: gaps of 30-34 points for seeds {0, 1} and {2, 3}; with
              # softmax 18-19 points, too close to the threshold
              asserted=ci and not any(has_softmax(v) for v in variants), source="figure")

        # claim 14: parameter efficiency (Fig. 2)
        for thr in (0.99, 0.9):
            rp = {v: min_params_reaching(result["rows"][v], thr) for v in rel}
            ip = {v: min_params_reaching(result["rows"][v], thr) for v in invs}
            r_min = min((x for x in rp.values() if x is not None), default=None)
            i_min = min((x for x in ip.values() if x is not None), default=None)
            ratio = None if r_min is None else (float("inf") if i_min is None else i_min / r_min)
            paper_says = ("bos+sftm ≈ 300–400 vs dot+sftm ≈ 2,000, lin+sftm ≈ 4,000–5,000 (≈ 100 %)" if sftm
                          else "dot, bos ≈ 700–1,000 vs lin ≈ 3,000 (≈ 100 %)")
            text = (f"fewest parameters of a run with final accuracy ≥ {thr:.0%}: "
                    + ", ".join(f"{v} {rp[v] or '–'}" for v in rel) + " vs "
                    + ", ".join(f"{v} {ip[v] or '–'}" for v in invs)
                    + ("" if thr == 0.99 else " (a lower bar than the paper's ≈ 100 %)"))
            if ratio is None:
                t.inconclusive(f"14 @{thr:.0%}", text, paper=paper_says, ours="–", source="figure",
                               why=f"no relation-based run reaches {thr:.0%}")
            else:
                t.add(f"14 @{thr:.0%}", text, paper=paper_says,
                      ours="inventory never" if ratio == float("inf") else f"ratio {ratio:.2f}",
                      holds=ratio >= 1.5, tolerance="inventory/relation ≥ 1.5×", asserted=False, source="figure")

    # Fig. 11: run-to-run std is largest at small p for the relational models
    if n_seeds >= 2:
        small = {v: float(np.mean(_cells(result, v, "std", lambda d, p: p <= 2 and d >= min(4, dmax)) or [np.nan]))
                 for v in variants}
        rest = {v: float(np.mean(_cells(result, v, "std", lambda d, p: p >= T) or [np.nan])) for v in variants}
        focus = [v for v in variants if v in RELATIONAL]
        others = [v for v in variants if v not in RELATIONAL]
        top = max(small[v] for v in focus)
        t.add("F11", f"mean std over seeds at p ≤ 2, d ≥ 4 / at p ≥ T: largest for {', '.join(focus)} at small p",
              paper=("bos+sftm 20–40 points at p ≲ 2–3; lin, dot+sftm ≲ 10" if sftm
                     else "bos, dot high at p ≤ 2, d ≳ 10; lin ≲ 10"),
              ours=", ".join(f"{v} {100 * small[v]:.0f}/{100 * rest[v]:.0f}" for v in variants),
              holds=all(top > small[v] for v in others) and all(top > rest[v] for v in focus),
              tolerance="qualitative",
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

CI_GRID = dict(T=8, L=6, d_list=[1, 2, 4, 8, 16], p_list=[1, 2, 4, 8, 16], seed_list=[0, 1])
FULL_GRID = dict(T=paper.T, L=paper.L, d_list=paper.GRID, p_list=paper.GRID, seed_list=paper.SEEDS)
MEDIUM = dict(T=32, L=10, d_list=[1, 2, 4, 8, 16, 32, 64, 128], p_list=[1, 2, 4, 8, 16, 32, 64, 128], seed_list=[0, 1],
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
