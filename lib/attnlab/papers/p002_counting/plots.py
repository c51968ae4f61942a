"""Plots shared by the paper-002 chapters: categorical phase diagrams over (d, p) (Figs. 1,
10-14; `plot_phase_row` draws a row of them from a `sweeps.sweep_grid` result), accuracy
against parameter count (Fig. 2, `plot_params`), and the figures the two phase-diagram chapters
share (`phase_figure`, `params_figure`). Imported from notebooks only (it imports matplotlib).

The paper prints no numbers for its heat maps; what they carry of the paper is its stated
boundaries (`paper.SEC51_REGIME`, `paper.APP_D2_HIGH_STD_VARIANT`, the §5.2 bounds), drawn as
grey dashed boxes (`paper_regions`) and red dashed lines.

Unlike the authors' `pcolor(p + 1, d + 1, values)`, which drops the last row and column and
offsets the cells, every (d, p) of the grid is one cell here, labelled by its value.
"""

from __future__ import annotations

import numpy as np
from matplotlib import patheffects
from matplotlib import pyplot as plt
from matplotlib.lines import Line2D

from . import paper
from .reference import has_softmax
from .sweeps import grids, running_best

PAPER_GREY = "0.7"  # the paper's boundaries on the heat maps (grey, as the paper's values elsewhere)
_BOX = dict(color=PAPER_GREY, lw=2.2, ls=(0, (3, 1.5)),
            path_effects=[patheffects.Stroke(linewidth=3.4, foreground="black"), patheffects.Normal()])


def _boundary(values: list[int], threshold: float) -> float:
    """Cell coordinate of the edge between grid values < threshold and ≥ threshold."""
    return float(np.searchsorted(np.asarray(values), threshold, side="left")) - 0.5


def _t(value, T: int) -> float:
    """A boundary of `paper` in units of the alphabet: "T" is the run's T, a number is itself."""
    return float(T) if value == "T" else float(value)


def paper_regions(variant: str, T: int, field: str = "mean") -> list[tuple]:
    """The paper's stated regions for one model's heat map, as (d_lo, d_hi, p_lo, p_hi, label)
    (half-open, None = unbounded): for accuracy ('mean', 'best', Figs. 1, 10, 13, 14) the §5.1
    regime where its constructions reach 100 % (`paper.SEC51_REGIME`); for 'std' (Fig. 11) the
    p, d < T regime of App. D.2 where bos+sftm's runs vary most; for 'diff' (Fig. 12) App. D.3's
    d < T, where learned embeddings beat random ones."""
    if field in ("mean", "best"):
        d_lo, p_lo = paper.SEC51_REGIME[variant]
        p_text = "p ≥ T" if p_lo == "T" else f"p ≥ {p_lo}"
        return [(_t(d_lo, T), None, _t(p_lo, T), None, f"paper §5.1: d ≥ T, {p_text}")]
    if field == "std" and variant == paper.APP_D2_HIGH_STD_VARIANT:
        return [(None, float(T), None, float(T), "paper App. D.2: large std for p, d < T")]
    if field == "diff":
        return [(None, _t(paper.APP_D3_LEARNED_BETTER_BELOW_D, T), None, None, "paper App. D.3: learned > random")]
    return []


def paper_legend_handles(field: str = "mean", bounds: bool = True) -> list:
    """Legend entries for what `plot_phase_row` draws of the paper on a heat map of `field`."""
    what = {"mean": "paper §5.1: its constructions reach 100 %", "best": "paper §5.1: its constructions reach 100 %",
            "std": "paper App. D.2: bos+sftm's runs vary most", "diff": "paper App. D.3: learned > random"}[field]
    handles = [Line2D([], [], **_BOX, label=what)]
    if bounds and field in ("mean", "best"):
        handles.append(Line2D([], [], color="tab:red", lw=1.4, ls=(0, (3, 2)), label="paper §5.2: sufficient d"))
    return handles


def _region_box(ax, d_list: list[int], p_list: list[int], d_lo, d_hi, p_lo, p_hi, label: str = "",
                inset: float = 0.12) -> None:
    """A grey dashed box around the cells with d_lo ≤ d < d_hi and p_lo ≤ p < p_hi (None: no
    limit), inset from the cell edges so that it shows beside the white d = T and p = T lines
    (the label goes to the legend, `paper_legend_handles`)."""
    def span(values, lo, hi):
        a = 0 if lo is None else int(np.searchsorted(np.asarray(values), lo, side="left"))
        b = len(values) if hi is None else int(np.searchsorted(np.asarray(values), hi, side="left"))
        return a, b
    i0, i1 = span(d_list, d_lo, d_hi)
    j0, j1 = span(p_list, p_lo, p_hi)
    if i0 >= i1 or j0 >= j1:
        return  # outside the grid
    x0, x1, y0, y1 = j0 - 0.5 + inset, j1 - 0.5 - inset, i0 - 0.5 + inset, i1 - 0.5 - inset
    ax.plot([x0, x1, x1, x0, x0], [y0, y0, y1, y1, y0], **_BOX)


def phase_heatmap(ax, values: np.ndarray, d_list: list[int], p_list: list[int], *, T: int | None = None,
                  stars: np.ndarray | None = None, dots: np.ndarray | None = None, vmin: float = 0.0,
                  vmax: float = 1.0, cmap: str = "viridis", annotate: bool = True, fmt: str = "{:.0f}",
                  scale: float = 100.0, d_bounds: dict[str, float] | None = None, title: str = "",
                  annot_size: float = 8, regions: list[tuple] | None = None):
    """values [len(d_list), len(p_list)] as a categorical heat map: d up, p right.

    T: white lines at d = T and p = T (between the cells below T and the cells from T on).
    stars / dots: boolean masks (Fig. 1: some run reached 100% / ≥ 99%).
    d_bounds: {label: d or (d, p_from)} dashed lines at theory bounds d ≥ bound (e.g. {"lin": 29}),
    drawn from p = p_from on (a bound that needs p ≥ T) or across the whole width; bounds above
    the grid are skipped.
    regions: the paper's stated regions (`paper_regions`), drawn as grey dashed boxes.
    Cell labels show values × scale. Returns the image (for a colour bar)."""
    values = np.asarray(values, dtype=float)
    if values.shape != (len(d_list), len(p_list)):
        raise ValueError(f"values have shape {values.shape}; expected ({len(d_list)}, {len(p_list)})")
    im = ax.imshow(values, origin="lower", cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(p_list)), [str(p) for p in p_list])
    ax.set_yticks(range(len(d_list)), [str(d) for d in d_list])
    ax.set_xlabel("p (MLP width)")
    ax.set_ylabel("d (embedding dim.)")
    ax.grid(False)
    if annotate:
        mid = (vmin + vmax) / 2
        for i in range(len(d_list)):
            for j in range(len(p_list)):
                v = values[i, j]
                if np.isfinite(v):
                    dark = v < mid if cmap not in ("PuOr", "PuOr_r", "RdBu", "coolwarm") else abs(v) > (vmax - vmin) / 4
                    ax.text(j, i, fmt.format(v * scale), ha="center", va="center", fontsize=annot_size,
                            color="white" if dark else "black")
    if T is not None:
        ax.axvline(_boundary(p_list, T), color="white", lw=1.5)
        ax.axhline(_boundary(d_list, T), color="white", lw=1.5)
    for mask, marker, size in ((stars, "*", 60), (dots, "o", 14)):
        if mask is not None:
            ii, jj = np.nonzero(np.asarray(mask))
            ax.scatter(jj + 0.3, ii + 0.3, marker=marker, s=size, c="white", edgecolors="black", linewidths=0.4)
    for k, (label, bound) in enumerate((d_bounds or {}).items()):
        bound, p_from = bound if isinstance(bound, (tuple, list)) else (bound, None)
        if bound > d_list[-1]:
            continue  # above the grid: nothing to draw
        y = _boundary(d_list, bound)
        x0 = -0.5 if p_from is None else _boundary(p_list, p_from)
        ax.plot([x0, len(p_list) - 0.5], [y, y], color="tab:red", lw=1.4, ls=(0, (3, 2)))
        ax.text(len(p_list) - 0.55, y - 0.05, f"{label}: d ≥ {bound:g}", color="tab:red", fontsize=8,
                va="top", ha="right", bbox=dict(facecolor="white", alpha=0.6, lw=0, pad=0.6))
    for region in regions or ():
        _region_box(ax, d_list, p_list, *region)
    if title:
        ax.set_title(title, fontsize=10)
    return im


def accuracy_vs_params(ax, rows_by_variant: dict[str, list[dict]], colors: dict[str, str] | None = None,
                       floor: float | None = None, title: str = "") -> None:
    """Fig. 2: one point per run (final accuracy against trainable parameters, log x) and the
    running best line per variant. floor: the majority baseline, drawn dotted."""
    colors = colors or {"lin": "tab:blue", "lin+sftm": "tab:blue", "dot": "tab:red", "dot+sftm": "tab:red",
                        "bos": "tab:orange", "bos+sftm": "tab:orange"}
    for v, rows in rows_by_variant.items():
        n = [r["n_params"] for r in rows]
        a = [100 * r["final_accuracy"] for r in rows]
        ax.scatter(n, a, s=10, alpha=0.45, color=colors.get(v))
        nb, best = running_best(rows)
        ax.step(nb, 100 * best, where="post", color=colors.get(v), label=v)
    if floor is not None:
        ax.axhline(100 * floor, color="gray", ls=":", lw=1, label="majority baseline")
    ax.set_xscale("log")
    ax.set_xlabel("trainable parameters")
    ax.set_ylabel("accuracy (%)")
    ax.legend(fontsize=9)
    if title:
        ax.set_title(title, fontsize=10)


def plot_phase_row(axes, sweep: dict, variants, field: str = "mean", bounds_lines: bool = True, title: str = "",
                   paper_lines: bool = True):
    """One heat map per variant of a `sweeps.sweep_grid` result: field 'mean' (Fig. 1, with stars
    and dots), 'best' (Fig. 10) or 'std' (Fig. 11). paper_lines: the paper's stated regions
    (`paper_regions`, grey dashed boxes). Returns the last image (for a colour bar)."""
    im = None
    for ax, v in zip(axes, variants):
        g = grids(sweep, v)
        kw = dict(T=sweep["T"], title=f"{v}{title}")
        if paper_lines:
            kw["regions"] = paper_regions(v, sweep["T"], field)
        if field == "mean":
            kw.update(stars=g["stars"], dots=g["dots"])
        if bounds_lines and field != "std":
            kw["d_bounds"] = {k: tuple(b) if isinstance(b, list) else b for k, b in sweep["bounds"][v].items()}
        if field == "std":
            kw.update(vmin=0.0, vmax=0.3, cmap="magma")
        im = phase_heatmap(ax, g[field], sweep["d_list"], sweep["p_list"], **kw)
    return im


def plot_params(ax, sweep: dict, variants, title: str = "", paper_marks: bool = True) -> None:
    """Fig. 2: final accuracy of every run of a `sweeps.sweep_grid` result against its parameter
    count, running best per variant, majority baseline 2/L. paper_marks: the paper's read-off
    (T = 32, L = 10) of where each running best reaches ≈ 100 % (`paper.FIG2_PARAMS_AT_100`),
    drawn as a horizontal bar at 100 % in the variant's colour, with grey ends."""
    accuracy_vs_params(ax, {v: sweep["rows"][v] for v in variants}, floor=sweep["majority"], title=title)
    if paper_marks:
        from .paper import FIG2_PARAMS_AT_100
        colors = {"lin": "tab:blue", "lin+sftm": "tab:blue", "dot": "tab:red", "dot+sftm": "tab:red",
                  "bos": "tab:orange", "bos+sftm": "tab:orange"}
        for k, v in enumerate(variants):
            lo, hi = FIG2_PARAMS_AT_100[v]
            y = 101.5 + 1.5 * k
            ax.plot([lo, hi] if hi > lo else [lo * 0.95, hi * 1.05], [y, y], color=colors[v], lw=4, alpha=0.6,
                    solid_capstyle="butt")
            ax.plot([lo, hi], [y, y], "|", color="gray", ms=8,
                    label="paper (T = 32): ≈ 100 % at" if k == 0 else None)
        ax.legend(fontsize=9, loc="lower right")


def plot_phase_grid(sweep: dict, variants, field: str = "mean", bounds_lines: bool = True, title: str = "",
                    label: str = "", paper_lines: bool = True):
    """`plot_phase_row` laid out for the page: at most two panels per row (three models: 2 + 1, the
    colour bar in the free slot), 6.8 in wide. Returns the figure."""
    n = len(variants)
    ncols = 1 if n == 1 else 2
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.8, 3.1 * nrows), squeeze=False, constrained_layout=True)
    flat = list(axes.ravel())
    im = plot_phase_row(flat[:n], sweep, variants, field, bounds_lines=bounds_lines, title=title,
                        paper_lines=paper_lines)
    for ax in flat[n:]:
        ax.axis("off")
    fig.colorbar(im, ax=flat[n:] if len(flat) > n else flat, label=label or field, shrink=0.8,
                 location="left" if len(flat) > n else "right")
    if paper_lines:
        handles = paper_legend_handles(field, bounds=bounds_lines)
        if any(paper_regions(v, sweep["T"], field) for v in variants) or len(handles) > 1:
            if len(flat) > n:
                flat[n].legend(handles=handles, loc="center right", fontsize=8, frameon=False)
            else:
                fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8, frameon=False)
    return fig


def fig1_row(variants) -> dict[str, str]:
    """Where a chapter's models sit in the paper's figures: Fig. 1's top row and Fig. 2's left panel
    for the softmax models, the bottom row and the right panel for the others."""
    if all(has_softmax(v) for v in variants):
        return {"row": "top row", "side": "left", "kind": "with softmax"}
    return {"row": "bottom row", "side": "right", "kind": "without softmax"}


_FIELDS = {"mean": ("Fig. 1", "mean final accuracy"), "best": ("Fig. 10", "best accuracy"),
           "std": ("Fig. 11", "std of the final accuracy")}


def phase_figure(sweep: dict, field: str = "mean"):
    """The phase-diagram chapters' heat maps of one field of a `sweeps.sweep_grid` result: Fig. 1
    ('mean'), Fig. 10 ('best') or Fig. 11 ('std'), the models of `sweep['variants']`, with the
    paper's stated regions and the §5.2 bounds, and a title naming the paper's figure and row.
    Returns the figure."""
    variants = sweep["variants"]
    number, label = _FIELDS[field]
    row = fig1_row(variants)["row"]
    fig = plot_phase_grid(sweep, variants, field, label=label)
    what = {"mean": f"mean accuracy, T = {sweep['T']}, L = {sweep['L']}",
            "best": "best accuracy over seeds and evals",
            "std": f"run-to-run variability over {len(sweep['seeds'])} seeds"}[field]
    fig.suptitle(f"{number} ({row}): {what}", fontsize=10)
    return fig


def params_figure(sweep: dict):
    """The phase-diagram chapters' Fig. 2 panel: accuracy against the parameter count for the
    models of `sweep['variants']`, with the paper's read-off (`plot_params`). Returns the figure."""
    row = fig1_row(sweep["variants"])
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    plot_params(ax, sweep, sweep["variants"],
                title=f"Fig. 2 ({row['side']}): {row['kind']}, T = {sweep['T']}, L = {sweep['L']}")
    return fig


def new_figure(n_panels: int, width: float = 3.4, height: float = 3.0):
    """n square-ish panels, at most two per row and 6.8 in wide; returns (fig, flat list of axes)."""
    ncols = min(n_panels, 2)
    nrows = -(-n_panels // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    flat = list(axes.ravel())
    for ax in flat[n_panels:]:
        ax.axis("off")
    return fig, flat[:n_panels]
