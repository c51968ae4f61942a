"""Fig. 7 (§7.3): a full pre-LN Transformer block on frozen pretrained token embeddings, permutation
-> matching retrieval; test accuracy against D_K per head count. The paper uses GPT-2-small's token
embeddings (d = 768) for the m most frequent WikiText-103 tokens; offline, the default is a
SUBSTITUTE: the frozen token embeddings of the pretrained MiniLM-L6 (d = 384) for the m most
frequent words of the standard library's docstrings (`attnlab.core.corpus`) that are single
tokens of its tokenizer, NULL = its [SEP] row. GPT-2 is used when `$ATTNLAB_MODELS/gpt2` holds it
(`embeddings = "gpt2"`, the real loader `attnlab.core.pretrained.causal_lm`; NULL = its EOS row).
Every (h, D_K, seed) is a replica of one program (each seed its own permutation, data and
initialisation); `seed` moves every seed.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from attnlab.core import corpus, pretrained
from attnlab.core.claims import TRAINED_RTOL, ClaimsTable, seed_summary
from attnlab.core.experiment import Context, Experiment
from attnlab.core.params import BATCH, LR, N_TEST, Param, ParameterError, SEEDS, STEPS

from .. import block_model, sweeps
from ..seeds import SEED_PARAM, by_seed, seed_range

PARAMS = (
    Param("embeddings", "str", "frozen token embeddings: the offline MiniLM-L6 substitute, or GPT-2 from "
          "$ATTNLAB_MODELS/gpt2", choices=("minilm", "gpt2")),
    Param("m", "int", "number of items (the paper: 6144)", min=33, max=20000),
    Param("ell", "int", "number of superposed pair slots (the paper: 16)", min=2, max=64),
    Param("heads", "int_list", "head counts h (each must divide d_model)", min=1, max=64),
    Param("dks", "int_list", "total key dimensions D_K (a pair is trained where h divides D_K)", min=1, max=4096),
    Param("d_ff", "int", "MLP width (the paper: 'e.g. 16')", min=1, max=4096),
    SEEDS.described("number of seeds (permutation, data, initialisation)"),
    SEED_PARAM,
    STEPS.described("training steps (a fixed budget; best validation check reported)"),
    BATCH.described("examples per step (not given in the paper)"),
    LR.described("AdamW learning rate, constant (not given in the paper)"),
    Param("check_every", "int", "steps between validation checks", min=1, max=100000),
    N_TEST.described("validation and test examples (each)"),
    Param("corpus_chars", "int", "characters of the docstring corpus used to rank items by frequency",
          min=10000, max=5000000),
)
PRESETS = {
    # three seeds as replicas of one program (their training costs ~3x one seed's): 400 steps of 32 at lr 3e-3 as
    # before, 250 validation and test examples (formerly 500). Cheaper protocols left a replica at the uniform
    # prediction (200 steps of 32 at lr 5e-3; 400 steps of 16 at 3e-3), so this chapter costs more CPU than before
    "ci": {"embeddings": "minilm", "m": 256, "ell": 8, "heads": [1, 4], "dks": [32], "d_ff": 16, "seeds": 3, "seed": 0,
           "steps": 400, "batch": 32, "lr": 3e-3, "check_every": 100, "n_test": 250, "corpus_chars": 300000},
    "medium": {"embeddings": "minilm", "m": 3072, "ell": 16, "heads": [1, 2, 4, 8], "dks": [32, 64, 128, 256],
               "d_ff": 16, "seeds": 3, "seed": 0, "steps": 20000, "batch": 128, "lr": 1e-3, "check_every": 500, "n_test": 2000,
               "corpus_chars": 2000000},
    "full": {"embeddings": "gpt2", "m": 6144, "ell": 16, "heads": [1, 2, 4, 8], "dks": [64, 128, 256, 512],
             "d_ff": 16, "seeds": 7, "seed": 0, "steps": 100000, "batch": 128, "lr": 1e-3, "check_every": 1000, "n_test": 2000,
             "corpus_chars": 2000000},
}


def _model(kind: str) -> pretrained.Pretrained:
    """The model whose token embeddings the blocks read; a missing package, folder or file raises
    pretrained.MissingPretrained (a ParameterError: one line naming what is missing and where it goes)."""
    if kind == "minilm":
        return pretrained.minilm()
    path = pretrained.require_local("gpt2", "parameter 'embeddings': value 'gpt2' (use 'minilm', the offline "
                                            "substitute, otherwise)")
    return pretrained.causal_lm(path, "gpt2")


def rank_items(p: pretrained.Pretrained, m: int, corpus_chars: int) -> dict:
    """The m items: the most frequent words of the docstring corpus that are one token of p's
    tokenizer (as a word after a space), then, if too few, the remaining ids in id order; NULL =
    the tokenizer's EOS (GPT-2) or [SEP] (BERT) token, excluded from the items."""
    tok = p.tokenizer
    null = tok.eos_token_id if tok.eos_token_id is not None else tok.sep_token_id
    special = set(tok.all_special_ids) | {null}
    text = corpus.stdlib_docstrings(corpus_chars)
    ids, seen = [], set()
    for word, _ in corpus.word_frequencies(text).most_common():
        enc = tok.encode(" " + word, add_special_tokens=False)
        if len(enc) == 1 and enc[0] not in special and enc[0] not in seen:
            ids.append(enc[0])
            seen.add(enc[0])
            if len(ids) == m:
                break
    from_corpus = len(ids)
    vocab = pretrained.token_embeddings(p).shape[0]
    for i in range(vocab):
        if len(ids) == m:
            break
        if i not in special and i not in seen:
            ids.append(i)
    if len(ids) < m:
        raise ParameterError(f"parameter 'm': value {m} is not allowed; the vocabulary offers {len(ids)} items")
    return {"ids": ids, "null": int(null), "from_corpus": from_corpus, "first": tok.convert_ids_to_tokens(ids[:12]),
            "corpus": corpus.describe(text), "model": p.name, "substitute": p.substitute, "note": p.note,
            "d_model": int(pretrained.token_embeddings(p).shape[1])}


def compute(ctx: Context) -> dict:
    """Ranks the items (a stored unit), then trains one block per (h, D_K, seed) for a fixed
    budget of AdamW steps (weight decay 0.01), reporting the test accuracy at the best validation
    check; the result holds `items` (token ids, NULL, the corpus and model used, whether it is a
    substitute) and `runs` (per replica: test accuracy, best validation accuracy, the fractions of
    test predictions equal to s = pi(q) and to NULL, the final and the late training loss)."""
    cfg = ctx.config
    if 2 * cfg["ell"] + 2 > cfg["m"]:
        raise ParameterError(f"parameter 'ell': value {cfg['ell']} is not allowed; need 2 ell + 2 <= m = {cfg['m']}")
    grid = [(h, D) for h in sorted(cfg["heads"]) for D in sorted(cfg["dks"]) if D % h == 0]
    if not grid:
        raise ParameterError(f"parameters 'heads' {cfg['heads']} / 'dks' {cfg['dks']}: no head count divides a D_K")
    items = ctx.unit({"what": "items", "embeddings": cfg["embeddings"], "m": cfg["m"],
                      "corpus_chars": cfg["corpus_chars"]},
                     lambda: rank_items(_model(cfg["embeddings"]), cfg["m"], cfg["corpus_chars"]))
    bad = [h for h, _ in grid if items["d_model"] % h]
    if bad:
        raise ParameterError(f"parameter 'heads': {sorted(set(bad))} do not divide d_model = {items['d_model']}")
    keys = [{"what": "run", **{k: cfg[k] for k in ("embeddings", "m", "ell", "d_ff", "steps", "batch", "lr",
                                                    "check_every", "n_test", "corpus_chars")},
             "h": h, "D_K": D, "seed": s} for s in seed_range(cfg) for h, D in grid]

    @functools.cache
    def table():  # the frozen embeddings of the items and NULL, loaded only when a run is missing
        E = pretrained.token_embeddings(_model(cfg["embeddings"])).double().numpy()
        return np.concatenate([E[items["ids"]], E[[items["null"]]]])

    def run(_, ks, bar):  # every seed a replica of one program
        return block_model.train_runs(table(), ks, steps=cfg["steps"], lr=cfg["lr"], batch=cfg["batch"], ell=cfg["ell"],
                                      d_ff=cfg["d_ff"], check_every=cfg["check_every"], n_val=cfg["n_test"],
                                      n_test=cfg["n_test"], device=str(ctx.device), progress=bar)

    runs = ctx.units(keys, sweeps.grouped_programs(ctx, keys, cfg["steps"], run, group=lambda k: 0))
    return {"config": cfg, "items": items, "runs": runs}


def mean_acc(result: dict) -> dict[tuple[int, int], float]:
    """{(h, D_K): mean test accuracy over seeds}."""
    acc: dict[tuple[int, int], list[float]] = {}
    for r in result["runs"]:
        acc.setdefault((r["h"], r["D_K"]), []).append(r["test_acc"])
    return {k: float(np.mean(v)) for k, v in acc.items()}


def claims(result: dict) -> ClaimsTable:
    cfg, items = result["config"], result["items"]
    label = (f"SUBSTITUTE {items['model']} embeddings (d = {items['d_model']}), not GPT-2" if items["substitute"]
             else f"{items['model']} embeddings (d = {items['d_model']})")
    m = cfg["m"]
    t = ClaimsTable(rtol=TRAINED_RTOL)
    worst = min(r["test_acc"] for r in result["runs"])
    # a sanity check of the pipeline, not a number of Fig. 7 (which needs GPT-2 and 100,000 steps): the paper
    # prints no accuracy this short run could be compared with, so it is not counted as a reproduction
    t.consistency("1", f"[{label}] sanity check: the block learns something of the two-step retrieval (worst test "
                       f"accuracy over the {len(result['runs'])} runs; the always-NULL baseline scores 0, a uniform "
                       f"guess 1/{m})", expected="> 0.1", ours=worst, holds=worst > 0.1, tolerance="> 0.1",
                  asserted=True)
    late = max(r["tail_loss"] for r in result["runs"])
    t.consistency("2", f"[{label}] training moves off the uniform prediction: the largest late training loss "
                       f"against ln(m + 1) − 0.5", expected=math.log(m + 1) - 0.5, ours=late,
                  holds=late < math.log(m + 1) - 0.5, tolerance="below", asserted=True)
    per = [{(r["h"], r["D_K"]): r["test_acc"] for r in rr} for rr in by_seed(result["runs"]).values()]
    f = per[0]
    shared = [D for (h, D) in f if h > 1 and (1, D) in f]
    if shared:
        gaps = [max(g[(h, D)] - g[(1, D)] for (h, D) in g if h > 1 and D in shared) for g in per]
        t.inconclusive("3", f"[{label}] a multi-head advantage at fixed D_K: best h > 1 minus h = 1 at the same D_K, "
                            "per seed", paper="substantially higher, every D_K", ours=seed_summary(gaps),
                       rtol=1.0,  # -0.05 vs -0.11 across CPUs at one seed
                       why=f"m = {m} items in d = {items['d_model']} is not the compressed regime of the paper "
                           f"(6144 in 768), and {cfg['steps']} steps are far from 100,000")
    t.not_run("4", "Fig. 7 with GPT-2 embeddings: m = 6144, ell = 16, D_K ∈ {64, …, 512}, h ∈ {1, 2, 4, 8}, 7 seeds, "
                   "100,000 steps: h ≥ 2 near-perfect by D_K = 512; h = 1 bimodal (≈ 0 or ≈ 0.81) from D_K = 256",
              paper="h ≥ 2 ≈ 1; h = 1 ≈ 0 or 0.81",
              command="attnlab run 000-capacity/fig7-pretrained-block --scale full --headless  (GPT-2 in "
                      "$ATTNLAB_MODELS/gpt2; a GPU)")
    return t


EXPERIMENTS = (Experiment(
    id="000-capacity/fig7-pretrained-block", label="Fig. 7 (§7.3)",
    title="A full pre-LN block on frozen pretrained embeddings (offline: a MiniLM-L6 substitute for GPT-2)",
    params=PARAMS, presets=PRESETS, compute=compute,
    summary="Permutation -> matching retrieval with one pre-LN block; offline with MiniLM-L6 embeddings in place "
            "of GPT-2's."),)
