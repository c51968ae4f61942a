import itertools

import torch

from .tasks import lookup_table_task, paper_batches


def test_paper_batches_from_a_start_are_the_stream_from_that_batch_on():
    tokens, targets = lookup_table_task(5, 2, 0)
    whole = list(itertools.islice(paper_batches(tokens, targets, 4, 3, 7), 14))
    for start in (0, 2, 3, 7, 11):
        later = list(itertools.islice(paper_batches(tokens, targets, 4, 3, 7, start=start), 14 - start))
        assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(later, whole[start:]))
