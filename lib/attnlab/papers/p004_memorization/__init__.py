"""Paper 004: Memorization in Attention-only Transformers (Dana, Pydi, Chevaleyre, AISTATS 2025).

Its chapters are the modules of `results/` (one per chapter; BOOK_ORDER is the paper's
order, which the registry, the toc and the overview follow).
"""

ID = "004-memorization"
TITLE = "Memorization in Attention-only Transformers"
AUTHORS = "Léo Dana, Muni Sreenivas Pydi, Yann Chevaleyre"
VENUE = 'AISTATS 2025'
URL = "https://arxiv.org/abs/2411.10115"

BOOK_ORDER = (
    "setup-formalism",
    "props1-3-rank-bottleneck",
    "thm1-exact-construction",
    "lemma2-attention-rank",
    "thm1-eps-approximate",
    "thm2-kl-upper-bound",
    "table1-capacity-bounds",
    "fig1a-accuracy-vs-heads",
    "fig1b-accuracy-vs-head-dim",
    "fig2a-accuracy-vs-dim",
    "fig3-aot-vs-mlp",
    "fig4-small-dimension",
    "figs5-7-larger-dimension",
    "figs8-10-deeper",
)
