"""The association task of paper 004's experiments (App. B): random look-up tables on S-grams.

Every sequence t in [N]^S has one correct next token g(t), drawn uniformly at random
(Assumption 1 with a uniform prior). The experiments use S = 2 (bigrams), N^2 sequences.
"""

from __future__ import annotations

from typing import Iterator

import torch

from attnlab.core.replica import replica_generator
from . import encoders


def lookup_table_task(N: int, S: int = 2, task_seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """All N^S sequences [N^S, S] (lexicographic) and their random targets g(t) [N^S]."""
    if N < 2 or S < 1:
        raise ValueError(f"lookup_table_task needs N >= 2 and S >= 1; got N={N}, S={S}")
    grids = torch.meshgrid(*[torch.arange(N)] * S, indexing="ij")
    tokens = torch.stack([g.reshape(-1) for g in grids], dim=1)
    gen = replica_generator({"task": "lookup", "N": N, "S": S}, task_seed)
    targets = torch.randint(0, N, (N ** S,), generator=gen)
    return tokens, targets


def full_batches(tokens: torch.Tensor, targets: torch.Tensor) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """The whole population as one batch, every step (the CI protocol)."""
    while True:
        yield tokens, targets


def paper_batches(tokens: torch.Tensor, targets: torch.Tensor, batch_size: int, n_batches: int,
                  task_seed: int = 0, start: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """The authors' protocol: a fixed sample of batch_size * n_batches sequences drawn once with
    replacement (uniform prior), reshuffled every epoch and cut into n_batches batches.
    `start`: begin at batch `start` of that stream (the earlier epochs' shuffles are drawn, not
    indexed: a resumed program sees the batches an uninterrupted one sees)."""
    gen = replica_generator({"task": "sample", "n": tokens.shape[0], "bs": batch_size, "nb": n_batches}, task_seed)
    sample = torch.randint(0, tokens.shape[0], (batch_size * n_batches,), generator=gen)
    epoch, skip = divmod(start, n_batches)
    for _ in range(epoch):
        torch.randperm(sample.numel(), generator=gen)
    while True:
        order = sample[torch.randperm(sample.numel(), generator=gen)]
        for i in range(skip, n_batches):
            idx = order[i * batch_size:(i + 1) * batch_size]
            yield tokens[idx], targets[idx]
        skip = 0


def conditional_distribution(N: int, S: int, alpha: float, pi_seed: int, prior: str = "uniform",
                             exponent: float = 1.5):
    """The distribution of Propositions 1-3 and Theorem 1 (eps > 0) over the T = N^S sequences: a prior
    π(t) (uniform, or Zipf with `exponent`) and next-token conditionals π(·|t) ~ Dirichlet(alpha)."""
    T = N**S
    p = encoders.uniform_prior(T) if prior == "uniform" else encoders.zipf_prior(T, exponent, pi_seed)
    return p, encoders.dirichlet_conditionals(T, N, alpha, pi_seed)
