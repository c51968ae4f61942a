"""Paper 001: Positional Attention: Expressivity and Learnability of Algorithmic Computation (Back de Luca, Giapitzakis, Yang, Veličković, Fountoulakis).

Its chapters are the modules of `results/` (one per chapter; BOOK_ORDER is the paper's
order, which the registry, the toc and the overview follow).
"""

ID = "001-positional"
TITLE = "Positional Attention: Expressivity and Learnability of Algorithmic Computation"
AUTHORS = "Artur Back de Luca, George Giapitzakis, Shenghao Yang, Petar Veličković, Kimon Fountoulakis"
VENUE = "ICML 2025"
URL = "https://arxiv.org/abs/2410.01686"

BOOK_ORDER: tuple[str, ...] = (
    "parallel-algorithms",
    "architecture",
    "pcoc-compiler",
    "benes-routing",
    "hardmax-softmax-patterns",
)
