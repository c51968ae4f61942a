"""Measurements on the stored results of trained models, shared by several chapters: seed means,
the paper's linear and quadratic fits, and the AoT-against-MLP rows of Figs. 3 and 7.
"""

from __future__ import annotations

import numpy as np

from attnlab.core.claims import ClaimsTable, seed_summary
from attnlab.core.fits import power_fit


PARAM_NAMES = {"repo": "authors' code", "paper": "Eq. (1)"}
SATURATED = 0.99  # an accuracy at which a model has memorized (nearly) the whole table


def mean_accuracy(rows: list[dict], metric: str, **match) -> float:
    vals = [r[metric] for r in rows if all(r.get(k, d) == v for k, (v, d) in match.items())]
    return float(np.mean(vals))


def metric_of(cfg: dict) -> str:
    return "accuracy" if cfg["batch_size"] == 0 else "tail_batch_accuracy"


def fits(x, y) -> dict:
    """Linear (a x + b) and the paper's quadratic (a x^2 + b) least-squares fits."""
    out = {}
    for name, p in (("linear", 1.0), ("quadratic", 2.0)):
        f = power_fit(x, y, p)
        out[name] = {"a": f.a, "b": f.b, "sse": f.sse, "r2": f.r2}
    return out


def aot_mlp_seed_curves(sweep: dict) -> list[dict]:
    """Per seed (in seed order), per d: the AoT and MLP accuracy curves against H and their R² against the
    parameter axis (`sweep["per_d"][d]["params"]`), from the sweep's stored rows."""
    rows, metric, H = sweep["points"], sweep["metric"], sweep["H_list"]
    out = []
    for seed_rows in by_seed(rows):
        per_d = {}
        for d, v in ((int(k), v) for k, v in sweep["per_d"].items()):
            aot = np.array([mean_accuracy(seed_rows, metric, d=(d, None), H=(h, None), mlp_width=(0, 0)) for h in H])
            mlp = np.array([mean_accuracy(seed_rows, metric, d=(d, None), H=(1, None), mlp_width=(w, 0))
                            for w in v["widths"]])
            per_d[d] = {"aot": aot, "mlp": mlp, "aot_r2": power_fit(v["params"], aot).r2,
                        "mlp_r2": power_fit(v["params"], mlp).r2}
        out.append(per_d)
    return out


def claims_aot_mlp(t: ClaimsTable, sweep: dict, key: str, paper_H: list[int], paper_aot: dict, paper_mlp: dict,
                    asserted: bool, width: str = "w = 2d(H − 1)") -> None:
    """Rows {key}a-c: the AoT against the 1-head + MLP model, each measured per seed and judged over the
    seeds (`ClaimsTable.add_seeds`). Each paper value is taken at a point the label names: this run's middle H
    where the paper has it, else the paper's own middle H."""
    seeds = aot_mlp_seed_curves(sweep)
    H = sweep["H_list"]
    mid = len(H) // 2
    worst = [min(float(v["mlp"][mid] - v["aot"][mid]) for v in s.values()) for s in seeds]
    i = paper_H.index(H[mid]) if H[mid] in paper_H else len(paper_H) // 2
    pm = min(paper_mlp[d][i] - paper_aot[d][i] for d in paper_mlp)
    at = (f"H = {H[mid]}, w = {2 * H[mid] - 2}d" if paper_H[i] == H[mid] else
          f"this run H = {H[mid]}, w = {2 * H[mid] - 2}d; the paper's middle point H = {paper_H[i]}, "
          f"w = {2 * paper_H[i] - 2}d")
    t.add_seeds(f"{key}a", f"middle of the range ({at}): MLP ≥ AoT − 0.02 (per seed, the least MLP − AoT over d)",
                paper=round(pm, 3), values=worst, threshold=-0.02, tolerance="≥ −0.02", asserted=asserted,
                source="data")
    r2 = [min(v["aot_r2"] - v["mlp_r2"] for v in s.values()) for s in seeds]
    t.add_seeds(f"{key}b", "the AoT is closer to linear in the parameter count than the MLP model (per seed, the "
                "least R² of the AoT minus R² of the MLP model over d)", paper="AoT ≥ MLP", values=r2, threshold=0,
                tolerance="≥ 0 (AoT R² ≥ MLP R² for every d)", asserted=asserted, source="figure", rtol=0,
                atol=0.01)  # a difference of R²: the trained 20 % of it would decide every seed
    last = [max(float(v["aot"][-1] - v["mlp"][-1]) for v in s.values()) for s in seeds]
    text = (f"largest size: the AoT catches up with the MLP model (per seed, AoT − MLP at the last H: this run "
            f"H = {H[-1]}, the paper H = {paper_H[-1]}; best d)")
    paper_last = round(max(paper_aot[d][-1] - paper_mlp[d][-1] for d in paper_aot), 3)
    if any(max(float(v["aot"][-1]) for v in s.values()) >= SATURATED for s in seeds):
        t.inconclusive(f"{key}c", text, paper=paper_last, ours=seed_summary(last),
                       why=f"the AoT saturates here (accuracy ≥ {SATURATED} at the last H): the row could not fail",
                       source="data")
    else:
        t.add_seeds(f"{key}c", text, paper=paper_last, values=last, threshold=-0.02, tolerance="≥ −0.02",
                    source="data")


def aot_mlp_curve_rows(t: ClaimsTable, key: str, fig: str, full_sweep: dict | None, paper_H: list[int],
                       paper_aot: dict | None, paper_mlp: dict, N: int, command: str, h_text: str) -> None:
    """Paper-scale rows: one per paper curve (AoT and MLP for each d), measured on the stored full sweep."""
    per_d = {int(k): v for k, v in full_sweep["per_d"].items()} if full_sweep else {}
    H = full_sweep["H_list"] if full_sweep else []
    for d in paper_mlp:
        for kind, paper_values, suffix in (("aot", (paper_aot or {}).get(d), "AoT"), ("mlp", paper_mlp[d], "1 head + MLP")):
            if paper_values is None:
                continue
            ours = values_at(H, per_d[d][kind], paper_H) if d in per_d else None
            curve_row(t, f"{key}-{d}{'a' if kind == 'aot' else 'm'}", f"paper scale, {fig}, N = {N}, d = {d}: "
                      f"{suffix} accuracy at {h_text}", paper_values, ours, command)


def full_command(slug: str) -> str:
    """The command that produces a chapter's stored paper-scale result."""
    return f"attnlab run 004-memorization/{slug} --scale full --headless"


def per_seed(rows: list[dict], metric: str, x_key: str, xs: list, **match) -> np.ndarray:
    """Accuracy per seed: an array [len(xs), seeds] of `metric` over the rows matching `match`
    (each value a pair (wanted, default when the row lacks the key), as in `mean_accuracy`)."""
    out = []
    for x in xs:
        sel = sorted((r for r in rows if r.get(x_key) == x and all(r.get(k, d) == v for k, (v, d) in match.items())),
                     key=lambda r: r["seed"])
        out.append([r[metric] for r in sel])
    return np.array(out, dtype=float)


def curve_row(t: ClaimsTable, key: str, text: str, paper_values: list[float], ours: list[float] | None,
              command: str, tol: float = 0.05, source: str = "data") -> None:
    """One row per paper curve: not run without the stored paper-scale result; with it, the largest
    |ours - paper| over the curve's points within `tol`."""
    shown = f"{paper_values[0]:.3g} … {paper_values[-1]:.3g}"
    if ours is None:
        t.not_run(key, text, paper=shown, command=command, source=source)
        return
    worst = float(np.max(np.abs(np.subtract(ours, paper_values))))
    t.add(key, f"{text}: largest abs. difference of the mean over seeds (the paper plots its seed means)", paper=shown, ours=worst, holds=worst <= tol,
          tolerance=f"≤ {tol:g} at every point", source=source)


def values_at(xs: list, values: list, wanted: list) -> list | None:
    """`values` at the x's of `wanted` (None if one is missing)."""
    if not all(w in xs for w in wanted):
        return None
    return [values[xs.index(w)] for w in wanted]


def seeds_of(rows: list[dict]) -> list[int]:
    """The parameter seeds of a sweep's rows, in order."""
    return sorted({r["seed"] for r in rows})


def by_seed(rows: list[dict]) -> list[list[dict]]:
    """The rows of each seed (in seed order): one sweep per seed, for claims measured per seed."""
    return [[r for r in rows if r["seed"] == s] for s in seeds_of(rows)]

