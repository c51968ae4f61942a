"""§5.1 of paper 002: the key (d, p) slices of the phase diagram (Fig. 1), every variant, several
seeds: relation- vs inventory-based counting at p < T (rows 10), the inventory regime p, d ≥ T
(rows 11), softmax at d < T (rows 12), and the two section-level claims of §5.1.

Four slices, placed relative to the alphabet size T:
    relation    (d_big, p_small)  d > T, p < T: relation-based models count, inventory ones cannot
    inventory   (d_big, p_big)    d, p ≥ T: every model can count (the inventory regime)
    entangled   (d_small, p_big)  d < T, p ≥ T: softmax helps (dot+sftm, bos+sftm vs lin+sftm)
    p = 1       (d_big, 1)        a single hidden unit: dot counts "comparatively good as bos"

`sweeps.run_sweep` trains (or loads) one row per (variant, slice, seed). With `joint` every slice and
seed of a variant is one tensor program, each seed on its own data stream (the stream its
independent run would draw: the paper draws fresh data per run; `run_sweep`, streams="per-seed"): at T = 8 a step of a small program costs ~3 ms of fixed overhead, so the
paper-like per-(width bucket, seed) programs would cost 6x more. The singular-values chapter trains the same way.
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError
from attnlab.core.progress import tqdm

from .. import paper, sweeps
from ..sweeps import ACC_ATOL, DATA_SEED, seed_list, seed_param
from ..paper import ORDER  # the order of the plots: relation-capable first, inventory-only last (§5.1)

SLICES = ("relation", "inventory", "entangled", "p=1")

PARAMS = (
    Param("T", "int", "alphabet size (paper 32)", min=2, max=1024),
    Param("L", "int", "sequence length (paper 10)", min=3, max=64),
    Param("d_big", "int", "embedding dimension of the d > T slices", min=1, max=4096),
    Param("d_small", "int", "embedding dimension of the d < T slice", min=1, max=4096),
    Param("p_small", "int", "MLP width of the p < T slice", min=1, max=4096),
    Param("p_big", "int", "MLP width of the p ≥ T slices", min=1, max=4096),
    seed_param(),
    DATA_SEED,
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
    seeds = seed_list(cfg)
    proto = sweeps.Protocol.from_config(cfg)
    dp = list(dict.fromkeys(dims.values()))
    acc: dict[str, dict[str, dict]] = {}
    for v in tqdm(ORDER, desc="variants", disable=not ctx.progress):
        rows = sweeps.run_sweep(ctx, v, cfg["T"], cfg["L"], dp, seeds, proto, joint=cfg["joint"],
                                data_seed=cfg["data_seed"], streams="per-seed")  # joint (CI): each seed its own data
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


def per_seed(result: dict, variant: str, name: str, field: str = "final") -> np.ndarray:
    """The accuracy of `variant` at slice `name`, one per seed (in seed_list order)."""
    return np.asarray(result["accuracy"][variant][name][field], dtype=float)


def claims_slices(result: dict) -> ClaimsTable:
    """Rows 10-12 (§5.1's regimes at the key slices; the thresholds of rows 10 are our CPU pilot's) and the
    §5.1 section claims. Every row is judged over the seeds (`ClaimsTable.add_seeds`): its statistic is
    the final accuracy of each seed's models, and the row is ✅ or ❌ only when every seed agrees."""
    cfg = result["config"]
    ci = cfg["T"] < 32
    t = ClaimsTable(rtol=TRAINED_RTOL)
    S = {n: tuple(dp) for n, dp in result["slices"].items()}
    at = lambda v, n: per_seed(result, v, n)  # noqa: E731
    least = lambda vs, n: np.min([at(v, n) for v in vs], axis=0).tolist()  # noqa: E731
    most = lambda vs, n: np.max([at(v, n) for v in vs], axis=0).tolist()  # noqa: E731
    acc = dict(rtol=0, atol=ACC_ATOL)

    d, p = S["relation"]
    t.add_seeds("10 relation", f"d = {d} > T, p = {p} < T: the lower of dot and bos, per seed (relation-based "
                "counting at p < T; the bar is our CPU pilot's)", paper="≈ 100 for d ≳ 16, p ≥ 2–3 (Fig. 1)",
                values=least(("dot", "bos"), "relation"), threshold=0.9, tolerance="≥ 0.9", asserted=ci,
                source="figure", **acc)
    t.add_seeds("10 inventory", f"d = {d}, p = {p} < T: the highest of dot+sftm, lin, lin+sftm (inventory-only), per "
                "seed (the bar is our CPU pilot's)", paper="fail at p < T (Fig. 1)",
                values=most(("dot+sftm", "lin", "lin+sftm"), "relation"), threshold=0.75, above=False,
                tolerance="≤ 0.75", asserted=False, source="figure", **acc)
    t.add_seeds("10 bos+sftm", f"d = {d}, p = {p} < T: bos+sftm, per seed (the bar is our CPU pilot's)",
                paper="high for d ≳ 8–11, p ≳ 2–4 (Fig. 1)", values=at("bos+sftm", "relation").tolist(), threshold=0.9,
                tolerance="≥ 0.9", asserted=False, source="figure", **acc)

    d, p = S["inventory"]
    t.add_seeds("11 all", f"d = {d}, p = {p} ≥ T: the lowest of the six variants, per seed", paper="≥ 95",
                values=least(ORDER, "inventory"), threshold=0.95, tolerance="≥ 0.95",
                # not asserted: per seed some variant (dot+sftm or lin+sftm) stays below 95 % in 700 steps;
                # the former best-seed reading hid it
                asserted=False, source="figure",
                **acc)
    t.add_seeds("11 lin", f"d = {d}, p = {p}: the lower of lin and lin+sftm, per seed", paper="≥ 99 (~100 in Fig. 1)",
                values=least(("lin", "lin+sftm"), "inventory"), threshold=0.99, tolerance="≥ 0.99",
                # not asserted: on per-seed data streams lin+sftm stays below 99 % in every seed after 700 steps
                # (it passed in some seeds only while the seeds shared one stream)
                asserted=False, source="figure", **acc)

    d, p = S["entangled"]
    sm = least(("dot+sftm", "bos+sftm"), "entangled")
    t.add_seeds("12 softmax", f"d = {d} < T, p = {p}: the lower of dot+sftm and bos+sftm, per seed", paper="≥ 90",
                values=sm, threshold=0.9, tolerance="≥ 0.9", asserted=False, source="figure", **acc)
    ls = at("lin+sftm", "entangled")
    t.add_seeds("12 lin+sftm", f"d = {d} < T, p = {p}: lin+sftm, per seed (inventory needs d ≥ T)", paper="≤ 80",
                values=ls.tolist(), threshold=0.8, above=False, tolerance="≤ 0.8", asserted=ci, source="figure", **acc)
    t.add_seeds("12 gap", f"d = {d} < T: the lower of dot+sftm and bos+sftm minus lin+sftm, per seed",
                paper="softmax dot helps", values=(np.asarray(sm) - ls).tolist(), threshold=0.05,
                tolerance="≥ 0.05 (5 points)", asserted=ci, source="text", **acc)

    d = S["inventory"][0]
    ps = f"p ∈ {{{S['relation'][1]}, {S['inventory'][1]}}}"
    for v in ("bos", "bos+sftm"):
        t.add_seeds(f"§5.1 {v}", f"{v} reaches ~100 % whenever d > T: the worse of d = {d}, {ps}, per seed",
                    paper="~100", values=np.minimum(at(v, "relation"), at(v, "inventory")).tolist(), threshold=0.99,
                    tolerance="≥ 0.99", asserted=ci and v == "bos", source="text", **acc)
    inv = most(("dot+sftm", "lin", "lin+sftm"), "p=1")
    dot1, bos1 = at("dot", "p=1"), at("bos", "p=1")
    dead = int(np.sum(np.maximum(dot1, bos1) <= result["baseline"] + 0.1))  # both at the majority baseline
    text = f"d = {d} ≥ T, p = 1: dot minus bos, per seed"
    if dead:  # "as good as" cannot fail where both models sit at the baseline (issue 27, item 3)
        t.inconclusive("§5.1 dot p=1", text, paper="dot as good as bos",
                       ours=", ".join(f"{x:+.2f}" for x in dot1 - bos1) + " (dot − bos per seed)", source="text",
                       why=f"in {dead} of {len(dot1)} seeds dot and bos both stay at the majority baseline "
                           f"(≤ {100 * result['baseline']:.0f} % + 10 points), where dot is trivially as good as "
                           "bos: the row cannot fail there")
    else:
        t.add_seeds("§5.1 dot p=1", text, paper="dot as good as bos", values=(dot1 - bos1).tolist(), threshold=-0.05,
                    tolerance="≥ −0.05", asserted=False, source="text", **acc)
    t.add_seeds("§5.1 dot p=1 acc", f"d = {d} ≥ T, p = 1: dot, per seed", paper="good performance with p = 1",
                values=at("dot", "p=1").tolist(), threshold=0.9, tolerance="≥ 0.9", asserted=False, source="text",
                **acc)
    t.add_seeds("§5.1 p=1 inventory", f"d = {d}, p = 1: inventory-only models stay near the majority baseline "
                f"({100 * result['baseline']:.0f} %): the highest of dot+sftm, lin, lin+sftm, per seed",
                paper="fail at p = 1", values=inv, threshold=result["baseline"] + 0.1, above=False,
                tolerance="≤ baseline + 0.1", asserted=ci, source="figure", **acc)
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
