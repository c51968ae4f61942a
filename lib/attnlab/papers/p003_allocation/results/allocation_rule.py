"""Corollary 4.1 and Corollary E.1 (§4, App. E.2): the allocation rule as an integer program,
solved exactly (dynamic programming, checked by brute-force enumeration where small): the 4-gram
optimum M = 4, (H_m, d_m) = (8, 8) for D = 256, other budgets and kernels, and the Volterra
(n-th order) version, both as printed and with its truncation term."""

from __future__ import annotations

import itertools

from attnlab.core.claims import ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param
from attnlab.papers.p003_allocation import allocation as A, paper

PARAMS = (
    Param("d", "int", "token dimension d (the paper: 8)", min=1, max=256),
    Param("budgets", "int_list", "budgets D solved for the 4-gram task (the paper: 256)", min=1, max=2048),
    Param("M_max", "int", "largest number of head groups M (the paper: 4)", min=1, max=32),
    Param("decay", "float", "ratio r of the decaying kernel ||rho_i|| = r^i", min=0.01, max=0.99),
    Param("decay_lags", "int", "number of lags of the decaying kernel", min=1, max=64),
    Param("decay_M_max", "int", "largest M for the decaying kernel", min=1, max=32),
    Param("enum_budgets", "int_list", "small budgets also solved by brute-force enumeration", min=1, max=32),
    Param("orders", "int_list", "Volterra orders n of Corollary E.1", min=1, max=4),
    Param("volterra_budgets", "int_list", "budgets D of Corollary E.1", min=1, max=512),
)
PRESETS = {
    "ci": {"d": 8, "budgets": [64, 128, 256], "M_max": 4, "decay": 0.5, "decay_lags": 20, "decay_M_max": 8,
           "enum_budgets": [8, 16, 24], "orders": [1, 2, 3], "volterra_budgets": [64, 128]},
    "full": {"d": 8, "budgets": [32, 64, 128, 256, 512, 1024], "M_max": 8, "decay": 0.5, "decay_lags": 20,
             "decay_M_max": 12, "enum_budgets": [8, 16, 24, 32], "orders": [1, 2, 3], "volterra_budgets": [64, 128, 256]},
}


def _alloc(a: A.Allocation) -> dict:
    return {"groups": [list(g) for g in a.groups], "objective": a.objective, "M": a.M}


def compute(ctx: Context) -> dict:
    """Solves the programs (no training). Result: `ngram` (budget -> optimum of Cor. 4.1 for
    rho_i = I, i = 1..4), `enum` (budget -> DP and brute-force optima), `decay` (the optimum for
    ||rho_i|| = r^i), `volterra` (order -> budget -> optimum of Cor. E.1 with and without ε_H)."""
    key = {"what": ctx.experiment.id, **{k: v for k, v in ctx.config.items() if k != "device"}}
    return ctx.unit(key, lambda: _evaluate(ctx))


def _evaluate(ctx: Context) -> dict:
    cfg = ctx.config
    d = cfg["d"]
    rho4 = [1.0] * paper.NGRAM_LAGS
    ngram = {str(D): _alloc(A.solve_cor41(rho4, D, d, cfg["M_max"])) for D in cfg["budgets"]}
    enum = {}
    for D in cfg["enum_budgets"]:
        enum[str(D)] = {"dp": _alloc(A.solve_cor41(rho4, D, d, cfg["M_max"])),
                        "brute": _alloc(A.enumerate_cor41(rho4, D, d, cfg["M_max"])),
                        "dp_decay": _alloc(A.solve_cor41([0.9, 0.5, 0.3, 0.1], D, d, cfg["M_max"])),
                        "brute_decay": _alloc(A.enumerate_cor41([0.9, 0.5, 0.3, 0.1], D, d, cfg["M_max"]))}
    rho_dec = [cfg["decay"] ** i for i in range(1, cfg["decay_lags"] + 1)]
    decay = _alloc(A.solve_cor41(rho_dec, max(cfg["budgets"]), d, cfg["decay_M_max"]))
    volterra = {}
    for n in cfg["orders"]:
        kern = {tau: 1.0 for tau in itertools.product(range(1, paper.NGRAM_LAGS + 1), repeat=n)}
        volterra[str(n)] = {}
        for D in cfg["volterra_budgets"]:
            full = A.solve_cor_e1(kern, n, D, d, cfg["M_max"])
            printed = A.solve_cor_e1(kern, n, D, d, cfg["M_max"], with_truncation=False)
            volterra[str(n)][str(D)] = {k: {"M": o.M, "min_d": o.min_d, "min_H": o.min_H, "objective": o.objective,
                                            "terms": o.terms} for k, o in (("with_truncation", full), ("printed", printed))}
    return {"config": cfg, "ngram": ngram, "enum": enum, "decay": decay, "volterra": volterra}


def claims(result: dict) -> ClaimsTable:
    cfg = result["config"]
    t = ClaimsTable()
    if "256" in result["ngram"] and cfg["d"] == 8 and cfg["M_max"] == 4:
        a = result["ngram"]["256"]
        groups = tuple(tuple(g) for g in a["groups"])
        t.consistency("1", "4-gram, d = 8, D = 256, M <= 4: the optimum is M = 4, d_m = H_m = 8 (found by search)",
                      expected="M=4, (8,8)x4", ours=f"M={a['M']}, " + ",".join(f"({h},{dm})" for h, dm in groups),
                      holds=groups == paper.NGRAM4_OPTIMUM["groups"], asserted=True, source="text")
        t.consistency("2", "its objective = (1.3/8) sum_m e^0.02m", expected=0.683497, ours=round(a["objective"], 6),
                      holds=abs(a["objective"] - 0.6834970558714126) < 1e-9, tolerance="1e-9", asserted=True)
    for D, e in result["enum"].items():
        ok = abs(e["dp"]["objective"] - e["brute"]["objective"]) < 1e-12 and \
            abs(e["dp_decay"]["objective"] - e["brute_decay"]["objective"]) < 1e-12
        t.consistency(f"3.{D}", f"D = {D}: the dynamic program equals brute-force enumeration (two kernels)",
                      expected=round(e["brute"]["objective"], 6), ours=round(e["dp"]["objective"], 6), holds=ok,
                      tolerance="1e-12", asserted=True)
    fits = [D for D, a in result["ngram"].items() if int(D) >= a["M"] * cfg["d"]]
    all_d = all(dm == cfg["d"] for D in fits for _, dm in result["ngram"][D]["groups"])
    t.consistency("4", "whenever D >= M d, every optimal head dimension d_m equals d", expected="d_m = d",
                  ours="d_m = d" if all_d else "other", holds=all_d, asserted=True)
    Hs = [g[0] for g in result["decay"]["groups"]]
    mono = all(x >= y for x, y in zip(Hs, Hs[1:]))
    t.consistency("5", f"decaying kernel r^i (r = {cfg['decay']}): optimal H_m non-increasing in the lag",
                  expected="non-increasing", ours=",".join(map(str, Hs)), holds=mono)
    v = result["volterra"]
    printed_M1 = all(o["printed"]["M"] == 1 for n in v.values() for o in n.values())
    t.consistency("6", "Cor. E.1 as printed (no ε_H term): the minimiser always takes M = 1 group",
                  expected="M = 1", ours="M = 1" if printed_M1 else "M > 1 somewhere", holds=printed_M1)
    full_d = all(o["with_truncation"]["min_d"] == cfg["d"] for n in v.values() for o in n.values())
    t.consistency("7", "Cor. E.1 with ε_H: the optimal min_m d_m stays at d for n = 1, 2, 3",
                  expected="d", ours="d" if full_d else "< d somewhere", holds=full_d)
    return t


EXPERIMENTS = (Experiment(id="003-allocation/allocation-rule", label="Corollaries 4.1 and E.1 (§4, App. E.2)",
                          title="The allocation rule as an integer program, solved exactly", params=PARAMS,
                          presets=PRESETS, compute=compute),)
