"""The Beneš network (Defs. A.3–A.4, Fig. 8) and the data-agnostic routing of one MPC round
through it (Lemma B.1, App. B.2).

Conventions. n = 2^k labels 0..n−1; bits are numbered 1..k from the most significant (Def. A.3).
Layers ℓ = 1..2k; the edges between layers ℓ and ℓ+1 join i to i and to i with bit
b(ℓ) = k − |ℓ − k| flipped (Def. A.4), so the 2k − 1 stages flip bits 1, 2, …, k, …, 2, 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def bit_value(k: int, b: int) -> int:
    """The integer value of bit b (1 = most significant) of a k-bit label."""
    return 1 << (k - b)


def hamming_neighbours(x: int, y: int, j: int, k: int) -> bool:
    """x ~_j y (Def. A.3): the k-bit representations differ exactly in bit j (1 = MSB)."""
    return (x ^ y) == bit_value(k, j)


def stage_bit(k: int, layer: int) -> int:
    """b(ℓ) = k − |ℓ − k|: the bit flipped between layers ℓ and ℓ + 1 (ℓ = 1..2k−1)."""
    return k - abs(layer - k)


def edges(k: int) -> list[list[tuple[int, int]]]:
    """The directed edges of Def. A.4, one list per pair of consecutive layers (ℓ = 1..2k−1):
    every (i, j) with j = i or i ~_{k−|ℓ−k|} j, found by testing all pairs (the definition)."""
    n = 1 << k
    return [[(i, j) for i in range(n) for j in range(n) if i == j or hamming_neighbours(i, j, stage_bit(k, l), k)]
            for l in range(1, 2 * k)]


def route_permutation(perm: np.ndarray, k: int) -> np.ndarray:
    """Node-disjoint paths from (1, i) to (2k, perm[i]) through the Beneš network (the looping
    algorithm, recursively on the bits): paths[p, ℓ−1] is packet p's label at layer ℓ."""
    n = 1 << k
    perm = np.asarray(perm, dtype=int)
    if sorted(perm.tolist()) != list(range(n)):
        raise ValueError(f"perm must be a permutation of 0..{n - 1}")
    paths = np.zeros((n, 2 * k), dtype=int)
    paths[:, 0], paths[:, -1] = np.arange(n), perm
    if k == 0:
        return paths[:, :1]

    def rec(packets: list[int], b: int, first: int, last: int) -> None:
        if first + 1 == last:
            return  # one stage (bit k): start and destination differ at most in bit k
        bit = bit_value(k, b)
        start = {p: paths[p, first] for p in packets}
        dest = {p: paths[p, last] for p in packets}
        by_start = {v: p for p, v in start.items()}
        by_dest = {v: p for p, v in dest.items()}
        side: dict[int, int] = {}
        for p0 in packets:  # the looping algorithm: 2-colour the packets so that the two packets of
            if p0 in side:  # an input switch, and the two of an output switch, go to different halves
                continue
            p, h = p0, 0
            while p not in side:
                side[p] = h
                q = by_dest[dest[p] ^ bit]  # shares p's output switch: the other half
                side[q] = 1 - h
                p = by_start[start[q] ^ bit]  # shares q's input switch: back to half h
        for p in packets:
            h = side[p] * bit
            paths[p, first + 1] = (start[p] & ~bit) | h
            paths[p, last - 1] = (dest[p] & ~bit) | h
        for h in (0, 1):
            rec([p for p in packets if side[p] == h], b + 1, first + 1, last - 1)

    rec(list(range(n)), 1, 0, 2 * k - 1)
    return paths


def check_paths(paths: np.ndarray, k: int) -> bool:
    """Every layer holds each label once and every step follows an edge of Def. A.4."""
    n = 1 << k
    for l in range(paths.shape[1]):
        if sorted(paths[:, l].tolist()) != list(range(n)):
            return False
    for l in range(1, 2 * k):
        step = paths[:, l - 1] ^ paths[:, l]
        if not np.all((step == 0) | (step == bit_value(k, stage_bit(k, l)))):
            return False
    return True


# ---------------------------------------------------------------- Lemma B.1: one MPC round

Tuple = tuple[int, int, int, int]  # (source, character, position, destination)


def random_counts(rng: np.random.Generator, k: int, s: int, unit_multiple: bool = True,
                  keep: float = 0.7) -> np.ndarray:
    """A random message-size matrix C[i, j] (tuples from i to j) with row and column sums ≤ s.
    unit_multiple: every entry is 0 or a multiple of 2^{k−1} (App. B.2, assumption 2 as the proof
    uses it); otherwise entries are arbitrary."""
    p = 1 << k
    unit = (1 << (k - 1)) if unit_multiple else 1
    C = np.zeros((p, p), dtype=int)
    for _ in range(s // unit):  # a sum of s/unit random partial permutations, each entry ×unit
        keep_rows = rng.uniform(size=p) < keep
        C[np.arange(p)[keep_rows], rng.permutation(p)[keep_rows]] += unit
    return C


def messages(counts: np.ndarray, rng: np.random.Generator, alphabet: int = 2) -> list[list[Tuple]]:
    """SEND_i for every machine: tuples (i, b, pos, j), b a random character, pos = 0, 1, …"""
    p = counts.shape[0]
    return [[(i, int(rng.integers(alphabet)), pos, j) for j in range(p) for pos in range(counts[i, j])]
            for i in range(p)]


@dataclass
class RoutingTrace:
    """What one simulated MPC round did: the final memories, the per-step loads and the oracle."""

    received: list[list[Tuple]]  # RCVD_i after recombination (sorted by source, position)
    max_received: list[int]  # per step: the most tuples any machine received
    max_half: list[int]  # per step: the fullest half (of s slots) any local computation produced
    oracle: list[list[tuple[int, int]]]  # per step, per machine: (where the first half goes, the second)
    steps: int  # communication steps (2k − 1)


def route_mpc_round(send: list[list[Tuple]], k: int, s: int) -> RoutingTrace:
    """Lemma B.1's data-agnostic simulation of one MPC round on p = 2^k machines with memory 2s.

    Every step is: a local computation that writes each machine's tuples into the two halves of
    its 2s-slot memory, then a communication fixed in advance (first half → itself, second half
    → its Beneš neighbour m = i with the stage's bit flipped), which never reads a destination.
    Fragmentation (stages 1..k−1, bits 1..k−1): keep tuples sorted by (destination, source,
    position), even-indexed ones in the first half. Collection (stages k..2k−1, bits k..1): a
    tuple stays if its destination agrees with i on the stage's bit, else it goes to m.
    Finally each machine sorts what it holds by (source, position)."""
    p = 1 << k
    mem = [sorted(m, key=lambda t: (t[3], t[0], t[2])) for m in send]
    max_received, max_half, oracle = [], [], []
    for stage in range(1, 2 * k):
        bit = bit_value(k, stage_bit(k, stage))
        halves = []
        for i in range(p):  # local computation (may read destinations: it is the machine's own work)
            if stage < k:
                srt = sorted(mem[i], key=lambda t: (t[3], t[0], t[2]))
                first, second = srt[0::2], srt[1::2]
            else:
                first = [t for t in mem[i] if (t[3] & bit) == (i & bit)]
                second = [t for t in mem[i] if (t[3] & bit) != (i & bit)]
            halves.append((first, second))
        max_half.append(max(max(len(a), len(b)) for a, b in halves))
        route = [(i, i ^ bit) for i in range(p)]  # the oracle: depends on (stage, i) only
        oracle.append(route)
        new = [[] for _ in range(p)]
        for i, (first, second) in enumerate(halves):
            new[route[i][0]].extend(first)
            new[route[i][1]].extend(second)
        max_received.append(max(len(m) for m in new))
        mem = new
    received = [sorted(m, key=lambda t: (t[0], t[2])) for m in mem]
    return RoutingTrace(received, max_received, max_half, oracle, 2 * k - 1)


def expected_received(send: list[list[Tuple]]) -> list[list[Tuple]]:
    """RCVD_j: every tuple addressed to j, sorted by (source, position)."""
    p = len(send)
    return [sorted([t for m in send for t in m if t[3] == j], key=lambda t: (t[0], t[2])) for j in range(p)]


def all_count_matrices(k: int, units: int, unit: int | None = None) -> list[np.ndarray]:
    """Every message-size matrix on p = 2^k machines whose entries are multiples of `unit`
    (default 2^{k−1}, assumption 2) with row and column sums ≤ s = units·unit (exhaustive; small p)."""
    import itertools

    p = 1 << k
    unit = (1 << (k - 1)) if unit is None else unit
    rows = [r for r in itertools.product(range(units + 1), repeat=p) if sum(r) <= units]
    out = []

    def rec(prefix: list[tuple[int, ...]], colsum: np.ndarray) -> None:
        if len(prefix) == p:
            out.append(np.array(prefix, dtype=int) * unit)
            return
        for r in rows:
            c = colsum + r
            if c.max() <= units:
                rec(prefix + [r], c)

    rec([], np.zeros(p, dtype=int))
    return out
