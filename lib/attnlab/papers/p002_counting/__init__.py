"""Paper 002: Understanding Counting in Small Transformers: The Interplay between Attention and
Feed-Forward Layers (Behrens, Biggio, Zdeborová).

Its chapters are the modules of `results/` (one per chapter; BOOK_ORDER is the paper's
order, which the registry, the toc and the overview follow).
"""

ID = "002-counting"
TITLE = "Understanding Counting in Small Transformers: The Interplay between Attention and Feed-Forward Layers"
AUTHORS = "Freya Behrens, Luca Biggio, Lenka Zdeborová"
VENUE = 'ICML 2025 (as "Counting in Small Transformers: The Delicate Interplay between Attention and Feed-Forward Layers")'
URL = "https://arxiv.org/abs/2407.11542"

BOOK_ORDER = (
    "histogram-task",
    "constructions-d-equals-T",
    "coherence-bounds",
    "softmax-binary-embeddings",
    "phase-diagrams-softmax",
    "phase-diagrams-no-softmax",
    "key-slices",
    "bos-introspection",
    "inventory-introspection",
    "singular-values",
    "entangled-embeddings",
    "random-embeddings",
    "phase-diagrams-T64-L15",
)
