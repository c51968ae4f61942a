"""A plain float64 forward of the one-layer Transformer of §3, for given weights.

    X0 = W_E X + b_E                                   (D x L)
    head h:  A_h = W_V^h X0 softmax_rows(<W_Q^h X0, W_K^h X0> + R^h)   (row i: query i over keys j)
    X_half = X0 + W_O Concat_h(A_h)
    Y = W_read X_half                                  (the last FFN, linear, back to R^d)

R^h is ALiBi with slope p_h: R_ij = -p_h (i - j) for j <= i, -inf for j > i (causal: query i
sees keys j <= i). This is the causal reading of the paper's R (see the errata page: with the
column-wise softmax of §3, "R_ij = -inf if i < j" would let position j attend to i >= j).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Head:
    W_Q: np.ndarray  # (k, D)
    W_K: np.ndarray  # (k, D)
    W_V: np.ndarray  # (k, D)
    slope: float     # ALiBi slope p


@dataclass
class OneLayer:
    W_E: np.ndarray     # (D, d)
    b_E: np.ndarray     # (D,)
    heads: list[Head]
    W_O: np.ndarray     # (D, sum_h k_h)
    W_read: np.ndarray  # (d_out, D)

    @property
    def D(self) -> int:
        return self.W_E.shape[0]

    @property
    def concat_dim(self) -> int:
        return sum(h.W_V.shape[0] for h in self.heads)


def alibi(L: int, slope: float) -> np.ndarray:
    """R_ij = -slope (i - j) for j <= i, -inf above the diagonal."""
    i, j = np.indices((L, L))
    return np.where(j <= i, -slope * (i - j).astype(float), -np.inf)


def attention_weights(X0: np.ndarray, head: Head) -> np.ndarray:
    """Row-stochastic weights a[i, j] of query i over keys j (L x L)."""
    Z = (head.W_Q @ X0).T @ (head.W_K @ X0) + alibi(X0.shape[1], head.slope)
    Z = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True)


def forward(model: OneLayer, X: np.ndarray) -> np.ndarray:
    """Y = model(X) for X (d x L); returns (d_out x L), all float64."""
    X = np.asarray(X, dtype=np.float64)
    X0 = model.W_E @ X + model.b_E[:, None]
    outs = [(h.W_V @ X0) @ attention_weights(X0, h).T for h in model.heads]  # (k, L): column i = sum_j a_ij v_j
    X_half = X0 + model.W_O @ np.concatenate(outs, axis=0)
    return model.W_read @ X_half
