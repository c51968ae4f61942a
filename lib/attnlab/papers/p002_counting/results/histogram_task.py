"""The histogram task of paper 002 (§4, App. C): the two samplers, their count marginals and
the majority baseline. One unit of work per (sampler, L) in the result store."""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError, SEED

from .. import tasks

PARAMS = (
    Param("T", "int", "alphabet size", min=2, max=100_000),
    Param("L_list", "int_list", "sequence lengths (L <= T)", min=2, max=1000),
    Param("n_samples", "int", "sequences drawn per sampler and length", min=100, max=10_000_000),
    SEED.described("sampler seed"),
)


def _unit(ctx: Context, sampler: str, L: int) -> dict:
    cfg = ctx.config
    key = {"sampler": sampler, "T": cfg["T"], "L": L, "n": cfg["n_samples"], "seed": cfg["seed"]}
    return ctx.unit(key, lambda: _sample_stats(cfg, sampler, L))


def _sample_stats(cfg: dict, sampler: str, L: int) -> dict:
    x = tasks.sample(sampler, cfg["n_samples"], cfg["T"], L, cfg["seed"])
    y = tasks.hist(x)
    sub = x[:500]
    loop = np.array([[sum(int(a == b) for b in row) for a in row] for row in sub])
    distinct = np.array([len(np.unique(r)) for r in x[:5000]])
    row = {"marginal": tasks.empirical_marginal(x).tolist(),
           "min_distinct_tokens": int(distinct.min()), "max_label": int(y.max()),
           "tokens_in_range": bool(x.min() >= 0 and x.max() < cfg["T"]),
           "labels_equal_hist_loop": bool(np.array_equal(y[:500], loop)),
           "example": x[0].tolist(), "example_labels": y[0].tolist()}
    return row


def compute_task(ctx: Context) -> dict:
    """Draws n_samples sequences from each sampler at each L (one stored unit per (sampler, L)) and
    compares them with the exact marginals. The result holds config and per_L {str(L): {sampler:
    marginal (observed label frequencies), exact, majority and majority_exact ((label, accuracy)),
    the invariant checks and one example sequence with its labels}}."""
    cfg = ctx.config
    bad = [L for L in cfg["L_list"] if L > cfg["T"]]
    if bad:
        raise ParameterError(f"parameter 'L_list': values {bad} are not allowed; the paper uses L <= T = {cfg['T']}")
    per_L = {}
    for L in cfg["L_list"]:
        entry = {}
        for sampler in tasks.SAMPLERS:
            r = dict(_unit(ctx, sampler, L))
            exact = tasks.count_marginal(sampler, L, cfg["T"])
            r["exact"] = exact.tolist()
            r["majority"] = tasks.majority_baseline(np.array(r["marginal"]))
            r["majority_exact"] = tasks.majority_baseline(exact)
            entry[sampler] = r
        per_L[str(L)] = entry
    return {"config": cfg, "per_L": per_L}


def claims_task(result: dict) -> ClaimsTable:
    """The task of §4 and the sampler of App. C: label marginals and the majority baseline (rows 1), and the
    invariants (rows 2). The marginal and invariant rows compare the sampled labels with the exact marginal of the same sampler (a value its recursion fixes):
    consistency checks of the samplers, not reproductions. The one reproduction is the Fig. 2 floor."""
    cfg = result["config"]
    t = ClaimsTable()
    for L in cfg["L_list"]:
        code, paper = result["per_L"][str(L)]["code"], result["per_L"][str(L)]["paper"]
        m = np.array(code["marginal"])
        t.consistency(f"1a L={L}", "code sampler: P(count = 1) = 2/L", expected=round(2 / L, 3), ours=float(m[1]),
              holds=abs(m[1] - 2 / L) <= 0.015, tolerance="± 0.015", asserted=True)
        dev = float(np.abs(m[2:L] - 1 / L).max()) if L > 2 else 0.0
        t.consistency(f"1b L={L}", "code sampler: P(count = c) = 1/L for 2 ≤ c ≤ L−1 (largest deviation)", expected=0.0,
              ours=dev, holds=dev <= 0.01, tolerance="≤ 0.01", asserted=True)
        t.consistency(f"1c L={L}", "code sampler: count L never occurs (one token only)", expected=0.0, ours=float(m[L]),
              holds=m[L] == 0, tolerance="exact", asserted=True)
        maj = code["majority"]
        t.consistency(f"1d L={L}", "majority-class accuracy (always predict count 1) = 2/L", expected=round(2 / L, 3),
              ours=float(maj[1]), holds=maj[0] == 1 and abs(maj[1] - 2 / L) <= 0.015, tolerance="± 0.015",
              asserted=True)
        pm = np.array(paper["marginal"])
        dev_p = float(np.abs(pm[1:] - 1 / L).max())
        t.consistency(f"1e L={L}", "App. C sampler as written (repaired): P(count = c) = 1/L for 1 ≤ c ≤ L "
                      "(largest deviation)", expected=0.0, ours=dev_p, holds=dev_p <= 0.01, tolerance="≤ 0.01", asserted=True)
        ok = all(r["tokens_in_range"] and r["labels_equal_hist_loop"] for r in (code, paper)) and \
            code["min_distinct_tokens"] >= 2 and code["max_label"] == L - 1
        t.consistency(f"2 L={L}", "invariants: tokens in [0, T), labels = hist, code sampler ≥ 2 distinct tokens",
                      expected="yes", ours="yes" if ok else "no", holds=ok, tolerance="exact", asserted=True)
    if 10 in cfg["L_list"]:
        floor = result["per_L"]["10"]["code"]["majority"][1]
        t.add("Fig. 2", "the ≈ 20 % accuracy floor of Fig. 2 (T = 32, L = 10) is the majority baseline",
              paper="≈ 0.2", ours=float(floor), holds=abs(floor - 0.2) <= 0.015, tolerance="± 0.015", asserted=True,
              source="figure")
    return t


EXPERIMENTS = [
    Experiment(
        id="002-counting/histogram-task",
        label="§4, App. C: the histogram task",
        title="The histogram task: samplers, count marginals and the majority baseline",
        params=PARAMS,
        presets={"ci": dict(T=32, L_list=[5, 10, 15], n_samples=20_000, seed=0),
                 "full": dict(T=32, L_list=[5, 10, 15], n_samples=1_000_000, seed=0)},
        compute=compute_task,
        summary="The code's sampler never produces count L: the labels are 1 w.p. 2/L, else 1/L; majority 2/L.",
    ),
]
