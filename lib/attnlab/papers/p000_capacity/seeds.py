"""Seeds of the trained chapters (issue 27): a `seed` offset that moves every seed of a chapter, and
the runs split by seed, so that each trained row is judged over seeds (`ClaimsTable.add_seeds`).

A chapter trains seeds `seed`, `seed + 1`, ..., `seed + seeds - 1` as replicas of one program; a
unit's store key names its own seed, so the default offset 0 keeps every stored key."""

from __future__ import annotations

from typing import Callable, Iterable

from attnlab.core.params import SEED

SEED_PARAM = SEED.described("the first seed: the run trains seeds seed, seed + 1, ..., seed + seeds - 1 "
                                  "(each its own graph, embeddings, data and initialisation)")


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
