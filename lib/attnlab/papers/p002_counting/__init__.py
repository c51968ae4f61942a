"""Paper 002: Understanding Counting in Small Transformers: The Interplay between Attention and
Feed-Forward Layers (Behrens, Biggio, Zdeborová).

Each module listed in EXPERIMENT_MODULES defines `EXPERIMENTS`; BOOK_ORDER is the order of the
chapters in the book, which the registry, the toc and the overview follow.
"""

EXPERIMENT_MODULES = (
    "exp_task",           # the histogram task and its samplers
    "exp_constructions",  # d = T constructions of App. A and the readout (Fig. 8)
    "exp_bounds",         # mutual coherence, Welch bound, the d < T bounds of §5.2 / App. B.2
    "exp_binary",         # softmax + binary embeddings (§5.2, App. B.3)
)

BOOK_ORDER = (
    "histogram-task",
    "constructions-d-equals-T",
    "coherence-bounds",
    "softmax-binary-embeddings",
)
