"""One plotting style for the whole book, close to the papers' matplotlib defaults."""

from __future__ import annotations

import matplotlib.pyplot as plt

PAPER_COLORS = {"ours": "tab:blue", "bound": "tab:orange", "previous": "tab:green", "random": "black",
                "paper": "tab:gray", "mlp": "tab:red"}


def style() -> None:
    """Apply the book's style (call once per chapter)."""
    plt.rcParams.update({"figure.figsize": (6.4, 4.0), "figure.dpi": 90, "axes.grid": True,
                         "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
                         "legend.frameon": False, "font.size": 10})


def caption(ax, text: str) -> None:
    """Put the paper's figure number and a one-line caption under the axes title."""
    ax.set_title(text, fontsize=10)
