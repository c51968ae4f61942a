"""A plain float64 forward of given AoT weights, per head (Eq. 1) and stacked (Eq. 2), to check
the trainable model and the construction against (the setup chapter).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from . import constructions
from .models import AoTConfig, ReplicaAoT


EXACT = 1e-12  # max |difference| between two float64 evaluations of the same AoT


def random_weights(N: int, S: int, d: int, d_h: int, H: int, seed: int) -> constructions.AoTWeights:
    """A random AoT of Eq. (2) with full W_QK^h = (W_Q^h)^T W_K^h (W_Q^h, W_K^h in R^{d_h x d})."""
    rng = np.random.default_rng(seed)
    return constructions.AoTWeights(
        e=rng.standard_normal((N, d)), pos=rng.standard_normal((S, d)),
        W_Q=rng.standard_normal((H, d_h, d)) / d**0.5, W_K=rng.standard_normal((H, d_h, d)) / d**0.5,
        W_V=rng.standard_normal((H, d_h, d)) / d**0.5, W_O=rng.standard_normal((H, d, d_h)) / d_h**0.5,
        W_U=rng.standard_normal((N, d)) / d**0.5)


def forward_per_head(w: constructions.AoTWeights, tokens: np.ndarray, query: str = "last") -> np.ndarray:
    """Eqs. (1)-(2) head by head, as written: raw_s = x_q^T W_QK^h x_s, a^h = softmax_s(raw),
    A^h = sum_s a^h_s x_s, T(t) = W_U (x_S + sum_h W_O^h W_V^h A^h). query="last": x_q = x_S
    (App. A.1, the reading used everywhere); query="same": x_q = x_s, Eq. (1) as printed (erratum 1)."""
    x = w.e[tokens] + w.pos  # [T, S, d]
    out = x[:, -1].copy()
    for h in range(w.H):
        W_QK = w.W_Q[h].T @ w.W_K[h]
        if query == "last":
            raw = np.einsum("ti,ij,tsj->ts", x[:, -1], W_QK, x)
        else:
            raw = np.einsum("tsi,ij,tsj->ts", x, W_QK, x)
        a = np.exp(raw - raw.max(1, keepdims=True))
        a /= a.sum(1, keepdims=True)
        A_h = np.einsum("ts,tsd->td", a, x)
        out += A_h @ (w.W_O[h] @ w.W_V[h]).T
    return out @ w.W_U.T


def stacked_matrices(w: constructions.AoTWeights) -> tuple[np.ndarray, np.ndarray]:
    """W_O = [W_O^1 ... W_O^H] in R^{d x H d_h} and W_V = blockdiag(W_V^h) in R^{H d_h x H d} (§2)."""
    H, d_h, d = w.W_V.shape
    W_O = np.concatenate(list(w.W_O), axis=1) if H else np.zeros((d, 0))
    W_V = np.zeros((H * d_h, H * d))
    for h in range(H):
        W_V[h * d_h:(h + 1) * d_h, h * d:(h + 1) * d] = w.W_V[h]
    return W_O, W_V


def forward_stacked(w: constructions.AoTWeights, tokens: np.ndarray) -> np.ndarray:
    """Eq. (2) in the stacked form T(t) = W_U (x_S + W_O W_V A(t)), A(t) = [A^1; ...; A^H] in R^{Hd}."""
    x = w.e[tokens] + w.pos
    a = constructions.attention_pattern(w, tokens)  # [T, H, S]
    A = np.einsum("ths,tsd->thd", a, x).reshape(len(tokens), -1)  # [T, H d]
    W_O, W_V = stacked_matrices(w)
    return (x[:, -1] + A @ (W_O @ W_V).T) @ w.W_U.T


def forward_replica(w: constructions.AoTWeights, tokens: np.ndarray, seed: int = 0) -> np.ndarray:
    """The same weights in models.ReplicaAoT (float64). ReplicaAoT scores are (W_Q x_S)^T (W_K x_s) / sqrt(d_h);
    W_Q is multiplied by sqrt(d_h) so that its W_QK is the paper's."""
    model = ReplicaAoT([AoTConfig(w.N, w.S, w.d, w.d_h, w.H, seed)], dtype=torch.float64)
    for name, value in (("E", w.e), ("P", w.pos), ("W_Q", w.W_Q * math.sqrt(w.d_h)), ("W_K", w.W_K),
                        ("W_V", w.W_V), ("W_O", w.W_O), ("W_U", w.W_U)):
        model.place(name, 0, torch.as_tensor(value))
    with torch.no_grad():
        return model(torch.as_tensor(tokens))[0].numpy()
