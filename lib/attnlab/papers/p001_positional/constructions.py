"""Explicit weights of the paper's constructions, as lists of `reference.Layer`.

* Lemma B.3: any unique hardmax pattern Ā is the positional attention of P = I_n, W_K = I_n,
  W_Q = T(2Ā − 1); every entry is within exp(ln n − 2T) of Ā.
* Remark B.6: any softmax pattern B (row-stochastic, entries in (0, 1)) is realised exactly by
  W_K = I, W_Q = P^{-1} ln(B) P^{-T} for any invertible P.
* App. G: min and max of two numbers as a 2-layer ReLU MLP of width 4, exact.
* Fig. 7 / App. A.3: prefix sum, prefix min, tree min and odd–even transposition sort as
  positional Transformers with n + 1 nodes (the last one a sink holding 0, App. B.4.1).

Every attention pattern is a list `src[i]`: node i reads node src[i]. Patterns are turned into
weights by Lemma B.3, so the same layers run with hardmax (exact) or softmax at temperature T.
"""

from __future__ import annotations

import math

import numpy as np

from .reference import Layer

# ---------------------------------------------------------------- Lemma B.3 and Remark B.6


def pattern_matrix(src: list[int] | np.ndarray, n: int | None = None) -> np.ndarray:
    """The unique hardmax pattern Ā with Ā[i, src[i]] = 1."""
    src = np.asarray(src, dtype=int)
    n = len(src) if n is None else n
    A = np.zeros((len(src), n))
    A[np.arange(len(src)), src] = 1.0
    return A


def lemma_b3_weights(A_bar: np.ndarray, T: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P, W_Q, W_K) of Lemma B.3: P = I_n, W_K = I_n, W_Q = T(2Ā − 1)."""
    A_bar = np.asarray(A_bar, dtype=np.float64)
    n = A_bar.shape[0]
    if A_bar.shape != (n, n) or not np.all(A_bar.sum(1) == 1) or not np.all((A_bar == 0) | (A_bar == 1)):
        raise ValueError(f"Ā must be an n×n 0/1 matrix with exactly one 1 per row; got shape {A_bar.shape}")
    return np.eye(n), T * (2 * A_bar - 1), np.eye(n)


def lemma_b3_bound(n: int, T: float) -> float:
    """The lemma's bound on every entry: exp(ln n − 2T)."""
    return math.exp(math.log(n) - 2 * T)


def lemma_b3_exact_error(n: int, T: float) -> float:
    """The exact largest entry error of the construction: (n − 1)/(e^{2T} + n − 1)."""
    return (n - 1) / (math.exp(2 * T) + n - 1)


def temperature_for(n: int, eps: float) -> float:
    """The lemma's temperature T = ½ ln(n/ε), which makes the bound equal ε."""
    return 0.5 * math.log(n / eps)


def softmax_pattern_weights(B: np.ndarray, P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(W_Q, W_K) of Remark B.6: (P W_Q)(P W_K)^T = ln B with W_K = I, W_Q = P^{-1} ln(B) P^{-T}."""
    B = np.asarray(B, dtype=np.float64)
    if np.any(B <= 0) or np.any(B >= 1) or not np.allclose(B.sum(1), 1, atol=1e-12):
        raise ValueError("B must be row-stochastic with entries in (0, 1) (a softmax pattern)")
    P_inv = np.linalg.inv(P)
    return P_inv @ np.log(B) @ P_inv.T, np.eye(P.shape[1])


# ---------------------------------------------------------------- App. G: exact ReLU min / max

MIN_MAX_W1 = np.array([[1.0, -1.0, 1.0, -1.0],
                       [1.0, -1.0, -1.0, 1.0]])  # hidden: ReLU(a+b), ReLU(−a−b), ReLU(a−b), ReLU(b−a)
MIN_ROW = 0.5 * np.array([1.0, -1.0, -1.0, -1.0])
MAX_ROW = 0.5 * np.array([1.0, -1.0, 1.0, 1.0])


def relu_min(a, b):
    """min(a, b) = ½(ReLU(a+b) − ReLU(−a−b) − ReLU(a−b) − ReLU(b−a)) (App. G)."""
    r = lambda z: np.maximum(z, 0.0)  # noqa: E731
    return 0.5 * (r(a + b) - r(-a - b) - r(a - b) - r(b - a))


def relu_max(a, b):
    """max(a, b) = ½(ReLU(a+b) − ReLU(−a−b) + ReLU(a−b) + ReLU(b−a)) (App. G)."""
    r = lambda z: np.maximum(z, 0.0)  # noqa: E731
    return 0.5 * (r(a + b) - r(-a - b) + r(a - b) + r(b - a))


def _two_input_mlp(d_in: int, rows: list[np.ndarray], a: int, b: int):
    """A width-4 ReLU MLP on inputs (a, b) of a d_in vector whose outputs are `rows` · hidden."""
    W1 = np.zeros((d_in, 4))
    W1[a], W1[b] = MIN_MAX_W1[0], MIN_MAX_W1[1]
    W2 = np.stack(rows, axis=1)
    return ((W1, np.zeros(4)), (W2, np.zeros(W2.shape[1])))


SUM_ROW = np.array([1.0, -1.0, 0.0, 0.0])  # a + b = ReLU(a+b) − ReLU(−a−b)

# ---------------------------------------------------------------- Fig. 7 algorithms as layers


def _heads_layer(P_dim: int, srcs: list[list[int]], T: float, W_V: np.ndarray, W_O: np.ndarray, mlp) -> Layer:
    """A layer whose head h has the unique hardmax pattern srcs[h] (Lemma B.3 weights)."""
    W_Q = np.stack([lemma_b3_weights(pattern_matrix(s, P_dim), T)[1] for s in srcs])
    W_K = np.stack([np.eye(P_dim)] * len(srcs))
    return Layer(W_Q, W_K, W_V, W_O, mlp)


def rounds_for(n: int) -> int:
    """⌈log₂ n⌉, the number of rounds of the scan and tree algorithms (at least 1)."""
    return max(1, math.ceil(math.log2(n)))


def scan_patterns(n: int, op: str) -> list[list[int]]:
    """Hillis–Steele scan (Fig. 7, black + orange arrows): round r, node i reads i − 2^{r−1}.
    Nodes 0..n−1, sink n. Out of range: the sink (value 0) for sum, the node itself for min."""
    pats = []
    for r in range(1, rounds_for(n) + 1):
        step = 2 ** (r - 1)
        far = n if op == "sum" else None
        pats.append([i - step if i - step >= 0 else (far if far is not None else i) for i in range(n)] + [n])
    return pats


def tree_patterns(n: int) -> list[list[int]]:
    """Binary-tree reduction anchored at the last node (Fig. 7, orange arrows only): in round r,
    node i with (n−1−i) ≡ 0 mod 2^r reads i − 2^{r−1} (if it exists); every other node reads itself."""
    pats = []
    for r in range(1, rounds_for(n) + 1):
        step = 2 ** (r - 1)
        pats.append([i - step if (n - 1 - i) % (2 * step) == 0 and i - step >= 0 else i for i in range(n)] + [n])
    return pats


def scan_model(n: int, op: str, T: float = 30.0) -> tuple[np.ndarray, list[Layer]]:
    """(P, layers) of the prefix-sum (op="sum") or prefix-min (op="min") positional Transformer:
    n + 1 nodes (sink last), ⌈log₂ n⌉ layers, 2 heads (self, i − 2^{r−1}), W_V = 1, W_O = I_2,
    Φ = a + b or min(a, b) as a width-4 ReLU MLP. Input X: [B, n + 1, 1] with X[:, n] = 0."""
    if op not in ("sum", "min"):
        raise ValueError(f"op {op!r}: choose sum or min")
    row = SUM_ROW if op == "sum" else MIN_ROW
    layers = []
    for far in scan_patterns(n, op):
        self_pat = list(range(n + 1))
        layers.append(_heads_layer(n + 1, [self_pat, far], T, np.ones((2, 1, 1)), np.eye(2),
                                   _two_input_mlp(3, [row], 0, 1)))
    return np.eye(n + 1), layers


def tree_min_model(n: int, T: float = 30.0, op: str = "min") -> tuple[np.ndarray, list[Layer]]:
    """(P, layers) of the non-cumulative tree reduction (min or max at the last node)."""
    row = MIN_ROW if op == "min" else MAX_ROW
    layers = [_heads_layer(n + 1, [list(range(n + 1)), far], T, np.ones((2, 1, 1)), np.eye(2),
                           _two_input_mlp(3, [row], 0, 1)) for far in tree_patterns(n)]
    return np.eye(n + 1), layers


def oets_pairs(n: int, r: int) -> list[tuple[int, int]]:
    """Compare-exchange pairs of round r (1-based) of odd–even transposition sort, 0-based nodes:
    odd rounds (0,1),(2,3),… (the paper's machines 1–2, 3–4); even rounds (1,2),(3,4),…"""
    start = 0 if r % 2 == 1 else 1
    return [(i, i + 1) for i in range(start, n - 1, 2)]


def oets_reference(x: np.ndarray, rounds: int) -> np.ndarray:
    """Odd–even transposition sort (Habermann 1972) run for `rounds` rounds on the last axis."""
    x = np.array(x, dtype=np.float64, copy=True)
    for r in range(1, rounds + 1):
        for i, j in oets_pairs(x.shape[-1], r):
            lo, hi = np.minimum(x[..., i], x[..., j]), np.maximum(x[..., i], x[..., j])
            x[..., i], x[..., j] = lo, hi
    return x


def oets_model(n: int, rounds: int | None = None, T: float = 30.0) -> tuple[np.ndarray, list[Layer]]:
    """(P, layers) of odd–even transposition sort as a positional Transformer, exact at every scale.

    The local function is position dependent (the lower node of a pair keeps the min, the upper
    the max). Instead of the node identifier of Lemma B.2, every node stores both (min, max) of
    its pair in two columns, and *positional attention* picks the right column: a head that reads
    column "min" attends to a node that was the lower of its pair, else to the sink (0); a head
    that reads column "max" does the converse; their sum is the node's value. So 4 heads
    (min/max column × the two nodes of the new pair), Φ = (min, max) of a width-4 ReLU MLP, and
    one last 2-head read-out layer. Input X: [B, n + 1, 2] with both columns = x, sink row 0.
    Layers: rounds + 1; `rounds` defaults to n (App. A.3 says n − 1: see `oets_reference`)."""
    rounds = n if rounds is None else rounds
    sink = n
    lower = [True] * n  # which column holds node i's value: min (lower) or max (upper)
    take_min, take_max = np.array([[1.0], [0.0]]), np.array([[0.0], [1.0]])
    layers = []

    def read(i: int, column_min: bool) -> int:
        return i if lower[i] == column_min else sink

    for r in range(1, rounds + 1):
        partner = list(range(n))
        for i, j in oets_pairs(n, r):
            partner[i], partner[j] = j, i
        lo = [min(i, partner[i]) for i in range(n)]
        hi = [max(i, partner[i]) for i in range(n)]
        srcs = [[read(lo[i], True) for i in range(n)] + [sink], [read(lo[i], False) for i in range(n)] + [sink],
                [read(hi[i], True) for i in range(n)] + [sink], [read(hi[i], False) for i in range(n)] + [sink]]
        W_V = np.stack([take_min, take_max, take_min, take_max])
        W_O = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])  # a = h1 + h2, b = h3 + h4
        layers.append(_heads_layer(n + 1, srcs, T, W_V, W_O, _two_input_mlp(4, [MIN_ROW, MAX_ROW], 0, 1)))
        lower = [i == lo[i] for i in range(n)]  # unpaired nodes (lo = hi = i) hold min = max
    srcs = [[i if lower[i] else sink for i in range(n)] + [sink], [sink if lower[i] else i for i in range(n)] + [sink]]
    W_V = np.stack([take_min, take_max])
    layers.append(_heads_layer(n + 1, srcs, T, W_V, np.eye(2), _two_input_mlp(4, [SUM_ROW], 0, 1)))
    return np.eye(n + 1), layers


def encode(x: np.ndarray, columns: int = 1) -> np.ndarray:
    """Inputs [B, n] → X [B, n + 1, columns]: every column holds x, the sink row holds 0."""
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    X = np.zeros((x.shape[0], x.shape[1] + 1, columns))
    X[:, :-1, :] = x[..., None]
    return X


def decode(Y: np.ndarray) -> np.ndarray:
    """Outputs [B, n + 1, 1] → [B, n] (drop the sink)."""
    return Y[:, :-1, 0]


def softmax_error_bound(n: int, layers: int, T: float, max_abs: float, op: str) -> float:
    """A bound on max |softmax model − hardmax model| for the scan/tree models (derived here, not
    in the paper): each read has row-ℓ₁ error δ = 2(m−1)/(e^{2T}+m−1) with m = n + 1 nodes;
    min is 1-Lipschitz, so errors add (L·δ·max|x|); a sum doubles them and values grow to
    2^{r−1} max|x| by round r, giving L·2^L·δ·max|x|."""
    m = n + 1
    delta = 2 * (m - 1) / (math.exp(2 * T) + m - 1)
    if op == "min":
        return layers * delta * max_abs
    return layers * 2 ** layers * delta * max_abs
