"""Paper 000: A Capacity-Based Rationale for Multi-Head Attention (Adler).

Its chapters are the modules of `results/` (one per chapter; BOOK_ORDER is the paper's
order, which the registry, the toc and the overview follow).
"""

ID = "000-capacity"
TITLE = "A Capacity-Based Rationale for Multi-Head Attention"
AUTHORS = "Micah Adler"
VENUE = "arXiv preprint, 2025"
URL = "https://arxiv.org/abs/2509.22840"

BOOK_ORDER: tuple[str, ...] = (
    "construction-one-hot",
    "construction-compressive",
    "noise-budget",
    "softmax-construction",
    "general-embeddings",
    "lower-bounds",
)
