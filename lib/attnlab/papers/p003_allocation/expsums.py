"""Lemma B.1: sums of exponentials that approximate the delta function 1(s = T) on s in N.

    phi(s) = sum_{k=1}^m alpha_k e^{-beta_k s},  beta_k > 0,  error = sum_{s >= 0} |1(s = T) - phi(s)|.

The lemma states that some phi with m terms has error <= 1.3 e^{0.02 T} / m. Two documented
ways to build phi (neither is the lemma's proof, which is a non-constructive Jackson-type bound):

* `fit_delta`: rates on a geometric ladder e^{-beta_k} = q^k (phi is then a polynomial in q^s),
  coefficients by iteratively reweighted least squares for the l1 error on s < S, the ratio q
  from a grid; the best q is kept. Coefficients stay moderate.
* `vandermonde_delta`: for m >= T + 1, m small distinct rates r_k = eps k and coefficients that
  make phi(s) = 1(s = T) exactly for s < m (a Vandermonde system); the remaining error is
  O(eps) and vanishes as eps -> 0 while the coefficients grow like eps^{-T}. So the 1/m rate of
  the lemma is an upper bound from one construction, not the best possible error.

The l1 error over all of N is computed exactly on s < S plus a rigorous bound on the tail.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ExpSum:
    """phi(s) = sum_k alpha_k exp(-beta_k s); `l1` is an upper bound of its error for target T."""

    alpha: tuple[float, ...]
    beta: tuple[float, ...]
    T: int
    l1: float
    method: str

    @property
    def m(self) -> int:
        return len(self.alpha)

    def __call__(self, s) -> np.ndarray:
        s = np.asarray(s, dtype=float)
        return np.exp(-np.multiply.outer(s, np.asarray(self.beta))) @ np.asarray(self.alpha)


def l1_error(alpha, beta, T: int, S: int = 512) -> float:
    """sum_{s >= 0} |1(s = T) - phi(s)|, exactly on s < S plus the bound
    sum_k |alpha_k| e^{-beta_k S} / (1 - e^{-beta_k}) on the tail (requires S > T)."""
    alpha, beta = np.asarray(alpha, float), np.asarray(beta, float)
    if S <= T:
        raise ValueError(f"S={S} must exceed T={T}")
    if np.any(beta <= 0):
        raise ValueError("every beta_k must be > 0")
    s = np.arange(S)
    phi = np.exp(-np.outer(s, beta)) @ alpha
    target = (s == T).astype(float)
    tail = float(np.sum(np.abs(alpha) * np.exp(-beta * S) / -np.expm1(-beta)))
    return float(np.abs(target - phi).sum()) + tail


@functools.lru_cache(maxsize=None)
def fit_delta(T: int, m: int, S: int = 256, q_grid: int = 32, irls_iters: int = 25,
              max_coef: float | None = None) -> ExpSum:
    """The `fit_delta` procedure of the module docstring (deterministic); max_coef: keep only fits
    with every |alpha_k| <= max_coef (the zero function always qualifies)."""
    if T < 0 or m < 1:
        raise ValueError(f"T={T} must be >= 0 and m={m} >= 1")
    s = np.arange(S)
    target = (s == T).astype(float)
    best = ExpSum((0.0,) * m, tuple(float(k) for k in range(1, m + 1)), T, 1.0 + 1e-300, "zero")
    for q in np.linspace(0.05, 0.98, q_grid):
        beta = -np.log(q) * np.arange(1, m + 1)
        A = np.exp(-np.outer(s, beta))
        scale = np.linalg.norm(A, axis=0)
        An = A / scale
        w = np.ones(S)
        alpha = np.zeros(m)
        for _ in range(irls_iters):
            sw = np.sqrt(w)
            coef, *_ = np.linalg.lstsq(An * sw[:, None], target * sw, rcond=1e-13)
            alpha = coef / scale
            res = np.abs(target - A @ alpha)
            w = 1.0 / np.maximum(res, 1e-9)
        err = l1_error(alpha, beta, T, max(S, T + 1) * 2)
        if max_coef is not None and np.max(np.abs(alpha)) > max_coef:
            continue
        if err < best.l1:
            best = ExpSum(tuple(map(float, alpha)), tuple(map(float, beta)), T, err, "irls")
    return best


def vandermonde_delta(T: int, m: int, eps: float) -> ExpSum:
    """phi with rates r_k = eps k (k = 1..m) and phi(s) = 1(s = T) for s = 0..m-1 (needs m >= T + 1)."""
    if m < T + 1:
        raise ValueError(f"vandermonde_delta needs m >= T + 1; got m={m}, T={T}")
    if not 0 < eps * m < 1:
        raise ValueError(f"eps={eps}: need 0 < eps * m < 1")
    r = eps * np.arange(1, m + 1)
    V = r[None, :] ** np.arange(m)[:, None]   # V[s, k] = r_k^s
    alpha = np.linalg.solve(V, (np.arange(m) == T).astype(float))
    beta = -np.log(r)
    return ExpSum(tuple(map(float, alpha)), tuple(map(float, beta)), T, l1_error(alpha, beta, T, 256), "vandermonde")


def two_term_delta1(r1: float, r2: float) -> ExpSum:
    """The closed form for T = 1 with two terms: alpha = +-1/(r1 - r2), phi(0) = 0, phi(1) = 1,
    phi(s) = (r1^s - r2^s)/(r1 - r2) for s >= 2; error -> 0 as r1, r2 -> 0."""
    a = 1.0 / (r1 - r2)
    alpha, beta = (a, -a), (-math.log(r1), -math.log(r2))
    return ExpSum(alpha, beta, 1, l1_error(alpha, beta, 1), "closed form")


def best_l1_two_terms(T: int, rates: np.ndarray, S: int = 32) -> np.ndarray:
    """For each pair of rates (r_1, r_2) (rows of `rates`, in (0, 1)), the exact minimum over
    (alpha_1, alpha_2) of sum_{s < S} |1(s = T) - alpha_1 r_1^s - alpha_2 r_2^s|: an l1 regression
    with two unknowns has an optimum that interpolates two of the S points, so we enumerate the
    pairs of points (vectorised over the rate pairs). Truncating at S can only lower the error,
    so each value is a lower bound of the best l1 error over N for those rates."""
    rates = np.asarray(rates, dtype=float)
    s = np.arange(S)
    P = rates[:, :, None] ** s[None, None, :]
    t = (s == T).astype(float)
    best = np.full(len(rates), float(np.abs(t).sum()))
    for s1 in range(S):
        for s2 in range(s1 + 1, S):
            a11, a12, a21, a22 = P[:, 0, s1], P[:, 1, s1], P[:, 0, s2], P[:, 1, s2]
            det = a11 * a22 - a12 * a21
            ok = np.abs(det) > 1e-250
            den = np.where(ok, det, 1.0)
            x = (t[s1] * a22 - a12 * t[s2]) / den
            y = (a11 * t[s2] - t[s1] * a21) / den
            e = np.abs(t[None, :] - (x[:, None] * P[:, 0, :] + y[:, None] * P[:, 1, :])).sum(1)
            best = np.minimum(best, np.where(ok, e, np.inf))
    return best
