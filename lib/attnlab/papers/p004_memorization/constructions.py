"""Exact memorization by a one-layer attention-only Transformer (paper 004).

Dana, Pydi & Chevaleyre (2025), "Memorization in Attention-only Transformers":
Theorem 1 with eps = 0, Corollary 1, Remark 2 and Lemma 2, reimplemented from the
paper (§4, App. A.1; no code of the authors is used).

Model, Eqs. (1)-(2), with the query at the LAST position (erratum 1 on the errata page:
Eq. (1) prints x_s on both sides; App. A.1 writes x(t,S)^T W x(t,j)):

    x_s     = e(t_s) + pos_s                                   s = 1..S
    a^h     = softmax_s( x_S^T W_QK^h x_s ),   W_QK^h = (W_Q^h)^T W_K^h
    A^h(t)  = sum_s a^h_s x_s                                  in R^d
    T(t)    = W_U ( x_S + sum_h W_O^h W_V^h A^h(t) )           in R^N   (2)

Construction (proof of Theorem 1, App. A.2, made exact with no lambda -> inf limit):

 1. generic e', pos', W_QK^h, W_V^h (Gaussian draws);
 2. features F(t) = [x'_S(t); W_V^1 A'^1(t); ...; W_V^H A'^H(t)] in R^{d + H d_h};
 3. targets E(t) = lam * [u_{g(t)}, z(t)]: u_j = (cos 2 pi j/N, sin 2 pi j/N) is the
    circle encoder of Prop. 3 (rows of W_U), z(t) random on coordinates 3..d;
 4. solve M F = E by least squares, M = [W_OV | W_O^1 ... W_O^H];
 5. skip-connection trick: e = W_OV e', pos = W_OV pos', W_QK^h = W_OV^{-T} W_QK'^h W_OV^{-1},
    W_V^h = W_V'^h W_OV^{-1}. Scores and W_V^h A^h are unchanged and the skip term is
    W_OV x'_S, so the residual stream at position S equals M F(t) = E(t) exactly.

Hence rank F = min(T_0, H min(d, d_h) + d) generically (Lemma 2) and every
T_0 <= H d_h + d associations are memorized, for any context length S.

Storage convention: W_QK^h is kept factored as W_Q^h, W_K^h in R^{r x d}
(r = d_h for the "full" variant, r = 1 for the rank-1 variant of Remark 2), so that
the paper's parameter counts d(S + 2N + 4 d_h H) and d(S + 2N + 2(d_h+1)H) are the
sizes of the tensors actually built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

RANK_RTOL = 1e-10  # relative tolerance for numerical ranks (sigma_i > RANK_RTOL * sigma_max)
SINGULAR_COND = 1e12  # cond(W_OV) above this is treated as singular
QK_VARIANTS = ("rank1", "full")
LEMMA2_QK_VARIANTS = ("rank1", "full", "proof")
FREE_COORDS = ("random", "zero")


# ----------------------------------------------------------------------------- weights


@dataclass(frozen=True, eq=False)
class AoTWeights:
    """One-layer attention-only Transformer, Eq. (2); float64 numpy arrays.

    e (N, d), pos (S, d), W_Q and W_K (H, r, d) with W_QK^h = W_Q^h.T @ W_K^h
    (r = d_h for full W_QK, r = 1 for the rank-1 variant of Remark 2),
    W_V (H, d_h, d), W_O (H, d, d_h), W_U (N, d).
    """

    e: np.ndarray
    pos: np.ndarray
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    W_U: np.ndarray

    def __post_init__(self):
        for name in ("e", "pos", "W_Q", "W_K", "W_V", "W_O", "W_U"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.float64))
        if self.e.ndim != 2 or self.pos.ndim != 2 or self.W_V.ndim != 3 or self.W_Q.ndim != 3:
            raise ValueError(
                f"e, pos must be 2-D (N, d), (S, d) and W_Q, W_V 3-D (H, ., d); got e.shape={self.e.shape}, "
                f"pos.shape={self.pos.shape}, W_Q.shape={self.W_Q.shape}, W_V.shape={self.W_V.shape}"
            )
        N, d = self.e.shape
        H, d_h, _ = self.W_V.shape
        r = self.W_Q.shape[1]
        expected = {
            "pos": (self.pos.shape[0], d),
            "W_Q": (H, r, d),
            "W_K": (H, r, d),
            "W_V": (H, d_h, d),
            "W_O": (H, d, d_h),
            "W_U": (N, d),
        }
        for name, shape in expected.items():
            if getattr(self, name).shape != shape:
                raise ValueError(
                    f"{name}.shape={getattr(self, name).shape} must be {shape} "
                    f"for N={N}, d={d}, H={H}, d_h={d_h}, qk rank r={r}"
                )

    N = property(lambda self: self.e.shape[0])
    d = property(lambda self: self.e.shape[1])
    S = property(lambda self: self.pos.shape[0])
    H = property(lambda self: self.W_V.shape[0])
    d_h = property(lambda self: self.W_V.shape[1])
    qk_rank = property(lambda self: self.W_Q.shape[1], doc="r: W_Q^h, W_K^h are r x d")
    qk_rank1 = property(lambda self: self.W_Q.shape[1] == 1, doc="Remark 2 variant (same as full if d_h = 1)")

    @property
    def W_QK(self) -> np.ndarray:
        """(H, d, d) stack of W_QK^h = (W_Q^h)^T W_K^h."""
        return np.einsum("hrd,hre->hde", self.W_Q, self.W_K)


def n_parameters(weights: AoTWeights) -> int:
    """Entries of e, pos, W_Q, W_K, W_V, W_O, W_U: the paper's count (Thm 1, Remark 2)."""
    return int(sum(a.size for a in (weights.e, weights.pos, weights.W_Q, weights.W_K,
                                    weights.W_V, weights.W_O, weights.W_U)))


def paper_parameter_count(N: int, S: int, d: int, d_h: int, H: int, qk: str = "full") -> int:
    """d(S + 2N + 4 d_h H) (Theorem 1), or d(S + 2N + 2(d_h + 1)H) for qk="rank1" (Remark 2)."""
    _check_choice("qk", qk, QK_VARIANTS)
    per_head = 4 * d_h if qk == "full" else 2 * (d_h + 1)
    return d * (S + 2 * N + per_head * H)


def corollary1_parameters(S: int, N: int, T_0: int) -> int:
    """Corollary 1: d = 2, T_0 = H d_h + 2 associations with 2(S + 2N + 4(T_0 - 2)) parameters."""
    if T_0 < 2:
        raise ValueError(f"T_0={T_0} must be >= 2 = d (Corollary 1 has T_0 = H d_h + 2)")
    return 2 * (S + 2 * N + 4 * (T_0 - 2))


def heads_needed(T_0: int, d: int, d_h: int) -> int:
    """H = ceil((T_0 - d) / d_h) heads (App. A.2), 0 when the skip connection suffices."""
    _check_dims(d, d_h, allow_dh_gt_d=False)
    return max(0, -(-(T_0 - d) // d_h))


def circle_unembedding(N: int, d: int) -> np.ndarray:
    """W_U (N, d) with rows u_j = (cos 2 pi j/N, sin 2 pi j/N, 0, ..., 0), Prop. 3 / App. A.5."""
    if N < 2 or d < 2:
        raise ValueError(f"N={N} and d={d} must both be >= 2 for the circle unembedding (Prop. 3)")
    angle = 2 * np.pi * np.arange(N) / N
    W_U = np.zeros((N, d))
    W_U[:, 0], W_U[:, 1] = np.cos(angle), np.sin(angle)
    return W_U


# ----------------------------------------------------------------------------- forward pass


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=-1, keepdims=True)


def attention_pattern(weights: AoTWeights, tokens) -> np.ndarray:
    """a^h_s(t) = softmax_s(x_S^T W_QK^h x_s), Eq. (1) with query x_S; shape (T, H, S)."""
    tokens = _check_tokens(tokens, weights.N, weights.S)
    return _pattern(weights.e[tokens] + weights.pos, weights.W_QK)


def _pattern(x: np.ndarray, W_QK: np.ndarray) -> np.ndarray:
    """x (T, S, d), W_QK (H, d, d) -> a (T, H, S); batched matmuls instead of einsum for speed."""
    query = np.matmul(x[:, -1], W_QK).transpose(1, 0, 2)  # (T, H, d): rows x_S^T W_QK^h
    return _softmax(np.matmul(query, x.transpose(0, 2, 1)))  # raw_s = x_S^T W_QK^h x_s


def _skip_and_values(weights: AoTWeights, tokens: np.ndarray):
    """x_S (T, d) and W_V^h A^h(t) (T, H, d_h) for already-checked tokens."""
    x = weights.e[tokens] + weights.pos  # (T, S, d)
    A = np.matmul(_pattern(x, weights.W_QK), x)  # (T, H, d): A^h(t) = sum_s a^h_s x_s
    VA = np.matmul(A.transpose(1, 0, 2), weights.W_V.transpose(0, 2, 1))  # (H, T, d_h)
    return x[:, -1], VA.transpose(1, 0, 2)


def residual_stream(weights: AoTWeights, tokens) -> np.ndarray:
    """x_S + sum_h W_O^h W_V^h A^h(t) at the last position (inside Eq. 2); shape (T, d)."""
    tokens = _check_tokens(tokens, weights.N, weights.S)
    x_S, VA = _skip_and_values(weights, tokens)
    H, d, d_h = weights.W_O.shape
    W_O_stacked = weights.W_O.transpose(0, 2, 1).reshape(H * d_h, d)  # [W_O^1 ... W_O^H]^T
    return x_S + VA.reshape(len(tokens), H * d_h) @ W_O_stacked


def aot_forward(weights: AoTWeights, tokens) -> np.ndarray:
    """Logits T(t) = W_U (x_S + sum_h W_O^h W_V^h A^h(t)), Eq. (2); tokens (T, S) -> (T, N)."""
    return residual_stream(weights, tokens) @ weights.W_U.T


# ----------------------------------------------------------------------------- construction


@dataclass(frozen=True, eq=False)
class ConstructionReport:
    """Diagnostics of build_memorizing_aot; all errors measured on the BUILT weights.

    capacity: H min(d, d_h) + d with the skip trick, H min(d, d_h) without.
    rank_F, sigma_min_F: numerical rank (rtol 1e-10) and smallest of the min(T_0, rows of F)
        singular values of F (rows: d + H d_h, or H d_h without the skip trick).
    lstsq_residual: max |M F - E|; cond_W_OV: nan when skip_trick=False (no W_OV).
    accuracy: mean of argmax aot_forward == targets; max_residual_error: max |residual - E|.
    E: the (T_0, d) target residual streams.
    """

    T_0: int
    capacity: int
    rank_F: int
    sigma_min_F: float
    lstsq_residual: float
    cond_W_OV: float
    accuracy: float
    max_residual_error: float
    n_params: int
    skip_trick: bool
    E: np.ndarray


def build_memorizing_aot(
    tokens,
    targets,
    N: int,
    d: int,
    d_h: int,
    H: int,
    seed: int = 0,
    qk: str = "rank1",
    skip_trick: bool = True,
    lam: float = 1.0,
    free_coords: str = "random",
    allow_dh_gt_d: bool = False,
) -> tuple[AoTWeights, ConstructionReport]:
    """AoT whose argmax maps tokens[i] -> targets[i] (Thm 1 eps=0, Cor. 1; Remark 2 if qk="rank1").

    Exact (residual = E to rounding) when T_0 <= H d_h + d; beyond that M is the least-squares
    fit and the report shows the failure. See the module docstring for the steps.

    qk: "rank1" draws W_Q^h, W_K^h in R^{1 x d} (Remark 2); "full" draws them in R^{d_h x d}.
    lam: scale of E = lam [u_g, z]; the logit margin is lam (1 - cos(2 pi / N)).
    free_coords: "random" fills coordinates 3..d of E with lam * N(0, 1) (needed: with
        "zero" the solved W_OV has rank <= 2 < d and the trick fails with a ValueError).
    skip_trick=False: the no-skip variant. The skip term x_S is kept as drawn (not used as a
        pseudo-head), the heads alone must produce E - x_S, so the capacity is H d_h. Its
        free coordinates are set to those of x_S (the most favourable choice: no head output
        is needed there), so only the two circle coordinates constrain the solve.
    allow_dh_gt_d: permit d_h > d (footnote 1 forbids it); the rank then saturates at
        H d + d, not H d_h + d (the rank of W_V^h A^h is at most d; row 4 of the Theorem 1 chapter).
    """
    tokens, targets = _check_task(tokens, targets, N)
    _check_dims(d, d_h, allow_dh_gt_d)
    if H < 1:
        raise ValueError(f"H={H} must be >= 1")
    _check_choice("qk", qk, QK_VARIANTS)
    _check_choice("free_coords", free_coords, FREE_COORDS)
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam={lam} must be a finite positive scale")
    T_0, S = tokens.shape

    rng = np.random.default_rng(seed)
    r = 1 if qk == "rank1" else d_h
    qk_scale = (d * r) ** -0.25  # entries of W_QK^h have variance 1/d
    drawn = AoTWeights(
        e=rng.standard_normal((N, d)),
        pos=rng.standard_normal((S, d)),
        W_Q=qk_scale * rng.standard_normal((H, r, d)),
        W_K=qk_scale * rng.standard_normal((H, r, d)),
        W_V=rng.standard_normal((H, d_h, d)) / math.sqrt(d),
        W_O=np.zeros((H, d, d_h)),
        W_U=circle_unembedding(N, d),
    )
    z = lam * rng.standard_normal((T_0, d - 2)) if free_coords == "random" else np.zeros((T_0, d - 2))

    x_S, VA = _skip_and_values(drawn, tokens)
    E = np.concatenate([lam * drawn.W_U[targets, :2], z], axis=1)
    if skip_trick:
        F_T = np.concatenate([x_S, VA.reshape(T_0, H * d_h)], axis=1)  # row t = F(t)^T
        Y = E
    else:
        E[:, 2:] = x_S[:, 2:]
        F_T = VA.reshape(T_0, H * d_h)
        Y = E - x_S
    M_T, _, _, sv = np.linalg.lstsq(F_T, Y, rcond=None)  # F_T @ M^T = Y  <=>  M F = Y
    lstsq_residual = float(np.max(np.abs(F_T @ M_T - Y)))
    rank_F = int(np.sum(sv > RANK_RTOL * sv[0]))
    heads_O = M_T[-H * d_h:].T.reshape(d, H, d_h).transpose(1, 0, 2)  # W_O^h = column blocks of M

    if skip_trick:
        W_OV = M_T[:d].T
        cond_W_OV = float(np.linalg.cond(W_OV))
        if not cond_W_OV < SINGULAR_COND:
            raise ValueError(
                f"solved skip block W_OV is singular: cond(W_OV)={cond_W_OV:.3g} >= {SINGULAR_COND:g} "
                f"(free_coords={free_coords!r}; use 'random' so that E spans R^d)"
            )
        inv = np.linalg.inv(W_OV)
        weights = AoTWeights(
            e=drawn.e @ W_OV.T,  # e(t) <- W_OV e'(t)
            pos=drawn.pos @ W_OV.T,
            W_Q=drawn.W_Q @ inv,  # W_QK <- W_OV^{-T} W_QK' W_OV^{-1}
            W_K=drawn.W_K @ inv,
            W_V=drawn.W_V @ inv,
            W_O=heads_O,
            W_U=drawn.W_U,
        )
    else:
        cond_W_OV = float("nan")
        weights = AoTWeights(drawn.e, drawn.pos, drawn.W_Q, drawn.W_K, drawn.W_V, heads_O, drawn.W_U)

    predictions = np.argmax(aot_forward(weights, tokens), axis=1)
    report = ConstructionReport(
        T_0=T_0,
        capacity=H * min(d, d_h) + (d if skip_trick else 0),
        rank_F=rank_F,
        sigma_min_F=float(sv[-1]),
        lstsq_residual=lstsq_residual,
        cond_W_OV=cond_W_OV,
        accuracy=float(np.mean(predictions == targets)),
        max_residual_error=float(np.max(np.abs(residual_stream(weights, tokens) - E))),
        n_params=n_parameters(weights),
        skip_trick=skip_trick,
        E=E,
    )
    return weights, report


# ----------------------------------------------------------------------------- task and Lemma 2


def random_association_task(N: int, S: int, T_0: int, seed: int = 0):
    """T_0 distinct sequences of [N]^S (all of them, in lexicographic order, if T_0 == N^S)
    and uniform random targets in [N]: a random look-up table (Assumption 1)."""
    if N < 1 or S < 1:
        raise ValueError(f"N={N} and S={S} must be >= 1")
    total = N**S
    if not 1 <= T_0 <= total:
        raise ValueError(f"T_0={T_0} must satisfy 1 <= T_0 <= N^S={total} (distinct sequences)")
    rng = np.random.default_rng(seed)
    if T_0 == total:
        index = np.arange(total, dtype=np.int64)
    elif total <= 10**7:
        index = rng.choice(total, size=T_0, replace=False).astype(np.int64)
    else:
        index = None
    if index is not None:
        place = N ** np.arange(S - 1, -1, -1, dtype=np.int64)
        tokens = (index[:, None] // place) % N
    else:  # huge N^S: rejection sampling, keeping the first occurrence of each sequence
        tokens = np.empty((0, S), dtype=np.int64)
        while len(tokens) < T_0:
            draw = np.concatenate([tokens, rng.integers(0, N, size=(T_0, S))])
            _, first = np.unique(draw, axis=0, return_index=True)
            tokens = draw[np.sort(first)][:T_0]
    return tokens.astype(np.int64), rng.integers(0, N, size=T_0).astype(np.int64)


@dataclass(frozen=True, eq=False)
class FeatureRank:
    """Lemma 2 diagnostics of A = [A^1; ...; A^H] in R^{Hd x T_0}."""

    rank: int
    expected: int  # min(T_0, H d)
    singular_values: np.ndarray

    @property
    def ratio(self) -> float:
        """sigma_min / sigma_max over the min(Hd, T_0) singular values."""
        return float(self.singular_values[-1] / self.singular_values[0])


def attention_feature_rank(tokens, N: int, d: int, H: int, qk: str = "rank1", seed: int = 0,
                           rtol: float = RANK_RTOL) -> FeatureRank:
    """Lemma 2: rank of A = [f(W^1); ...; f(W^H)] in R^{Hd x T_0}, where
    f(W)_t = sum_j softmax_j(x(t,S)^T W x(t,j)) x(t,j).

    qk="rank1": Gaussian e, pos and W^h = u v^T; "full": Gaussian e, pos and W^h iid N(0, 1/d);
    "proof": the proof's choice, e, pos ~ U(0, 1) and W^h = w_h e_1 e_1^T with w_h = 0.5 + h,
    h = 1..H. The paper claims rank >= min(T_0, Hd) for some choice; generic ones attain it.
    """
    _check_choice("qk", qk, LEMMA2_QK_VARIANTS)
    if d < 1 or H < 1:
        raise ValueError(f"d={d} and H={H} must both be >= 1")
    tokens = np.asarray(tokens)
    if tokens.ndim != 2:
        raise ValueError(f"tokens.shape={tokens.shape} must be (T_0, S)")
    tokens = _check_tokens(tokens, N, tokens.shape[1])
    T_0, S = tokens.shape
    rng = np.random.default_rng(seed)
    if qk == "proof":
        e, pos = rng.uniform(size=(N, d)), rng.uniform(size=(S, d))
        W = np.zeros((H, d, d))
        W[:, 0, 0] = 0.5 + np.arange(1, H + 1)
    else:
        e, pos = rng.standard_normal((N, d)), rng.standard_normal((S, d))
        if qk == "rank1":
            u, v = rng.standard_normal((2, H, d)) * d**-0.25
            W = np.einsum("hd,he->hde", u, v)
        else:
            W = rng.standard_normal((H, d, d)) / math.sqrt(d)
    x = e[tokens] + pos
    A = np.einsum("ths,tsd->hdt", _pattern(x, W), x).reshape(H * d, T_0)
    sv = np.linalg.svd(A, compute_uv=False)
    return FeatureRank(rank=int(np.sum(sv > rtol * sv[0])), expected=min(T_0, H * d), singular_values=sv)


# ----------------------------------------------------------------------------- validation


def _check_choice(name: str, value, allowed: tuple) -> None:
    if value not in allowed:
        raise ValueError(f"{name}={value!r} must be one of {allowed}")


def _check_dims(d: int, d_h: int, allow_dh_gt_d: bool) -> None:
    if d < 2:
        raise ValueError(f"d={d} must be >= 2 (the circle targets of Prop. 3 need two coordinates)")
    if d_h < 1 or (d_h > d and not allow_dh_gt_d):
        raise ValueError(
            f"d_h={d_h} must satisfy 1 <= d_h <= d={d} (footnote 1); "
            "pass allow_dh_gt_d=True to build it anyway (capacity H d + d)"
        )


def _check_tokens(tokens, N: int, S: int) -> np.ndarray:
    tokens = np.asarray(tokens)
    if tokens.ndim != 2 or tokens.shape[1] != S or tokens.shape[0] < 1:
        raise ValueError(f"tokens.shape={tokens.shape} must be (T, S={S}) with T >= 1")
    if not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"tokens.dtype={tokens.dtype} must be an integer type")
    if tokens.min() < 0 or tokens.max() >= N:
        raise ValueError(f"tokens must lie in [0, N={N}); got min={tokens.min()}, max={tokens.max()}")
    return tokens


def _check_task(tokens, targets, N: int):
    if N < 2:
        raise ValueError(f"N={N} must be >= 2")
    tokens = np.asarray(tokens)
    if tokens.ndim != 2:
        raise ValueError(f"tokens.shape={tokens.shape} must be (T_0, S)")
    tokens = _check_tokens(tokens, N, tokens.shape[1])
    targets = np.asarray(targets)
    if targets.shape != (tokens.shape[0],) or not np.issubdtype(targets.dtype, np.integer):
        raise ValueError(
            f"targets (shape {targets.shape}, dtype {targets.dtype}) must be integers of shape "
            f"(T_0={tokens.shape[0]},)"
        )
    if targets.min() < 0 or targets.max() >= N:
        raise ValueError(f"targets must lie in [0, N={N}); got min={targets.min()}, max={targets.max()}")
    _, first, counts = np.unique(tokens, axis=0, return_index=True, return_counts=True)
    if np.any(counts > 1):
        k = int(np.argmax(counts > 1))
        raise ValueError(
            f"tokens must be distinct sequences; row {int(first[k])} = {tokens[first[k]].tolist()} "
            f"appears {int(counts[k])} times"
        )
    return tokens, targets
