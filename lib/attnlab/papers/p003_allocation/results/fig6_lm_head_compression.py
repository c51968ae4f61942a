"""Fig. 6 (§6.2): single-head compression in a trained language model. A decoder of the Figs. 5/9
family is trained (the teacher, one stored unit with its weights); head 0 of its last layer is
replaced by students of head dimension d_h whose W_Q W_K^T is initialised by the truncated SVD of
the teacher's and trained on the attention-weight MSE. The paper: "substantial dimensionality
reduction (up to 4x compression) incurs negligible performance degradation". Here each student is
also put back into the decoder and its validation loss read, against a uniform-attention ablation
of the same head, and the teacher's attention is checked to be sharp."""

from __future__ import annotations

import functools

import numpy as np
import torch

from attnlab.core.checkpoint import RESUME_PARAMS, program_checkpoint
from attnlab.core.claims import TRAINED_RTOL, ClaimsTable, bound, seed_summary
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import BATCH, LR, Param, ParameterError, SEED, SEEDS, STEPS
from attnlab.core.progress import tqdm
from attnlab.papers.p003_allocation import lm, text
from attnlab.papers.p003_allocation import lm_students as LS

PARAMS = (
    Param("corpus", "str", "text: 'stdlib' (offline substitute) or 'wikitext' (local WikiText-103/2 under "
          "$ATTNLAB_DATA)", choices=text.CORPORA),
    Param("max_chars", "int", "characters of training text read", min=10_000, max=600_000_000),
    Param("level", "str", "tokens: characters or words", choices=text.LEVELS),
    Param("vocab_size", "int", "vocabulary size (unknown token included)", min=2, max=65536),
    Param("layers", "int", "teacher: decoder layers (the paper: 6)", min=1, max=48),
    Param("context", "int", "teacher: sequence length, also the students' (the paper: 256)", min=4, max=4096),
    Param("heads", "int", "teacher: heads (the paper: 12)", min=1, max=128),
    Param("head_dim", "int", "teacher: head dimension d_H (the paper: 64)", min=1, max=512),
    Param("ffn_mult", "float", "teacher: SwiGLU width / d_model", min=0.25, max=16.0),
    STEPS.described("teacher: optimisation steps"),
    BATCH.described("teacher: sequences per step"),
    LR.described("teacher: AdamW peak learning rate (the paper: 3e-4)"),
    Param("warmup", "int", "teacher: warm-up steps", min=0, max=100_000),
    Param("beta2", "float", "teacher: AdamW beta_2", min=0.5, max=0.99999),
    Param("weight_decay", "float", "teacher: AdamW weight decay", min=0.0, max=10.0),
    Param("clip", "float", "teacher: gradient clipping (0 = none)", min=0.0, max=100.0),
    Param("dropout", "float", "teacher: dropout", min=0.0, max=0.9),
    Param("layer", "int", "the compressed head's layer; -1 = the last (the paper: layer 5 of 6)", min=-1, max=47),
    Param("head", "int", "the compressed head (the paper: 0)", min=0, max=127),
    Param("ranks", "int_list", "student head dimensions d_h (the paper: 4..64)", min=1, max=512),
    Param("student_steps", "int", "Adam steps of the students (the paper: 10,000 'epochs')", min=0, max=1_000_000),
    Param("student_batch", "int", "windows per student step", min=1, max=4096),
    Param("student_lr", "float", "student Adam learning rate (the paper: 1e-3)", min=1e-6, max=1.0),
    Param("n_train", "int", "training windows of the students", min=1, max=100_000),
    Param("n_eval", "int", "validation windows (student MSE and the decoder's loss)", min=1, max=100_000),
    SEEDS.described("teachers (a count): replicas of one program, each with its own initialisation and batch "
                    "order, each compressed by its own students; every trained row is judged over them"),
    SEED.described("the first seed: teachers (and their students' batches) seed, seed + 1, ..., seed + seeds - 1 "
                   "(moves every seed; 0 in every preset)"),
) + RESUME_PARAMS  # operational: a paper-scale program checkpoints and stops at a time limit
PRESETS = {
    "ci": {"corpus": "stdlib", "max_chars": 500_000, "level": "char", "vocab_size": 96, "layers": 2, "context": 32,
           "heads": 2, "head_dim": 16, "ffn_mult": 8 / 3, "steps": 300, "batch": 8, "lr": 1e-2, "warmup": 40,
           "beta2": 0.95, "weight_decay": 0.1, "clip": 1.0, "dropout": 0.0, "layer": -1, "head": 0,
           "ranks": [1, 2, 4, 8, 16], "student_steps": 70, "student_batch": 8, "student_lr": 1e-3, "n_train": 128,
           "n_eval": 64, "seeds": 3, "seed": 0, "checkpoint_every": 0, "time_limit": 0.0},
    "full": {"corpus": "stdlib", "max_chars": 5_000_000, "level": "char", "vocab_size": 128, "layers": 6,
             "context": 256, "heads": 12, "head_dim": 64, "ffn_mult": 8 / 3, "steps": 1200, "batch": 32, "lr": 3e-4,
             "warmup": 200, "beta2": 0.95, "weight_decay": 0.1, "clip": 1.0, "dropout": 0.1, "layer": -1, "head": 0,
             "ranks": [4, 8, 16, 24, 32, 48, 64], "student_steps": 10_000, "student_batch": 8, "student_lr": 1e-3,
             "n_train": 512, "n_eval": 128, "seeds": 1, "seed": 0, "checkpoint_every": 0, "time_limit": 0.0},
}


def compute(ctx: Context) -> dict:
    """Trains the teachers, one per seed, as replicas of one program (stored units: validation loss and
    weights), then the students of head `head` of layer `layer` of each teacher (a stored unit per
    seed). Result: `seeds`, one entry per seed in order, each with `seed`, `teacher` (config,
    validation CE, d_model, sharpness of the head, singular values of its M = W_Q W_K^T / sqrt(d_H)),
    `students` (d_h -> attention MSE on validation windows at SVD init, after training and the better
    of the two, the decoder's validation CE with the student in place, the training curve) and
    `uniform` (the same two numbers for uniform attention in place of the head); `teacher`,
    `students`, `uniform`: the first seed's (the figures); `data`."""
    cfg = ctx.config
    K = cfg["head_dim"]
    if max(cfg["ranks"]) > K or sorted(set(cfg["ranks"])) != cfg["ranks"]:
        raise ParameterError(f"parameter 'ranks': value {cfg['ranks']} is not allowed; need distinct increasing "
                             f"values <= head_dim = {K}")
    if cfg["head"] >= cfg["heads"] or cfg["layer"] >= cfg["layers"]:
        raise ParameterError(f"parameters 'head', 'layer': values {cfg['head']}, {cfg['layer']} are not allowed; "
                             f"the teacher has {cfg['heads']} heads and {cfg['layers']} layers")
    layer = cfg["layer"] % cfg["layers"]
    load = functools.cache(lambda: _data(cfg))  # read only when something must be computed
    seeds = list(range(cfg["seed"], cfg["seed"] + cfg["seeds"]))
    tcfgs = [lm.LMConfig(cfg["vocab_size"], cfg["heads"], K, cfg["layers"], cfg["context"], cfg["ffn_mult"], s)
             for s in seeds]
    spec = lm.TrainSpec(steps=cfg["steps"], batch=cfg["batch"], lr=cfg["lr"], warmup=cfg["warmup"],
                        weight_decay=cfg["weight_decay"], clip=cfg["clip"], dropout=cfg["dropout"],
                        betas=(0.9, cfg["beta2"]))
    data_key = text.data_key(cfg["corpus"], cfg["max_chars"], cfg["level"], cfg["vocab_size"])
    tkeys = [{**lm.unit_key(tc, spec, data_key, cfg["n_eval"]), "keep": "state"} for tc in tcfgs]

    def teach(group):
        """The missing teachers, as replicas of one program (each its own seed's initialisation and batches)."""
        data = load()
        checkpoint = program_checkpoint(ctx, [tkeys[i] for i in group])  # None at CI (checkpoint_every, time_limit 0)
        for j, res, sec in lm.train([tcfgs[i] for i in group], spec, data.train, data.valid, cfg["n_eval"],
                                    device=ctx.device, progress=ctx.progress, keep_state=lambda r: True,
                                    desc="teachers", checkpoint=checkpoint):
            yield group[j], {**res, "data": data.describe(), "substitute": data.corpus.substitute}, sec
        if checkpoint is not None:  # the teachers are stored: the state is no longer needed
            checkpoint.remove()

    teachers = ctx.units(tkeys, teach, desc="teachers")
    runs = []
    for tc, tkey, teacher in zip(tcfgs, tkeys, teachers):
        skey = {"what": "lm-head-students", "teacher": tkey, "layer": layer, "head": cfg["head"], "ranks": cfg["ranks"],
                **{k: cfg[k] for k in ("student_steps", "student_batch", "student_lr", "n_train", "n_eval")},
                "seed": tc.seed}
        students = ctx.unit(skey, lambda: _students(ctx, cfg, tc, teacher, load(), layer, tc.seed))
        runs.append({"seed": tc.seed,
                     "teacher": {"valid_ce": teacher["valid_ce"], "d_model": tc.d_model, "layer": layer,
                                 "n_params": tc.n_params, "curve": teacher["curve"], **students["teacher"]},
                     "students": students["students"], "uniform": students["uniform"]})
    first = runs[0]
    return {"config": cfg, "teacher": first["teacher"], "students": first["students"], "uniform": first["uniform"],
            "seeds": runs, "data": teachers[0]["data"], "substitute": teachers[0]["substitute"]}


def _data(cfg: dict) -> text.Data:
    data = text.prepare(cfg["corpus"], cfg["max_chars"], cfg["level"], cfg["vocab_size"])
    if len(data.valid) < cfg["context"] + 1 or len(data.train) < 10 * (cfg["context"] + 1):
        raise ParameterError(f"parameter 'max_chars': value {cfg['max_chars']} gives too little text for "
                             f"context {cfg['context']}")
    return data


def _students(ctx: Context, cfg: dict, tcfg: lm.LMConfig, teacher: dict, data: text.Data, layer: int,
              seed: int) -> dict:
    # forward passes of the teacher: float64 on the CPU, float32 on a GPU (the paper-scale teacher)
    dev = torch.device(ctx.device)
    state = {k: v.to(dev) for k, v in lm.decode_state(teacher["state"], torch.float64 if dev.type == "cpu"
                                                      else torch.float32).items()}
    L = cfg["context"]
    xt, _ = text.eval_windows(data.train, L, cfg["n_train"])
    xe, ye = text.eval_windows(data.valid, L, cfg["n_eval"])
    X_train = LS.layer_inputs(state, tcfg, xt, layer)
    X_eval = LS.layer_inputs(state, tcfg, xe, layer)
    M = LS.bilinear(state, tcfg, layer, cfg["head"])
    T_eval = LS.causal_attention(torch.as_tensor(X_eval), torch.as_tensor(M))
    sv = np.linalg.svd(M, compute_uv=False)[: cfg["head_dim"]]
    bar = (lambda it: tqdm(it, desc="students", leave=False, mininterval=5.0)) if ctx.progress else None
    st = LS.train_students(M, X_train, X_eval, cfg["ranks"], cfg["student_steps"], cfg["student_batch"],
                           cfg["student_lr"], seed, progress=bar)
    base = LS.loss_with_head(state, tcfg, xe, ye, layer, cfg["head"])
    U = LS.uniform_probs(torch.as_tensor(X_eval))  # [N, L, L] float64 on the CPU, as T_eval
    uniform = {"mse": float(((U - T_eval) ** 2).mean()),
               "ce": LS.loss_with_head(state, tcfg, xe, ye, layer, cfg["head"], LS.uniform_probs)}
    for k, row in st.items():
        row["ce"] = LS.loss_with_head(state, tcfg, xe, ye, layer, cfg["head"], LS.student_probs(row.pop("A"), row.pop("B")))
    return {"teacher": {"ce_plain": base, "sharpness": LS.sharpness(T_eval), "singular_values": sv.tolist()},
            "students": st, "uniform": uniform}


def summary(result: dict) -> dict:
    """Per d_h: the attention MSE (best of init and trained) as a fraction of the uniform head's, and
    the decoder's loss increase as a fraction of the uniform head's increase (of `result`, or of one
    entry of `result["seeds"]`)."""
    base = result["teacher"]["ce_plain"]
    du = result["uniform"]["ce"] - base
    out = {}
    for k, row in result["students"].items():
        out[k] = {"mse_frac": row["best_mse"] / result["uniform"]["mse"], "dce": row["ce"] - base,
                  "dce_frac": (row["ce"] - base) / du if du > 0 else float("nan")}
    return out


def claims(result: dict) -> ClaimsTable:
    """Every trained row is judged over the teachers' seeds (`add_seeds`, `add_seed_outcomes`); the
    consistency rows must hold in every seed."""
    cfg = result["config"]
    K = cfg["head_dim"]
    runs = result["seeds"]
    n = len(runs)
    t = ClaimsTable(rtol=TRAINED_RTOL)
    ratios = [r["teacher"]["sharpness"]["max_weight"] / r["teacher"]["sharpness"]["uniform_max_weight"] for r in runs]
    text1 = ("the teacher's head is sharp (not the near-uniform head of an undertrained model): its mean largest "
             "attention weight is at least 3x uniform attention's (per seed, the multiple of uniform attention's)")
    ours1 = seed_summary(ratios)
    ci = cfg["scale"] == "ci"
    if ci:  # the 400-step CI teacher: its sharpness is decided by rounding and seed, not by the protocol
        t.inconclusive("1", text1, paper=">= 3x", ours=ours1, rtol=1.0,
                       why=f"ratio >= 3; the {cfg['steps']}-step CI teachers' sharpness depends on the CPU's rounding "
                           "and the seed (measured, one seed: 5.6x with AVX-512 kernels, 1.7x with AVX2), so the rows "
                           "that need a sharp head cannot decide at this scale")
    else:
        t.consistency("1", text1, expected=">= 3x", ours=ours1, holds=min(ratios) >= 3,
                      tolerance="ratio >= 3 in every seed", asserted=True)
    if all(str(K) in r["students"] for r in runs):
        worst = max(r["students"][str(K)]["init_mse"] for r in runs)
        t.consistency("2", "at d_h = d_H the SVD initialisation is the teacher (Cor. 5.1 with zero tail), every seed",
                      expected="MSE < 1e-20", ours=bound(worst, 1e-20), holds=worst < 1e-20, asserted=True)
    mono = []
    for r in runs:
        inits = [r["students"][str(k)]["init_mse"] for k in cfg["ranks"]]
        mono.append(all(b <= a * (1 + 1e-6) + 1e-30 for a, b in zip(inits, inits[1:])))
    t.consistency("3", "Cor. 5.1: the error at SVD initialisation does not grow with d_h (the tail sum shrinks), "
                  "every seed", expected="non-increasing", ours="non-increasing" if all(mono) else "rises",
                  holds=all(mono), asserted=True)
    low = [k for k in cfg["ranks"] if k < K]
    better = [all(r["students"][str(k)]["final_mse"] <= r["students"][str(k)]["init_mse"] for k in low) for r in runs]
    # Not asserted at CI: there the SVD initialisation of the larger d_h is already within ~1e-9 of the teacher,
    # below the noise of Adam's steps at lr 1e-3, so a seed can fail for the optimiser's step size, not the claim
    t.add_seed_outcomes("4", "§5: fine-tuning improves on the truncated-SVD initialisation at every d_h < d_H",
                        paper="SVD init, then training", ours=f"yes in {sum(better)} of {n} seeds",
                        holds=better, tolerance="trained MSE <= init MSE", asserted=not ci, source="text")
    q = K // 4
    if q in cfg["ranks"]:
        summ = [summary(r) for r in runs]
        mq = [100 * s[str(q)]["mse_frac"] for s in summ]  # per cent of uniform attention's MSE
        dce = [s[str(q)]["dce"] for s in summ]  # nats
        du = [r["uniform"]["ce"] - r["teacher"]["ce_plain"] for r in runs]  # the uniform head's loss increase
        text5 = (f"Fig. 6: 4x compression (d_h = {q} of {K}) is nearly lossless in the paper's metric, the attention "
                 "MSE (per seed, % of uniform attention's MSE)")
        text6 = ("Fig. 6: 4x compression costs the decoder a negligible loss: its loss increase with the student "
                 "in place, at most 10% of the increase with uniform attention in the head's place (per seed, nats)")
        flat = sum(d <= 0 for d in du)  # seeds whose head the decoder does not need: nothing to lose
        why6 = f"uniform attention in the head's place, the scale of this row, changes the loss by {seed_summary(du)} nats"
        # Can the row fail? Only if the head has more than rank q to lose: when the truncated SVD alone (no
        # training) already keeps the MSE within 1% of uniform attention's, the head is nearly rank <= q and any
        # rank-q method compresses it losslessly, whatever the paper's claim about heads in general.
        init_frac = [r["students"][str(q)]["init_mse"] / r["uniform"]["mse"] for r in runs]
        lead = [np.asarray(r["teacher"]["singular_values"], dtype=float) for r in runs]
        second = [float(sv[1] / sv[0]) if len(sv) > 1 else 0.0 for sv in lead]
        trivial = sum(f <= 0.01 for f in init_frac)
        why = (f"the truncated SVD alone, untrained, is within 1% of uniform attention's MSE in {trivial} of {n} "
               f"seeds (second singular value {seed_summary(second)} of the largest): a head that is nearly of rank "
               f"{q} is compressed losslessly by any rank-{q} method, and there the row cannot fail")
        if ci:  # the 400-step CI teachers (row 1): their spectra move with the CPU and the seed, so the words stay
            # the same whichever side of 1% a seed falls on (another CPU's table must compare)
            why = f"the {cfg['steps']}-step CI teachers' spectra move with the CPU and the seed (row 1); " + why
            t.inconclusive("5", text5, paper="negligible", ours=seed_summary(mq), why="<= 1%; " + why, source="text",
                           rtol=1.0)
            t.inconclusive("6", text6, paper="negligible", ours=seed_summary(dce), why="<= 10%; " + why + "; " + why6,
                           source="text", rtol=1.0, atol=0.01)  # float32 and CPU noise on increases of ~1e-3 nats
        elif trivial:
            t.inconclusive("5", text5, paper="negligible", ours=seed_summary(mq), why="<= 1%; " + why, source="text")
            t.inconclusive("6", text6, paper="negligible", ours=seed_summary(dce), why="<= 10%; " + why + "; " + why6,
                           source="text")
        elif flat:
            t.add_seeds("5", text5, paper="negligible", values=mq, threshold=1.0, above=False, tolerance="<= 1%",
                        asserted=True, source="text")
            t.inconclusive("6", text6, paper="negligible", ours=seed_summary(dce), source="text",
                           why=f"<= 10%; {why6}, and does not raise it in {flat} of {n} seeds: a head the decoder does "
                               "not need costs nothing to compress, so there the row cannot fail")
        else:
            t.add_seeds("5", text5, paper="negligible", values=mq, threshold=1.0, above=False, tolerance="<= 1%",
                        asserted=True, source="text")
            t.add_seeds("6", text6.replace("(per seed, nats)", "(per seed, % of the uniform head's increase)"),
                        paper="negligible", values=[100 * a / b for a, b in zip(dce, du)], threshold=10.0, above=False,
                        tolerance="<= 10%", asserted=True, source="text")
        if 1 in cfg["ranks"] and q > 1:
            ratio7 = [s["1"]["mse_frac"] / max(s[str(q)]["mse_frac"], 1e-300) for s in summ]
            t.consistency("7", f"the test is not trivial: the d_h = 1 student misses more of the teacher's "
                          f"attention than d_h = {q} (per seed, the ratio of their MSEs)",
                          expected="> 2x", ours=seed_summary(ratio7), holds=min(ratio7) > 2,
                          tolerance="ratio > 2 in every seed", asserted=True,
                          rtol=1.0 if ci else 0.0)  # CI: the students' MSEs vary 10x across CPUs
    if cfg["scale"] != "full":
        t.not_run("8", "Fig. 6 at paper scale: the d_H = 64 teacher of Fig. 5 (12 heads, 6 layers, L 256), "
                  "d_h = 4..64, 10k steps", paper="d_h = 16 ~ d_h = 64",
                  command="attnlab run 003-allocation/fig6-lm-head-compression --scale full --headless", source="text")
    return t


EXPERIMENTS = (Experiment(id="003-allocation/fig6-lm-head-compression", label="Fig. 6 (§6.2)",
                          title="Compressing one head of a trained language model",
                          params=PARAMS, presets=PRESETS, compute=compute),)
