"""The histogram task of paper 002 (§4, App. C) and its two samplers.

A sequence x = (x_1 .. x_L) over the alphabet {0 .. T-1}; the label of position l is
hist_x(l) = #{m : x_m = x_l}, the count of its token in the whole sequence (classes 1 .. L).

Two samplers, both vectorised and seeded by (sampler, T, L, seed) only:

- `sample_code`: what the authors' code does (memory_exp.py, HistogramDatasetSampleBackward). Cut L into a random integer
  partition (first part k ~ U{1 .. n-1} of what remains n, until 1 is left), give each part a
  distinct uniform token, shuffle. A sequence always has two distinct tokens or more, so the
  count L never occurs and the most frequent label is 1 (probability 2/L).
- `sample_paper`: App. C as written, with its off-by-one repaired (the literal recursion keeps
  K = k and never stops): k ~ U{1 .. K}, positions k .. K get a fresh token, K <- k - 1. Every
  count 1 .. L then has probability 1/L, count L (one token only) included.

`count_marginal` gives the exact label distribution of each sampler (a recursion over the
expected number of parts of each size); `majority_baseline` the accuracy of always predicting
the most frequent label.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import product

import numpy as np

from attnlab.core.hashing import derive_seed

SAMPLERS = ("code", "paper")


def hist(x: np.ndarray) -> np.ndarray:
    """Labels y[..., l] = #{m : x[..., m] == x[..., l]} (the histogram task, §4)."""
    x = np.asarray(x)
    return (x[..., :, None] == x[..., None, :]).sum(-1)


def _rng(sampler: str, T: int, L: int, seed: int) -> np.random.Generator:
    return np.random.default_rng(derive_seed({"task": "histogram", "sampler": sampler, "T": T, "L": L}, seed))


def _check(T: int, L: int) -> None:
    if T < 2 or L < 1:
        raise ValueError(f"the histogram task needs T >= 2 and L >= 1; got T={T}, L={L}")


def _fill(part: np.ndarray, T: int, rng: np.random.Generator) -> np.ndarray:
    """Sequences from part ids [n, L] (0, 1, ... in order of position): each part gets a distinct
    uniform token, then the positions of each sequence are shuffled."""
    n, L = part.shape
    tokens = np.argsort(rng.random((n, T)), axis=1)  # a uniform permutation of the alphabet per sequence
    x = np.take_along_axis(tokens, part, axis=1)
    order = np.argsort(rng.random((n, L)), axis=1)
    return np.take_along_axis(x, order, axis=1)


def sample_code(n: int, T: int, L: int, seed: int = 0) -> np.ndarray:
    """n sequences [n, L] (int64, tokens 0 .. T-1) from the code's sampler (random partition)."""
    _check(T, L)
    rng = _rng("code", T, L, seed)
    part = np.zeros((n, L), dtype=np.int64)
    start = np.zeros(n, dtype=np.int64)
    pos = np.arange(L)
    for step in range(L):
        rem = L - start
        if not (rem > 0).any():
            break
        # k ~ U{1 .. rem-1} while rem >= 2, k = 1 when rem == 1, nothing when rem == 0
        k = np.where(rem >= 2, np.floor(rng.random(n) * np.maximum(rem - 1, 1)).astype(np.int64) + 1, rem)
        inside = (pos[None, :] >= start[:, None]) & (pos[None, :] < (start + k)[:, None])
        part[inside] = step
        start = start + k
    np.minimum(part, T - 1, out=part)  # more parts than tokens: the trailing parts merge into one
    return _fill(part, T, rng)


def sample_paper(n: int, T: int, L: int, seed: int = 0) -> np.ndarray:
    """n sequences [n, L] from App. C's recursion (off-by-one repaired, see the module doc)."""
    _check(T, L)
    rng = _rng("paper", T, L, seed)
    part = np.zeros((n, L), dtype=np.int64)
    K = np.full(n, L, dtype=np.int64)  # positions 1 .. K still to fill
    pos = np.arange(1, L + 1)
    for step in range(L):
        if not (K > 0).any():
            break
        k = np.floor(rng.random(n) * np.maximum(K, 1)).astype(np.int64) + 1  # k ~ U{1 .. K}
        inside = (pos[None, :] >= k[:, None]) & (pos[None, :] <= K[:, None])
        part[inside] = step
        K = np.where(K > 0, k - 1, 0)
    np.minimum(part, T - 1, out=part)
    return _fill(part, T, rng)


def sample(sampler: str, n: int, T: int, L: int, seed: int = 0) -> np.ndarray:
    """`sample_code` or `sample_paper` by name."""
    if sampler == "code":
        return sample_code(n, T, L, seed)
    if sampler == "paper":
        return sample_paper(n, T, L, seed)
    raise ValueError(f"sampler {sampler!r}: choose one of {', '.join(SAMPLERS)}")


@lru_cache(maxsize=None)
def _parts(sampler: str, n: int) -> tuple[float, ...]:
    """Expected number of parts of each size c = 0 .. n in the sampler's partition of n."""
    out = np.zeros(n + 1)
    if n == 0:
        return tuple(out)
    if sampler == "code":
        if n == 1:
            out[1] = 1.0
            return tuple(out)
        firsts = range(1, n)  # k ~ U{1 .. n-1}, the rest n - k is partitioned again
    else:
        firsts = range(1, n + 1)  # the block length K - k + 1 ~ U{1 .. K}
    for j in firsts:
        out[j] += 1.0 / len(firsts)
        out[: n - j + 1] += np.array(_parts(sampler, n - j)) / len(firsts)
    return tuple(out)


def count_marginal(sampler: str, L: int, T: int | None = None) -> np.ndarray:
    """Exact P(label = c) for c = 0 .. L (index c; P(0) = 0) of a uniform position.

    A part of size c puts c positions at label c, so P(c) = c E[#parts of size c] / L. Exact when
    the partition never has more parts than tokens (L <= T); `T` is only checked."""
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler {sampler!r}: choose one of {', '.join(SAMPLERS)}")
    if T is not None and L > T:
        raise ValueError(f"count_marginal is exact for L <= T only; got T={T}, L={L}")
    c = np.arange(L + 1)
    return c * np.array(_parts(sampler, L)) / L


def empirical_marginal(x: np.ndarray) -> np.ndarray:
    """Observed frequencies of the labels c = 0 .. L over all positions of the sequences x [n, L]."""
    L = x.shape[1]
    return np.bincount(hist(x).ravel(), minlength=L + 1)[: L + 1] / x.size


def majority_baseline(marginal: np.ndarray) -> tuple[int, float]:
    """(label, accuracy) of always predicting the most frequent label."""
    c = int(np.argmax(marginal))
    return c, float(marginal[c])


def all_sequences(T: int, L: int) -> np.ndarray:
    """Every sequence of {0 .. T-1}^L [T^L, L] (lexicographic); keep T^L small."""
    if T ** L > 5_000_000:
        raise ValueError(f"all_sequences: T^L = {T ** L} sequences is too many")
    return np.array(list(product(range(T), repeat=L)), dtype=np.int64).reshape(T ** L, L)


def two_token_sequences(T: int, L: int, n_pairs: int | None = None, seed: int = 0) -> np.ndarray:
    """Sequences a^k b^(L-k) for k = 1 .. L (k = L: a single token, count L) over ordered pairs
    a != b: all T(T-1) pairs, or n_pairs drawn uniformly (seeded)."""
    pairs = np.array([(a, b) for a in range(T) for b in range(T) if a != b], dtype=np.int64)
    if n_pairs is not None and n_pairs < len(pairs):
        rng = np.random.default_rng(derive_seed({"task": "two-token", "T": T, "L": L}, seed))
        pairs = pairs[rng.choice(len(pairs), n_pairs, replace=False)]
    k = np.arange(1, L + 1)
    first = np.arange(L)[None, :] < k[:, None]  # [L (values of k), L (positions)]
    x = np.where(first[None], pairs[:, 0, None, None], pairs[:, 1, None, None])
    return x.reshape(-1, L)
