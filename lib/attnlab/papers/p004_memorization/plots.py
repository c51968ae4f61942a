"""Figure helpers shared by paper 004's chapters. They draw on matplotlib axes and are imported
from notebooks only, never from the headless experiment path.

The paper's values (the authors' released data, `paper`) are drawn in grey beside ours, as in the
Fig. 1a chapter: grey markers on a thin line, one marker shape per curve when several share a
panel, each labelled at its last point. `plot_aot_mlp` and `paper_aot_mlp` draw the AoT against
the 1-head + MLP model (Figs. 3 and 7).
"""

from __future__ import annotations

from attnlab.core.plotting import PAPER_COLORS

GREY = PAPER_COLORS["paper"]
MARKERS = ("s", "^", "D", "v", "P")
FULL_COLORS = ("tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")  # this code's paper-scale run


def paper_curve(ax, x, y, label: str | None = None, marker: str = "s", ls: str = "--",
                end_label: str | None = None):
    """One curve of the paper's values in grey (markers on a thin line); end_label is written after
    its last point. Returns the line."""
    x, y = list(x), list(y)
    line, = ax.plot(x, y, ls=ls, marker=marker, ms=4, lw=1, color=GREY, alpha=0.9, label=label)
    if end_label:
        ax.annotate(end_label, (x[-1], y[-1]), xytext=(4, 0), textcoords="offset points", fontsize=7,
                    color=GREY, va="center", ha="left")
    return line


def paper_curves(ax, x, curves: dict, label: str, ls: str = "--", end: str = "d = {}") -> None:
    """Several curves of the paper in grey, {key: values} against `x` (a list, or key -> list), one
    marker each and `end.format(key)` after each; the legend gets one entry, `label`."""
    for k, (key, y) in enumerate(curves.items()):
        paper_curve(ax, x(key) if callable(x) else x, y, label=label if k == 0 else None,
                    marker=MARKERS[k % len(MARKERS)], ls=ls, end_label=end.format(key))


def plot_aot_mlp(ax, sweep: dict, marker_mlp: str = "o", marker_aot: str = "s", what: str = "") -> None:
    """Figs. 3 and 7: per d of a `sweeps.sweep_aot_mlp` result, the 1-head + MLP model (solid) and
    the AoT (dashed) against the sweep's parameter axis, one colour per d. what: a prefix of the
    legend labels (e.g. "N = 70: ")."""
    for i, (d, v) in enumerate(sweep["per_d"].items()):
        color = f"C{i}"
        ax.plot(v["params"], v["mlp"], f"{marker_mlp}-", color=color, label=f"{what}MLP, d = {d}")
        ax.plot(v["params"], v["aot"], f"{marker_aot}--", color=color, label=f"{what}AoT, d = {d}")
    ax.set(xlabel="number of parameters", ylabel="accuracy")


def paper_aot_mlp(ax, H: list[int], aot: dict, mlp: dict, axis, N: int) -> None:
    """The paper's Fig. 3 or Fig. 7 in grey: per d, the MLP model (solid) and the AoT (dashed)
    against the figure's parameter axis `axis(d, H, N)` (`models.fig3_parameter_axis` or
    `models.fig7_parameter_axis`), one marker per d, labelled at the end of the AoT curve."""
    for k, d in enumerate(aot):
        x = [axis(d, h, N) for h in H]
        m = MARKERS[k % len(MARKERS)]
        paper_curve(ax, x, mlp[d], marker=m, ls="-", label=f"paper (N = {N}), MLP" if k == 0 else None)
        paper_curve(ax, x, aot[d], marker=m, ls="--", label=f"paper (N = {N}), AoT" if k == 0 else None,
                    end_label=f"d = {d}")
    ax.set(xlabel="number of parameters", ylabel="accuracy")
