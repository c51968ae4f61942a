"""Theorem 5.1 and Corollary 5.1: the softmax Jacobian and its spectral norm, and the error of
compressing a head's W_Q^T W_K to rank d_h.

For one column p = softmax(z) in R^L the Jacobian is J = diag(p) - p p^T (symmetric PSD). Its
largest eigenvalue solves the secular equation 1 = sum_i p_i^2 / (p_i - lambda) on
[p_(2), p_(1)] (the two largest probabilities; rank-one interlacing), which we solve by
bisection, vectorised over many columns: exact to rounding, O(L) per column instead of an
O(L^3) eigendecomposition.
"""

from __future__ import annotations

import numpy as np


def softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    """Stable softmax along `axis` (entries of -inf get probability 0)."""
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - np.max(z, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def jacobian(p: np.ndarray) -> np.ndarray:
    """J = diag(p) - p p^T for one probability vector p (float64)."""
    p = np.asarray(p, dtype=np.float64)
    return np.diag(p) - np.outer(p, p)


def spectral_norm(p: np.ndarray, iters: int = 200) -> np.ndarray:
    """||diag(p) - p p^T||_2 for each row of p ([..., L] -> [...]), by bisection on the secular
    equation between the two largest entries."""
    p = np.asarray(p, dtype=np.float64)
    if p.shape[-1] == 1:
        return np.zeros(p.shape[:-1])
    top = np.sort(p, axis=-1)[..., -2:]
    lo, hi = top[..., 0].copy(), top[..., 1].copy()   # p_(2) <= lambda_max <= p_(1)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = 1.0 - np.sum(p * p / (p - mid[..., None]), axis=-1)
        # f decreases on (p_(2), p_(1)): f > 0 means the root lies above mid
        up = f > 0
        lo = np.where(up, mid, lo)
        hi = np.where(up, hi, mid)
        if np.all(hi - lo <= 1e-17 + 1e-15 * hi):
            break
    return 0.5 * (lo + hi)


def loglog_slope(x, y) -> float:
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def logits(kind: str, scale: float, n: int, L: int, rng: np.random.Generator) -> np.ndarray:
    """n columns of L logits: 'uniform' in [-scale, scale] (bounded, Delta = scale), or
    'gaussian' with standard deviation `scale` (unbounded)."""
    if kind == "uniform":
        return rng.uniform(-scale, scale, size=(n, L))
    if kind == "gaussian":
        return rng.normal(0.0, scale, size=(n, L))
    raise ValueError(f"kind={kind!r}: choose 'uniform' or 'gaussian'")


def causal_column_norms(z: np.ndarray) -> np.ndarray:
    """||J_l||_2 for every query position l = 1..L of causal attention with logits z [L, L]
    (row l: the scores of query l over keys 1..L; keys after l are masked)."""
    L = z.shape[0]
    out = np.zeros(L)
    for l in range(L):
        out[l] = spectral_norm(softmax(z[l, : l + 1]))
    return out


# --- Corollary 5.1 --------------------------------------------------------------------------

def teacher(D: int, d_H: int, sigma_max: float, decay: float, rng: np.random.Generator):
    """A teacher W = W_Q^T W_K (D x D) of rank d_H with singular values sigma_max * decay^i,
    i = 0..d_H-1, and random orthonormal singular vectors. Returns (W, singular values)."""
    U, _ = np.linalg.qr(rng.normal(size=(D, d_H)))
    V, _ = np.linalg.qr(rng.normal(size=(D, d_H)))
    s = sigma_max * decay ** np.arange(d_H)
    return (U * s) @ V.T, s


def truncate(W: np.ndarray, d_h: int) -> np.ndarray:
    """The rank-d_h truncated SVD of W (the student's W_Q^T W_K at SVD initialisation)."""
    U, s, Vt = np.linalg.svd(W)
    return (U[:, :d_h] * s[:d_h]) @ Vt[:d_h]


def tail_sum(s: np.ndarray, d_h: int) -> float:
    """Lambda_h^H = sum_{i > d_h} sigma_i."""
    return float(np.sum(np.sort(s)[::-1][d_h:]))


def compression_errors(W: np.ndarray, W_h: np.ndarray, X: np.ndarray) -> dict[str, float]:
    """Errors of the last query's attention column, teacher W against student W_h, tokens X [L, D]
    (no mask): l1, l2 and l_inf norms of p - p_h, and the mean squared error per entry."""
    q = X[-1]
    p = softmax(X @ (W.T @ q))
    ph = softmax(X @ (W_h.T @ q))
    e = p - ph
    return {"l1": float(np.abs(e).sum()), "l2": float(np.sqrt(e @ e)), "linf": float(np.abs(e).max()),
            "mse": float(np.mean(e * e)), "logit_linf": float(np.abs(X @ ((W - W_h).T @ q)).max())}


def unit_tokens(L: int, D: int, B: float, rng: np.random.Generator) -> np.ndarray:
    """L tokens uniform on the sphere of radius B in R^D."""
    X = rng.normal(size=(L, D))
    return B * X / np.linalg.norm(X, axis=1, keepdims=True)
