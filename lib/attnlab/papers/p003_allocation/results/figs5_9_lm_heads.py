"""Figs. 5 and 9 (§6.2, App. F): a 6-layer GPT-style decoder trained on text, its validation
cross-entropy against the head dimension at a fixed number of heads (Fig. 5: diminishing returns),
and, at equal parameter counts (equal d_model = heads x head dimension), narrower heads against
fewer heads (Fig. 9). Every model is one replica; replicas within a factor 2 of d_model
train in one tensor program (a Fig. 9 pair at equal d_model shares its program, and a model in
both sweeps is trained once)."""

from __future__ import annotations

import functools

import numpy as np

from attnlab.core.checkpoint import RESUME_PARAMS, program_checkpoint
from attnlab.core.claims import ClaimsTable, seed_summary
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import BATCH, LR, Param, ParameterError, SEED, SEEDS, STEPS
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
    STEPS.described("optimisation steps"),
    BATCH.described("sequences per step (not stated; assumed 32)"),
    LR.described("AdamW peak learning rate (the paper: 3e-4)"),
    Param("warmup", "int", "linear warm-up steps, then cosine decay (the paper: 200)", min=0, max=100_000),
    Param("beta2", "float", "AdamW beta_2 (not stated; nanoGPT's 0.95, torch's default 0.999)", min=0.5, max=0.99999),
    Param("weight_decay", "float", "AdamW weight decay (the paper: 0.1)", min=0.0, max=10.0),
    Param("clip", "float", "gradient-norm clipping per model, 0 = none (the paper: 1.0)", min=0.0, max=100.0),
    Param("dropout", "float", "dropout on the residual branches (the paper: 0.1)", min=0.0, max=0.9),
    SEEDS.described("seeds per model (a count): replicas of one program, each with its own initialisation and "
                    "batch order; every trained row is judged over them and the median is plotted"),
    SEED.described("the first seed: seeds seed, seed + 1, ..., seed + seeds - 1 of every model (moves every seed; "
                   "0 in every preset)"),
    Param("n_eval", "int", "validation windows of `context` tokens", min=1, max=100_000),
) + RESUME_PARAMS  # operational: a paper-scale program checkpoints and stops at a time limit
PRESETS = {
    "ci": {"corpus": "stdlib", "max_chars": 500_000, "level": "char", "vocab_size": 96, "layers": 2, "context": 16,
           "heads": 4, "head_dims": [1, 2, 4, 8], "fig9_heads": 4, "fig9_head_dims": [1, 2, 4, 8],
           "fig9_head_dim": 8, "fig9_head_counts": [1, 2, 4], "ffn_mult": 8 / 3, "steps": 400, "batch": 10,
           "lr": 1e-2, "warmup": 40, "beta2": 0.95, "weight_decay": 0.1, "clip": 1.0, "dropout": 0.0, "seeds": 3, "seed": 0,
           "n_eval": 128, "checkpoint_every": 0, "time_limit": 0.0},
    "full": {"corpus": "stdlib", "max_chars": 5_000_000, "level": "char", "vocab_size": 128, "layers": 6,
             "context": 256, "heads": 12, "head_dims": [4, 8, 16, 24, 32, 48, 64], "fig9_heads": 8,
             "fig9_head_dims": [4, 8, 16, 24, 32, 48, 64], "fig9_head_dim": 64, "fig9_head_counts": [1, 2, 4, 8, 16, 32],
             "ffn_mult": 8 / 3, "steps": 1200, "batch": 32, "lr": 3e-4, "warmup": 200, "beta2": 0.95, "weight_decay": 0.1,
             "clip": 1.0, "dropout": 0.1, "seeds": 1, "seed": 0, "n_eval": 512, "checkpoint_every": 0,
             "time_limit": 0.0},
}


# The precision of a CI-scale model's validation CE, and of a difference of two: a 400-step model's loss moves
# across CPUs (AVX-512 vs AVX2 kernels) as its training diverges, by as much as a change of seed: one step of the
# Fig. 5 curve measured -0.001 on an Intel Xeon and +0.060 on an AMD EPYC (one seed), and 3 seeds of each model of
# the former ci preset (batch 32) spread by up to 0.087 nats. A seed's value within this of a threshold is undecided.
CPU_ATOL = 0.09
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
    per model, resumable; size-sorted programs; the seeds of a model are replicas of its program).
    Result: `models` ("H x K" -> d_model, parameters, median validation CE over seeds, per-seed CE
    in seed order, the first seed's loss curve), `sweeps` (the (H, K) of
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
        checkpoint = program_checkpoint(ctx, [keys[i] for i in group])  # None at CI (checkpoint_every, time_limit 0)
        for j, res, sec in lm.train(cfgs, spec, data.train, data.valid, cfg["n_eval"], device=ctx.device,
                                    progress=ctx.progress, desc=f"d_model {cfgs[0].d_model}-{cfgs[-1].d_model}",
                                    checkpoint=checkpoint):
            yield group[j], {**res, "data": data.describe(), "unigram": unigram,
                             "substitute": data.corpus.substitute}, sec
        if checkpoint is not None:  # the models are stored: the state is no longer needed
            checkpoint.remove()

    out = ctx.units(keys, fn, plan=plan, desc="programs")
    table = {}
    for (h, k) in shapes:
        runs = [o for m, o in zip(models, out) if (m.heads, m.head_dim) == (h, k)]
        table[f"{h}x{k}"] = {"heads": h, "head_dim": k, "d_model": h * k, "n_params": runs[0]["n_params"],
                             "ce": float(np.median([r["valid_ce"] for r in runs])),
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
    """Fig. 5: (head dimensions, validation CE: the median over seeds)."""
    ms = result["models"]
    names = result["sweeps"]["fig5"]
    return [ms[n]["head_dim"] for n in names], [ms[n]["ce"] for n in names]


def seed_curves(result: dict) -> tuple[list[int], np.ndarray]:
    """Fig. 5 per seed: (head dimensions, CE [seeds, head dimensions]), seeds in order."""
    ms = result["models"]
    names = result["sweeps"]["fig5"]
    return [ms[n]["head_dim"] for n in names], np.array([ms[n]["ce_seeds"] for n in names], dtype=float).T


def shape(k: list[int], ce) -> dict:
    """The Fig. 5 shape of one curve: the largest rise of CE along increasing head dimension (0 if
    monotone), the smallest fall (negative if it rises somewhere), the gain over the lower half of the
    head dimensions and over the upper half (split at the middle entry), and the CE gap between a 4x
    narrower head and the widest (and that gap relative to the widest's CE)."""
    ce = np.asarray(ce, dtype=float)
    m = len(ce) // 2
    rise = float(max(0.0, np.max(ce[1:] - ce[:-1]))) if len(ce) > 1 else 0.0
    fall = float(np.min(ce[:-1] - ce[1:])) if len(ce) > 1 else 0.0
    quarter = [i for i, x in enumerate(k) if 4 * x == k[-1]]
    gap = float(ce[quarter[0]] - ce[-1]) if quarter else None
    return {"rise": rise, "fall": fall, "low_gain": float(ce[0] - ce[m]), "high_gain": float(ce[m] - ce[-1]),
            "mid": k[m], "quarter_gap": gap, "quarter_rel": None if gap is None else gap / float(ce[-1]),
            "widest": k[-1]}


def diminishing(result: dict) -> dict:
    """`shape` of the median curve (Fig. 5 as plotted)."""
    return shape(*fig5_curve(result))


def seed_shapes(result: dict) -> list[dict]:
    """`shape` of each seed's curve, in seed order."""
    k, ce = seed_curves(result)
    return [shape(k, row) for row in ce]


def fig9_gaps(result: dict) -> dict[str, float]:
    """Fig. 9: d_model -> CE(few wide heads) - CE(many narrow heads) at equal parameters, medians over
    seeds (positive: narrowing heads is the better way to cut parameters, as the paper says)."""
    ms = result["models"]
    return {d: ms[p["few"]]["ce"] - ms[p["narrow"]]["ce"] for d, p in result["pairs"].items()}


def fig9_seed_gaps(result: dict) -> dict[str, list[float]]:
    """Fig. 9 per seed: d_model -> [CE(few) - CE(narrow) of seed i] (the two models of one seed index)."""
    ms = result["models"]
    return {d: [a - b for a, b in zip(ms[p["few"]]["ce_seeds"], ms[p["narrow"]]["ce_seeds"])]
            for d, p in result["pairs"].items()}


def claims(result: dict) -> ClaimsTable:
    """Every trained row is judged over the seeds (`ClaimsTable.add_seeds`): its value is measured on each
    seed's models, "this run" prints the median and the spread, and the row is reproduced or fails only
    when every seed is beyond the threshold by more than CPU_ATOL. Below CONVERGED_STEPS the shape rows
    and the Fig. 9 gaps are inconclusive (undertrained), with the same per-seed values printed."""
    cfg = result["config"]
    k, _ = fig5_curve(result)
    shapes = seed_shapes(result)
    n = len(shapes)
    # Measured across CPUs (AVX-512 vs AVX2 kernels): these 400-step LMs' loss differences move by up to 70 %
    t = ClaimsTable(rtol=1.0, atol=CPU_ATOL)
    judged = dict(rtol=0.0, atol=CPU_ATOL)  # a seed within CPU_ATOL of the threshold is undecided
    undertrained = cfg["scale"] != "full" and cfg["steps"] < CONVERGED_STEPS
    why_under = (f"{cfg['steps']} steps: the wider heads are undertrained (at CI the d_H = 2 vs 8 gap grows from 0.07 "
                 "to 0.48 nats with 4x the steps), so a flat upper end is what this sweep shows whether or not the "
                 "converged curve saturates")
    txt1 = (f"Fig. 5: validation loss falls at every step of the head dimension ({' -> '.join(map(str, k))}); "
            "per seed, the least fall between consecutive head dimensions (nats)")
    falls = [s["fall"] for s in shapes]
    if undertrained:  # a rise at the upper end is what undertrained wide heads show, whatever the converged curve
        t.inconclusive("1", txt1, paper="decreasing", ours=seed_summary(falls),
                       why="least fall > 0 in every seed; " + why_under.replace("a flat upper end is",
                                                                                 "a flat or rising upper end is"),
                       source="figure")
    else:
        t.add_seeds("1", txt1, paper="decreasing", values=falls, threshold=0.0,
                    tolerance=f"least fall > 0 beyond {CPU_ATOL} nats (a rise beyond it fails)", asserted=True,
                    source="figure", **judged)
    mid = shapes[0]["mid"]
    txt2 = (f"Fig. 5: diminishing returns: the gain from d_H = {k[0]} to {mid} exceeds twice the gain "
            f"from {mid} to {k[-1]} (per seed, gain(low) - 2 gain(high), nats)")
    v2 = [s["low_gain"] - 2 * s["high_gain"] for s in shapes]
    if undertrained:
        t.inconclusive("2", txt2, paper="diminishing returns", ours=seed_summary(v2), why="> 0; " + why_under,
                       source="text")
    else:
        t.add_seeds("2", txt2, paper="diminishing returns", values=v2, threshold=0.0, tolerance="> 0 (ratio > 2)",
                    asserted=True, source="text", **judged)
    if shapes[0]["quarter_gap"] is not None:
        widest = shapes[0]["widest"]
        txt = (f"§6.2: reduced head dimensions stay competitive: d_H = {widest // 4} vs {widest} (4x smaller; per seed, "
               "the CE gap in % of the widest's CE)")
        v3 = [100 * s["quarter_rel"] for s in shapes]
        if cfg["heads"] * widest >= 192 and not undertrained:
            t.add_seeds("3", txt, paper="competitive", values=v3, threshold=5.0, above=False,
                        tolerance="≤ 5% of the widest", source="text", rtol=0.0, atol=1.0)
        else:
            t.inconclusive("3", txt, paper="competitive", ours=seed_summary(v3),
                           why=(why_under.replace("a flat upper end is", "a small gap is") + "; and " if undertrained
                                else "") + f"d_model {cfg['heads'] * widest // 4} vs {cfg['heads'] * widest}: "
                               "tiny models, far from the paper's 192 vs 768", source="text")
    gaps = fig9_seed_gaps(result)
    if gaps:
        least = np.min(np.array(list(gaps.values())), axis=0).tolist()  # per seed, the least gap over the pairs
        txt = ("Fig. 9: at equal parameters, fewer heads lose more than narrower heads "
               f"(per seed, the least CE(few) - CE(narrow) over d_model {', '.join(gaps)})")
        if not undertrained:
            t.add_seeds("4", txt, paper="> 0", values=least, threshold=0.0, tolerance="every gap > 0", source="text",
                        **judged)
        else:
            t.inconclusive("4", txt, paper="> 0", ours=seed_summary(least),
                           why=f"{cfg['steps']} steps at d_model <= {max(int(d) for d in gaps)}: undertrained "
                               f"(below {CONVERGED_STEPS} steps an equal-parameter gap says which model trains faster, "
                               f"not which is better), and a seed's gap is within {CPU_ATOL} nats of 0", source="text")
    ms = result["models"]
    same = all(ms[p["few"]]["n_params"] == ms[p["narrow"]]["n_params"] for p in result["pairs"].values())
    t.consistency("5", "Fig. 9 pairs have equal parameter counts (d_model = heads x head dim fixes them)",
                  expected="equal", ours="equal" if same else "differ", holds=same, asserted=True)
    worst = max(max(m["ce_seeds"]) for m in ms.values())
    t.consistency("6", f"every model of every seed ({n}) beats the unigram entropy of the validation text (it uses "
                  "context)", expected=f"< {result['unigram']:.3f}", ours=round(worst, 3),
                  holds=worst < result["unigram"], tolerance="worst CE below")
    if cfg["scale"] != "full":
        t.not_run("7", "Figs. 5 and 9 at the paper's sizes (12 heads, d_H 4-64, 6 layers, L 256)",
                  paper="Fig. 5, Fig. 9", command="attnlab run 003-allocation/figs5-9-lm-heads --scale full --headless",
                  source="figure")
    return t


EXPERIMENTS = (Experiment(id="003-allocation/figs5-9-lm-heads", label="Figs. 5 and 9 (§6.2, App. F)",
                          title="A 6-layer language model: loss against head dimension and number of heads",
                          params=PARAMS, presets=PRESETS, compute=compute),)
