"""§5.1 of paper 002: the key (d, p) slices of the phase diagram (Fig. 1), every variant, several
seeds: relation- vs inventory-based counting at p < T (rows 10), the inventory regime p, d ≥ T
(rows 11), softmax at d < T (rows 12), and the two section-level claims of §5.1.

Four slices, placed relative to the alphabet size T:
    relation    (d_big, p_small)  d > T, p < T: relation-based models count, inventory ones cannot
    inventory   (d_big, p_big)    d, p ≥ T: every model can count (the inventory regime)
    entangled   (d_small, p_big)  d < T, p ≥ T: softmax helps (dot+sftm, bos+sftm vs lin+sftm)
    p = 1       (d_big, 1)        a single hidden unit: dot counts "comparatively good as bos"

`sweeps.run_sweep` trains (or loads) one row per (variant, slice, seed). With `joint` every slice and
seed of a variant is one tensor program on one data stream (the seeds then differ in their
initialisation only): at T = 8 a step of a small program costs ~3 ms of fixed overhead, so the
paper-like per-(width bucket, seed) programs would cost 6x more. The singular-values chapter trains the same way.
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError
from attnlab.core.progress import tqdm

from .. import paper, sweeps
from ..paper import ORDER  # the order of the plots: relation-capable first, inventory-only last (§5.1)

SLICES = ("relation", "inventory", "entangled", "p=1")

PARAMS = (
    Param("T", "int", "alphabet size (paper 32)", min=2, max=1024),
    Param("L", "int", "sequence length (paper 10)", min=3, max=64),
    Param("d_big", "int", "embedding dimension of the d > T slices", min=1, max=4096),
    Param("d_small", "int", "embedding dimension of the d < T slice", min=1, max=4096),
    Param("p_small", "int", "MLP width of the p < T slice", min=1, max=4096),
    Param("p_big", "int", "MLP width of the p ≥ T slices", min=1, max=4096),
    Param("seed_list", "int_list", "list of seed ids: model seeds (paper: 5 runs)", min=0, max=2**31 - 1),
    Param("data_seed", "int", "seed of the training data stream(s)", min=0, max=2**31 - 1),
    *sweeps.TRAINING_PARAMS,
)


def slice_dims(cfg: dict) -> dict[str, tuple[int, int]]:
    """{slice name: (d, p)}; fails with a ParameterError if a slice is not where it belongs."""
    T = cfg["T"]
    checks = (("d_big", cfg["d_big"] > T, "> T"), ("d_small", cfg["d_small"] < T, "< T"),
              ("p_small", 1 < cfg["p_small"] < T, "in 2 .. T-1"), ("p_big", cfg["p_big"] >= T, ">= T"))
    for name, ok, allowed in checks:
        if not ok:
            raise ParameterError(f"parameter {name!r}: value {cfg[name]} is not allowed; must be {allowed} (T = {T})")
    return {"relation": (cfg["d_big"], cfg["p_small"]), "inventory": (cfg["d_big"], cfg["p_big"]),
            "entangled": (cfg["d_small"], cfg["p_big"]), "p=1": (cfg["d_big"], 1)}


def compute_slices(ctx: Context) -> dict:
    """Trains (or loads) every variant at the four (d, p) slices for each seed (`sweeps.run_sweep`).
    The result holds config, slices {name: [d, p]}, accuracy {variant: {slice: final and best
    accuracy per seed, n_params}} and baseline (the majority class 2/L)."""
    cfg = ctx.config
    dims = slice_dims(cfg)
    proto = sweeps.Protocol.from_config(cfg)
    dp = list(dict.fromkeys(dims.values()))
    acc: dict[str, dict[str, dict]] = {}
    for v in tqdm(ORDER, desc="variants", disable=not ctx.progress):
        rows = sweeps.run_sweep(ctx, v, cfg["T"], cfg["L"], dp, cfg["seed_list"], proto, joint=cfg["joint"],
                            data_seed=cfg["data_seed"])
        acc[v] = {}
        for name, (d, p) in dims.items():
            sel = [r for r in rows if (r["d"], r["p"]) == (d, p)]
            acc[v][name] = {"final": [round(r["final_accuracy"], 5) for r in sel],
                            "best": [round(r["best_accuracy"], 5) for r in sel],
                            "n_params": sel[0]["n_params"]}
    return {"config": cfg, "slices": {k: list(v) for k, v in dims.items()}, "accuracy": acc,
            "baseline": 2 / cfg["L"]}


def stats(result: dict, variant: str, name: str, field: str = "final") -> dict:
    a = np.asarray(result["accuracy"][variant][name][field])
    return {"mean": float(a.mean()), "best": float(a.max()), "min": float(a.min()), "std": float(a.std())}


def claims_slices(result: dict) -> ClaimsTable:
    """Rows 10-12 (§5.1's regimes at the key slices; the thresholds of rows 10 are our CPU pilot's) and the
    §5.1 section claims (final accuracy, over the seeds run)."""
    cfg = result["config"]
    ci = cfg["T"] < 32
    t = ClaimsTable(rtol=TRAINED_RTOL)
    S = {n: tuple(dp) for n, dp in result["slices"].items()}
    st = lambda v, n: stats(result, v, n)  # noqa: E731
    pct = lambda x: f"{100 * x:.0f}"  # noqa: E731
    n_seeds = len(cfg["seed_list"])

    d, p = S["relation"]
    m = {v: st(v, "relation")["mean"] for v in ("dot", "bos")}
    t.consistency("10 relation", f"d = {d} > T, p = {p} < T: mean over {n_seeds} seeds of dot / bos (our CPU pilot "
                  "at this scale)", expected="≥ 90 (our pilot ~99)", ours=" / ".join(pct(x) for x in m.values()),
          holds=min(m.values()) >= 0.9, tolerance="≥ 90 %", asserted=ci)
    b = {v: st(v, "relation")["best"] for v in ("dot+sftm", "lin", "lin+sftm")}
    t.consistency("10 inventory", f"d = {d}, p = {p} < T: best seed of dot+sftm / lin / lin+sftm (inventory-only; "
                  "our CPU pilot at this scale)", expected="≤ 75 (our pilot ≤ 69)", ours=" / ".join(pct(x) for x in b.values()),
          holds=max(b.values()) <= 0.75, tolerance="≤ 75 %", asserted=False)
    bs = st("bos+sftm", "relation")
    t.consistency("10 bos+sftm", f"d = {d}, p = {p} < T: bos+sftm, best seed (mean; our CPU pilot at this scale)",
                  expected="≥ 90 (our pilot 95-100)",
          ours=f"{pct(bs['best'])} ({pct(bs['mean'])})", holds=bs["best"] >= 0.9, tolerance="best ≥ 90 %",
          asserted=False)

    d, p = S["inventory"]
    b = {v: st(v, "inventory")["best"] for v in ORDER}
    t.add("11 all", f"d = {d}, p = {p} ≥ T: best seed, every variant (lowest shown)", paper="≥ 95",
          ours=f"{pct(min(b.values()))} ({min(b, key=b.get)})", holds=min(b.values()) >= 0.95,
          tolerance="≥ 95 %", asserted=ci, source="figure")
    lin = {v: b[v] for v in ("lin", "lin+sftm")}
    t.add("11 lin", f"d = {d}, p = {p}: best seed of lin / lin+sftm", paper="≥ 99 (~100 in Fig. 1)",
          ours=" / ".join(f"{100 * x:.1f}" for x in lin.values()), holds=min(lin.values()) >= 0.99,
          tolerance="≥ 99 %", asserted=ci, source="figure")

    d, p = S["entangled"]
    sm = {v: st(v, "entangled")["best"] for v in ("dot+sftm", "bos+sftm")}
    t.add("12 softmax", f"d = {d} < T, p = {p}: best seed of dot+sftm / bos+sftm", paper="≥ 90",
          ours=" / ".join(pct(x) for x in sm.values()), holds=min(sm.values()) >= 0.9, tolerance="≥ 90 %",
          asserted=False, source="figure")
    ls = st("lin+sftm", "entangled")["best"]
    t.add("12 lin+sftm", f"d = {d} < T, p = {p}: best seed of lin+sftm (inventory needs d ≥ T)", paper="≤ 80",
          ours=pct(ls), holds=ls <= 0.8, tolerance="≤ 80 %", asserted=ci, source="figure")
    gap = min(sm.values()) - ls
    t.add("12 gap", f"d = {d} < T: best seed of dot+sftm and of bos+sftm above the best lin+sftm seed",
          paper="softmax dot helps", ours=f"{100 * gap:+.0f} points", holds=gap >= 0.05,
          tolerance="≥ 5 points", asserted=ci, source="text")

    d = S["inventory"][0]
    ps = f"p ∈ {{{S['relation'][1]}, {S['inventory'][1]}}}"
    for v in ("bos", "bos+sftm"):
        b = min(st(v, n)["best"] for n in ("relation", "inventory"))
        t.add(f"§5.1 {v}", f"{v} reaches ~100 % whenever d > T: best seed, worse of d = {d}, {ps}", paper="~100",
              ours=f"{100 * b:.1f}", holds=b >= 0.99, tolerance="≥ 99 %", asserted=ci and v == "bos", source="text")
    p1 = {v: st(v, "p=1")["best"] for v in ORDER}
    inv = max(p1[v] for v in ("dot+sftm", "lin", "lin+sftm"))
    t.add("§5.1 dot p=1", f"d = {d} ≥ T, p = 1: best seed of dot vs bos (vs the best inventory-only model)",
          paper="dot as good as bos", ours=f"{pct(p1['dot'])} vs {pct(p1['bos'])} ({pct(inv)})",
          holds=p1["dot"] >= p1["bos"] - 0.05 and p1["dot"] >= 0.9, tolerance="dot ≥ 90 % and ≥ bos − 5",
          asserted=False, source="text")
    t.add("§5.1 p=1 inventory", f"d = {d}, p = 1: inventory-only models stay near the majority baseline "
          f"({pct(result['baseline'])} %): best seed of dot+sftm, lin, lin+sftm", paper="fail at p = 1",
          ours=pct(inv), holds=inv <= result["baseline"] + 0.1, tolerance="≤ baseline + 10", asserted=ci,
          source="figure")
    return t


EXPERIMENTS = [
    Experiment(
        id="002-counting/key-slices",
        label="§5.1, Fig. 1 slices",
        title="Relation- vs inventory-based counting on four slices of the (d, p) plane",
        params=PARAMS,
        presets={
            "ci": dict(T=8, L=6, d_big=16, d_small=4, p_small=4, p_big=16, seed_list=[0, 1, 2], data_seed=0, joint=True,
                       steps=700, batch_size=64, lr=3e-2, lr_end=1e-3, eval_n=3000, eval_every=0,
                       checkpoint_every=0, time_limit=0.0),
            "full": dict(T=paper.T, L=paper.L, d_big=64, d_small=16, p_small=8, p_big=64, seed_list=paper.SEEDS,
                         data_seed=0, **sweeps.FULL_TRAINING),
        },
        compute=compute_slices,
        summary="With p < T only dot, bos (and some bos+sftm) count; with d, p ≥ T all do; at d < T softmax dot helps.",
    ),
]
