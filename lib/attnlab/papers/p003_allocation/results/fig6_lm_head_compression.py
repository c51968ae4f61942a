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

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable, bound
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import Param, ParameterError
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
    Param("steps", "int", "teacher: optimisation steps", min=1, max=1_000_000),
    Param("batch", "int", "teacher: sequences per step", min=1, max=4096),
    Param("lr", "float", "teacher: AdamW peak learning rate (the paper: 3e-4)", min=1e-6, max=1.0),
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
    Param("seed", "int", "seed of the teacher and of the students' batches", min=0, max=2 ** 31 - 1),
)
PRESETS = {
    "ci": {"corpus": "stdlib", "max_chars": 500_000, "level": "char", "vocab_size": 96, "layers": 2, "context": 32,
           "heads": 2, "head_dim": 16, "ffn_mult": 8 / 3, "steps": 400, "batch": 16, "lr": 1e-2, "warmup": 40,
           "beta2": 0.95, "weight_decay": 0.1, "clip": 1.0, "dropout": 0.0, "layer": -1, "head": 0,
           "ranks": [1, 2, 4, 8, 16], "student_steps": 200, "student_batch": 8, "student_lr": 1e-3, "n_train": 128,
           "n_eval": 64, "seed": 0},
    "full": {"corpus": "stdlib", "max_chars": 5_000_000, "level": "char", "vocab_size": 128, "layers": 6,
             "context": 256, "heads": 12, "head_dim": 64, "ffn_mult": 8 / 3, "steps": 1200, "batch": 32, "lr": 3e-4,
             "warmup": 200, "beta2": 0.95, "weight_decay": 0.1, "clip": 1.0, "dropout": 0.1, "layer": -1, "head": 0,
             "ranks": [4, 8, 16, 24, 32, 48, 64], "student_steps": 10_000, "student_batch": 8, "student_lr": 1e-3,
             "n_train": 512, "n_eval": 128, "seed": 0},
}


def compute(ctx: Context) -> dict:
    """Trains the teacher (stored unit: its validation loss and weights), then the students of head
    `head` of layer `layer` (stored unit). Result: `teacher` (config, validation CE, d_model,
    sharpness of the head, singular values of its M = W_Q W_K^T / sqrt(d_H)), `students` (d_h ->
    attention MSE on validation windows at SVD init, after training and the better of the two,
    the decoder's validation CE with the student in place, the training curve), `uniform`
    (the same two numbers for uniform attention in place of the head), `data`."""
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
    tcfg = lm.LMConfig(cfg["vocab_size"], cfg["heads"], K, cfg["layers"], cfg["context"], cfg["ffn_mult"], cfg["seed"])
    spec = lm.TrainSpec(steps=cfg["steps"], batch=cfg["batch"], lr=cfg["lr"], warmup=cfg["warmup"],
                        weight_decay=cfg["weight_decay"], clip=cfg["clip"], dropout=cfg["dropout"],
                        betas=(0.9, cfg["beta2"]))
    data_key = text.data_key(cfg["corpus"], cfg["max_chars"], cfg["level"], cfg["vocab_size"])
    tkey = {**lm.unit_key(tcfg, spec, data_key, cfg["n_eval"]), "keep": "state"}

    def teach():
        data = load()
        (_, res, _), = lm.train([tcfg], spec, data.train, data.valid, cfg["n_eval"], device=ctx.device,
                                progress=ctx.progress, keep_state=lambda r: True, desc="teacher")
        return {**res, "data": data.describe(), "substitute": data.corpus.substitute}

    teacher = ctx.unit(tkey, teach)
    skey = {"what": "lm-head-students", "teacher": tkey, "layer": layer, "head": cfg["head"], "ranks": cfg["ranks"],
            **{k: cfg[k] for k in ("student_steps", "student_batch", "student_lr", "n_train", "n_eval", "seed")}}
    students = ctx.unit(skey, lambda: _students(ctx, cfg, tcfg, teacher, load(), layer))
    return {"config": cfg, "teacher": {"valid_ce": teacher["valid_ce"], "d_model": tcfg.d_model, "layer": layer,
                                       "n_params": tcfg.n_params, "curve": teacher["curve"], **students["teacher"]},
            "students": students["students"], "uniform": students["uniform"], "data": teacher["data"],
            "substitute": teacher["substitute"]}


def _data(cfg: dict) -> text.Data:
    data = text.prepare(cfg["corpus"], cfg["max_chars"], cfg["level"], cfg["vocab_size"])
    if len(data.valid) < cfg["context"] + 1 or len(data.train) < 10 * (cfg["context"] + 1):
        raise ParameterError(f"parameter 'max_chars': value {cfg['max_chars']} gives too little text for "
                             f"context {cfg['context']}")
    return data


def _students(ctx: Context, cfg: dict, tcfg: lm.LMConfig, teacher: dict, data: text.Data, layer: int) -> dict:
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
                           cfg["student_lr"], cfg["seed"], progress=bar)
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
    the decoder's loss increase as a fraction of the uniform head's increase."""
    base = result["teacher"]["ce_plain"]
    du = result["uniform"]["ce"] - base
    out = {}
    for k, row in result["students"].items():
        out[k] = {"mse_frac": row["best_mse"] / result["uniform"]["mse"], "dce": row["ce"] - base,
                  "dce_frac": (row["ce"] - base) / du if du > 0 else float("nan")}
    return out


def claims(result: dict) -> ClaimsTable:
    cfg = result["config"]
    K = cfg["head_dim"]
    st = result["students"]
    s = summary(result)
    sharp = result["teacher"]["sharpness"]
    du = result["uniform"]["ce"] - result["teacher"]["ce_plain"]
    t = ClaimsTable(rtol=TRAINED_RTOL)
    ratio = sharp["max_weight"] / sharp["uniform_max_weight"]
    text1 = ("the teacher's head is sharp (not the near-uniform head of an undertrained model): its mean largest "
             "attention weight is at least 3x uniform attention's")
    ours1 = f"{ratio:.1f}x (entropy {100 * sharp['entropy_ratio']:.0f}% of uniform)"
    ci = cfg["scale"] == "ci"
    if ci:  # the 400-step CI teacher: its sharpness is decided by rounding and seed, not by the protocol
        t.inconclusive("1", text1, paper=">= 3x", ours=ours1, rtol=1.0,
                       why="ratio >= 3; the 400-step CI teacher's sharpness depends on the CPU's rounding and the "
                           "seed (measured: 5.6x with AVX-512 kernels, 1.7x with AVX2; seeds 0, 2: 1.7x, 1.9x), "
                           "so the rows that need a sharp head cannot decide at this scale")
    else:
        t.consistency("1", text1, expected=">= 3x", ours=ours1, holds=ratio >= 3, tolerance="ratio >= 3",
                      asserted=True)
    if str(K) in st:
        t.consistency("2", "at d_h = d_H the SVD initialisation is the teacher (Cor. 5.1 with zero tail)",
                      expected="MSE < 1e-20", ours=bound(st[str(K)]["init_mse"], 1e-20), holds=st[str(K)]["init_mse"] < 1e-20,
                      asserted=True)
    inits = [st[str(k)]["init_mse"] for k in cfg["ranks"]]
    mono = all(b <= a * (1 + 1e-6) + 1e-30 for a, b in zip(inits, inits[1:]))
    t.consistency("3", "Cor. 5.1: the error at SVD initialisation does not grow with d_h (the tail sum shrinks)",
                  expected="non-increasing", ours="non-increasing" if mono else "rises", holds=mono, asserted=True)
    low = [k for k in cfg["ranks"] if k < K]
    better = all(st[str(k)]["final_mse"] <= st[str(k)]["init_mse"] for k in low)
    t.add("4", "§5: fine-tuning improves on the truncated-SVD initialisation at every d_h < d_H",
          paper="SVD init, then training", ours="yes" if better else "no", holds=better,
          tolerance="trained MSE <= init MSE", asserted=True, source="text")
    q = K // 4
    if q in cfg["ranks"]:
        mq = s[str(q)]["mse_frac"]
        text5 = (f"Fig. 6: 4x compression (d_h = {q} of {K}) is nearly lossless in the paper's metric, the attention "
                 "MSE (as a fraction of uniform attention's MSE)")
        ours5 = "< 0.1%" if mq < 1e-3 else f"{100 * mq:.2g}%"
        frac = s[str(q)]["dce_frac"]
        text6 = ("Fig. 6: 4x compression costs the decoder a negligible loss: its loss increase with the student "
                 "in place, as a fraction of the increase with uniform attention in the head's place")
        ours6 = (f"|Δ| < 1% of {du:.2g} nats" if abs(frac) < 1e-2 else  # float32 noise below 1%
                 f"{s[str(q)]['dce']:+.2g} of {du:.2g} nats ({100 * frac:.2g}%)")
        # Can the row fail? Only if the head has more than rank q to lose: when the truncated SVD alone (no
        # training) already keeps the MSE within 1% of uniform attention's, the head is nearly rank <= q and any
        # rank-q method compresses it losslessly, whatever the paper's claim about heads in general.
        sv = np.asarray(result["teacher"]["singular_values"], dtype=float)
        init_frac = st[str(q)]["init_mse"] / result["uniform"]["mse"]
        spectrum = ", ".join(f"{x:.2g}" for x in sv[:3] / sv[0])
        trivial = init_frac <= 0.01
        why = (f"the teacher's bilinear form is nearly rank {q}: singular values {spectrum} (of the largest), and the "
               f"truncated SVD alone, untrained, is {'< 0.1%' if init_frac < 1e-3 else f'{100 * init_frac:.2g}%'} of "
               f"uniform attention's MSE, so any rank-{q} compression is lossless here and the row cannot fail")
        if ci:  # the 400-step CI teacher (row 1): its spectrum depends on the CPU's rounding and the seed, so the
            # words stay the same whichever side of 1% it falls on (another CPU's table must compare)
            why = (f"the 400-step CI teacher's spectrum moves with the CPU and seed (row 1); here its singular values "
                   f"are {spectrum} (of the largest) and the truncated SVD alone, untrained, is {100 * init_frac:.2g}% "
                   f"of uniform attention's MSE: a head that is nearly of rank {q} (<= 1% there) is compressed "
                   f"losslessly by any rank-{q} method, and then the row cannot fail")
            t.inconclusive("5", text5, paper="negligible", ours=ours5, why="<= 1%; " + why, source="text", rtol=1.0)
            t.inconclusive("6", text6, paper="negligible", ours=ours6, why="<= 10%; " + why, source="text", rtol=1.0)
        elif trivial:
            t.inconclusive("5", text5, paper="negligible", ours=ours5, why="<= 1%; " + why, source="text")
            t.inconclusive("6", text6, paper="negligible", ours=ours6, why="<= 10%; " + why, source="text")
        else:
            t.add("5", text5, paper="negligible", ours=ours5, holds=mq <= 0.01, tolerance="<= 1%", asserted=True,
                  source="text")
            t.add("6", text6, paper="negligible", ours=ours6, holds=frac <= 0.1, tolerance="<= 10%", asserted=True,
                  source="text")
        if 1 in cfg["ranks"] and q > 1:
            r1, rq = s["1"]["mse_frac"], s[str(q)]["mse_frac"]
            t.consistency("7", f"the test is not trivial: the d_h = 1 student misses more of the teacher's "
                          f"attention than d_h = {q} (MSE as a fraction of uniform attention's)",
                          expected="> 2x", ours=f"{r1:.1e} vs {bound(rq, 1e-3)}", holds=r1 > 2 * rq, tolerance="ratio > 2",
                          asserted=True, rtol=1.0 if ci else 0.0)  # CI: the students' MSEs vary 10x across CPUs
    if cfg["scale"] != "full":
        t.not_run("8", "Fig. 6 at paper scale: the d_H = 64 teacher of Fig. 5 (12 heads, 6 layers, L 256), "
                  "d_h = 4..64, 10k steps", paper="d_h = 16 ~ d_h = 64",
                  command="attnlab run 003-allocation/fig6-lm-head-compression --scale full --headless", source="text")
    return t


EXPERIMENTS = (Experiment(id="003-allocation/fig6-lm-head-compression", label="Fig. 6 (§6.2)",
                          title="Compressing one head of a trained language model",
                          params=PARAMS, presets=PRESETS, compute=compute),)
