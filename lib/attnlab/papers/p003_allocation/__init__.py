"""Paper 003: Allocation of Parameters in Transformers (anonymous).

Its chapters are the modules of `results/` (one per chapter; BOOK_ORDER is the paper's
order, which the registry, the toc and the overview follow).
"""

ID = "003-allocation"
TITLE = "Allocation of Parameters in Transformers"
AUTHORS = "Anonymous (under double-blind review)"
VENUE = "preprint under review"
URL = ""  # an anonymous submission under review: no public version to link (2506.05678 is Jiang et al., the source of Fig. 8)

BOOK_ORDER: tuple[str, ...] = (
    "thm41-tradeoff-bound",
    "allocation-rule",
    "delta-fits-construction",
    "fig2-ngram-heads",
    "softmax-saturation",
    "figs3-10-softmax-jacobian",  # Figs. 3 and 10: the softmax Jacobian and logits norm of a pretrained head
    "fig4-head-compression",  # Corollary 5.1 and Fig. 4: SVD-initialised students of one head
    "figs5-9-lm-heads",  # Figs. 5 and 9: a 6-layer LM's loss against head dimension and number of heads
    "fig6-lm-head-compression",  # Fig. 6: SVD-initialised students of one head of a trained LM
    "fig7-induction-heads",  # Fig. 7: the induction-head task against the number of heads
    "fig8-memory-kernels",
)
