"""Measurements on trained counting models (paper 002, Figs. 3-7, 9, 15: the W1 spectrum of Fig. 6,
the lin+sftm mixing of Fig. 5, BOS attention as a count proxy in Figs. 3, 15).

Everything here is a float64 function of `reference.CountingWeights` (or of its arrays):

- `overlaps`: the raw inner products ⟨e_t, e_s⟩ of the embeddings, split into same token
  (‖e_t‖²), different tokens and token-vs-BOS (Fig. 3 left; the authors' code plots these
  unnormalised overlaps, while the caption says "cosine similarity"), and their cosines;
- `overlap_stats`, `confusion`: normalised overlaps, their spread and the mutual coherence, and
  the confusion matrix of true against predicted counts (Fig. 7);
- `bos_weight_by_count`: mean softmax weight on BOS, a_{ℓ,0}, per count of x_ℓ (Fig. 3 middle);
- `mlp`, `bos_probe`: the feature transform f on hand-made mixed vectors
  f(α e_BOS + (1−α) e_X + e_Y) (Fig. 3 right, Fig. 15) and its agreement across token pairs;
- `simplex_points`, `simplex_predictions`, `band_purity`: argmax_c f(Σ_t α_t e_t + e_X) over
  the simplex α_B + α_C + α_D = 1 (Figs. 4, 5 right) and how much of it α_X alone explains;
- `softmax_mixing_stats`: diagonal against off-diagonal of a learned lin+sftm softmax(A) (Fig. 5);
- `logits_vs_count`, `linear_r2`, `line_deviation`: the logits on x = [t,…,t, v,…,v] against
  hist(t) (Fig. 9) and how far they are from straight lines in the count;
- `spectrum`, `drop_ratio`: the singular values of W₁ and σ_T / σ_{T+1} (Fig. 6);
- `pick_best`: the most accurate of several trained models (`sweeps.train_seeds` trains them).
"""

from __future__ import annotations

import numpy as np

from . import paper
from .reference import CountingWeights, forward, has_bos, softmax
from .tasks import hist


# --- embeddings and attention ------------------------------------------------------------------

def overlaps(w: CountingWeights) -> dict[str, np.ndarray | float]:
    """Inner products of the token embeddings (Fig. 3 left): 'same' ‖e_t‖² [T], 'different'
    ⟨e_t, e_s⟩ for t < s [T(T−1)/2], 'bos' ⟨e_t, e_BOS⟩ [T] and 'bos_bos' ‖e_BOS‖² (the last two
    only with BOS); the same keys with a 'cos_' prefix hold the cosine similarities."""
    E = np.asarray(w.emb, dtype=np.float64)
    T = w.T
    G = E @ E.T
    n = np.sqrt(np.diag(G))
    C = G / np.outer(n, n)
    iu = np.triu_indices(T, 1)
    out: dict[str, np.ndarray | float] = {"same": np.diag(G)[:T].copy(), "different": G[:T, :T][iu],
                                          "cos_different": C[:T, :T][iu]}
    if has_bos(w.variant):
        out.update(bos=G[:T, T].copy(), bos_bos=float(G[T, T]), cos_bos=C[:T, T].copy())
    return out


def overlap_stats(emb: np.ndarray) -> dict:
    """Overlaps of the T token embeddings (rows of emb): normalised overlaps ⟨e_t, e_s⟩ / mean_u ‖e_u‖²
    (same-token: the diagonal, different-token: t < s), cosines of the different-token pairs, their
    spread (standard deviation) and the mutual coherence max |cos|."""
    E = np.asarray(emb, dtype=np.float64)
    G = E @ E.T
    n2 = np.diag(G).copy()
    iu = np.triu_indices(E.shape[0], 1)
    norm = G / n2.mean()
    cos = G / np.sqrt(np.outer(n2, n2))
    return {"same": np.diag(norm), "different": norm[iu], "cos_different": cos[iu],
            "spread_cos": float(cos[iu].std()), "spread": float(norm[iu].std()),
            "coherence": float(np.abs(cos[iu]).max()), "norm_cv": float(np.sqrt(n2).std() / np.sqrt(n2).mean())}


def confusion(pred: np.ndarray, true: np.ndarray, C: int) -> np.ndarray:
    """Counts [C, C] of (true class, predicted class) over all positions."""
    m = np.zeros((C, C), dtype=np.int64)
    np.add.at(m, (true.ravel(), pred.ravel()), 1)
    return m


def bos_weight_by_count(w: CountingWeights, x: np.ndarray) -> dict[str, np.ndarray]:
    """Softmax weight on BOS, a_{ℓ,0}, grouped by the count k of x_ℓ (Fig. 3 middle):
    'counts' (the k present in x), 'mean', 'std' and 'n' per count. Needs a bos variant."""
    if not has_bos(w.variant):
        raise ValueError(f"bos_weight_by_count needs a bos variant; got {w.variant!r}")
    a0 = forward(w, x)["mixing"][:, :, 0]  # [n, L]: rows of the non-BOS positions, BOS column
    h = hist(x)
    ks = np.unique(h)
    return {"counts": ks, "mean": np.array([a0[h == k].mean() for k in ks]),
            "std": np.array([a0[h == k].std() for k in ks]), "n": np.array([(h == k).sum() for k in ks])}


def attention_matrix(w: CountingWeights, seq) -> np.ndarray:
    """The full mixing matrix of one sequence [L', L'] (L' = L + 1 with BOS, BOS row and column
    first), as the attention panels of Figs. 3 and 4 show it (`forward` drops the BOS row)."""
    x = np.asarray(seq, dtype=np.int64)
    if has_bos(w.variant):
        x = np.concatenate([[w.T], x])
    xb = w.emb[x]
    if w.A is not None:
        return softmax(w.A) if w.variant.endswith("+sftm") else np.array(w.A)
    S = (xb @ w.W_Q) @ (xb @ w.W_K).T / np.sqrt(w.d)
    return softmax(S) if w.variant.endswith("+sftm") else S


def example_sequence(L: int) -> list[int]:
    """Fig. 3's sequence [B, B, C, B, B, B, D, E, E, E] (tokens 1, 2, 3, 4; BOS not included)
    at L = 10; at other L the same pattern with counts B = ⌈L/2⌉, C = 1, D = the rest."""
    if L == 10:
        return list(paper.FIG3_SEQUENCE)
    if L < 3:
        raise ValueError(f"example_sequence needs L >= 3; got {L}")
    nb = (L + 1) // 2
    return [1, 1, 2] + [1] * (nb - 2) + [3] * (L - nb - 1) if nb >= 2 else [1, 2, 3]


def strictly_monotone(values: np.ndarray) -> str | None:
    """'increasing' / 'decreasing' if the sequence is strictly so, else None."""
    d = np.diff(np.asarray(values, dtype=np.float64))
    if len(d) and (d > 0).all():
        return "increasing"
    if len(d) and (d < 0).all():
        return "decreasing"
    return None


# --- the feature transform on hand-made inputs ---------------------------------------------------

def mlp(w: CountingWeights, v: np.ndarray) -> np.ndarray:
    """f(v) = ReLU(v W1 + b1) W2 + b2 for mixed vectors v [..., d] -> logits [..., C]."""
    return np.maximum(np.asarray(v, dtype=np.float64) @ w.W1 + w.b1, 0.0) @ w.W2 + w.b2


def bos_probe(w: CountingWeights, X: int, Y: int, alphas: np.ndarray) -> np.ndarray:
    """Predictions argmax_c f(α e_BOS + (1−α) e_X + e_Y) for each α (Fig. 3 right, Fig. 15):
    X is the token mixed with BOS, Y the token of the residual stream. Class 0 (never a
    label) is excluded from the argmax."""
    if not has_bos(w.variant):
        raise ValueError(f"bos_probe needs a bos variant; got {w.variant!r}")
    a = np.asarray(alphas, dtype=np.float64)[:, None]
    v = a * w.emb[w.T] + (1 - a) * w.emb[X] + w.emb[Y]
    return 1 + mlp(w, v)[:, 1:].argmax(-1)


def bos_probe_grid(w: CountingWeights, tokens: list[int], alphas: np.ndarray) -> np.ndarray:
    """bos_probe over every ordered pair (X, Y) of `tokens` (X = Y included): [n, n, len(alphas)]."""
    return np.array([[bos_probe(w, X, Y, alphas) for Y in tokens] for X in tokens])


def probe_agreement(preds: np.ndarray) -> dict[str, float]:
    """How far the probe's prediction depends on α alone. preds [..., n_alpha] (pairs first):
    'modal' = fraction of (pair, α) points equal to the most common prediction at that α;
    'unanimous' = fraction of α grid points at which every pair predicts the same class."""
    P = np.asarray(preds).reshape(-1, preds.shape[-1])
    modal = np.array([np.bincount(col).argmax() for col in P.T])
    return {"modal": float((P == modal[None]).mean()), "unanimous": float((P == P[:1]).all(0).mean())}


def probe_at_weights(w: CountingWeights, tokens: list[int], alphas: np.ndarray, counts: np.ndarray) -> float:
    """Fraction of (count k, pair (X, Y)) for which the probe at α = the model's mean BOS weight
    for count k predicts k (the vertical lines of Fig. 3 right, Fig. 15)."""
    hits = [bos_probe(w, X, Y, np.asarray(alphas))[None] == np.asarray(counts)[None] for X in tokens for Y in tokens]
    return float(np.concatenate(hits).mean())


def simplex_points(n: int) -> np.ndarray:
    """Barycentric grid of the 2-simplex: all (i, j, n−i−j)/n, [(n+1)(n+2)/2, 3]."""
    pts = [(i, j, n - i - j) for i in range(n + 1) for j in range(n + 1 - i)]
    return np.array(pts, dtype=np.float64) / n


def simplex_predictions(w: CountingWeights, tokens: list[int], residual: int, alphas: np.ndarray) -> np.ndarray:
    """argmax_c f(Σ_t α_t e_t + e_X) over the simplex points alphas [n, 3] for the three
    `tokens` and residual token X (Figs. 4, 5 right). Class 0 excluded."""
    v = np.asarray(alphas) @ w.emb[list(tokens)] + w.emb[residual]
    return 1 + mlp(w, v)[:, 1:].argmax(-1)


def band_purity(alphas: np.ndarray, preds: np.ndarray, col: int, n_bins: int | None = None) -> float:
    """How much of the simplex plot the residual token's own coefficient α_col explains: points
    are grouped by α_col (exact grid levels, or n_bins equal bins), and the score is the fraction
    of points equal to their group's most common prediction (1 = straight bands parallel to
    the α_col = const lines)."""
    a = np.asarray(alphas)[:, col]
    g = np.round(a * 1e6).astype(np.int64) if n_bins is None else np.minimum((a * n_bins).astype(int), n_bins - 1)
    hits = 0
    for level in np.unique(g):
        p = np.asarray(preds)[g == level]
        hits += np.bincount(p).max()
    return float(hits / len(a))


# --- lin+sftm mixing and the logits against the count ---------------------------------------------

def softmax_mixing_stats(w: CountingWeights) -> dict[str, float]:
    """softmax(A) of a lin+sftm model (Fig. 5 left): mean diagonal, mean and std of the
    off-diagonal, their ratio (coefficient of variation) and the largest |row sum − 1|."""
    if w.variant != "lin+sftm":
        raise ValueError(f"softmax_mixing_stats needs lin+sftm; got {w.variant!r}")
    A = softmax(w.A)
    off = A[~np.eye(len(A), dtype=bool)]
    return {"diag": float(np.diag(A).mean()), "diag_min": float(np.diag(A).min()), "diag_max": float(np.diag(A).max()),
            "off": float(off.mean()), "off_std": float(off.std()), "off_cv": float(off.std() / off.mean()),
            "row_sum_err": float(np.abs(A.sum(1) - 1).max())}


def blocks(T: int, L: int, t: int, v: int) -> np.ndarray:
    """x = [t,…,t, v,…,v] with hist(t) = k for k = 1 .. L−1: [L−1, L] (Fig. 9's inputs)."""
    k = np.arange(1, L)[:, None]
    return np.where(np.arange(L)[None] < k, t, v).astype(np.int64)


def logits_vs_count(w: CountingWeights, tokens: list[int], v_of=None) -> dict[str, np.ndarray]:
    """Logits and γ at position 0 (a t) of x = [t,…,t, v,…,v] for k = hist(t) = 1 .. L−1 and each
    t in `tokens` (v = v_of(t), default the next token mod T): 'logits' [n_t, L−1, C],
    'gamma' [n_t, L−1], 'prediction' [n_t, L−1] and 'counts' (1 .. L−1)."""
    T, L = w.T, w.L
    v_of = v_of or (lambda t: (t + 1) % T)
    out = [forward(w, blocks(T, L, t, v_of(t))) for t in tokens]
    return {"logits": np.array([o["logits"][:, 0] for o in out]), "gamma": np.array([o["gamma"][:, 0] for o in out]),
            "prediction": np.array([o["prediction"][:, 0] for o in out]), "counts": np.arange(1, L)}


def linear_r2(k: np.ndarray, y: np.ndarray) -> np.ndarray:
    """R² of the least-squares line y ≈ a k + b along the last axis of y [..., n] (k [n]);
    1 for a constant y (a line fits exactly)."""
    k = np.asarray(k, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    K = np.stack([k, np.ones_like(k)], 1)
    coef, *_ = np.linalg.lstsq(K, y.reshape(-1, len(k)).T, rcond=None)
    res = y.reshape(-1, len(k)) - (K @ coef).T
    tot = ((y.reshape(-1, len(k)) - y.reshape(-1, len(k)).mean(1, keepdims=True)) ** 2).sum(1)
    r2 = np.where(tot > 1e-12, 1 - (res ** 2).sum(1) / np.maximum(tot, 1e-300), 1.0)
    return r2.reshape(y.shape[:-1])


def line_deviation(k: np.ndarray, y: np.ndarray) -> np.ndarray:
    """How far curves y [n_curves, C, n] (e.g. the logits of each token against the count k [n])
    are from straight lines: RMS residual of each curve's least-squares line, divided by the
    spread (max − min) of all C curves of its group. 0 for the construction (every logit is
    linear in γ = a·k); a flat, noisy logit gets a small value here, unlike its R²."""
    k = np.asarray(k, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    K = np.stack([k, np.ones_like(k)], 1)
    flat = y.reshape(-1, len(k))
    coef, *_ = np.linalg.lstsq(K, flat.T, rcond=None)
    rms = np.sqrt(((flat - (K @ coef).T) ** 2).mean(1)).reshape(y.shape[:-1])
    spread = y.max(axis=(-2, -1)) - y.min(axis=(-2, -1))
    return rms / np.maximum(spread, 1e-300)[..., None]


# --- the spectrum of W1 (Fig. 6) -------------------------------------------------------------------

def spectrum(W1: np.ndarray) -> np.ndarray:
    """Descending singular values of W₁ (any orientation)."""
    return np.linalg.svd(np.asarray(W1, dtype=np.float64), compute_uv=False)


def drop_ratio(s: np.ndarray, T: int) -> float:
    """σ_T / σ_{T+1} (1-based) of descending singular values s; needs len(s) > T."""
    if len(s) <= T:
        raise ValueError(f"need more than T = {T} singular values; got {len(s)}")
    return float(s[T - 1] / s[T]) if s[T] > 0 else float("inf")


# --- choosing a model ---------------------------------------------------------------------------

def pick_best(rows: list[dict]) -> dict:
    """The model with the highest final accuracy (ties: highest best accuracy, then lowest seed)."""
    return max(rows, key=lambda r: (r["final_accuracy"], r["best_accuracy"], -r["seed"]))
