"""The counting model of paper 002 (§3, eqs. 1-6) as a plain float64 function of given weights.

    x̄_l   = e_{x_l}                                   (no positional embedding)
    x̄'_l  = x̄_l + [𝐀(x̄) x̄]_l                        (residual; value matrix = identity)
    f(x̄'_l) = ReLU(x̄'_l W1 + b1) W2 + b2,   F(x)_l = argmax_c f(x̄'_l)_c

with the mixing matrix 𝐀 of the variant:
    lin       A                                    (a learned L x L matrix, eq. 2)
    lin+sftm  softmax_row(A)                       (eq. 3)
    dot       x̄ W_Q W_Kᵀ x̄ᵀ / √d                  (eq. 4)
    dot+sftm  softmax_row(x̄ W_Q W_Kᵀ x̄ᵀ / √d)      (eq. 5)
    bos, bos+sftm: dot / dot+sftm on the sequence with a BOS token (index T, its own embedding
    row) prepended; the BOS position's output is dropped.
Row-vector convention as in the code (x̄ is L x d); C = L + 1 output classes, class 0 unused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VARIANTS = ("dot", "bos", "bos+sftm", "lin", "lin+sftm", "dot+sftm")
CODE_NAMES = {"lin": "linear", "lin+sftm": "linear+sftm", "dot": "dot", "dot+sftm": "dot+sftm",
              "bos": "dotBOS", "bos+sftm": "dotBOS+sftm"}


def softmax(z: np.ndarray) -> np.ndarray:
    """Row softmax over the last axis (stable)."""
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def parse_variants(text: str) -> list[str]:
    """'bos+sftm, dot' -> ['bos+sftm', 'dot']; 'all' -> every variant. Each one of VARIANTS, no repeats."""
    from attnlab.core.params import ParameterError

    names = list(VARIANTS) if text.strip() == "all" else [v.strip() for v in text.split(",") if v.strip()]
    if not names or any(v not in VARIANTS for v in names) or len(set(names)) != len(names):
        raise ParameterError(f"parameter 'variants': value {text!r} is not allowed; give distinct names from "
                             + ", ".join(VARIANTS) + " separated by commas, or 'all'")
    return names


def has_bos(variant: str) -> bool:
    return variant.startswith("bos")


def has_softmax(variant: str) -> bool:
    return variant.endswith("+sftm")


def is_linear(variant: str) -> bool:
    return variant.startswith("lin")


@dataclass(frozen=True)
class CountingWeights:
    """Weights of one counting model. emb [T (+1 with BOS), d]; A [L, L] (lin) or W_Q, W_K [d, d]
    (dot, bos); W1 [d, p], b1 [p], W2 [p, C], b2 [C] with C = L + 1."""

    variant: str
    emb: np.ndarray
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray
    A: np.ndarray | None = None
    W_Q: np.ndarray | None = None
    W_K: np.ndarray | None = None

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ValueError(f"variant {self.variant!r}: choose one of {', '.join(VARIANTS)}")
        d, p = self.W1.shape
        if self.emb.shape[1] != d or self.b1.shape != (p,) or self.W2.shape[0] != p or self.b2.shape != (self.W2.shape[1],):
            raise ValueError(f"inconsistent shapes: emb {self.emb.shape}, W1 {self.W1.shape}, b1 {self.b1.shape}, "
                             f"W2 {self.W2.shape}, b2 {self.b2.shape}")
        if is_linear(self.variant):
            if self.A is None or self.A.shape != (self.L, self.L):
                raise ValueError(f"{self.variant} needs A of shape (L, L) = ({self.L}, {self.L})")
        elif self.W_Q is None or self.W_K is None or self.W_Q.shape != (d, d) or self.W_K.shape != (d, d):
            raise ValueError(f"{self.variant} needs W_Q and W_K of shape (d, d) = ({d}, {d})")

    @property
    def T(self) -> int:
        return self.emb.shape[0] - has_bos(self.variant)

    @property
    def d(self) -> int:
        return self.W1.shape[0]

    @property
    def p(self) -> int:
        return self.W1.shape[1]

    @property
    def L(self) -> int:
        return self.W2.shape[1] - 1

    def n_params(self) -> int:
        return n_params(self.variant, self.T, self.L, self.d, self.p)


def n_params(variant: str, T: int, L: int, d: int, p: int) -> int:
    """Trainable parameters: embeddings (T, plus BOS, rows of d) + mixing (L² for lin, eqs. 2-3; 2d² for
    dot, eqs. 4-5: §3) + the MLP of eq. 6 (C = L + 1 outputs, as the authors' code)."""
    mixing = L * L if is_linear(variant) else 2 * d * d
    return (T + has_bos(variant)) * d + mixing + d * p + p + p * (L + 1) + L + 1


def forward(w: CountingWeights, x: np.ndarray) -> dict[str, np.ndarray]:
    """The forward pass on token sequences x [n, L] (tokens 0 .. T-1), in float64.

    Returns (BOS position dropped): mixing [n, L', L'] (L' = L + 1 with BOS, rows of the
    non-BOS positions kept), mixed x̄' [n, L, d], hidden pre-activations z [n, L, p], the sum of
    hidden activations gamma [n, L] (eq. 12), logits [n, L, C] and the prediction [n, L]."""
    x = np.asarray(x)
    if x.ndim != 2 or x.min(initial=0) < 0 or x.max(initial=0) >= w.T:
        raise ValueError(f"tokens must be an [n, L] array with values in 0 .. {w.T - 1}")
    n, L = x.shape
    if L != w.L:
        raise ValueError(f"sequences have length {L}; the weights are for L = {w.L}")
    if has_bos(w.variant):
        x = np.concatenate([np.full((n, 1), w.T, dtype=x.dtype), x], axis=1)
    xb = w.emb[x].astype(np.float64)  # [n, L', d]
    if is_linear(w.variant):
        A = softmax(w.A) if has_softmax(w.variant) else w.A
        A = np.broadcast_to(A, (n, L, L))
    else:
        scores = (xb @ w.W_Q) @ np.swapaxes(xb @ w.W_K, 1, 2) / np.sqrt(w.d)
        A = softmax(scores) if has_softmax(w.variant) else scores
    mixed = xb + A @ xb
    if has_bos(w.variant):
        A, mixed = A[:, 1:], mixed[:, 1:]
    z = mixed @ w.W1 + w.b1
    h = np.maximum(z, 0.0)
    logits = h @ w.W2 + w.b2
    return {"mixing": A, "mixed": mixed, "z": z, "gamma": h.sum(-1), "logits": logits,
            "prediction": logits.argmax(-1)}


def accuracy(w: CountingWeights, x: np.ndarray) -> float:
    """Token-level accuracy of F(x) against hist_x (all L positions)."""
    from .tasks import hist

    return float((forward(w, x)["prediction"] == hist(x)).mean())
