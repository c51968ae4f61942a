"""Relational Graph Recognition (RGR) data: embeddings, graphs and contexts (§3, §4, App. A.1, B.3, B.4).

Everything is numpy float64 and seeded from (seed, tag) only, so a draw never depends on what else
was drawn before it: `rng(seed, "perm")` and `rng(seed, "X")` are independent streams.
"""

from __future__ import annotations

import zlib

import numpy as np


def rng(seed: int, *tags: str | int) -> np.random.Generator:
    """A generator that depends on `seed` and the tags only (strings hashed with crc32)."""
    words = [int(seed)] + [t if isinstance(t, int) else zlib.crc32(str(t).encode()) for t in tags]
    return np.random.default_rng(words)


def gun_embeddings(m: int, d: int, gen: np.random.Generator) -> np.ndarray:
    """Gaussian unit-norm embeddings (§4): rows x~ ~ N(0, I/d), then l2-normalised. Shape (m, d)."""
    x = gen.standard_normal((m, d)) / np.sqrt(d)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def rbce_embeddings(m: int, d: int, p_b: float, gen: np.random.Generator) -> np.ndarray:
    """Random binary compressive embeddings (Cor. B.7): i.i.d. Bernoulli(p_b) entries in {0, 1}.
    A row that comes out all zero is redrawn (it would embed nothing)."""
    x = (gen.random((m, d)) < p_b).astype(np.float64)
    while (empty := ~x.any(axis=1)).any():
        x[empty] = (gen.random((int(empty.sum()), d)) < p_b)
    return x


def random_permutation(m: int, gen: np.random.Generator, derangement: bool = False) -> np.ndarray:
    """A uniform random permutation pi of range(m) (edges i -> pi[i]); with `derangement`, redrawn
    until it has no fixed point. The paper does not say which it uses: App. A.1 draws "a uniformly
    random permutation", while §9's lower bound counts loop-free pairs N = m(m-1) and §7.3's task
    rejects s = q."""
    while True:
        perm = gen.permutation(m)
        if not derangement or not (perm == np.arange(m)).any():
            return perm


def permutation_edges(perm: np.ndarray) -> np.ndarray:
    """The edge list (m, 2) of a permutation graph: rows (i, pi(i))."""
    return np.stack([np.arange(len(perm)), perm], axis=1)


def regular_graph(m: int, r: int, gen: np.random.Generator, max_tries: int = 1000) -> np.ndarray:
    """A directed r-regular graph (App. A.3): the union of r random perfect matchings without
    self-loops or repeated edges, each layer drawn as a random permutation avoiding the forbidden
    targets (restarted on failure). Returns the edge list (m r, 2), sorted by source."""
    if not 1 <= r < m:
        raise ValueError(f"r={r} must be in [1, m-1] for m={m}")
    taken = np.zeros((m, m), dtype=bool)
    np.fill_diagonal(taken, True)
    layers = []
    for _ in range(r):
        for _ in range(max_tries):
            perm = np.empty(m, dtype=np.int64)
            free = np.ones(m, dtype=bool)
            ok = True
            for i in gen.permutation(m):
                options = np.flatnonzero(free & ~taken[i])
                if options.size == 0:
                    ok = False
                    break
                perm[i] = gen.choice(options)
                free[perm[i]] = False
            if ok:
                break
        else:
            raise RuntimeError(f"could not draw layer {len(layers) + 1} of an r={r} regular graph on m={m}")
        taken[np.arange(m), perm] = True
        layers.append(perm)
    edges = np.concatenate([np.stack([np.arange(m), p], axis=1) for p in layers])
    return edges[np.lexsort((edges[:, 1], edges[:, 0]))]


def hub_graph(m: int, r: int, hub_degree: int, gen: np.random.Generator) -> np.ndarray:
    """A skewed graph: an r-regular graph plus extra out-edges from vertex 0 so that its
    out-degree is `hub_degree` (Delta = hub_degree), for the skew condition (33)."""
    edges = regular_graph(m, r, gen)
    have = set(edges[edges[:, 0] == 0, 1].tolist())
    extra = [j for j in gen.permutation(np.arange(1, m)).tolist() if j not in have][: max(hub_degree - r, 0)]
    edges = np.concatenate([edges, np.array([[0, j] for j in extra], dtype=np.int64).reshape(-1, 2)])
    return edges[np.lexsort((edges[:, 1], edges[:, 0]))]


def degrees(edges: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(out-degrees, in-degrees) of an edge list on m vertices."""
    return np.bincount(edges[:, 0], minlength=m), np.bincount(edges[:, 1], minlength=m)


def adjacency(edges: np.ndarray, m: int) -> np.ndarray:
    """The boolean m x m adjacency matrix (row: source, column: target)."""
    a = np.zeros((m, m), dtype=bool)
    a[edges[:, 0], edges[:, 1]] = True
    return a


def sample_contexts(perm: np.ndarray, n: int, ell: int, rho: float, gen: np.random.Generator) -> np.ndarray:
    """n contexts of ell distinct vertices with target-in-context rate rho (App. A.1): a uniform
    ell-subset S; each position is selected with probability rho (a Binomial(ell, rho) count and a
    uniform subset); in a random order, every selected source whose target pi(i) is not in S has
    a random other position j != i overwritten by pi(i). Vectorised over contexts. Shape (n, ell)."""
    m = len(perm)
    if not 2 <= ell <= m:
        raise ValueError(f"ell={ell} must be in [2, m={m}]")
    ctx = np.argsort(gen.random((n, m)), axis=1)[:, :ell]
    selected = gen.random((n, ell)) < rho
    order = np.argsort(gen.random((n, ell)), axis=1)
    rows = np.arange(n)
    for step in range(ell):
        p = order[:, step]
        src = ctx[rows, p]
        tgt = perm[src]
        need = selected[rows, p] & ~(ctx == tgt[:, None]).any(axis=1)
        # a random position other than p: draw from ell - 1 slots and skip p
        j = gen.integers(0, ell - 1, size=n)
        j = j + (j >= p)
        ctx[rows[need], j[need]] = tgt[need]
    return ctx
