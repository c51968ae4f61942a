"""Theorem 1 with eps > 0 (paper 004, proof in App. A.2, Eqs. 13-14): approximate distribution memorization.

Given a prior pi over the T sequences, full-support conditionals pi_t (Assumption 2) and an
optimal sequence encoder f_{W,E} (W [N, d], E [T, d], from `encoders.fit_encoder`):

 1. K = H d_h + d; S_1 = the K most likely sequences (T_eps = K, eps = pi(S_2), S_2 the rest);
 2. generic e', pos', W_QK^h, W_V^h and features F(t) = [x'_S(t); W_V^1 A'^1(t); ...] in R^K
    (the skip connection as pseudo-head 0, as in constructions.py);
 3. solve M F_1 = E_1 exactly on S_1: M = E_1 F_1^+ (the paper's W_O = E P_1^T (P_1 V P_1^T)^{-1}
    I_Sigma^{-1} U^T is the same matrix, written through the SVD of W_V A');
 4. fold W_OV = M[:, :d] into the embeddings (the exact skip trick of constructions.py), W_U = W.

The built AoT equals f_{W,E} on S_1 and is uncontrolled on S_2. Bound chain (Eq. 13, then 14):

    |d_KL(pi, f) - d_KL(pi, T)| <= sum_t pi(t) ||(I - 1 pi_t^T)(T(t) - f(t))||_inf          (13a)
                                <= 2 sum_{t in S_2} pi(t) ||W (M F(t) - E(t))||_2            (13b)
                                <= 2 eps ||W E||_2 C_app,  C_app  = sqrt(1 + ||F_1^+ F_2||_2^2)  (14)
                                <= 2 eps ||W E||_2 C_main, C_main = sqrt(1 + ||(P_1 V P_1^T)^{-1}||_2^2)

||W E||_2 is the spectral norm of the N x T logit matrix of f. C_app is App. Eq. (14) (F_1^{-1} F_2
= (P_1 V P_1^T)^{-1} P_1 V P_2^T); C_main, the main text's constant, is larger (||P_1 V P_2^T|| <= 1),
so both give valid bounds (erratum 3 on the errata page). The theorem states C eps ||WE||_2; the chain carries
the factor 2 of Eq. (13), kept here.

Optional contrast (not the paper's construction): `solve="weighted"` fits M by pi-weighted least
squares over all T sequences instead of interpolating S_1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .constructions import AoTWeights, _check_choice, _skip_and_values, aot_forward, residual_stream

SOLVES = ("interpolate", "weighted")
SINGULAR_COND = 1e12


def all_sequences(N: int, S: int) -> np.ndarray:
    """All N^S sequences in lexicographic order, int64 [N^S, S]."""
    if N < 2 or S < 1 or N**S > 10**6:
        raise ValueError(f"N={N}, S={S}: need N >= 2, S >= 1 and N^S <= 1e6 sequences")
    place = N ** np.arange(S - 1, -1, -1, dtype=np.int64)
    return (np.arange(N**S, dtype=np.int64)[:, None] // place) % N


def kl_numpy(cond: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """Per-sequence KL(pi_t || softmax(logits_t)) in float64, [T]."""
    z = logits - logits.max(1, keepdims=True)
    logsm = z - np.log(np.exp(z).sum(1, keepdims=True))
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(cond > 0, cond * np.log(np.where(cond > 0, cond, 1.0)), 0.0)
    return (plogp - cond * logsm).sum(1)


@dataclass(frozen=True, eq=False)
class ApproxReport:
    """One eps > 0 construction. KLs are sums over all T sequences weighted by the prior."""

    H: int
    K: int  # H d_h + d = T_eps
    eps: float  # prior mass of S_2
    kl_aot: float
    kl_encoder: float  # d_KL(pi, f_{W,E}) (= KL* when (W, E) is optimal)
    eq13_inf: float  # (13a)
    eq13: float  # (13b)
    eq14_app: float  # 2 eps ||WE||_2 C_app
    eq14_main: float  # 2 eps ||WE||_2 C_main
    C_app: float
    C_main: float
    norm_WE: float
    max_fit_error: float  # max |residual - E| on S_1 (0 up to rounding)
    cond_W_OV: float
    rank_F: int

    @property
    def gap(self) -> float:
        return abs(self.kl_aot - self.kl_encoder)


def _generic_draw(N: int, S: int, d: int, d_h: int, H: int, seed: int, qk: str, W_U: np.ndarray) -> AoTWeights:
    """Generic e', pos', W_QK^h, W_V^h as in constructions.build_memorizing_aot (W_O zero)."""
    rng = np.random.default_rng(seed)
    r = 1 if qk == "rank1" else d_h
    qk_scale = (d * r) ** -0.25
    return AoTWeights(
        e=rng.standard_normal((N, d)), pos=rng.standard_normal((S, d)),
        W_Q=qk_scale * rng.standard_normal((H, r, d)), W_K=qk_scale * rng.standard_normal((H, r, d)),
        W_V=rng.standard_normal((H, d_h, d)) / math.sqrt(d), W_O=np.zeros((H, d, d_h)), W_U=W_U)


def features(drawn: AoTWeights, tokens: np.ndarray) -> np.ndarray:
    """F(t) = [x'_S(t); W_V^1 A'^1(t); ...; W_V^H A'^H(t)] as columns: [H d_h + d, T]."""
    x_S, VA = _skip_and_values(drawn, tokens)
    return np.concatenate([x_S, VA.reshape(len(tokens), -1)], axis=1).T


def fold_skip(drawn: AoTWeights, M: np.ndarray) -> tuple[AoTWeights, float]:
    """The exact skip-connection trick: residual stream of the result = M F(t) for every t."""
    d, H, d_h = drawn.d, drawn.H, drawn.d_h
    W_OV = M[:, :d]
    cond = float(np.linalg.cond(W_OV))
    if not cond < SINGULAR_COND:
        raise ValueError(f"skip block W_OV is singular: cond={cond:.3g} >= {SINGULAR_COND:g}")
    inv = np.linalg.inv(W_OV)
    heads_O = M[:, d:].reshape(d, H, d_h).transpose(1, 0, 2)
    return AoTWeights(e=drawn.e @ W_OV.T, pos=drawn.pos @ W_OV.T, W_Q=drawn.W_Q @ inv, W_K=drawn.W_K @ inv,
                      W_V=drawn.W_V @ inv, W_O=heads_O, W_U=drawn.W_U), cond


def build_distribution_aot(tokens, prior, cond, W, E, d_h: int, H: int, seed: int = 0, qk: str = "rank1",
                           solve: str = "interpolate") -> tuple[AoTWeights, ApproxReport]:
    """Theorem 1 (eps >= 0): an AoT with H heads of dim d_h, W_U = W, interpolating E on the
    K = H d_h + d most likely sequences (ties broken by index). Returns the weights and the report."""
    _check_choice("qk", qk, ("rank1", "full"))
    _check_choice("solve", solve, SOLVES)
    tokens = np.asarray(tokens, dtype=np.int64)
    prior, cond = np.asarray(prior, np.float64), np.asarray(cond, np.float64)
    W, E = np.asarray(W, np.float64), np.asarray(E, np.float64)
    T, S = tokens.shape
    N, d = W.shape
    if E.shape != (T, d) or prior.shape != (T,) or cond.shape != (T, N):
        raise ValueError(f"shapes: tokens {tokens.shape}, prior {prior.shape}, cond {cond.shape}, W {W.shape}, "
                         f"E {E.shape}; need (T, S), (T,), (T, N), (N, d), (T, d)")
    if H < 0 or d_h < 1 or d_h > d:
        raise ValueError(f"H={H} must be >= 0 and d_h={d_h} in [1, d={d}] (footnote 1)")
    K = H * d_h + d
    order = np.argsort(-prior, kind="stable")
    S1, S2 = order[:min(K, T)], order[min(K, T):]
    eps = float(prior[S2].sum())

    drawn = _generic_draw(N, S, d, d_h, H, seed, qk, W)
    F = features(drawn, tokens)  # [K, T]
    F1, F2 = F[:, S1], F[:, S2]
    F1_pinv = np.linalg.pinv(F1)  # [|S1|, K]
    if solve == "interpolate":
        M = E[S1].T @ F1_pinv  # min-norm exact solution of M F_1 = E_1
    else:
        w = np.sqrt(prior)
        M = np.linalg.lstsq((F * w).T, (E * w[:, None]), rcond=None)[0].T
    weights, cond_W_OV = fold_skip(drawn, M)

    residual = residual_stream(weights, tokens)  # [T, d]
    logits = aot_forward(weights, tokens)
    f = E @ W.T
    kl_aot = float(prior @ kl_numpy(cond, logits))
    kl_enc = float(prior @ kl_numpy(cond, f))
    delta = logits - f
    centred = delta - (cond * delta).sum(1, keepdims=True)  # (I - 1 pi_t^T)(T(t) - f(t))
    eq13_inf = float(prior @ np.abs(centred).max(1))
    model_err = np.linalg.norm((residual - E) @ W.T, axis=1)  # ||W (W_O W_V A'(t) - E(t))||_2, built network
    eq13 = 2 * float(prior @ model_err)  # the S_1 terms vanish for solve='interpolate'
    norm_WE = float(np.linalg.norm(f, 2))
    sv = np.linalg.svd(F, compute_uv=False)
    rank_F = int(np.sum(sv > 1e-10 * sv[0]))
    if len(S2) and solve == "interpolate":
        C_app = math.sqrt(1 + np.linalg.norm(F1_pinv @ F2, 2) ** 2)
        Vr = np.linalg.svd(F, full_matrices=False)[2]  # right singular vectors: F = U Sigma Vr, Vr [K, T]
        C_main = math.sqrt(1 + np.linalg.norm(np.linalg.inv(Vr[:, S1]), 2) ** 2)
    else:
        C_app = C_main = 1.0 if not len(S2) else float("nan")
    return weights, ApproxReport(
        H=H, K=K, eps=eps, kl_aot=kl_aot, kl_encoder=kl_enc, eq13_inf=eq13_inf, eq13=eq13,
        eq14_app=2 * eps * norm_WE * C_app, eq14_main=2 * eps * norm_WE * C_main, C_app=C_app, C_main=C_main,
        norm_WE=norm_WE, max_fit_error=float(np.abs(residual[S1] - E[S1]).max()), cond_W_OV=cond_W_OV,
        rank_F=rank_F)


def heads_for_exact(T: int, d: int, d_h: int) -> int:
    """Smallest H with H d_h + d >= T (then eps = 0 and the AoT reproduces f exactly)."""
    return max(0, -(-(T - d) // d_h))
