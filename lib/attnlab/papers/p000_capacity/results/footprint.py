"""App. C: the computational footprint of the QK channel. Multiply-accumulates and parameters of
forming Q, K (ell d D_K each) and of all per-head score matrices (ell^2 D_K) do not depend on how a
fixed D_K is split into heads; the constructions cost O(m d log m) when W^(k) = X^T W'^(k) is formed
in the right order. Wall-clock times of the batched computation are shown, not asserted.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from attnlab.core.claims import ClaimsTable, bound
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError

from .. import bounds
from .. import constructions as C
from .. import tasks as T

PARAMS = (
    Param("ell", "int", "context length", min=2, max=8192),
    Param("d_model", "int", "embedding dimension", min=2, max=8192),
    Param("D_K", "int", "total key dimension", min=1, max=65536),
    Param("heads", "int_list", "head counts h (each divides D_K)", min=1, max=65536),
    Param("repeats", "int", "timed repetitions per head count", min=1, max=10000),
    Param("m", "int", "items of the construction-cost check", min=16, max=8192),
)
PRESETS = {"ci": {"ell": 256, "d_model": 256, "D_K": 256, "heads": [1, 2, 4, 8, 16, 32, 64], "repeats": 20, "m": 512},
           "full": {"ell": 1024, "d_model": 768, "D_K": 768, "heads": [1, 2, 4, 8, 12, 16, 32, 64, 96, 192],
                    "repeats": 200, "m": 4096}}


def timing(ell: int, d: int, D_K: int, h: int, repeats: int) -> float:
    """Median seconds of one batched QK forward: Q, K = X W (ell x D_K), reshaped to (h, ell, d_k),
    S = Q K^T per head (torch, float32, the current device's thread setting)."""
    g = torch.Generator().manual_seed(0)
    X, WQ, WK = (torch.randn(ell, d, generator=g), torch.randn(d, D_K, generator=g), torch.randn(d, D_K, generator=g))
    times = []
    for _ in range(repeats + 2):
        t0 = time.perf_counter()
        Q = (X @ WQ).view(ell, h, D_K // h).transpose(0, 1)
        K = (X @ WK).view(ell, h, D_K // h).transpose(0, 1)
        torch.bmm(Q, K.transpose(1, 2)).amax(dim=0)
        times.append(time.perf_counter() - t0)
    return float(np.median(times[2:]))


def construction_check(m: int, d: int, h: int, d_k: int) -> dict:
    """Algorithm 1 built in the sparse order (X^T restricted to each head's rows, times W_sig rows)
    against the dense product X^T W'^(k) with the full m x d_k template: the largest difference."""
    X = T.gun_embeddings(m, d, T.rng(0, "X", m, d))
    perm = T.random_permutation(m, T.rng(0, "perm", m))
    W = C.rademacher_signatures(m, d_k, T.rng(0, "signatures", m, d_k))
    c = C.compressive(perm, X, h, W)
    err = 0.0
    for k, V in enumerate(C.blocks(m, h)):
        WQ = np.zeros((m, d_k)); WQ[V] = W[perm[V]]
        WK = np.zeros((m, d_k)); WK[perm[V]] = W[perm[V]]
        err = max(err, float(np.abs(X.T @ WQ - c.W_Q[k]).max()), float(np.abs(X.T @ WK - c.W_K[k]).max()))
    return {"m": m, "d": d, "h": h, "d_k": d_k, "max_diff": err,
            "dense_macs": bounds.construction_macs(m, d, d_k, h, dense=True),
            "sparse_macs": bounds.construction_macs(m, d, d_k, h, dense=False)}


def compute(ctx: Context) -> dict:
    """Tabulates the App. C counts for every head count at fixed D_K, times the batched forward
    (machine-dependent: shown, never asserted) and checks the sparse construction order; the
    result holds `rows` (counts per h), `seconds` (median time per h) and `construction`."""
    cfg = ctx.config
    bad = [h for h in cfg["heads"] if cfg["D_K"] % h]
    if bad:
        raise ParameterError(f"parameter 'heads': {bad} do not divide D_K = {cfg['D_K']}")
    if cfg["d_model"] > cfg["m"]:
        raise ParameterError(f"parameter 'd_model' {cfg['d_model']} must be <= m = {cfg['m']}")
    rows = [bounds.footprint(cfg["ell"], cfg["d_model"], h, cfg["D_K"] // h) for h in sorted(cfg["heads"])]
    m, d = cfg["m"], cfg["d_model"]
    h = max(1, m // d)
    d_k = max(1, math.ceil(4 * math.log(m)))
    cons = ctx.unit({"what": "construction", "m": m, "d": d, "h": h, "d_k": d_k},
                    lambda: construction_check(m, d, h, d_k))
    # stored like any unit (with the device in its provenance), so a read-only context never times
    seconds = ctx.unit({"what": "timing", "ell": cfg["ell"], "d": d, "D_K": cfg["D_K"], "heads": sorted(cfg["heads"]),
                        "repeats": cfg["repeats"]},
                       lambda: {str(h): timing(cfg["ell"], d, cfg["D_K"], h, cfg["repeats"]) for h in sorted(cfg["heads"])})
    return {"config": cfg, "rows": rows, "seconds": seconds, "construction": cons}


def claims(result: dict) -> ClaimsTable:
    cfg = result["config"]
    t = ClaimsTable()
    rows = result["rows"]
    qk = {r["qk_macs"] for r in rows}
    t.consistency("1", f"forming Q and K costs 2 ℓ d D_K MACs for every split of D_K = {cfg['D_K']} "
                       f"(distinct values over h ∈ {cfg['heads']})", expected=1, ours=len(qk), holds=len(qk) == 1,
                  asserted=True)
    sc = {r["score_macs"] for r in rows}
    t.consistency("2", "all per-head score matrices cost h ℓ² d_k = ℓ² D_K MACs (distinct values over h)",
                  expected=1, ours=len(sc), holds=len(sc) == 1 and sc == {cfg["ell"] ** 2 * cfg["D_K"]}, asserted=True)
    pr = {r["params"] for r in rows}
    t.consistency("3", "QK parameters 2 d D_K for every split (distinct values over h)", expected=1, ours=len(pr),
                  holds=len(pr) == 1, asserted=True)
    c = result["construction"]
    t.consistency("4", "Algorithm 1 in the sparse order equals X^T W′ (largest difference)", expected=0.0,
                  ours=bound(c["max_diff"], 1e-12), holds=c["max_diff"] < 1e-12, tolerance="< 1e-12", asserted=True)
    t.consistency("5", f"the sparse order costs 2 m d d_k = O(m d log m) MACs, h = {c['h']} times fewer than the dense "
                       "product (ratio)", expected=c["h"], ours=c["dense_macs"] / c["sparse_macs"],
                  holds=c["dense_macs"] == c["h"] * c["sparse_macs"], asserted=True)
    return t


EXPERIMENTS = (Experiment(
    id="000-capacity/footprint", label="App. C",
    title="Computational footprint: the cost of the QK channel depends on D_K, not on the split",
    params=PARAMS, presets=PRESETS, compute=compute,
    summary="FLOPs and parameters of QK at fixed D_K for every head count; the construction in O(m d log m)."),)
