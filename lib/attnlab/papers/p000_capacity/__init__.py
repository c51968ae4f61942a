"""Paper 000: A Capacity-Based Rationale for Multi-Head Attention (Adler).

Citation: Micah Adler, "A Capacity-Based Rationale for Multi-Head Attention", arXiv:2509.22840
(2025; v1 titled "On the Capacity of Self-Attention"). No code was released; this package is
its only implementation.

Its chapters are the modules of `results/` (one per chapter; BOOK_ORDER is the paper's
order, which the registry, the toc and the overview follow).
"""

ID = "000-capacity"
TITLE = "A Capacity-Based Rationale for Multi-Head Attention"
AUTHORS = "Micah Adler"
VENUE = "arXiv preprint, 2025"
URL = "https://arxiv.org/abs/2509.22840"

BOOK_ORDER: tuple[str, ...] = (
    "construction-one-hot",      # §4, App. B.1
    "construction-compressive",  # §4, App. B.2
    "noise-budget",              # §5
    "softmax-construction",      # §8
    "lower-bounds",              # §9
    "general-embeddings",        # App. B.3
    "general-graphs",            # App. B.4
    "fig1-f1-vs-dk",             # §6, Figs. 1 and 9 (trained)
    "capacity-law",              # §6.1, Figs. 2, 3, 8, 10, Tables 1-2 (refits + trained mini-sweep)
    "fixed-compression",         # §6.1, Fig. 4 (the lambda = 8 diagonal)
    "fig5-softmax",              # §7.1, Fig. 5 (softmax variant, trained)
    "fig6-value-channel",        # §7.2, Fig. 6 (value channel, trained)
    "fig7-pretrained-block",     # §7.3, Fig. 7 (pre-LN block, frozen embeddings; offline substitute)
    "figs11-13-regular-graphs",  # App. A.3, Figs. 11-13 (dense r-regular graphs, trained)
    "footprint",                 # App. C
)
