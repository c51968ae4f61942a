"""Plot helpers shared by the paper-001 chapters: the paper's values drawn beside ours.

`paper_curve` draws one of the paper's median curves (the medians of the authors' released runs
in `paper.py`: Fig. 4 against the OOD scale factor c in chapters ood-scale and ablations, Figs. 6
and 31-33 in chapter mixed-type) as a thin line with crosses, dashed unless told otherwise, in its
architecture's colour and lighter than our curves; `paper_handle` is its legend entry.

Imported only from notebooks (it imports matplotlib); the experiment code never imports it.
"""

from __future__ import annotations

from matplotlib.lines import Line2D

from .paper import OOD_SCALES

STYLE = dict(lw=0.8, marker="x", ms=5, mew=1.2, alpha=0.55)


def paper_curve(ax, values, color: str, x=OOD_SCALES, label: str | None = None, ls: str = "--") -> None:
    """The paper's medians `values` at `x` (default: the scale factors c = 1 … 10)."""
    if len(values) != len(x):
        raise ValueError(f"{len(values)} values for {len(x)} points")
    ax.plot(list(x), list(values), ls=ls, color=color, label=label, **STYLE)


def paper_handle(label: str = "paper, median (released runs)") -> Line2D:
    """A legend entry for the paper's curves (drawn grey: each takes its architecture's colour)."""
    return Line2D([], [], ls="--", color="grey", label=label, **STYLE)
