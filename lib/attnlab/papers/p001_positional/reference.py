"""A plain float64 forward of Eq. (1) with given weights, for the hand-built models.

One layer (Eq. 1): F(X) = Φ( (⊕_h A_h X W_V^h) W_O ⊕ X ), with the residual *concatenated*.
Positional attention (Eq. 3): A_h = softmax((P W_Q^h)(P W_K^h)^T), which depends on the
positional encodings P only, never on X; `mode="hardmax"` replaces softmax by Eq. (6).
Φ is a ReLU MLP given as a list of (W, b) pairs (ReLU between them, none after the last).

Shapes: X is [B, n, d_X] (a batch of inputs) or [n, d_X]; P is [n, d_P].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def softmax(Z: np.ndarray) -> np.ndarray:
    """Row-wise softmax (Eq. 8), stable, float64."""
    Z = np.asarray(Z, dtype=np.float64)
    E = np.exp(Z - Z.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


def hardmax(Z: np.ndarray) -> np.ndarray:
    """Row-wise hardmax (Eq. 6): 1 where a row attains its maximum, 0 elsewhere (not normalised)."""
    Z = np.asarray(Z, dtype=np.float64)
    return (Z == Z.max(axis=-1, keepdims=True)).astype(np.float64)


@dataclass(frozen=True)
class Layer:
    """Weights of one Eq.-(1) layer: per-head W_Q [H,d_P,d_m], W_K [H,d_P,d_m], W_V [H,d_X,d_V],
    W_O [H*d_V, d_O], and Φ as ((W_1, b_1), ..., (W_k, b_k)) acting on [d_O + d_X] rows."""

    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    mlp: tuple[tuple[np.ndarray, np.ndarray], ...]

    @property
    def heads(self) -> int:
        return self.W_Q.shape[0]


def attention(P: np.ndarray, layer: Layer, mode: str = "softmax") -> np.ndarray:
    """The [H, n, n] positional attention of a layer: a function of P and W_Q, W_K only."""
    logits = (P @ layer.W_Q) @ (P @ layer.W_K).transpose(0, 2, 1)  # [H, n, n], plain matmuls (fast)
    if mode == "softmax":
        return softmax(logits)
    if mode == "hardmax":
        return hardmax(logits)
    raise ValueError(f"mode {mode!r}: choose softmax or hardmax")


def mlp(Y: np.ndarray, weights: tuple[tuple[np.ndarray, np.ndarray], ...]) -> np.ndarray:
    """A ReLU MLP: ReLU after every (W, b) but the last."""
    for k, (W, b) in enumerate(weights):
        Y = Y @ W + b
        if k < len(weights) - 1:
            Y = np.maximum(Y, 0.0)
    return Y


def layer_forward(X: np.ndarray, P: np.ndarray, layer: Layer, mode: str = "softmax",
                  A: np.ndarray | None = None) -> np.ndarray:
    """Eq. (1) for one layer: Φ(concat[(⊕_h A_h X W_V^h) W_O, X])."""
    X = np.asarray(X, dtype=np.float64)
    A = attention(P, layer, mode) if A is None else A
    heads = [A[h] @ X @ layer.W_V[h] for h in range(layer.heads)]  # each [..., n, d_V]
    Z = np.concatenate(heads, axis=-1) @ layer.W_O
    return mlp(np.concatenate([Z, X], axis=-1), layer.mlp)


def forward(X: np.ndarray, P: np.ndarray, layers: list[Layer], mode: str = "softmax",
            trace: bool = False):
    """Eq. (4): the composition of the layers. With trace=True also returns every layer's output."""
    outs = []
    for layer in layers:
        X = layer_forward(X, P, layer, mode)
        outs.append(X)
    return (X, outs) if trace else X


def select_mlp(d_in: int, columns: list[int]) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """An exact ReLU MLP that copies input `columns` to its output: x = ReLU(x) − ReLU(−x)."""
    k = len(columns)
    W1 = np.zeros((d_in, 2 * k))
    for out, col in enumerate(columns):
        W1[col, 2 * out], W1[col, 2 * out + 1] = 1.0, -1.0
    W2 = np.zeros((2 * k, k))
    for out in range(k):
        W2[2 * out, out], W2[2 * out + 1, out] = 1.0, -1.0
    return ((W1, np.zeros(2 * k)), (W2, np.zeros(k)))
