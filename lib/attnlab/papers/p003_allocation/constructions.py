"""The explicit one-layer Transformer of Theorem 4.1 (App. C), built from exp-sum fits.

Group m (1-based) extracts lag m with H_m ALiBi heads of dimension d_m: head h has
W_Q = W_K = 0, slope p = beta_h, and W_V = alpha_h Z_h [P_m, 0], where P_m (d_m x d) is a random
orthogonal projection and Z_h = 1 / (1 - e^{-beta_h}) is the softmax normaliser of an infinitely
long (zero-padded) past. Head h then outputs alpha_h (Z_h / Z_{h,t}) sum_s e^{-beta_h s} P_m x_{t-s},
with Z_{h,t} = sum_{s <= t + pad} e^{-beta_h s} the normaliser of its actual window: the group's
sum realises phi_m(s) = sum_h alpha_h e^{-beta_h s} exactly when the past is long (pad -> inf) and
approximately near the start. W_O places group m's output in its own block of d_m coordinates
after the d coordinates of the embedded token (this needs D >= d + sum_m d_m; the paper's S_{m,h}
overlaps the token's coordinates). The readout is linear: y_t = sum_m rho_m P_m^T (block m).

`deterministic_bound` is the inequality the proof rests on, evaluated per position for the
actual inputs (no probability): for every t,

    ||y_t - yhat_t|| <= sum_m ||rho_m|| ( ||(I - P_m^T P_m) x_{t-m}|| + max_s ||x_s|| sum_{s<=t} |1(s=m) - phi_{m,t}(s)| )
                        + sum_{k>M} ||rho_k|| ||x_{t-k}||,

with phi_{m,t} the kernel group m realises at position t (finite window included).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .expsums import ExpSum
from .reference import Head, OneLayer, forward


def random_projection(d_m: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """The first d_m rows of a Haar-random orthogonal d x d matrix (orthonormal rows)."""
    Q, R = np.linalg.qr(rng.normal(size=(d, d)))
    Q = Q * np.sign(np.diag(R))
    return Q[:d_m]


def build(fits: Sequence[ExpSum], groups: Sequence[tuple[int, int]], rho: Sequence[np.ndarray], d: int, D: int,
          projections: Sequence[np.ndarray]) -> OneLayer:
    """The Theorem 4.1 model: fits[m-1] has H_m terms (alpha, beta) for lag m; rho[m-1] is rho_m (d x d)."""
    if D < d + sum(dm for _, dm in groups):
        raise ValueError(f"D={D} < d + sum d_m = {d + sum(dm for _, dm in groups)}: group blocks would overlap the token")
    W_E = np.zeros((D, d))
    W_E[:d] = np.eye(d)
    heads, blocks = [], []
    offset = d
    for (H_m, d_m), fit, P in zip(groups, fits, projections):
        if fit.m != H_m or P.shape != (d_m, d):
            raise ValueError(f"group (H={H_m}, d={d_m}): fit has {fit.m} terms, projection {P.shape}")
        for a, b in zip(fit.alpha, fit.beta):
            Z = 1.0 / -np.expm1(-b)
            W_V = np.zeros((d_m, D))
            W_V[:, :d] = a * Z * P
            heads.append(Head(np.zeros((1, D)), np.zeros((1, D)), W_V, float(b)))
            blocks.append((offset, d_m))
        offset += d_m
    W_O = np.zeros((D, sum(k for _, k in blocks)))
    col = 0
    for off, k in blocks:
        W_O[off:off + k, col:col + k] = np.eye(k)
        col += k
    W_read = np.zeros((d, D))
    offset = d
    for (H_m, d_m), P, r in zip(groups, projections, rho):
        W_read[:, offset:offset + d_m] = r @ P.T
        offset += d_m
    return OneLayer(W_E, np.zeros(D), heads, W_O, W_read)


def target(X: np.ndarray, rho_all: Sequence[np.ndarray]) -> np.ndarray:
    """y_t = sum_{k >= 1} rho_k x_{t-k} (rho_all[k-1] = rho_k; zero padding). X: d x L."""
    d, L = X.shape
    Y = np.zeros((rho_all[0].shape[0], L))
    for k, r in enumerate(rho_all, start=1):
        if k < L:
            Y[:, k:] += r @ X[:, : L - k]
    return Y


def realised_kernel(fit: ExpSum, t: int, pad: int) -> np.ndarray:
    """phi_{m,t}(s), s = 0..t: the kernel group m applies at position t (0-based, after `pad` zero tokens)."""
    s = np.arange(t + 1)
    out = np.zeros(t + 1)
    for a, b in zip(fit.alpha, fit.beta):
        Z = 1.0 / -np.expm1(-b)
        Zt = -np.expm1(-b * (t + pad + 1)) / -np.expm1(-b)
        out += a * (Z / Zt) * np.exp(-b * s)
    return out


def deterministic_bound(X: np.ndarray, fits: Sequence[ExpSum], projections: Sequence[np.ndarray],
                        rho_all: Sequence[np.ndarray], pad: int) -> np.ndarray:
    """The per-position bound of the module docstring (X: d x L, the unpadded tokens)."""
    d, L = X.shape
    B = float(np.max(np.linalg.norm(X, axis=0)))
    M = len(fits)
    rnorm = [float(np.linalg.norm(r, 2)) for r in rho_all]
    xnorm = np.linalg.norm(X, axis=0)
    comp = [np.linalg.norm(X - P.T @ (P @ X), axis=0) for P in projections]
    out = np.zeros(L)
    for t in range(L):
        v = 0.0
        for m, fit in enumerate(fits, start=1):
            phi = realised_kernel(fit, t, pad)
            phi[m if m <= t else 0] -= 1.0 if m <= t else 0.0
            v += rnorm[m - 1] * ((comp[m - 1][t - m] if t - m >= 0 else 0.0) + B * np.abs(phi).sum())
        for k in range(M + 1, len(rho_all) + 1):
            if t - k >= 0:
                v += rnorm[k - 1] * xnorm[t - k]
        out[t] = v
    return out


def error_per_position(model: OneLayer, X: np.ndarray, rho_all: Sequence[np.ndarray], pad: int) -> np.ndarray:
    """||y_t - model(X)_t||_2 for t = 0..L-1, with `pad` zero tokens prepended to X."""
    d, L = X.shape
    Xp = np.concatenate([np.zeros((d, pad)), X], axis=1)
    Yhat = forward(model, Xp)[:, pad:]
    return np.linalg.norm(target(X, rho_all) - Yhat, axis=0)


def projection_residuals(D: int, d_m: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Lemma B.2 by Monte Carlo: ||(I - P^T P) x|| / ||x|| for n independent draws of a Haar-random
    P (d_m x D, orthonormal rows) and x uniform on a sphere (zero mean, identity covariance up to scale)."""
    out = np.empty(n)
    for i in range(n):
        P = random_projection(d_m, D, rng)
        x = rng.normal(size=D)
        out[i] = np.linalg.norm(x - P.T @ (P @ x)) / np.linalg.norm(x)
    return out
