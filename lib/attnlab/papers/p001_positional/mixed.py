"""The mixed-type input task of §7.3 / App. D.3 (E13) and its model.

A prompt (App. D.3.1, n = 8 categories, k = 4 queried, m = 2 irrelevant items):
    ['Cat i1', v1, …, 'Cat i8', v8, 'Find {type} of Cat j1, Cat j2, Cat j3 and Cat j4']
with m items 'Cat' + {'+', '-'} + id (training; '_' or '*' at test) inserted at random positions of
the list (also between a category and its value, as in the paper's example), ids drawn from the
categories present. Training ids are distinct draws from 1..20 (sorted, as the paper's examples),
test ids from 21..40; values follow §7's scheme on [0, 5] (bounds γ_l ≤ γ_u uniform, values
uniform between them) and on [0, 5c] at test, rejecting bound pairs inside [0, 5] when c > 1. The
answer is the min / max / sum of the queried values. Scale c = 1 is the in-distribution test
(training ids, noise and values); c > 1 changes all three at once (App. D.3.1's three shifts).

Nodes. The paper tokenises the characters of the text and embeds them, and passes each number
through a linear layer. Here each list item is one node whose input is the sum of the embeddings
of its characters that carry information, as one-hot groups into the linear encoder: a marker
("Cat", the value slot, the noise symbols + - _ *, the query type min / max / sum, the answer
slot), the id's tens digit and units digit (so 'Cat23' shares its digit embeddings with 'Cat3' and
'Cat12'), and the value (value nodes). The query is one type node and four category nodes written
exactly as in the list; a last "answer" node is where the model's output is read (the App. D.1.1
scratchpad role). 8·2 + 2 + 5 + 1 = 24 nodes; the model adds its own scratchpad node.

Model: `models.Transformer` (App. D.1.1, Eq. 1 layers with the concatenated residual) with this
encoder input: `MixedConfig` (3 layers, 2 heads, E = hidden = 32 as App. D.3.2), positional = one-hot
P in Q/K only, standard = P concatenated to the node features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .models import ModelConfig, Transformer

N_CATS, K_QUERY, M_NOISE = 8, 4, 2
TRAIN_IDS, TEST_IDS = (1, 20), (21, 40)
VALUE_MAX = 5.0
MARKERS = ("cat", "value", "+", "-", "_", "*", "min", "max", "sum", "answer")
MK = {m: i for i, m in enumerate(MARKERS)}
TRAIN_NOISE, TEST_NOISE = ("+", "-"), ("_", "*")
VARIANTS = {"min": ("min",), "sum": ("sum",), "max": ("max",), "multitask": ("min", "max")}
FEATURES = len(MARKERS) + 5 + 10 + 1  # marker, tens digit (0-4), units digit, value
NODES = 2 * N_CATS + M_NOISE + 1 + K_QUERY + 1


@dataclass
class Prompts:
    """A batch of prompts as node features [B, NODES, FEATURES], with targets [B] and a readable form."""

    features: np.ndarray
    targets: np.ndarray
    items: list  # per prompt: the list of items as in the paper (strings and floats)


def _values(rng: np.random.Generator, samples: int, c: float) -> np.ndarray:
    """[samples, 8] values: §7's scheme on [0, 5c], rejecting bound pairs inside [0, 5] when c > 1."""
    out = np.empty((0, 2))
    hi = VALUE_MAX * c
    while len(out) < samples:
        g = np.sort(rng.uniform(0, hi, size=(2 * samples, 2)), axis=1)
        if c > 1:
            g = g[g[:, 1] > VALUE_MAX]
        out = np.concatenate([out, g])
    g = out[:samples]
    return g[:, :1] + (g[:, 1:] - g[:, :1]) * rng.uniform(size=(samples, N_CATS))


def answer(kind: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """min / max / sum over the last axis, per prompt type ('min', 'max', 'sum')."""
    return np.where(kind == "min", vals.min(-1), np.where(kind == "max", vals.max(-1), vals.sum(-1)))


def generate(rng: np.random.Generator, samples: int, variant: str, c: float = 1.0, readable: int = 0) -> Prompts:
    """`samples` prompts of `variant` (min, sum, max, multitask) at scale c (1 = training distribution)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r}: choose one of {', '.join(VARIANTS)}")
    if c < 1:
        raise ValueError(f"scale c = {c}: must be >= 1")
    test = c > 1
    lo, hi = TEST_IDS if test else TRAIN_IDS
    ids = np.sort(np.argsort(rng.uniform(size=(samples, hi - lo + 1)), axis=1)[:, :N_CATS] + lo, axis=1)
    vals = _values(rng, samples, c)
    q = np.sort(np.argsort(rng.uniform(size=(samples, N_CATS)), axis=1)[:, :K_QUERY], axis=1)
    types = np.array(VARIANTS[variant])[rng.integers(0, len(VARIANTS[variant]), size=samples)]
    noise_sym = np.array(TEST_NOISE if test else TRAIN_NOISE)[rng.integers(0, 2, size=(samples, M_NOISE))]
    noise_id = np.take_along_axis(ids, rng.integers(0, N_CATS, size=(samples, M_NOISE)), axis=1)
    # list slots: 16 items (cat, value alternating) plus 2 noise items at random positions
    L = 2 * N_CATS + M_NOISE
    order = np.argsort(rng.uniform(size=(samples, L)), axis=1)
    noise_slots = np.sort(order[:, :M_NOISE], axis=1)  # the list positions taken by noise
    is_noise = np.zeros((samples, L), dtype=bool)
    np.put_along_axis(is_noise, noise_slots, True, axis=1)
    true_idx = np.cumsum(~is_noise, axis=1) - 1  # index into the 16 true items at non-noise slots
    noise_idx = np.cumsum(is_noise, axis=1) - 1
    X = np.zeros((samples, NODES, FEATURES), dtype=np.float32)

    def put_id(rows, cols, idv):
        X[rows, cols, len(MARKERS) + idv // 10] = 1
        X[rows, cols, len(MARKERS) + 5 + idv % 10] = 1

    ti = np.clip(true_idx, 0, 2 * N_CATS - 1)
    cat_slot = ~is_noise & (ti % 2 == 0)
    val_slot = ~is_noise & (ti % 2 == 1)
    r, s = np.nonzero(cat_slot)
    X[r, s, MK["cat"]] = 1
    put_id(r, s, ids[r, ti[r, s] // 2])
    r, s = np.nonzero(val_slot)
    X[r, s, MK["value"]] = 1
    X[r, s, -1] = vals[r, ti[r, s] // 2]
    r, s = np.nonzero(is_noise)
    sym = noise_sym[r, noise_idx[r, s]]
    X[r, s, np.vectorize(MK.get)(sym)] = 1
    put_id(r, s, noise_id[r, noise_idx[r, s]])
    X[np.arange(samples), L, np.vectorize(MK.get)(types)] = 1  # 'Find {type} of'
    for j in range(K_QUERY):
        X[:, L + 1 + j, MK["cat"]] = 1
        put_id(np.arange(samples), np.full(samples, L + 1 + j), ids[np.arange(samples), q[:, j]])
    X[:, NODES - 1, MK["answer"]] = 1
    y = answer(types, np.take_along_axis(vals, q, axis=1)).astype(np.float32)
    items = []
    for i in range(min(readable, samples)):
        lst = []
        for s_ in range(L):
            if is_noise[i, s_]:
                lst.append(f"Cat{noise_sym[i, noise_idx[i, s_]]}{noise_id[i, noise_idx[i, s_]]}")
            elif true_idx[i, s_] % 2 == 0:
                lst.append(f"Cat{ids[i, true_idx[i, s_] // 2]}")
            else:
                lst.append(round(float(vals[i, true_idx[i, s_] // 2]), 2))
        qs = [f"Cat{ids[i, j]}" for j in q[i]]
        lst.append(f"Find {types[i]} of {', '.join(qs[:-1])} and {qs[-1]}")
        items.append(lst)
    return Prompts(X, y, items)


def decode(features: np.ndarray) -> list:
    """The paper's list form of one prompt's node features [NODES, FEATURES] (values to 2 decimals)."""
    out, query = [], []
    for node in features:
        m = MARKERS[int(np.argmax(node[:len(MARKERS)]))]
        idv = int(np.argmax(node[len(MARKERS):len(MARKERS) + 5])) * 10 + int(np.argmax(node[len(MARKERS) + 5:-1]))
        if m == "value":
            out.append(round(float(node[-1]), 2))
        elif m == "cat":
            (query if query else out).append(f"Cat{idv}")
        elif m in ("+", "-", "_", "*"):
            out.append(f"Cat{m}{idv}")
        elif m in ("min", "max", "sum"):
            query.append(m)
    if query:
        qs = query[1:]
        out.append(f"Find {query[0]} of {', '.join(qs[:-1])} and {qs[-1]}")
    return out


@dataclass(frozen=True)
class MixedConfig(ModelConfig):
    """App. D.3.2: 3 layers, 2 heads, E = hidden = 32; n = the prompt's nodes (the model adds a scratchpad)."""

    n: int = NODES
    embed: int = 32
    hidden: int = 32
    layers: int | None = 3
    node_features: int = FEATURES

    @property
    def d_in(self) -> int:
        return self.node_features if self.kind == "positional" else self.node_features + self.nodes


class MixedTransformer(Transformer):
    """`models.Transformer` on node features: forward(x [B, NODES, FEATURES]) → [R, B, NODES];
    `predict` reads the answer node → [R, B]. Only the encoder's input differs (`_embed`); the
    layers, attention and initialisation are the numeric model's."""

    def _embed(self, x: torch.Tensor) -> torch.Tensor:
        """x [B, NODES, F] (one batch for every replica) or [R, B, NODES, F] (one per replica) → the same with
        the scratchpad node appended (and P concatenated for the standard kind)."""
        pad = torch.zeros(x.shape[:-2] + (1, x.shape[-1]), dtype=self.dtype, device=x.device)
        v = torch.cat([x.to(self.dtype), pad], dim=-2)
        if self.kind == "standard":
            v = torch.cat([v, self.P.expand(v.shape[:-1] + self.P.shape[-1:])], dim=-1)
        return v

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """The answer node's output [R, B] for x [B, NODES, F] or [R, B, NODES, F]."""
        return self.forward(x)[:, :, -1]


# ---------------------------------------------------------------------------------------------- training


def data_seed(what: str, variant: str, c: float, seed: int = 0) -> int:
    from attnlab.core.hashing import derive_seed

    return derive_seed({"mixed": what, "variant": variant, "c": c}, seed)


_SETS: dict[tuple, Prompts] = {}


def training_set(variant: str, samples: int, seed: int = 0) -> Prompts:
    """The training prompts of data stream `seed` (a function of its arguments only). Sets of at most 20,000
    prompts are kept (the CI chapter draws each seed's set once for both architectures and the baselines);
    treat the arrays as read-only."""
    key = (variant, int(samples), int(seed))
    if key in _SETS:
        return _SETS[key]
    out = generate(np.random.default_rng(data_seed("train", variant, 1.0, seed)), samples, variant)
    if samples <= 20_000:
        if len(_SETS) >= 16:
            _SETS.pop(next(iter(_SETS)))
        _SETS[key] = out
    return out


def test_set(variant: str, samples: int, c: float) -> Prompts:
    """The fixed test prompts of `variant` at scale c (the same for every run)."""
    return generate(np.random.default_rng(data_seed("test", variant, float(c))), samples, variant, c)


def metrics(pred: torch.Tensor, y: torch.Tensor) -> dict:
    """Per replica: MSE and MAPE (mean |pred − y| / max(|y|, 1e-3)), pred [R, N], y [N] or [R, N]."""
    err = pred.double() - y.double()
    return {"mse": (err ** 2).mean(1).tolist(),
            "mape": (err.abs() / y.double().abs().clamp(min=1e-3)).mean(1).tolist()}


@torch.no_grad()
def predict(model: MixedTransformer, x: np.ndarray, batch: int = 1000) -> torch.Tensor:
    """[R, N] answers for prompts x [N, NODES, F] (every replica) or [R, N, NODES, F] (replica r on x[r])."""
    dev = next(model.parameters()).device
    N = x.shape[-3]
    out = [model.predict(torch.as_tensor(x[..., i:i + batch, :, :], device=dev)) for i in range(0, N, batch)]
    return torch.cat(out, dim=1).cpu()


def _batch_seed(variant: str, samples: int, data: int) -> int:
    return data_seed("batches" if not data else f"batches-{data}", variant, 1.0, samples)


def train_program(kind: str, variant: str, samples: int, seeds: list[int], proto: dict, device="cpu", *,
                  checkpoint: str | None = None, deadline: float | None = None, progress: bool = True,
                  data: int | list[int] = 0) -> list[dict]:
    """Train one model per seed (replicas of one program; seeds differ in the initialisation) on `samples`
    prompts of `variant`, with Adam, learning rate `lr` decayed by a cosine to lr/10 over `steps` steps of
    `batch` prompts (MSE on the answer). `data` an int: every replica on the training set and batches of data
    stream `data` (0: trial 0's); a list (one per seed): replica r on its own stream data[r] (its training
    prompts and batch order, exactly those of a program trained on data[r] alone). The test prompts are the
    fixed ones of `test_set` (the same for every run). proto: embed, hidden, layers, heads, steps, batch, lr,
    scales, test_samples. Returns per seed: train MSE/MAPE (on ≤ test_samples of its training prompts), per
    scale c test MSE/MAPE, the loss curve, seconds."""
    import math

    from .programs import ReplicaAdamW, run_program

    per = not isinstance(data, (int, np.integer))
    if per and len(data) != len(seeds):
        raise ValueError(f"{len(data)} data streams for {len(seeds)} seeds: give one stream or one per seed")
    cfg = MixedConfig(kind=kind, embed=proto["embed"], hidden=proto["hidden"], layers=proto["layers"],
                      heads=proto["heads"])
    model = MixedTransformer([cfg] * len(seeds), list(seeds), device=device)
    streams = [int(d) for d in data] if per else [int(data)]
    sets = {d: training_set(variant, samples, d) for d in dict.fromkeys(streams)}
    feats = np.stack([sets[d].features for d in streams])  # [S, N, NODES, F] (S = 1: shared)
    targs = np.stack([sets[d].targets for d in streams])
    X = torch.as_tensor(feats if per else feats[0], device=device)
    Y = torch.as_tensor(targs if per else targs[0], device=device)
    B, steps, lr0 = proto["batch"], proto["steps"], proto["lr"]
    rows = torch.arange(len(seeds), device=device)[:, None]

    def loss_fn(g):
        if per:  # each replica its own batch, drawn with its own generator: [R, B]
            idx = torch.stack([torch.randint(0, samples, (min(B, samples),), generator=gi) for gi in g]).to(device)
            return ((model.predict(X[rows, idx]) - Y[rows, idx]) ** 2).mean(1)
        idx = torch.randint(0, samples, (min(B, samples),), generator=g).to(device)
        return ((model.predict(X[idx]) - Y[idx]) ** 2).mean(1)

    opt = ReplicaAdamW(list(model.named_parameters()), set())
    lr = lambda s: lr0 * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * s / max(1, steps))))  # noqa: E731
    gens = [torch.Generator().manual_seed(_batch_seed(variant, samples, d)) for d in streams]
    log = run_program(model, opt, loss_fn, steps, lr, gens if per else gens[0], checkpoint=checkpoint,
                      checkpoint_every=proto.get("checkpoint_every", 0), deadline=deadline, progress=progress,
                      desc=f"{kind} {variant}: {len(seeds)} models", curve_every=max(1, steps // 30))
    n = min(samples, proto["test_samples"])
    if per:
        train = metrics(predict(model, feats[:, :n]), torch.as_tensor(targs[:, :n]))
    else:
        train = metrics(predict(model, feats[0, :n]), torch.as_tensor(targs[0, :n]))
    tests = {}
    for c in proto["scales"]:
        ts = test_set(variant, proto["test_samples"], c)
        tests[str(c)] = metrics(predict(model, ts.features), torch.as_tensor(ts.targets))
    out = []
    for r in range(len(seeds)):
        out.append({"train_mse": train["mse"][r], "train_mape": train["mape"][r],
                    "test_mse": {c: m["mse"][r] for c, m in tests.items()},
                    "test_mape": {c: m["mape"][r] for c, m in tests.items()},
                    "curve": [[c[0], round(c[1 + r], 6)] for c in log["curve"]],
                    "seconds": log["seconds"] / len(seeds)})
    return out


def baseline_mse(variant: str, samples: int, c: float) -> float:
    """MSE of the best constant prediction fitted on the training targets (their mean), at scale c."""
    mu = float(training_set(variant, 4000).targets.mean())
    return float(((test_set(variant, samples, c).targets - mu) ** 2).mean())


def prompt_answer(items: list) -> float:
    """The answer of a prompt in the paper's list form, by reading it (the tests' reference): the values
    that follow each 'Cat<id>' (skipping noise items), aggregated over the queried ids."""
    query = items[-1]
    words = query.replace(",", "").split()
    kind, ids = words[1], [w for w in words[3:] if w.startswith("Cat")]
    value_of, last = {}, None
    for it in items[:-1]:
        if isinstance(it, str):
            if it[3:].isdigit():
                last = it
        else:
            value_of[last] = it
            last = None
    vals = [value_of[i] for i in ids]
    return {"min": min, "max": max, "sum": sum}[kind](vals)


def heuristic_mse(variant: str, samples: int, c: float) -> float:
    """MSE of answering without reading the query: min / max of all eight values, or half their sum
    (4 of 8 queried), per prompt type; a model below it uses the query."""
    ts = test_set(variant, samples, c)
    X = ts.features
    vals = X[:, :, -1][X[:, :, MK["value"]] == 1].reshape(len(X), N_CATS)
    kinds = np.array(MARKERS)[np.argmax(X[:, 2 * N_CATS + M_NOISE, :len(MARKERS)], axis=1)]
    guess = np.where(kinds == "sum", vals.sum(1) * K_QUERY / N_CATS, answer(kinds, vals))
    return float(((guess - ts.targets) ** 2).mean())


def memory_estimate(replicas: int, batch: int, embed: int, hidden: int, layers: int, samples: int,
                    test_samples: int) -> float:
    """Bytes a training program needs, roughly: float32 activations kept for the backward pass
    (replicas x batch x nodes x (8 E + 2 hidden) per layer, and the standard model's attention maps)
    and the float32 node features of the training set and of one test set."""
    nodes = NODES + 1
    act = replicas * batch * layers * nodes * (8 * embed + 2 * hidden + 6 * nodes)
    return 4.0 * act + 4.0 * (samples + test_samples) * NODES * FEATURES
