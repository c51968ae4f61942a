"""Figs. 3, 5, 29, 30 (§7.1, §7.2, App. D.2): the k-hop induction heads task; ID loss against the
number of samples and of layers, and OOD loss, for the standard and the positional Transformer."""

from __future__ import annotations

import time

import numpy as np

from attnlab.core.claims import TRAINED_RTOL, ClaimsTable, seed_summary
from attnlab.core.experiment import Context, Experiment
from attnlab.core.hashing import stable_hash
from attnlab.core.params import BATCH, LR, Param, ParameterError, require_memory, SEEDS

from .. import khop
from .. import paper
from .. import sweeps as S

KINDS = ("standard", "positional")
COMMAND = "attnlab run 001-positional/k-hop --scale full --headless"

PARAMS = (
    Param("seq_len", "int", "sequence length (the paper: 30; the model sees seq_len − 1 tokens)", min=5, max=256),
    Param("max_hops", "int", "largest hop count k (the paper: 3)", min=0, max=3),
    Param("embed", "int", "embedding dimension E (the paper: 60)", min=3, max=1024),
    Param("heads", "int", "attention heads (the authors' code: 3)", min=1, max=32),
    Param("layers_list", "int_list", "numbers of layers of the layer sweep (Figs. 3 right, 5, 30)", min=1, max=16),
    Param("layer_sweep_samples", "int", "training sequences of the layer sweep (the paper: 50,000)", min=1,
          max=1_000_000),
    Param("samples_list", "int_list", "training-set sizes of the sample sweep (Figs. 3 left, 29)", min=1,
          max=1_000_000),
    Param("sample_sweep_layers", "int", "layers of the sample sweep (the paper: 8)", min=1, max=16),
    SEEDS.described("trials per point (the paper: 10)"),
    Param("iterations", "int", "AdamW steps per model (the paper: 100,000)", min=1, max=10_000_000),
    BATCH.described("sequences per step (the authors' code: 64)"),
    LR.described("learning rate, constant (the authors' code: 5e-4)"),
    Param("weight_decay", "float", "AdamW weight decay on matmul weights (minGPT: 0.1)", min=0.0, max=1.0),
    Param("clip", "float", "gradient-norm clip per model, 0 = none (minGPT: 1.0)", min=0.0, max=100.0),
    Param("test_samples", "int", "ID and OOD test sequences (the authors' code: 1,000)", min=10, max=100_000),
    Param("checkpoint_every", "int", "steps between checkpoints of a program; 0 = none", min=0, max=10_000_000),
    Param("time_limit", "float", "minutes after which a run stops at a checkpoint (0 = no limit)", min=0.0,
          max=10_000.0),
    S.SEED_PARAM,
)
PRESETS = {
    # smoke run: 2 layers, E = 24, batch 32, 200 steps at lr 3e-3 (in our CPU calibration run the task was not
    # learned in 1,500 steps at the paper's width; here only the generator and the OOD collapse are checked)
    # three trials (each its own training set and batches, as the paper's) as replicas of one program; batch
    # 20 and 250 ID and OOD test strings (the former one-trial preset: batch 32, 500) pay for the two extra
    # trials (measured: batch 32 cost 17 s against the former 10.6 s; 150 steps of 32 left row 3 below 0.05)
    "ci": dict(seq_len=30, max_hops=3, embed=24, heads=3, layers_list=[2], layer_sweep_samples=4000,
               samples_list=[4000], sample_sweep_layers=2, seeds=3, iterations=200, batch=20, lr=3e-3,
               weight_decay=0.1, clip=1.0, test_samples=250, checkpoint_every=0, time_limit=0.0, seed=0),
    "full": dict(seq_len=30, max_hops=3, embed=60, heads=3, layers_list=list(range(1, 9)),
                 layer_sweep_samples=50_000, samples_list=list(paper.KHOP_SAMPLES_FULL), sample_sweep_layers=8,
                 seeds=10, iterations=100_000, batch=64, lr=5e-4, weight_decay=0.1, clip=1.0, test_samples=1000,
                 checkpoint_every=5000, time_limit=7.0, seed=0),
}

PROTO_KEYS = ("seq_len", "max_hops", "embed", "heads", "iterations", "batch", "lr", "weight_decay", "clip",
              "test_samples")


def runs_of(cfg: dict) -> list[dict]:
    """The (kind, layers, samples, seed) of both sweeps, each once."""
    points = [(l, cfg["layer_sweep_samples"]) for l in cfg["layers_list"]]
    points += [(cfg["sample_sweep_layers"], n) for n in cfg["samples_list"]]
    points = sorted(set(points))
    return [{"kind": k, "layers": l, "samples": n, "seed": s} for s in S.seed_list(cfg) for (l, n) in points
            for k in KINDS]


def generator_checks(max_len: int = 7) -> dict:
    """The vectorised hop against the definition on every string over 3 letters with no immediate
    repetition up to length `max_len`, k = 0..3; '~' and hop 0 on generated data."""
    import itertools

    mismatches, strings = 0, 0
    for L in range(1, max_len + 1):
        s = np.array([t for t in itertools.product(range(3), repeat=L) if all(a != b for a, b in zip(t, t[1:]))])
        strings += len(s)
        for k in range(4):
            got = khop.hop(s, k)
            for row, g in zip(s, got):
                mismatches += [None if v < 0 else int(v) for v in g] != khop.hop_bruteforce(list(row), k)
    x, y, k = khop.generate(np.random.default_rng(0), 2000)
    copy_ok = bool((y[k == 0, 1:] == x[k == 0, 1:]).all())
    letters = {int(t): i for i, t in enumerate(khop.char_ids("id"))}
    tilde_bad = 0
    for row_x, row_y, kk in zip(x[:300], y[:300], k[:300]):
        ref = khop.hop_bruteforce([letters[int(t)] for t in row_x[1:]], int(kk))
        tilde_bad += sum((r is None) != (int(t) == khop.INDEX[khop.TILDE]) for r, t in zip(ref, row_y[1:]))
    tilde = [float((y[k == kk, 1:] == khop.INDEX[khop.TILDE]).mean()) for kk in range(4)]
    tilde_all = float((y[:, 1:] == khop.INDEX[khop.TILDE]).mean())
    return {"strings": strings, "mismatches": int(mismatches), "hop0_copy": copy_ok, "tilde_mismatches": tilde_bad,
            "tilde_fraction_by_k": tilde, "tilde_fraction": tilde_all, "chance": khop.chance_accuracy(y),
            "no_repeat": bool((x[:, 2:] != x[:, 1:-1]).all())}


def compute(ctx: Context) -> dict:
    """Checks the generator against the definition, then trains (or loads) one model per (kind,
    layers, samples, seed) of the sample and layer sweeps, one replica-batched program per seed
    (resumable, checkpointed). The result holds `generator` (the checks) and `runs` (per model:
    train/ID/OOD cross-entropy and token accuracy, the loss curve)."""
    cfg = ctx.config
    if cfg["embed"] % cfg["heads"]:
        raise ParameterError(f"parameters 'embed'={cfg['embed']} and 'heads'={cfg['heads']}: embed must be a "
                             "multiple of heads")
    points = len(runs_of({**cfg, "seeds": 1}))  # replicas of one program (one seed)
    T, E, L = cfg["seq_len"] - 1, cfg["embed"], max(cfg["layers_list"] + [cfg["sample_sweep_layers"]])
    activations = points * cfg["batch"] * L * (24 * T * E + 3 * cfg["heads"] * T * T)  # floats kept for backward
    data = (max(cfg["samples_list"] + [cfg["layer_sweep_samples"]]) + 4 * cfg["test_samples"]) * T * 2
    require_memory(4 * activations + 8 * data, "one program's activations (replicas x batch x layers x tokens x "
                   "width) and its int64 training and test sets", {k: cfg[k] for k in (
                       "batch", "embed", "seq_len", "layers_list", "samples_list", "layer_sweep_samples", "test_samples")},
                   ctx.device)
    gen = ctx.unit({"what": "khop-generator"}, generator_checks)
    proto = {k: cfg[k] for k in PROTO_KEYS}
    proto["checkpoint_every"] = cfg["checkpoint_every"]
    runs = runs_of(cfg)
    keys = [{"what": "khop-run", **r, **{k: cfg[k] for k in PROTO_KEYS}} for r in runs]
    limit = cfg["time_limit"]
    deadline = time.time() + 60 * limit if limit else None

    def plan(missing):  # CI: every trial one program (each replica keeps its own data); else one per trial
        groups: dict[int, list[int]] = {}
        for i in missing:
            groups.setdefault(0 if cfg["scale"] == "ci" else runs[i]["seed"], []).append(i)
        return [g for _, g in sorted(groups.items())]

    def train(group):
        ck = str(ctx.store.dir / "checkpoints" / (stable_hash([keys[i] for i in group]) + ".pt"))
        rows = khop.train_program([runs[i] for i in group], proto, ctx.device, checkpoint=ck, deadline=deadline,
                                  progress=ctx.progress)
        for i, row in zip(group, rows):
            yield i, row, row["seconds"]

    rows = ctx.units(keys, train, plan, "k-hop programs")
    _, y_ood = khop.test_sets(cfg["test_samples"], cfg["seq_len"], cfg["max_hops"])["ood"]
    gen = {**gen, "ood_tilde_fraction": float((y_ood[:, 1:] == khop.INDEX[khop.TILDE]).mean())}
    return {"config": cfg, "generator": gen, "runs": [{**r, **row} for r, row in zip(runs, rows)]}


def summary(result: dict, sweep: str) -> dict:
    """Median and 10th/90th percentiles over seeds, per kind, along one sweep ("layers": x = layers
    at layer_sweep_samples; "samples": x = samples at sample_sweep_layers), for each metric."""
    cfg = result["config"]
    if sweep == "layers":
        xs, sel = cfg["layers_list"], lambda r, x: r["layers"] == x and r["samples"] == cfg["layer_sweep_samples"]
    else:
        xs, sel = cfg["samples_list"], lambda r, x: r["samples"] == x and r["layers"] == cfg["sample_sweep_layers"]
    out = {"x": list(xs)}
    for kind in KINDS:
        out[kind] = {}
        for m in ("train_loss", "id_loss", "ood_loss", "train_accuracy", "id_accuracy", "ood_accuracy"):
            vals = [[r[m] for r in result["runs"] if r["kind"] == kind and sel(r, x)] for x in xs]
            out[kind][m] = {q: [float(np.percentile(v, p)) for v in vals] for q, p in (("median", 50), ("p10", 10),
                                                                                        ("p90", 90))}
    return out


def claims(result: dict, full: dict | None = None) -> ClaimsTable:
    t = ClaimsTable(rtol=TRAINED_RTOL)
    g = result["generator"]
    t.consistency("1", f"generator = Sanford et al.'s definition of hop_k on all {g['strings']} strings over 3 letters "
                  "without immediate repetition, lengths 1–7, k = 0–3 (mismatching strings)", expected=0,
                  ours=g["mismatches"], holds=g["mismatches"] == 0, asserted=True)
    ok = g["hop0_copy"] and g["tilde_mismatches"] == 0 and g["no_repeat"]
    t.consistency("2", "generated data: hop 0 copies the string, '~' exactly where the hop target does not exist, "
                  "no immediate repetition", expected="yes", ours="yes" if ok else "no", holds=ok, asserted=True)
    runs = result["runs"]
    by = {k: [r for r in runs if r["kind"] == k] for k in KINDS}
    id_acc = {k: float(np.median([r["id_accuracy"] for r in by[k]])) for k in KINDS}
    ood_acc = {k: float(np.median([r["ood_accuracy"] for r in by[k]])) for k in KINDS}
    per = [[r for r in runs if r["seed"] == s] for s in S.seed_list(result["config"])]  # every model, per seed
    learned = [min(r["id_accuracy"] for r in rs) - g["chance"] for rs in per]
    t.consistency("3", f"the smoke run learned beyond the best constant guess per position (chance {g['chance']:.2f}): "
                  "per seed, least ID token accuracy − chance", expected="> 0.05", ours=seed_summary(learned),
                  holds=min(learned) > 0.05, tolerance="> 0.05 in every seed", asserted=True)
    gap = [min(r["id_accuracy"] - r["ood_accuracy"] for r in rs) for rs in per]
    t.consistency("4", "§7.2, Fig. 5: both architectures fail OOD (alphabet f–j): per seed, ID − OOD token accuracy, "
                  f"the smaller of the two (median OOD token accuracy: standard {ood_acc['standard']:.2f}, positional "
                  f"{ood_acc['positional']:.2f}; ID: standard {id_acc['standard']:.2f}, positional "
                  f"{id_acc['positional']:.2f}); a consequence of the "
                  "vocabulary (row 4b: no model can emit f–j), so it could not fail for a model that generalised: "
                  "it checks that the models learned in distribution, not the paper's claim",
                  expected="both poor OOD", ours=seed_summary(gap), holds=min(gap) >= 0.15,
                  tolerance="≥ 0.15 in every seed", asserted=True, source="text")
    emitted = max(r["ood_letter_predictions"] for r in runs)
    bound = g["ood_tilde_fraction"]
    above = max(r["ood_accuracy"] for r in runs) - bound
    t.consistency("4b", "why: the decoder rows of f–j are never a training target, so neither model predicts an OOD "
                  "letter (largest share of OOD positions predicted as f–j) and OOD accuracy cannot exceed the "
                  f"share of '~' targets in the OOD test set ({bound:.3f}); largest OOD accuracy − that share",
                  expected="≤ 0.02; ≤ 0", ours=f"{emitted:.3f}; {above:+.3f}", holds=emitted <= 0.02 and above <= 1e-9,
                  tolerance="≤ 0.02; ≤ 0",
                  asserted=True)
    ratio = [np.median([r["id_loss"] for r in rs if r["kind"] == "standard"])
             / np.median([r["id_loss"] for r in rs if r["kind"] == "positional"]) for rs in per]
    t.inconclusive("5", "Fig. 3: standard reaches near-zero ID loss, positional worse (per seed, ID loss standard / "
                   "positional)", paper="≪ 1", ours=seed_summary(ratio), why="smoke run: neither model has learned the task (nor in our 1,500-step calibration "
                   "run); paper scale only", source="text")
    _paper_scale(t, full)
    return t


def _paper_scale(t: ClaimsTable, full: dict | None) -> None:
    """Fig. 3/29/30 and Fig. 5 at paper scale: measured when the stored full run exists."""
    if full is None:
        t.not_run("F3a", "Fig. 3 right / Fig. 30: standard ID loss near zero from 3 layers on (50,000 samples)",
                  paper="≈ 0", command=COMMAND, source="figure")
        t.not_run("F3b", "Fig. 3 / Fig. 30: positional ID loss above standard at every depth (Remark 5.2: "
                  "positional needs more layers)", paper="pos > std", command=COMMAND, source="text")
        t.not_run("F29", "Fig. 3 left / Fig. 29: positional needs more samples (ID loss above standard at every N, "
                  "8 layers)", paper="pos > std", command=COMMAND, source="text")
        t.not_run("F5", "Fig. 5: OOD loss of both far above their ID loss at every depth", paper="both poor",
                  command=COMMAND, source="text")
        return
    lay, smp = summary(full, "layers"), summary(full, "samples")
    x = lay["x"]
    std_id, pos_id = lay["standard"]["id_loss"]["median"], lay["positional"]["id_loss"]["median"]
    deep = [v for l, v in zip(x, std_id) if l >= 3]
    t.add("F3a", "Fig. 3 right / Fig. 30: standard ID loss from 3 layers on (largest median)", paper="≈ 0",
          ours=max(deep) if deep else None, holds=(max(deep) < 0.05) if deep else None, tolerance="< 0.05",
          source="figure")
    worse = all(p > s for p, s in zip(pos_id, std_id))
    t.add("F3b", "Fig. 3 / Fig. 30: positional ID loss above standard at every depth", paper="pos > std",
          ours="yes" if worse else "no", holds=worse, tolerance="every depth", source="text")
    ps, ss = smp["positional"]["id_loss"]["median"], smp["standard"]["id_loss"]["median"]
    worse = all(p > s for p, s in zip(ps, ss))
    t.add("F29", "Fig. 3 left / Fig. 29: positional ID loss above standard at every N (8 layers)", paper="pos > std",
          ours="yes" if worse else "no", holds=worse, tolerance="every N", source="text")
    ratio = min(o / max(i, 1e-12) for k in KINDS for o, i in zip(lay[k]["ood_loss"]["median"], lay[k]["id_loss"]["median"]))
    t.add("F5", "Fig. 5: OOD loss / ID loss, least over depths and architectures", paper="both poor", ours=ratio,
          holds=ratio > 10, tolerance="> 10", source="text")


EXPERIMENTS = (Experiment(id="001-positional/k-hop", label="Figs. 3, 5, 29, 30 (§7.1, §7.2, App. D.2)",
                          title="k-hop induction heads: samples, layers and OOD", params=PARAMS, presets=PRESETS,
                          compute=compute,
                          summary="Generator exact; a smoke run shows both architectures collapse OOD; the "
                                  "paper's sweeps are paper scale."),)
