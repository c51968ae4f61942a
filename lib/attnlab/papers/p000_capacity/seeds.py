"""Seeds of the trained chapters (issue 27): a `seed` offset that moves every seed of a chapter, and
the runs split by seed, so that each trained row is judged over seeds (`ClaimsTable.add_seeds`).

A chapter trains seeds `seed`, `seed + 1`, ..., `seed + seeds - 1` as replicas of one program; a
unit's store key names its own seed, so the default offset 0 keeps every stored key."""

from __future__ import annotations

from typing import Callable, Iterable

from attnlab.core.params import Param

SEED_PARAM = Param("seed", "int", "the first seed: the run trains seeds seed, seed + 1, ..., seed + seeds - 1 "
                                  "(each its own graph, embeddings, data and initialisation)", min=0, max=1_000_000)


def seed_range(cfg: dict) -> range:
    """The seeds a config trains."""
    return range(cfg["seed"], cfg["seed"] + cfg["seeds"])


def by_seed(runs: Iterable[dict]) -> dict[int, list[dict]]:
    """The runs of each seed, seeds in increasing order."""
    out: dict[int, list[dict]] = {}
    for r in runs:
        out.setdefault(r["seed"], []).append(r)
    return dict(sorted(out.items()))


def per_seed(runs: Iterable[dict], value: Callable[[list[dict]], float]) -> list[float]:
    """value(the runs of one seed), one per seed in seed order."""
    return [float(value(rr)) for rr in by_seed(runs).values()]


def vote(t, key: str, text: str, *, paper, ours: str, holds: list[bool], tolerance: str, asserted: bool = False,
         source: str = ""):
    """A trained claim whose per-seed outcome is a yes or no on discrete values (a grid point, a head
    count, an order), judged by the seed rule of `ClaimsTable.add_seeds`: reproduced when it holds in
    every seed, fails when it fails in every seed, inconclusive otherwise (the tolerance column says
    in how many seeds it held). `ours`: the per-seed values as the reader should see them."""
    n, k = len(holds), sum(bool(x) for x in holds)
    every = "the seed" if n == 1 else f"each of {n} seeds"
    if k in (0, n):
        return t.add(key, text, paper=paper, ours=ours, holds=k == n, tolerance=f"{tolerance} in {every}",
                     asserted=asserted, source=source)
    return t.inconclusive(key, text, paper=paper, ours=ours, source=source,
                          why=f"{tolerance} in {every}: holds in {k}, fails in {n - k}")
