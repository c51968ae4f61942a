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
    "exp_phase",          # phase diagrams over (d, p): Figs. 1, 2, 10, 11
    "exp_slices",         # the three key (d, p) slices of §5.1
    "exp_bos_introspection",  # Figs. 3, 15
    "exp_inventory",      # Figs. 4, 5, 9
    "exp_svd",            # Fig. 6
    "exp_entangled",      # Fig. 7
    "exp_random_embeddings",  # Fig. 12
    "exp_variants",       # Figs. 13, 14 (T = 64, L = 15)
)

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
