"""Figs. 5 and 9 (§6.2, App. F): a 6-layer GPT-style decoder trained on text, its validation
cross-entropy against the head dimension at a fixed number of heads (Fig. 5: diminishing returns),
and, at equal parameter counts (equal d_model = heads x head dimension), narrower heads against
fewer heads (Fig. 9). Every model is one replica; replicas within a factor 2 of d_model
train in one tensor program (a Fig. 9 pair at equal d_model shares its program, and a model in
both sweeps is trained once)."""

from __future__ import annotations

import functools

import numpy as np

from attnlab.core.claims import ClaimsTable
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError
from attnlab.papers.p003_allocation import lm, text

PARAMS = (
    Param("corpus", "str", "text: 'stdlib' (offline substitute) or 'wikitext' (local WikiText-103/2 under "
          "$ATTNLAB_DATA)", choices=text.CORPORA),
    Param("max_chars", "int", "characters of training text read", min=10_000, max=600_000_000),
    Param("level", "str", "tokens: characters or words", choices=text.LEVELS),
    Param("vocab_size", "int", "vocabulary size (unknown token included)", min=2, max=65536),
    Param("layers", "int", "decoder layers (the paper: 6)", min=1, max=48),
    Param("context", "int", "sequence length (the paper: 256)", min=4, max=4096),
    Param("heads", "int", "Fig. 5: number of heads (the paper: 12)", min=1, max=128),
    Param("head_dims", "int_list", "Fig. 5: head dimensions (the paper: 4..64)", min=1, max=512),
    Param("fig9_heads", "int", "Fig. 9 sweep 1: number of heads, head dimension varied (the paper: 8)", min=1, max=128),
    Param("fig9_head_dims", "int_list", "Fig. 9 sweep 1: head dimensions", min=1, max=512),
    Param("fig9_head_dim", "int", "Fig. 9 sweep 2: head dimension, number of heads varied (the paper: 64)",
          min=1, max=512),
    Param("fig9_head_counts", "int_list", "Fig. 9 sweep 2: numbers of heads (the paper: 1..32)", min=1, max=128),
    Param("ffn_mult", "float", "SwiGLU hidden width / d_model (not stated; Llama's 8/3)", min=0.25, max=16.0),
    Param("steps", "int", "optimisation steps", min=1, max=1_000_000),
    Param("batch", "int", "sequences per step (not stated; assumed 32)", min=1, max=4096),
    Param("lr", "float", "AdamW peak learning rate (the paper: 3e-4)", min=1e-6, max=1.0),
    Param("warmup", "int", "linear warm-up steps, then cosine decay (the paper: 200)", min=0, max=100_000),
    Param("beta2", "float", "AdamW beta_2 (not stated; nanoGPT's 0.95, torch's default 0.999)", min=0.5, max=0.99999),
    Param("weight_decay", "float", "AdamW weight decay (the paper: 0.1)", min=0.0, max=10.0),
    Param("clip", "float", "gradient-norm clipping per model, 0 = none (the paper: 1.0)", min=0.0, max=100.0),
    Param("dropout", "float", "dropout on the residual branches (the paper: 0.1)", min=0.0, max=0.9),
    Param("seeds", "int", "number of seeds (a count); the mean is plotted", min=1, max=20),
    Param("seed", "int", "the first seed: seeds seed, seed + 1, ... (moves every seed; 0 in every preset)",
          min=0, max=10_000),
    Param("n_eval", "int", "validation windows of `context` tokens", min=1, max=100_000),
)
PRESETS = {
    "ci": {"corpus": "stdlib", "max_chars": 500_000, "level": "char", "vocab_size": 96, "layers": 2, "context": 16,
           "heads": 4, "head_dims": [1, 2, 4, 8], "fig9_heads": 4, "fig9_head_dims": [1, 2, 4, 8],
           "fig9_head_dim": 8, "fig9_head_counts": [1, 2, 4], "ffn_mult": 8 / 3, "steps": 400, "batch": 32,
           "lr": 1e-2, "warmup": 40, "beta2": 0.95, "weight_decay": 0.1, "clip": 1.0, "dropout": 0.0, "seeds": 1, "seed": 0,
           "n_eval": 128},
    "full": {"corpus": "stdlib", "max_chars": 5_000_000, "level": "char", "vocab_size": 128, "layers": 6,
             "context": 256, "heads": 12, "head_dims": [4, 8, 16, 24, 32, 48, 64], "fig9_heads": 8,
             "fig9_head_dims": [4, 8, 16, 24, 32, 48, 64], "fig9_head_dim": 64, "fig9_head_counts": [1, 2, 4, 8, 16, 32],
             "ffn_mult": 8 / 3, "steps": 1200, "batch": 32, "lr": 3e-4, "warmup": 200, "beta2": 0.95, "weight_decay": 0.1,
             "clip": 1.0, "dropout": 0.1, "seeds": 1, "seed": 0, "n_eval": 512},
}


# Seeds of one CI-scale model differ in validation CE by up to 0.09 nats (measured 2026-11-27: 3 seeds of each
# of the 7 models of the ci preset, widest spread 0.087 nats, at 2 x 8): a step of the Fig. 5 curve or a Fig. 9
# gap smaller than this cannot tell a falling curve from a flat one.
SEED_SPREAD = 0.09
# Undertraining (issue 27): at the CI scale's 400 steps the wider heads have not converged: the CE gap between
# d_H = 2 and 8 grows from 0.07 to 0.48 nats with 4x the steps, so a flat upper end of the Fig. 5 curve (and a
# narrow head that looks "competitive") is what an undertrained sweep shows whatever the converged curve is.
CONVERGED_STEPS = 1000  # below this, the shape rows of Fig. 5 and the Fig. 9 gaps are not judged


def sweeps(cfg: dict) -> dict[str, list[tuple[int, int]]]:
    """(heads, head dimension) of each sweep: Fig. 5, Fig. 9 sweep 1 (head dimension varied),
    Fig. 9 sweep 2 (number of heads varied)."""
    return {"fig5": [(cfg["heads"], k) for k in cfg["head_dims"]],
            "fig9_dim": [(cfg["fig9_heads"], k) for k in cfg["fig9_head_dims"]],
            "fig9_heads": [(h, cfg["fig9_head_dim"]) for h in cfg["fig9_head_counts"]]}


def compute(ctx: Context) -> dict:
    """Trains one decoder per distinct (heads, head dimension, seed) of the three sweeps (stored
    per model, resumable; size-sorted programs). Result: `models` ("H x K" -> d_model,
    parameters, mean validation CE over seeds, per-seed CE, a loss curve), `sweeps` (the (H, K) of
    each sweep), `pairs` (Fig. 9: d_model -> the narrow-heads and the few-heads model at equal
    parameters), `unigram` (the validation text's unigram entropy), `data` (its description)."""
    cfg = ctx.config
    for name in ("head_dims", "fig9_head_dims", "fig9_head_counts"):
        if len(set(cfg[name])) != len(cfg[name]) or sorted(cfg[name]) != cfg[name]:
            raise ParameterError(f"parameter {name!r}: value {cfg[name]} is not allowed; need distinct values in "
                                 "increasing order")
    load = functools.cache(lambda: _data(cfg))  # read only when something must be trained
    sw = sweeps(cfg)
    shapes = sorted({hk for s in sw.values() for hk in s}, key=lambda hk: (hk[0] * hk[1], hk))
    spec = lm.TrainSpec(steps=cfg["steps"], batch=cfg["batch"], lr=cfg["lr"], warmup=cfg["warmup"],
                        weight_decay=cfg["weight_decay"], clip=cfg["clip"], dropout=cfg["dropout"],
                        betas=(0.9, cfg["beta2"]))
    data_key = text.data_key(cfg["corpus"], cfg["max_chars"], cfg["level"], cfg["vocab_size"])
    models = [lm.LMConfig(cfg["vocab_size"], h, k, cfg["layers"], cfg["context"], cfg["ffn_mult"], s)
              for (h, k) in shapes for s in range(cfg["seed"], cfg["seed"] + cfg["seeds"])]
    keys = [lm.unit_key(m, spec, data_key, cfg["n_eval"]) for m in models]

    def plan(missing):
        """Size-sorted programs, each spanning at most a factor 2 of d_model: small models cost mostly
        per-operation overhead, which a program shares, while padding to a much wider one costs its
        arithmetic (a Fig. 9 pair, equal in d_model, always shares a program)."""
        groups: list[list[int]] = []
        for i in sorted(missing, key=lambda i: (models[i].d_model, i)):
            if groups and models[i].d_model <= 2 * models[groups[-1][0]].d_model:
                groups[-1].append(i)
            else:
                groups.append([i])
        return groups

    def fn(group):
        data, unigram = load()
        cfgs = [models[i] for i in group]
        for j, res, sec in lm.train(cfgs, spec, data.train, data.valid, cfg["n_eval"], device=ctx.device,
                                    progress=ctx.progress, desc=f"d_model {cfgs[0].d_model}-{cfgs[-1].d_model}"):
            yield group[j], {**res, "data": data.describe(), "unigram": unigram,
                             "substitute": data.corpus.substitute}, sec

    out = ctx.units(keys, fn, plan=plan, desc="programs")
    table = {}
    for (h, k) in shapes:
        runs = [o for m, o in zip(models, out) if (m.heads, m.head_dim) == (h, k)]
        table[f"{h}x{k}"] = {"heads": h, "head_dim": k, "d_model": h * k, "n_params": runs[0]["n_params"],
                             "ce": float(np.mean([r["valid_ce"] for r in runs])),
                             "ce_seeds": [r["valid_ce"] for r in runs], "curve": runs[0]["curve"]}
    pairs = {}
    for a in sw["fig9_dim"]:
        for b in sw["fig9_heads"]:
            if a[0] * a[1] == b[0] * b[1] and a != b:
                pairs[str(a[0] * a[1])] = {"narrow": f"{a[0]}x{a[1]}", "few": f"{b[0]}x{b[1]}"}
    return {"config": cfg, "models": table, "sweeps": {k: [f"{h}x{d}" for h, d in v] for k, v in sw.items()},
            "pairs": pairs, "unigram": out[0]["unigram"], "data": out[0]["data"], "substitute": out[0]["substitute"]}


def _data(cfg: dict) -> tuple[text.Data, float]:
    """The tokenised corpus and the unigram entropy (nats) of its validation text."""
    data = text.prepare(cfg["corpus"], cfg["max_chars"], cfg["level"], cfg["vocab_size"])
    if len(data.train) < 10 * (cfg["context"] + 1) or len(data.valid) < cfg["context"] + 1:
        raise ParameterError(f"parameter 'max_chars': value {cfg['max_chars']} gives too little text for "
                             f"context {cfg['context']} ({len(data.train)} training tokens)")
    counts = np.bincount(data.valid, minlength=cfg["vocab_size"]) / len(data.valid)
    return data, float(-(counts[counts > 0] * np.log(counts[counts > 0])).sum())


def fig5_curve(result: dict) -> tuple[list[int], list[float]]:
    """Fig. 5: (head dimensions, validation CE)."""
    ms = result["models"]
    names = result["sweeps"]["fig5"]
    return [ms[n]["head_dim"] for n in names], [ms[n]["ce"] for n in names]


def diminishing(result: dict) -> dict:
    """The Fig. 5 shape: the largest rise of CE along increasing head dimension (0 if monotone), the
    smallest fall (negative if it rises somewhere),
    the gain over the lower half of the head dimensions and over the upper half (split at the
    middle entry), and the CE gap between a 4x narrower head and the widest."""
    k, ce = fig5_curve(result)
    ce = np.array(ce)
    m = len(ce) // 2
    rise = float(max(0.0, np.max(ce[1:] - ce[:-1]))) if len(ce) > 1 else 0.0
    fall = float(np.min(ce[:-1] - ce[1:])) if len(ce) > 1 else 0.0
    quarter = [i for i, x in enumerate(k) if 4 * x == k[-1]]
    return {"rise": rise, "fall": fall, "low_gain": float(ce[0] - ce[m]), "high_gain": float(ce[m] - ce[-1]), "mid": k[m],
            "quarter_gap": float(ce[quarter[0]] - ce[-1]) if quarter else None, "widest": k[-1]}


def fig9_gaps(result: dict) -> dict[str, float]:
    """Fig. 9: d_model -> CE(few wide heads) - CE(many narrow heads) at equal parameters (positive:
    narrowing heads is the better way to cut parameters, as the paper says)."""
    ms = result["models"]
    return {d: ms[p["few"]]["ce"] - ms[p["narrow"]]["ce"] for d, p in result["pairs"].items()}


def claims(result: dict) -> ClaimsTable:
    cfg = result["config"]
    s = diminishing(result)
    k, ce = fig5_curve(result)
    # Measured across CPUs (AVX-512 vs AVX2 kernels): these 400-step LMs' loss differences move by up to 70 %
    t = ClaimsTable(rtol=1.0, atol=SEED_SPREAD)
    steps = ", ".join(f"{b - a:+.3f}" for a, b in zip(ce[:-1], ce[1:]))
    txt1 = f"Fig. 5: validation loss falls at every step of the head dimension ({' -> '.join(map(str, k))})"
    if s["rise"] > SEED_SPREAD or s["fall"] > SEED_SPREAD:  # beyond what a seed moves a model, either way
        t.add("1", txt1, paper="decreasing", ours=f"changes {steps} nats", holds=s["fall"] > SEED_SPREAD,
              tolerance=f"every step falls by > {SEED_SPREAD} nats (the seed spread); fails on a rise > it",
              asserted=True, source="figure")
    else:
        t.inconclusive("1", txt1, paper="decreasing", ours=f"changes {steps} nats",
                       why=f"a step moves by less than the seed spread ({SEED_SPREAD} nats at CI): it cannot "
                           "separate a falling curve from a flat one", source="figure")
    undertrained = cfg["scale"] != "full" and cfg["steps"] < CONVERGED_STEPS
    why_under = (f"{cfg['steps']} steps: the wider heads are undertrained (at CI the d_H = 2 vs 8 gap grows from 0.07 "
                 "to 0.48 nats with 4x the steps), so a flat upper end is what this sweep shows whether or not the "
                 "converged curve saturates")
    txt2 = (f"Fig. 5: diminishing returns: the gain from d_H = {k[0]} to {s['mid']} exceeds twice the gain "
            f"from {s['mid']} to {k[-1]}")
    ours2 = f"{s['low_gain']:.3f} vs {s['high_gain']:.3f} nats"
    if undertrained:
        t.inconclusive("2", txt2, paper="diminishing returns", ours=ours2, why="ratio > 2; " + why_under, source="text")
    else:
        t.add("2", txt2, paper="diminishing returns", ours=ours2, holds=s["low_gain"] > 2 * s["high_gain"],
              tolerance="ratio > 2", asserted=True, source="text")
    if s["quarter_gap"] is not None:
        rel = s["quarter_gap"] / ce[-1]
        txt = f"§6.2: reduced head dimensions stay competitive: d_H = {s['widest'] // 4} vs {s['widest']} (4x smaller)"
        ours = f"{s['quarter_gap']:+.3f} nats ({100 * rel:+.1f}%)"
        if cfg["heads"] * s["widest"] >= 192 and not undertrained:
            t.add("3", txt, paper="competitive", ours=ours, holds=rel <= 0.05, tolerance="within 5% of the widest",
                  source="text")
        else:
            t.inconclusive("3", txt, paper="competitive", ours=ours,
                           why=(why_under.replace("a flat upper end is", "a small gap is") + "; and " if undertrained
                                else "") + f"d_model {cfg['heads'] * s['widest'] // 4} vs {cfg['heads'] * s['widest']}: "
                               "tiny models, far from the paper's 192 vs 768", source="text")
    gaps = fig9_gaps(result)
    if gaps:
        mean_gap = float(np.mean(list(gaps.values())))
        txt = ("Fig. 9: at equal parameters, fewer heads lose more than narrower heads "
               f"(CE(few) - CE(narrow) at d_model {', '.join(gaps)})")
        ours = ", ".join(f"{g:+.3f}" for g in gaps.values())
        if cfg["scale"] == "full" or cfg["steps"] >= 1000:
            t.add("4", txt, paper="> 0", ours=ours, holds=all(g > 0 for g in gaps.values()), tolerance="every gap > 0",
                  source="text")
        else:
            t.inconclusive("4", txt, paper="> 0", ours=ours,
                           why=f"{cfg['steps']} steps at d_model <= {max(int(d) for d in gaps)}: seeds differ by up "
                               f"to {SEED_SPREAD} nats per model (calibration), as much as the gaps", source="text")
    ms = result["models"]
    same = all(ms[p["few"]]["n_params"] == ms[p["narrow"]]["n_params"] for p in result["pairs"].values())
    t.consistency("5", "Fig. 9 pairs have equal parameter counts (d_model = heads x head dim fixes them)",
                  expected="equal", ours="equal" if same else "differ", holds=same, asserted=True)
    worst = max(m["ce"] for m in ms.values())
    t.consistency("6", "every model beats the unigram entropy of the validation text (it uses context)",
                  expected=f"< {result['unigram']:.3f}", ours=round(worst, 3), holds=worst < result["unigram"],
                  tolerance="worst CE below")
    if cfg["scale"] != "full":
        t.not_run("7", "Figs. 5 and 9 at the paper's sizes (12 heads, d_H 4-64, 6 layers, L 256)",
                  paper="Fig. 5, Fig. 9", command="attnlab run 003-allocation/figs5-9-lm-heads --scale full --headless",
                  source="figure")
    return t


EXPERIMENTS = (Experiment(id="003-allocation/figs5-9-lm-heads", label="Figs. 5 and 9 (§6.2, App. F)",
                          title="A 6-layer language model: loss against head dimension and number of heads",
                          params=PARAMS, presets=PRESETS, compute=compute),)
