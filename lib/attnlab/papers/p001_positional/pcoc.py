"""PCOC programs (Def. A.2), their simulator, and the compiler of Lemma B.2 into positional
Transformers with explicit weights.

A program has N machines with s memory slots of reals and R rounds. In each round every
machine receives, slot by slot, what the oracle routes to it (a route (src, dst, z): slot z of
dst receives slot z of src; a slot that receives nothing reads 0), then overwrites its memory
with its local function of what it received. Local functions are per machine and per output
slot, from a small exact vocabulary: ("copy", a), ("sum", a, b), ("min", a, b), ("max", a, b),
("zero",), where a, b are received slots.

The compiler follows Lemma B.2: n = N + 1 nodes (the last a sink holding zeros), P = I_n,
d_X = s + 1 (the memory plus a unique node identifier 1..n in the last column), one layer per
round with s heads; head z realises the routing of slot z as a unique hardmax pattern
(Lemma B.3), W_V = I_{d_X}, W_O keeps column z of head z. Φ is an exact ReLU MLP with two
hidden layers: it computes every machine's candidate outputs and keeps the one whose identifier
matches the node's (a gate exact for |values| ≤ `bound`), and copies the identifier.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import constructions as C
from .reference import Layer

Op = tuple  # ("copy", a) | ("sum", a, b) | ("min", a, b) | ("max", a, b) | ("zero",)


@dataclass(frozen=True)
class Round:
    routes: tuple[tuple[int, int, int], ...]  # (src, dst, slot)
    local: tuple[tuple[Op, ...], ...]  # local[i][z]: machine i's output slot z


@dataclass(frozen=True)
class Program:
    N: int
    s: int
    rounds: tuple[Round, ...]

    def __post_init__(self):
        for r, rnd in enumerate(self.rounds):
            seen = set()
            for src, dst, z in rnd.routes:
                if not (0 <= src < self.N and 0 <= dst < self.N and 0 <= z < self.s):
                    raise ValueError(f"round {r}: route {(src, dst, z)} out of range (N={self.N}, s={self.s})")
                if (dst, z) in seen:
                    raise ValueError(f"round {r}: two routes into slot {z} of machine {dst} (Assumption B.4)")
                seen.add((dst, z))
            if len(rnd.local) != self.N or any(len(f) != self.s for f in rnd.local):
                raise ValueError(f"round {r}: need {self.N} local functions of {self.s} slots")

    @property
    def R(self) -> int:
        return len(self.rounds)


def _apply(op: Op, z: np.ndarray) -> np.ndarray:
    kind = op[0]
    if kind == "copy":
        return z[..., op[1]]
    if kind == "sum":
        return z[..., op[1]] + z[..., op[2]]
    if kind == "min":
        return np.minimum(z[..., op[1]], z[..., op[2]])
    if kind == "max":
        return np.maximum(z[..., op[1]], z[..., op[2]])
    if kind == "zero":
        return np.zeros(z.shape[:-1])
    raise ValueError(f"unknown local operation {op!r}")


def simulate(program: Program, memory: np.ndarray) -> np.ndarray:
    """Run the program on memories [B, N, s] (Def. A.2: receive, then compute)."""
    mem = np.asarray(memory, dtype=np.float64)
    for rnd in program.rounds:
        recv = np.zeros_like(mem)
        for src, dst, z in rnd.routes:
            recv[:, dst, z] = mem[:, src, z]
        mem = np.stack([np.stack([_apply(op, recv[:, i]) for op in rnd.local[i]], axis=-1)
                        for i in range(program.N)], axis=1)
    return mem


# ---------------------------------------------------------------- the compiler (Lemma B.2)


def head_sources(program: Program, r: int, variant: str = "corrected") -> list[list[list[int]]]:
    """Per head z, per destination row i (0..N, N = the sink): the sources with logit 1.
    corrected: a machine that receives nothing in slot z reads the sink (which holds 0); the sink
    reads itself. paper: App. B.4's literal Ĥ_z = H_z ∪ {(i, sink) : i not a source}, i.e. unused
    sources are routed *into* the sink row and a machine that receives nothing has no 1 in its row."""
    N, s, sink = program.N, program.s, program.N
    rows = [[[] for _ in range(N + 1)] for _ in range(s)]
    for src, dst, z in program.rounds[r].routes:
        rows[z][dst].append(src)
    for z in range(s):
        if variant == "corrected":
            for i in range(N):
                if not rows[z][i]:
                    rows[z][i].append(sink)
            rows[z][sink] = [sink]
        elif variant == "paper":
            used = {src for src, _, zz in program.rounds[r].routes if zz == z}
            rows[z][sink] = [i for i in range(N + 1) if i not in used]
        else:
            raise ValueError(f"variant {variant!r}: choose corrected or paper")
    return rows


def _candidate_units(op: Op, d_in: int) -> tuple[np.ndarray, np.ndarray]:
    """First-layer ReLU units (columns of W1 on the received slots) and the output row that
    recombines them into op(z): min/max/sum/copy exactly (App. G identities)."""
    kind = op[0]
    W = np.zeros((d_in, 4))
    if kind == "zero":
        return W, np.zeros(4)
    a = op[1]
    b = op[2] if len(op) > 2 else op[1]
    W[a] += C.MIN_MAX_W1[0]
    W[b] += C.MIN_MAX_W1[1]
    if kind == "copy":  # x = ½(ReLU(2x) − ReLU(−2x)) with a = b
        return W, 0.5 * C.SUM_ROW
    row = {"sum": C.SUM_ROW, "min": C.MIN_ROW, "max": C.MAX_ROW}[kind]
    return W, row


def compile_program(program: Program, T: float = 30.0, bound: float = 1e6,
                    variant: str = "corrected") -> tuple[np.ndarray, list[Layer]]:
    """(P, layers) of the positional Transformer that simulates `program` (Lemma B.2).
    Inputs: `encode(memory)`; exact (with hardmax) while every value stays within ±bound."""
    N, s = program.N, program.s
    n, d_X = N + 1, s + 1
    layers = []
    for r in range(program.R):
        rows = head_sources(program, r, variant)
        W_Q = np.zeros((s, n, n))
        for z in range(s):
            for i in range(n):
                W_Q[z, i, rows[z][i]] = 1.0
        if variant == "corrected":
            W_Q = T * (2 * W_Q - 1)  # Lemma B.3 weights for a unique pattern
        else:
            W_Q = T * W_Q  # the paper's 0/1 query matrix, times the temperature
        W_K = np.stack([np.eye(n)] * s)
        W_V = np.stack([np.eye(d_X)] * s)
        W_O = np.zeros((s * d_X, s))
        for z in range(s):
            W_O[z * d_X + z, z] = 1.0  # head z keeps its column z (erratum: App. B.4 writes k + (h−1)s)
        # Φ on [z (s), x (s + 1)]: the id is x's last column, at index s + s
        d_in, id_col = s + d_X, 2 * s
        units1, rows_out = [], []  # first hidden layer: candidate units per (machine, slot), id hats
        for i in range(N):
            for z in range(s):
                W, row = _candidate_units(program.rounds[r].local[i][z], d_in)
                units1.append(W)
                rows_out.append((i, z, row))
        W_id = np.zeros((d_in, 1))
        W_id[id_col] = 1.0
        units1.append(W_id)  # ReLU(id) = id (ids are 1..n), copied through to the output
        W1 = np.concatenate(units1, axis=1)
        b1 = np.zeros(W1.shape[1])
        # hat units per machine i: ReLU(id − (i+1) + 1), ReLU(id − (i+1)), ReLU(id − (i+1) − 1); ids are 1..n
        hat_cols = []
        for i in range(N):
            cols = []
            for shift in (1.0, 0.0, -1.0):
                w = np.zeros((d_in, 1)); w[id_col] = 1.0
                W1 = np.concatenate([W1, w], axis=1)
                b1 = np.append(b1, shift - (i + 1))
                cols.append(W1.shape[1] - 1)
            hat_cols.append(cols)
        id_unit = 4 * N * s
        # second hidden layer: for each (i, z): ReLU(f − M(1 − e_i)) and ReLU(−f − M(1 − e_i)); and ReLU(id)
        h1 = W1.shape[1]
        W2 = np.zeros((h1, 2 * N * s + 1))
        b2 = np.zeros(2 * N * s + 1)
        for k, (i, z, row) in enumerate(rows_out):
            f = np.zeros(h1)
            f[4 * k:4 * k + 4] = row
            e = np.zeros(h1)  # e_i = hat(id − (i+1)) = ReLU(d+1) − 2 ReLU(d) + ReLU(d−1)
            e[hat_cols[i]] = (1.0, -2.0, 1.0)
            W2[:, 2 * k] = f + bound * e
            W2[:, 2 * k + 1] = -f + bound * e
            b2[2 * k] = b2[2 * k + 1] = -bound
        W2[id_unit, -1] = 1.0
        W3 = np.zeros((2 * N * s + 1, d_X))
        for k, (i, z, row) in enumerate(rows_out):
            W3[2 * k, z], W3[2 * k + 1, z] = 1.0, -1.0
        W3[-1, s] = 1.0
        mlp = ((W1, b1), (W2, b2), (W3, np.zeros(d_X)))
        layers.append(Layer(W_Q, W_K, W_V, W_O, mlp))
    return np.eye(n), layers


def encode(memory: np.ndarray) -> np.ndarray:
    """Memories [B, N, s] → X [B, N + 1, s + 1]: the sink row is zero, the last column the id 1..n."""
    memory = np.asarray(memory, dtype=np.float64)
    B, N, s = memory.shape
    X = np.zeros((B, N + 1, s + 1))
    X[:, :N, :s] = memory
    X[:, :, s] = np.arange(1, N + 2)
    return X


def decode(Y: np.ndarray) -> np.ndarray:
    """X [B, N + 1, s + 1] → memories [B, N, s]."""
    return Y[:, :-1, :-1]


# ---------------------------------------------------------------- example programs


def prefix_program(N: int, op: str) -> Program:
    """Prefix sum/min in ⌈log₂ N⌉ rounds, s = 2: slot 0 from itself, slot 1 from i − 2^{r−1}."""
    rounds = []
    for r in range(1, max(1, math.ceil(math.log2(N))) + 1):
        step = 2 ** (r - 1)
        routes = [(i, i, 0) for i in range(N)]
        for i in range(N):
            if i - step >= 0:
                routes.append((i - step, i, 1))
            elif op == "min":
                routes.append((i, i, 1))  # no partner: read itself (for sum: nothing, i.e. 0)
        local = tuple(((op, 0, 1), (op, 0, 1)) for _ in range(N))
        rounds.append(Round(tuple(routes), local))
    return Program(N, 2, tuple(rounds))


def oets_program(N: int, rounds: int | None = None) -> Program:
    """Odd–even transposition sort, s = 2: machine-specific local functions (min for the lower
    machine of a pair, max for the upper, copy when unpaired), selected by the node identifier."""
    out = []
    for r in range(1, (N if rounds is None else rounds) + 1):
        routes, local = [], [(("copy", 0), ("copy", 0))] * N
        local = list(local)
        paired = set()
        for i, j in C.oets_pairs(N, r):
            routes += [(i, i, 0), (j, i, 1), (i, j, 0), (j, j, 1)]
            local[i] = (("min", 0, 1), ("min", 0, 1))
            local[j] = (("max", 0, 1), ("max", 0, 1))
            paired |= {i, j}
        routes += [(i, i, 0) for i in range(N) if i not in paired]
        out.append(Round(tuple(routes), tuple(local)))
    return Program(N, 2, tuple(out))


def benes_permutation_program(perm: np.ndarray, k: int) -> Program:
    """Move the value of machine i to machine perm[i] along Beneš paths (2k − 1 rounds, s = 1):
    every round's routes are edges of Def. A.4, fixed by perm (a function of positions, not data)."""
    from .benes import route_permutation

    paths = route_permutation(np.asarray(perm), k)
    N = 1 << k
    rounds = []
    for l in range(1, 2 * k):
        routes = tuple((int(paths[p, l - 1]), int(paths[p, l]), 0) for p in range(N))
        rounds.append(Round(routes, tuple((("copy", 0),) for _ in range(N))))
    return Program(N, 1, tuple(rounds))
