"""Explicit QK weights of the paper's constructions, and their exact evaluation (float64).

* Construction I (§4, Algorithm 3, Theorem B.1): one-hot inputs, one head, W_Q = P_pi W_sig.
* Construction II (Algorithm 1, Theorem 4.1 = B.2): Gaussian unit-norm X, h heads, each head owns
  a block of sources V_k and their targets T_k = pi(V_k); W^(k) = X^T W'^(k) (de-embedding).
* Construction III (Algorithm 4, Theorem B.5): any X, blocks of size <= B, X_inv = X^T / mu.
* Construction IV (Algorithm 5, Lemma B.8, Theorem B.9): any graph, one matching per head, found
  by a bipartite Delta-edge-colouring (Konig) cut into chunks of <= d_model edges.
* Algorithm 2 (Theorem 8.1) uses the weights of Construction II with a per-head softmax over the
  context and a sum over heads (`softmax_sum`).

All of them are one `QKConstruction`: per-head (W_Q^(k), W_K^(k)) in R^{d x d_k}, a threshold, and
the matching each head serves. Scores are S^(k)_ij = (x_i W_Q^(k)) . (x_j W_K^(k)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tasks import adjacency, degrees, permutation_edges


@dataclass(frozen=True)
class QKConstruction:
    """h heads of width d_k. W_Q, W_K: (h, d_model, d_k). sources[k][a] -> targets[k][a] is the
    matching head k serves; tau the global threshold."""

    W_Q: np.ndarray
    W_K: np.ndarray
    tau: float
    sources: tuple[np.ndarray, ...]
    targets: tuple[np.ndarray, ...]

    @property
    def h(self) -> int:
        return self.W_Q.shape[0]

    @property
    def d_k(self) -> int:
        return self.W_Q.shape[2]

    @property
    def D_K(self) -> int:
        return self.h * self.d_k

    @property
    def n_params(self) -> int:
        """Parameters of the QK channel: 2 d_model D_K, plus the threshold (§9)."""
        return int(self.W_Q.size + self.W_K.size + 1)


# --- signatures -------------------------------------------------------------------------------

def rademacher_signatures(m: int, d_k: int, gen: np.random.Generator) -> np.ndarray:
    """W_sig in {+-1}^{m x d_k}, i.i.d. Rademacher (§4, Algorithm 1 step 5), float64."""
    return gen.choice(np.array([-1.0, 1.0]), size=(m, d_k))


def bernoulli_signatures(m: int, d_k: int, p: float, gen: np.random.Generator) -> np.ndarray:
    """W_sig in {0,1}^{m x d_k}, i.i.d. Bernoulli(p) (Algorithm 3, Algorithm 4), float64."""
    return (gen.random((m, d_k)) < p).astype(np.float64)


def rademacher_tau(d_k: int) -> float:
    """tau = d_k / 2 (§4, Algorithm 1)."""
    return d_k / 2


def bernoulli_tau(d_k: int, p: float) -> float:
    """tau = (p + p^2)/2 d_k, halfway between the means p d_k and p^2 d_k (Algorithm 3)."""
    return (p + p * p) / 2 * d_k


# --- building -------------------------------------------------------------------------------

def from_matchings(sources, targets, W_sig: np.ndarray, X_inv: np.ndarray, tau: float) -> QKConstruction:
    """Head k: template rows W'_Q[s] = w_{pi_k(s)} (s in V_k), W'_K[t] = w_t (t in T_k), zero
    elsewhere; then W^(k) = X_inv W'^(k). X_inv: (d_model, m) (X^T or X^T/mu), None for one-hot (I)."""
    sources = tuple(np.asarray(s, dtype=np.int64) for s in sources)
    targets = tuple(np.asarray(t, dtype=np.int64) for t in targets)
    for s, t in zip(sources, targets):
        if len(s) != len(t) or len(set(s.tolist())) != len(s) or len(set(t.tolist())) != len(t):
            raise ValueError("each head must serve a matching: distinct sources, distinct targets")
    if X_inv is None:  # one-hot inputs: X_inv = I, so W^(k) = W'^(k) (built by scattering rows)
        m = W_sig.shape[0]
        W_Q = np.zeros((len(sources), m, W_sig.shape[1]))
        W_K = np.zeros_like(W_Q)
        for k, (s, t) in enumerate(zip(sources, targets)):
            W_Q[k, s] = W_sig[t]
            W_K[k, t] = W_sig[t]
    else:
        W_Q = np.stack([X_inv[:, s] @ W_sig[t] for s, t in zip(sources, targets)])
        W_K = np.stack([X_inv[:, t] @ W_sig[t] for t in targets])
    return QKConstruction(W_Q, W_K, float(tau), sources, targets)


def one_hot(perm: np.ndarray, W_sig: np.ndarray, tau: float) -> QKConstruction:
    """Construction I / Algorithm 3: x_i = e_i (d_model = m), one head, k_j = w_j, q_i = w_{pi(i)}
    (row i of W_Q is row pi(i) of W_sig). Works for Rademacher or Bernoulli signatures."""
    m = len(perm)
    return from_matchings([np.arange(m)], [np.asarray(perm)], W_sig, None, tau)


def blocks(m: int, h: int) -> list[np.ndarray]:
    """Split range(m) into h consecutive blocks of sizes differing by at most one."""
    if not 1 <= h <= m:
        raise ValueError(f"h={h} must be in [1, m={m}]")
    return [b.astype(np.int64) for b in np.array_split(np.arange(m), h)]


def compressive(perm: np.ndarray, X: np.ndarray, h: int, W_sig: np.ndarray, tau: float | None = None,
                mu: float = 1.0) -> QKConstruction:
    """Algorithm 1 (h = m/d_model gives the theorem's B = d_model; any h gives blocks of size m/h,
    the paper's same-budget comparison), and Algorithm 4 with X_inv = X^T / mu. tau defaults to
    d_k/2 (Rademacher signatures)."""
    srcs = blocks(len(perm), h)
    return from_matchings(srcs, [perm[s] for s in srcs], W_sig, X.T / mu,
                          rademacher_tau(W_sig.shape[1]) if tau is None else tau)


# --- Lemma B.8: matchings of a general graph ------------------------------------------------

def edge_colouring(edges: np.ndarray, m: int) -> np.ndarray:
    """A proper edge colouring of the bipartite incidence graph (sources left, targets right) with
    Delta = max(in, out degree) colours (Konig's line-colouring theorem), by alternating-path swaps.
    Returns one colour in [0, Delta) per edge; edges of one colour form a matching."""
    out_deg, in_deg = degrees(edges, m)
    delta = int(max(out_deg.max(initial=0), in_deg.max(initial=0)))
    # at[node][c] = (other node, edge index); left nodes 0..m-1, right nodes m..2m-1
    at: list[dict[int, tuple[int, int]]] = [dict() for _ in range(2 * m)]
    colour = np.full(len(edges), -1, dtype=np.int64)
    for e, (i, j) in enumerate(edges.tolist()):
        u, v = i, m + j
        a = next(c for c in range(delta) if c not in at[u])
        b = next(c for c in range(delta) if c not in at[v])
        if a not in at[v]:
            b = a
        else:
            # swap colours a <-> b on the path from v that starts with colour a; it cannot reach u
            path, node, c = [], v, a
            while c in at[node]:
                nxt, idx = at[node][c]
                path.append((node, nxt, idx, c))
                node, c = nxt, (b if c == a else a)
            for x, y, idx, c in path:
                del at[x][c], at[y][c]
            for x, y, idx, c in path:
                c2 = b if c == a else a
                at[x][c2] = (y, idx)
                at[y][c2] = (x, idx)
                colour[idx] = c2
            b = a
        at[u][b] = (v, e)
        at[v][b] = (u, e)
        colour[e] = b
    return colour


def equalise_colouring(edges: np.ndarray, colour: np.ndarray, k: int) -> np.ndarray:
    """A proper colouring with k >= (colours used) classes whose sizes differ by at most one (de
    Werra): repeatedly swap an alternating path with one more edge of the largest class than of the
    smallest. Used for Corollary B.10's h0 = ceil(m'/d) heads."""
    colour = colour.copy()
    if len(colour) and colour.max() >= k:
        raise ValueError(f"k={k} is smaller than the number of colours used ({colour.max() + 1})")
    while True:
        sizes = np.bincount(colour, minlength=k)
        big, small = int(sizes.argmax()), int(sizes.argmin())
        if sizes[big] - sizes[small] <= 1:
            return colour
        sel = np.flatnonzero((colour == big) | (colour == small))
        # components of the union of two matchings: paths and even cycles; find one with more `big`
        nbr: dict[tuple[str, int], list[int]] = {}
        for e in sel.tolist():
            nbr.setdefault(("s", int(edges[e, 0])), []).append(e)
            nbr.setdefault(("t", int(edges[e, 1])), []).append(e)
        seen: set[int] = set()
        for e0 in sel.tolist():
            if e0 in seen:
                continue
            comp, stack = [], [e0]
            seen.add(e0)
            while stack:
                e = stack.pop()
                comp.append(e)
                for key in (("s", int(edges[e, 0])), ("t", int(edges[e, 1]))):
                    for f in nbr[key]:
                        if f not in seen:
                            seen.add(f)
                            stack.append(f)
            nb = sum(colour[e] == big for e in comp)
            if nb > len(comp) - nb:
                for e in comp:
                    colour[e] = small if colour[e] == big else big
                break
        else:  # pragma: no cover - impossible when sizes differ by two or more
            raise RuntimeError("no alternating path found")


def matchings(edges: np.ndarray, m: int, d_model: int, equal_heads: int | None = None) -> list[np.ndarray]:
    """Lemma B.8: partition the edges into H <= ceil(m'/d) + Delta matchings of <= d_model edges
    (a Delta-edge-colouring, each colour class cut into chunks). With `equal_heads` = k, instead k
    matchings from an equalised k-colouring (Cor. B.10 with k = ceil(m'/d) >= Delta). Each matching
    is an index array into `edges`."""
    colour = edge_colouring(edges, m)
    if equal_heads is not None:
        colour = equalise_colouring(edges, colour, equal_heads)
        out = [np.flatnonzero(colour == c) for c in range(equal_heads)]
        if max(len(x) for x in out) > d_model:
            raise ValueError(f"{equal_heads} equal matchings have {max(len(x) for x in out)} > d_model edges")
        return out
    out = []
    for c in range(int(colour.max(initial=-1)) + 1):
        idx = np.flatnonzero(colour == c)
        out += [idx[a: a + d_model] for a in range(0, len(idx), d_model)]
    return out


def general_graph(edges: np.ndarray, X: np.ndarray, W_sig: np.ndarray, equal_heads: int | None = None,
                  tau: float | None = None, block: int | None = None) -> QKConstruction:
    """Algorithm 5: one head per matching of Lemma B.8 (matchings of at most `block` edges, the
    paper's block = d_model), shared Rademacher signatures, W^(k) = X^T W'^(k), tau = d_k / 2."""
    m, d = X.shape
    parts = matchings(edges, m, block or d, equal_heads)
    return from_matchings([edges[p, 0] for p in parts], [edges[p, 1] for p in parts], W_sig, X.T,
                          rademacher_tau(W_sig.shape[1]) if tau is None else tau)


# --- evaluation -------------------------------------------------------------------------------

def head_scores(c: QKConstruction, X: np.ndarray | None, k: int, rows=slice(None), cols=slice(None)) -> np.ndarray:
    """S^(k) restricted to sources `rows` and targets `cols` (float64); X None: one-hot inputs."""
    if X is None:
        return c.W_Q[k][rows] @ c.W_K[k][cols].T
    return (X[rows] @ c.W_Q[k]) @ (X[cols] @ c.W_K[k]).T


def max_scores(c: QKConstruction, X: np.ndarray | None) -> np.ndarray:
    """S^max = max over heads of S^(k) on all m x m ordered pairs (computed head by head)."""
    out = head_scores(c, X, 0)
    for k in range(1, c.h):
        np.maximum(out, head_scores(c, X, k), out=out)
    return out


def separation(S: np.ndarray, truth: np.ndarray, tau: float) -> dict:
    """Exact recovery on the full vertex set: truth is a boolean m x m adjacency (or a permutation).
    Returns min true score, max non-edge score, false positives / negatives at tau, `exact`
    (every edge > tau and every non-edge < tau, strict), and the gap min true - max false."""
    if truth.ndim == 1:
        truth = adjacency(permutation_edges(truth), len(truth))
    t, f = S[truth], S[~truth]
    out = {"min_true": float(t.min()), "max_false": float(f.max()),
           "false_pos": int((f >= tau).sum()), "false_neg": int((t <= tau).sum())}
    out["exact"] = out["false_pos"] == 0 and out["false_neg"] == 0
    out["gap"] = out["min_true"] - out["max_false"]
    return out


def softmax_sum(c: QKConstruction, X: np.ndarray, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 2 on contexts (n, ell): per head L = S^(k)/sqrt(d_k), p^(k) = softmax over the
    context (incl. j = i), A = sum_k p^(k). Returns (A, P) with P the per-head masses (h, n, ell, ell).
    Each head's full m x m score matrix is computed once and gathered per context."""
    P = np.empty((c.h,) + contexts.shape + (contexts.shape[1],))
    rows, cols = contexts[:, :, None], contexts[:, None, :]
    for k in range(c.h):
        L = head_scores(c, X, k)[rows, cols] / np.sqrt(c.d_k)
        L -= L.max(axis=2, keepdims=True)
        E = np.exp(L)
        P[k] = E / E.sum(axis=2, keepdims=True)
    return P.sum(axis=0), P


def owner_head(c: QKConstruction, m: int) -> np.ndarray:
    """k(i): the head whose V_k holds source i (-1 if none)."""
    own = np.full(m, -1, dtype=np.int64)
    for k, s in enumerate(c.sources):
        own[s] = k
    return own


def context_labels(contexts: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """y_pq = 1 iff (v_p, v_q) is an edge, for every ordered pair of each context (n, ell, ell)."""
    if truth.ndim == 1:
        return truth[contexts][:, :, None] == contexts[:, None, :]
    return truth[contexts[:, :, None], contexts[:, None, :]]


def micro_f1(pred: np.ndarray, y: np.ndarray) -> float:
    """Micro-F1 over all ordered pairs of all contexts (App. A.1)."""
    tp = float((pred & y).sum())
    fp = float((pred & ~y).sum())
    fn = float((~pred & y).sum())
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0
