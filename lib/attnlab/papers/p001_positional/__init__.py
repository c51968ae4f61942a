"""Paper 001: Positional Attention: Expressivity and Learnability of Algorithmic Computation (Back de Luca, Giapitzakis, Yang, Veličković, Fountoulakis).

Its chapters are the modules of `results/` (one per chapter; BOOK_ORDER is the paper's
order, which the registry, the toc and the overview follow).
"""

ID = "001-positional"
TITLE = "Positional Attention: Expressivity and Learnability of Algorithmic Computation"
AUTHORS = "Artur Back de Luca, George Giapitzakis, Shenghao Yang, Petar Veličković, Kimon Fountoulakis"
VENUE = "ICML 2025"
URL = "https://arxiv.org/abs/2410.01686"

BOOK_ORDER: tuple[str, ...] = (  # the paper's order: §4-§7, then the appendices A-G
    "architecture",  # §4, Eqs. 1-5, Fig. 1
    "pcoc-compiler",  # §5, Theorem 5.1; App. B.4, Lemma B.2
    "generalization-bound",  # §6, Theorem 6.1; App. C
    "sample-size",  # §7.1, Fig. 2; App. D.1.3, Figs. 14-18
    "k-hop",  # §7.1, §7.2, App. D.2, Figs. 3, 5, 29, 30
    "ood-scale",  # §7.2, Fig. 4
    "mixed-type",  # §7.3, App. D.3, Fig. 6, Figs. 31-33
    "parallel-algorithms",  # App. A.3, Fig. 7
    "benes-routing",  # App. A.4, Fig. 8; App. B.2, Lemma B.1
    "hardmax-softmax-patterns",  # App. B.3, Lemma B.3; App. B.5, Remark B.6
    "input-length",  # App. D.1.2, Figs. 9-13
    "variable-length",  # App. D.1.4, Fig. 19
    "compact-standard",  # App. D.1.5, Figs. 20-21
    "positional-encodings",  # App. D.1.6, Figs. 22-24
    "ablations",  # App. D.1.7, Figs. 25-26
    "finetune-values",  # App. D.1.8, Table 1
    "gnn-baselines",  # App. D.1.9, Table 2
    "accuracy-metrics",  # App. D.1.10, Figs. 27-28
    "gpt2-comparison",  # App. D.3.4, Fig. 34
    "ood-sampling",  # App. E, Fig. 35
    "attention-maps",  # App. F, Figs. 36-37
    "discrepancy-bound",  # App. G
)
