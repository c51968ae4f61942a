"""Paper 004: Memorization in Attention-only Transformers (Dana, Pydi, Chevaleyre, AISTATS 2025).

Each module listed in EXPERIMENT_MODULES defines `EXPERIMENTS`; BOOK_ORDER is the order of the
chapters in the book (the paper's order), which the registry, the toc and the overview follow.
"""

EXPERIMENT_MODULES = (
    "experiments",      # Theorem 1 construction, Fig. 1a/2b, Table 1
    "exp_theory",       # setup and formalism, Propositions 1-3, Lemmas 2-3, Theorem 1 with eps > 0
    "exp_theorem2",     # Theorem 2 (KL upper bound), Fig. 4 (Exp. 6)
    "exp_scaling",      # Figs. 1b, 2a, 3 (Exps. 2, 3, 5) and Figs. 5-7 (App. B.1)
    "exp_depth",        # Figs. 8-10 (App. B.2)
)

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
