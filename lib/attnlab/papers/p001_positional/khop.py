"""The k-hop induction heads task (Sanford et al. 2024; App. D.2) and the causal model of E12.

Task. A string s of length L over an alphabet of 5 characters with no immediate repetition
(s_t ≠ s_{t−1}); Sanford et al.'s hop (1-indexed, 0 = "not found"):
    find_1(s, i) = max({0} ∪ {j ≤ i : s_{j−1} = s_i}),   find_k = find_1 ∘ find_{k−1},  find_0(s, i) = i,
    hop_k(s)_i = s_{find_k(s, i)}  if find_k(s, i) ≠ 0, else "~",
i.e. one hop moves to the character right after the last earlier occurrence of the current one.
A sample picks k uniformly in {0, …, K} (K = 3, the paper) and is the token sequence
    input  = [k] + s          (L + 1 = 29 tokens for the paper's length 30),
    target = [blank] + hop_k(s),
the layout of the authors' code (which draws 30 characters and drops the last two; hop_k of a
prefix depends on the prefix only, so drawing L = 28 is the same distribution). In-distribution
strings use {a, b, c, d, e}, out-of-distribution strings {f, g, h, i, j} (App. D.2.1). Vocabulary (16):
the hop counts 0–3, a–e, "~", the blank, f–j.

Model (App. D.2.1 + the authors' minGPT variant, indheads/ in their repository): token embedding (E = 60) and a
linear decoder to the vocabulary; L blocks h ← h + Attn(h), h ← h + MLP(h) (additive residuals,
GELU MLP of width 4E, no LayerNorm, no dropout), H = 3 heads, causal mask, 1/√d_h scaling; a learned
position table `wpe` [T, E]. Standard: h₀ = wte[x] + wpe, q, k, v from h. Positional: h₀ = wte[x],
q, k from P = wpe (learned, shared by all layers, input-free), v from h. Initialisation as minGPT:
N(0, 0.02) weights and embeddings, N(0, 0.02/√(2L)) for the residual projections, zero biases.

Replica-batched: replicas share E, H, T and the vocabulary and may differ in kind (positional or
standard) and depth; a replica with fewer layers has its extra layers masked to zero, which makes
them the identity (additive residuals). A replica computes exactly what it computes alone.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.core.replica import ReplicaModule, replica_generator

MAX_HOPS = 3
ID_CHARS = "abcde"
OOD_CHARS = "fghij"
TILDE, BLANK = "~", "_"
VOCAB = tuple("0123") + tuple(ID_CHARS) + (TILDE, BLANK) + tuple(OOD_CHARS)  # 16 tokens
INDEX = {t: i for i, t in enumerate(VOCAB)}


def char_ids(alphabet: str) -> np.ndarray:
    """Token ids of an alphabet's characters ("id": a–e, "ood": f–j)."""
    chars = {"id": ID_CHARS, "ood": OOD_CHARS}[alphabet]
    return np.array([INDEX[c] for c in chars])


def sample_strings(rng: np.random.Generator, samples: int, length: int, alphabet_size: int = 5) -> np.ndarray:
    """[samples, length] letter indices in 0..alphabet_size−1, uniform among the strings with no
    immediate repetition: a uniform first letter, then each letter = previous + U{1..size−1} mod size."""
    first = rng.integers(0, alphabet_size, size=(samples, 1))
    steps = rng.integers(1, alphabet_size, size=(samples, length - 1))
    return np.concatenate([first, first + np.cumsum(steps, axis=1)], axis=1) % alphabet_size


def find1(s: np.ndarray) -> np.ndarray:
    """0-indexed find_1 for every position: [B, L] → [B, L]: 1 + the last j < i with s_j = s_i, or −1."""
    B, L = s.shape
    earlier = np.tril(np.ones((L, L), dtype=bool), -1)  # [i, j]: j < i
    hit = (s[:, :, None] == s[:, None, :]) & earlier
    last = np.where(hit, np.arange(L), -1).max(axis=2)
    return np.where(last >= 0, last + 1, -1)


def hop_positions(s: np.ndarray, k: np.ndarray | int) -> np.ndarray:
    """find_k (0-indexed, −1 = not found) for every position, k per sample ([B] or a scalar)."""
    B, L = s.shape
    k = np.broadcast_to(np.asarray(k), (B,))
    f = find1(s)
    pos = np.broadcast_to(np.arange(L), (B, L)).copy()
    for t in range(int(k.max(initial=0))):
        nxt = np.take_along_axis(f, np.maximum(pos, 0), axis=1)
        pos = np.where((k[:, None] > t) & (pos >= 0), nxt, pos)
    return pos


def hop(s: np.ndarray, k: np.ndarray | int, tilde: int = -1) -> np.ndarray:
    """hop_k(s) for every position, with `tilde` where the target does not exist."""
    pos = hop_positions(s, k)
    return np.where(pos >= 0, np.take_along_axis(s, np.maximum(pos, 0), axis=1), tilde)


def hop_bruteforce(s: list, k: int):
    """hop_k of one string by the definition (1-indexed, 0 = not found), in plain Python: the test's
    reference. Returns a list with None where the target does not exist."""
    L = len(s)
    x = [None] + list(s)  # 1-indexed

    def find_1(i: int) -> int:
        js = [j for j in range(2, i + 1) if x[j - 1] == x[i]]
        return max(js) if js else 0

    out = []
    for i in range(1, L + 1):
        p = i
        for _ in range(k):
            if p == 0:
                break
            p = find_1(p)
        out.append(x[p] if p != 0 else None)
    return out


def generate(rng: np.random.Generator, samples: int, seq_len: int = 30, max_hops: int = MAX_HOPS,
             alphabet: str = "id") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(inputs, targets, hops): token ids [samples, seq_len − 1] (the paper's sequence length 30 gives
    29 tokens), and the hop count k of each sample (uniform in 0..max_hops)."""
    if not 0 <= max_hops <= MAX_HOPS:
        raise ValueError(f"max_hops = {max_hops}: the vocabulary has hop tokens 0..{MAX_HOPS}")
    if seq_len < 3:
        raise ValueError(f"seq_len = {seq_len}: must be >= 3")
    ids = char_ids(alphabet)
    s = sample_strings(rng, samples, seq_len - 2, len(ids))
    k = rng.integers(0, max_hops + 1, size=samples)
    h = hop(s, k)
    chars = ids[s]
    target_chars = np.where(h >= 0, ids[np.maximum(h, 0)], INDEX[TILDE])
    inputs = np.concatenate([k[:, None], chars], axis=1)  # hop-count tokens are ids 0..3
    targets = np.concatenate([np.full((samples, 1), INDEX[BLANK]), target_chars], axis=1)
    return inputs.astype(np.int64), targets.astype(np.int64), k


def decode(tokens) -> str:
    return "".join(VOCAB[int(t)] for t in tokens)


# ---------------------------------------------------------------------------------------------- model


@dataclass(frozen=True)
class KHopConfig:
    kind: str = "standard"  # standard | positional
    layers: int = 3
    embed: int = 60
    heads: int = 3
    block: int = 29  # tokens per sequence (seq_len − 1)
    vocab: int = len(VOCAB)

    def __post_init__(self):
        if self.kind not in ("positional", "standard"):
            raise ValueError(f"kind {self.kind!r}: choose positional or standard")
        if self.embed % self.heads:
            raise ValueError(f"embed {self.embed} must be a multiple of heads {self.heads}")


LAYER_PARAMS = ("q_W", "q_b", "k_W", "k_b", "v_W", "v_b", "o_W", "o_b", "fc_W", "fc_b", "pr_W", "pr_b")
DECAY = ("q_W", "k_W", "v_W", "o_W", "fc_W", "pr_W", "head_W")  # minGPT: Linear weights only


class KHopGPT(ReplicaModule):
    """R replicas of the E12 model. forward(tokens [B, T] or [R, B, T]) → logits [R, B, T, V]."""

    def __init__(self, configs: list[KHopConfig], seeds: list[int], dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu"):
        super().__init__(len(configs), dtype, device)
        c0 = configs[0]
        for c in configs:
            if (c.embed, c.heads, c.block, c.vocab) != (c0.embed, c0.heads, c0.block, c0.vocab):
                raise ValueError(f"replicas must share embed, heads, block and vocab; got {c} and {c0}")
        self.configs, self.seeds = list(configs), list(seeds)
        E, H, T, V = c0.embed, c0.heads, c0.block, c0.vocab
        self.E, self.H, self.T, self.V, self.dh = E, H, T, V, E // H
        self.L = max(c.layers for c in configs)
        self.add("wte", (V, E)); self.add("wpe", (T, E)); self.add("head_W", (E, V))
        for l in range(self.L):  # heads are column blocks of dh (minGPT's layout)
            for nm, shape in (("q_W", (E, E)), ("q_b", (E,)), ("k_W", (E, E)), ("k_b", (E,)), ("v_W", (E, E)),
                              ("v_b", (E,)), ("o_W", (E, E)), ("o_b", (E,)), ("fc_W", (E, 4 * E)), ("fc_b", (4 * E,)),
                              ("pr_W", (4 * E, E)), ("pr_b", (E,))):
                self.add(f"{nm}{l}", shape)
        std = torch.tensor([c.kind == "standard" for c in configs], dtype=dtype, device=self.device)
        self.register_buffer("std", std)
        self.register_buffer("causal", torch.triu(torch.ones(T, T, dtype=torch.bool, device=self.device), 1))
        for r, (c, s) in enumerate(zip(configs, seeds)):
            self._init_replica(r, c, s)

    def _init_replica(self, r: int, c: KHopConfig, seed: int) -> None:
        g = replica_generator(asdict(c), seed)
        E = c.embed

        def normal(shape, std=0.02):
            return torch.randn(shape, generator=g, dtype=torch.float64) * std

        self.place("wte", r, normal((c.vocab, E)))
        self.place("wpe", r, normal((c.block, E)))
        for l in range(c.layers):
            qkv = normal((E, 3 * E))  # minGPT's fused c_attn
            for j, nm in enumerate(("q", "k", "v")):
                self.place(f"{nm}_W{l}", r, qkv[:, j * E:(j + 1) * E])
                self.place(f"{nm}_b{l}", r, torch.zeros(E))
            self.place(f"o_W{l}", r, normal((E, E), 0.02 / math.sqrt(2 * c.layers)))
            self.place(f"o_b{l}", r, torch.zeros(E))
            self.place(f"fc_W{l}", r, normal((E, 4 * E))); self.place(f"fc_b{l}", r, torch.zeros(4 * E))
            self.place(f"pr_W{l}", r, normal((4 * E, E), 0.02 / math.sqrt(2 * c.layers)))
            self.place(f"pr_b{l}", r, torch.zeros(E))
        self.place("head_W", r, normal((E, c.vocab)))

    def decay_names(self) -> set[str]:
        return {n for n in self._names if n.rstrip("0123456789") in DECAY}

    def _heads(self, z: torch.Tensor, B: int, T: int) -> torch.Tensor:
        """[R, B·T, E] → [R, B, H, T, dh]."""
        return z.view(self.R, B, T, self.H, self.dh).transpose(2, 3)

    def forward(self, tokens: torch.Tensor, return_attention: bool = False):
        R, E = self.R, self.E
        if tokens.dim() == 2:
            tokens = tokens.unsqueeze(0).expand(R, -1, -1)
        B, T = tokens.shape[1:]
        wte, wpe = self.w("wte"), self.w("wpe")[:, :T]
        h = wte[torch.arange(R, device=tokens.device)[:, None, None], tokens].reshape(R, B * T, E)
        std = self.std.view(R, 1, 1)
        pe = wpe.unsqueeze(1).expand(R, B, T, E).reshape(R, B * T, E)
        h = h + std * pe
        all_std, all_pos = bool(self.std.all()), not bool(self.std.any())
        maps = []
        for l in range(self.L):
            w = {nm: self.w(f"{nm}{l}") for nm in LAYER_PARAMS}
            if all_pos:  # one input-free map for the whole batch
                qk_in, Bq = wpe, 1
            else:
                qk_in, Bq = (h if all_std else std * h + (1 - std) * pe), B
            q = self._heads(torch.baddbmm(w["q_b"].unsqueeze(1), qk_in, w["q_W"]), Bq, T)
            k = self._heads(torch.baddbmm(w["k_b"].unsqueeze(1), qk_in, w["k_W"]), Bq, T)
            v = self._heads(torch.baddbmm(w["v_b"].unsqueeze(1), h, w["v_W"]), B, T)
            att = (q @ k.transpose(-1, -2)) / math.sqrt(self.dh)
            att = torch.softmax(att.masked_fill(self.causal[:T, :T], float("-inf")), dim=-1)
            y = (att @ v).transpose(2, 3).reshape(R, B * T, E)  # att broadcasts over B when input-free
            h = h + torch.baddbmm(w["o_b"].unsqueeze(1), y, w["o_W"])
            m = F.gelu(torch.baddbmm(w["fc_b"].unsqueeze(1), h, w["fc_W"]))
            h = h + torch.baddbmm(w["pr_b"].unsqueeze(1), m, w["pr_W"])
            maps.append(att)
        logits = (h @ self.w("head_W")).view(R, B, T, self.V)
        return (logits, maps) if return_attention else logits


def replica_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over all positions per replica: logits [R, B, T, V], targets [R, B, T] → [R]."""
    R, B, T, V = logits.shape
    return F.cross_entropy(logits.reshape(R * B * T, V), targets.reshape(-1), reduction="none").view(R, -1).mean(1)


@torch.no_grad()
def evaluate(model: KHopGPT, inputs: np.ndarray, targets: np.ndarray, batch: int = 500) -> dict:
    """Per replica: cross-entropy over all positions (the paper's loss) and token accuracy over the
    string positions (the blank target at position 0 excluded), and the share of those positions
    where the prediction is one of the OOD letters f–j, on the same sequences for every
    replica (inputs [N, T]) or on each replica's own ([R, N, T])."""
    dev = next(model.parameters()).device
    x = torch.as_tensor(inputs, device=dev)
    y = torch.as_tensor(targets, device=dev)
    if x.dim() == 2:
        x, y = x.unsqueeze(0).expand(model.R, -1, -1), y.unsqueeze(0).expand(model.R, -1, -1)
    ce = torch.zeros(model.R, dtype=torch.float64, device=dev)
    correct = torch.zeros(model.R, dtype=torch.float64, device=dev)
    ood_pred = torch.zeros(model.R, dtype=torch.float64, device=dev)
    ood_ids = torch.as_tensor(char_ids("ood"), device=dev)
    N = x.shape[1]
    for i in range(0, N, batch):
        xb, yb = x[:, i:i + batch], y[:, i:i + batch]
        logits = model(xb)
        ce += replica_token_loss(logits, yb).double() * xb.shape[1]
        pred = logits[:, :, 1:].argmax(-1)
        correct += (pred == yb[:, :, 1:]).double().sum((1, 2))
        ood_pred += torch.isin(pred, ood_ids).double().sum((1, 2))
    n = N * (x.shape[2] - 1)
    return {"loss": (ce / N).cpu().tolist(), "accuracy": (correct / n).cpu().tolist(),
            "ood_letter_predictions": (ood_pred / n).cpu().tolist()}


def chance_accuracy(targets: np.ndarray) -> float:
    """Accuracy of the best constant guess per position over the string positions (a reference)."""
    t = targets[:, 1:]
    best = 0
    for j in range(t.shape[1]):
        best += np.bincount(t[:, j]).max()
    return float(best / t.size)


# ---------------------------------------------------------------------------------------------- training

CHUNK = 1000  # training sequences are drawn in seeded chunks, so a set of N is the first N of any larger set


def training_set(seed: int, samples: int, seq_len: int, max_hops: int) -> tuple[np.ndarray, np.ndarray]:
    """The first `samples` training sequences of trial `seed` (nested: a smaller set is a prefix)."""
    from attnlab.core.hashing import derive_seed

    xs, ys = [], []
    for c in range(-(-samples // CHUNK)):
        rng = np.random.default_rng(derive_seed({"khop-train": seq_len, "hops": max_hops, "chunk": c}, seed))
        x, y, _ = generate(rng, CHUNK, seq_len, max_hops)
        xs.append(x); ys.append(y)
    return np.concatenate(xs)[:samples], np.concatenate(ys)[:samples]


def test_sets(samples: int, seq_len: int, max_hops: int) -> dict:
    """The fixed ID (a–e) and OOD (f–j) test sets, the same for every run."""
    from attnlab.core.hashing import derive_seed

    out = {}
    for name in ("id", "ood"):
        rng = np.random.default_rng(derive_seed({"khop-test": name, "len": seq_len, "hops": max_hops}, 0))
        x, y, _ = generate(rng, samples, seq_len, max_hops, alphabet=name)
        out[name] = (x, y)
    return out


def train_program(runs: list[dict], proto: dict, device="cpu", *, checkpoint: str | None = None,
                  deadline: float | None = None, progress: bool = True) -> list[dict]:
    """Train the runs {kind, layers, samples, seed} as one replica-batched program with the protocol
    `proto` (seq_len, max_hops, embed, heads, iterations, batch, lr, weight_decay, clip, test_samples,
    checkpoint_every): AdamW (β = 0.9, 0.95) with decay on the matmul weights and a per-replica
    gradient clip, constant learning rate, each replica drawing its batches from its own training set
    with its own generator (seeded by (samples, seed): the two architectures of a trial see the same
    batches). Returns per run: train/id/ood loss and accuracy, the loss curve, seconds."""
    from attnlab.core.hashing import derive_seed

    from .programs import ReplicaAdamW, run_program

    T = proto["seq_len"] - 1
    configs = [KHopConfig(kind=r["kind"], layers=r["layers"], embed=proto["embed"], heads=proto["heads"], block=T)
               for r in runs]
    model = KHopGPT(configs, [r["seed"] for r in runs], device=device)
    sets = {}
    for r in runs:
        key = (r["seed"], r["samples"])
        if key not in sets:
            x, y = training_set(r["seed"], r["samples"], proto["seq_len"], proto["max_hops"])
            sets[key] = (torch.as_tensor(x, device=device), torch.as_tensor(y, device=device))
    data = [sets[(r["seed"], r["samples"])] for r in runs]
    gens = [torch.Generator().manual_seed(derive_seed({"khop-batches": r["samples"]}, r["seed"])) for r in runs]
    B = proto["batch"]

    def loss_fn(gs):
        idx = [torch.randint(0, len(d[0]), (B,), generator=g).to(device) for d, g in zip(data, gs)]
        x = torch.stack([d[0][i] for d, i in zip(data, idx)])
        y = torch.stack([d[1][i] for d, i in zip(data, idx)])
        return replica_token_loss(model(x), y)

    opt = ReplicaAdamW(list(model.named_parameters()), model.decay_names(), betas=(0.9, 0.95),
                       weight_decay=proto["weight_decay"], clip=proto["clip"])
    log = run_program(model, opt, loss_fn, proto["iterations"], lambda s: proto["lr"], gens, checkpoint=checkpoint,
                      checkpoint_every=proto.get("checkpoint_every", 0), deadline=deadline, progress=progress,
                      desc=f"k-hop: {len(runs)} models", curve_every=max(1, proto["iterations"] // 30))
    tests = test_sets(proto["test_samples"], proto["seq_len"], proto["max_hops"])
    n_tr = min(proto["test_samples"], min(len(d[0]) for d in data))  # the first n of each training set
    tr = evaluate(model, torch.stack([d[0][:n_tr] for d in data]), torch.stack([d[1][:n_tr] for d in data]))
    ev = {name: evaluate(model, *tests[name]) for name in ("id", "ood")}
    out = []
    for i in range(len(runs)):
        row = {f"{split}_{m}": (tr if split == "train" else ev[split])[m][i]
               for split in ("train", "id", "ood") for m in ("loss", "accuracy")}
        row["ood_letter_predictions"] = ev["ood"]["ood_letter_predictions"][i]
        row["curve"] = [[c[0], round(c[1 + i], 5)] for c in log["curve"]]
        row["seconds"] = log["seconds"] / len(runs)
        out.append(row)
    return out

