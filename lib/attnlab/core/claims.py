"""The "paper vs this run" table: one row per checkable claim, with a verdict.

Verdicts: "reproduced" / "fails" (a measured value against the paper's, within a stated tolerance),
"inconclusive" (the check cannot separate the claim from its alternative at this scale), "not run"
(paper scale only; the command that runs it), "consistency check" (arithmetic, shapes, definitions,
a value a formula fixes: shown, never counted as a reproduction). Each row says where its paper value
comes from (`source`: the paper's text, a figure read-off, the authors' released data).
A claim `asserted` at this scale raises `ClaimFailed` after the table is shown if it fails,
so the chapter (and CI) fails.

Every number in the table has a declared precision, so a re-execution on another CPU (another
instruction set, another BLAS kernel) checks the same claims: a row's `rtol` and `atol` are 0 for
exact results (float64 constructions, closed forms: printed at 3 significant digits, residuals printed
as a bound with `bound`, e.g. `< 1e-12`); a trained value's numbers agree within `rtol` relative (0.5:
within a factor of 2) plus `atol` absolute (e.g. the seed spread of a loss difference near 0). The table is
displayed as an HTML table (the book), as Markdown text, and as JSON (`MIME`): the JSON carries
every cell with its row's precision, and `compare` (used by nbval through `attnlab.pytest_plugin`)
checks a re-executed table against the stored one: same rows and verdicts, same words, every
number equal at its precision.

A trained claim is judged over several seeds trained as replicas of one program (`ClaimsTable.add_seeds`,
the seed rule): "this run" prints the median, the spread (min–max) and the count of seeds; the row is
reproduced only when the claim holds in every seed, fails only when it fails in every seed, each seed
beyond the threshold by more than the row's precision; otherwise it is inconclusive. No seed is singled
out, so no best seed can be picked.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

MIME = "application/vnd.attnlab.claims+json"  # the table's machine-readable form, what CI compares

# The declared precision of a trained value: a float32 training run follows another trajectory when the
# CPU's instruction set or BLAS kernel changes the last bits of a sum, so its CI-scale numbers move between
# machines (measured on this book executed with AVX-512, AVX2 and no vector kernels: most by under 10 %). A
# trained row's numbers are compared within this relative tolerance, and its verdict must be the same.
TRAINED_RTOL = 0.2

VERDICT_MARK = {"reproduced": "✅ reproduced", "fails": "❌ fails", "inconclusive": "❔ inconclusive",
                "not run": "⏳ not run", "consistency check": "🔁 consistency check"}
KINDS = tuple(VERDICT_MARK)  # only "reproduced" counts as a reproduction
VERDICT_COLOR = {"reproduced": "#1a7f37", "fails": "#cf222e", "not run": "#6e7781", "inconclusive": "#9a6700",
                 "consistency check": "#0969da"}
SOURCES = ("text", "figure", "data", "derived", "")  # where a paper value comes from: the paper's text
# or tables, a read-off of its figure, the authors' released data or code, or a value we derive from the
# paper's formulas or numbers (the derivation written out in typeset math in the chapter or the overview)
LEGEND = ("✅ reproduced: measured by this run and within the stated tolerance of the paper's value. "
          "❌ fails: measured, and not within it. ❔ inconclusive: this scale cannot tell the claim from its "
          "alternative. ⏳ not run: paper scale only (the command is in the tolerance column). "
          "🔁 consistency check: arithmetic, shapes or definitions, never counted as a reproduction. "
          "Column 'asserted': 'yes' means the chapter raises (and CI fails) if the claim fails at this scale.")


def _precision_text(rtol: float, atol: float) -> str:
    """A row's precision for the reader: '± 20%', '± 0.09', '± 0.09 + 20%'."""
    parts = ([f"± {fmt(atol)}"] if atol else []) + ([f"{rtol:.0%}" if atol else f"± {rtol:.0%}"] if rtol else [])
    return " + ".join(parts)


def _check_source(key: str, source: str) -> None:
    if source not in SOURCES:
        raise ValueError(f"claim {key}: source {source!r}: choose one of {SOURCES}")


class ClaimFailed(AssertionError):
    """A claim asserted at this scale does not hold."""


def fmt(value: Any, digits: int = 3) -> str:
    """Stable text for a number: 3 significant digits, no '-0'."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if value == 0 or 1e-3 <= abs(value) < 1e5:
            text = f"{value:.{digits}g}"
        else:
            text = f"{value:.{max(digits - 1, 1)}e}"
        return "0" if text in ("-0", "0") else text
    return str(value)


def bound(value: float, limit: float, signed: bool = False) -> str:
    """A residual (an error that is zero in exact arithmetic) printed as the bound it is checked
    against, `< limit` (`0 ± limit` for a signed one, e.g. a slack that must be ≥ 0), so that rounding
    noise below it (which differs between CPUs) never prints; a value at or beyond the bound prints as
    itself."""
    if abs(value) < limit:
        return f"0 ± {limit:g}" if signed else f"< {limit:g}"
    return fmt(value)


NUMBER = re.compile(r"[-+\u2212]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+\u2212]?\d+)?")


def _last_place(token: str) -> float:
    """One unit in the last printed digit of a number token: '0.981' -> 0.001, '4.3e-11' -> 1e-12."""
    mantissa, _, exponent = token.lower().replace("\u2212", "-").partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 10.0 ** ((int(exponent) if exponent else 0) - decimals)


def numbers_agree(stored: str, new: str, rtol: float, atol: float = 0.0) -> bool:
    """Two printed numbers are equal at a row's precision: within one unit of the stored number's last
    printed digit (two printings of the same exact value can straddle a rounding boundary), plus `rtol`
    relative and `atol` absolute for trained values. An integer of an exact row (a count) must be equal."""
    a, b = (float(t.replace("\u2212", "-")) for t in (stored, new))
    if a == b:
        return True
    if rtol == 0 and atol == 0 and "." not in stored and "e" not in stored.lower():
        return False
    return abs(a - b) <= atol + rtol * max(abs(a), abs(b)) + _last_place(stored) * (1 + 1e-9)


def cell_differences(stored: str, new: str, rtol: float, atol: float = 0.0) -> str | None:
    """Why a re-executed cell differs from the stored one at its precision (None if it does not): its
    words must be identical and its numbers agree (`numbers_agree`)."""
    if NUMBER.split(stored) != NUMBER.split(new):
        return "its words differ"
    a, b = NUMBER.findall(stored), NUMBER.findall(new)
    if len(a) != len(b):
        return "it has another count of numbers"
    bad = [f"{x} -> {y}" for x, y in zip(a, b) if not numbers_agree(x, y, rtol, atol)]
    if not bad:
        return None
    precision = f"rtol {fmt(rtol)}, atol {fmt(atol)}" if rtol or atol else "the printed precision"
    return f"numbers beyond {precision}: {', '.join(bad)}"


def seed_summary(values: "Sequence[float]") -> str:
    """A trained value over seeds as "this run" prints it: the median, then the spread (min–max) and
    the count, e.g. '64 (51–156, 3 seeds)'. The words are fixed, so a re-executed table compares its
    three numbers at the row's precision."""
    v = _seed_values(values)
    return f"{fmt(statistics.median(v))} ({fmt(min(v))}–{fmt(max(v))}, {len(v)} seed{'s' if len(v) != 1 else ''})"


def _seed_values(values: "Sequence[float]") -> list[float]:
    v = [float(x) for x in values]
    if not v:
        raise ValueError("no seeds: a trained claim needs one value per seed")
    if any(math.isnan(x) for x in v):
        raise ValueError(f"values {v}: a seed gave nan; judge the run before tabulating it")
    return v


@dataclass
class Claim:
    key: str
    text: str
    paper: str
    ours: str
    tolerance: str
    verdict: str
    asserted: bool
    source: str = ""
    rtol: float = 0.0  # the precision of the row's numbers: relative and absolute; 0, 0 = exact at the printed digits
    atol: float = 0.0


@dataclass
class ClaimsTable:
    """Collects claims; `check` raises for asserted claims that fail."""

    title: str = "Paper vs this run"
    rows: list[Claim] = field(default_factory=list)
    rtol: float = 0.0  # the default precision of the rows' numbers: 0, 0 for exact results
    atol: float = 0.0

    def _precision(self, rtol: float | None, atol: float | None) -> tuple[float, float]:
        rtol = self.rtol if rtol is None else rtol
        atol = self.atol if atol is None else atol
        if not 0 <= rtol <= 1:
            raise ValueError(f"rtol {rtol!r}: a relative tolerance in [0, 1] (1: only the sign and scale are claimed)")
        if not 0 <= atol < math.inf:
            raise ValueError(f"atol {atol!r}: an absolute tolerance >= 0")
        return rtol, atol

    def add(self, key: str, text: str, *, paper: Any, ours: Any, holds: bool | None,
            tolerance: str = "", asserted: bool = False, source: str = "",
            rtol: float | None = None, atol: float | None = None,
            margin: tuple[float, float] | None = None) -> "ClaimsTable":
        """A reproduction: the paper's value (from `source`: text, figure, data) against a measured
        one, within `tolerance`. holds=None: not measured at this scale. `rtol`, `atol`: the
        precision of this row's measured numbers (default: the table's). `margin=(value, threshold)`:
        the measured value that decides the row and its threshold; where they are closer than the
        row's precision (atol + rtol of the larger, at least 1e-12), another CPU could decide either
        way, so the row is inconclusive, not a coin flip (and not asserted)."""
        rtol, atol = self._precision(rtol, atol)
        if holds is not None and margin is not None:
            value, limit = (float(x) for x in margin)
            if abs(value - limit) <= max(atol + rtol * max(abs(value), abs(limit)), 1e-12):
                return self.inconclusive(key, text, paper=paper, ours=ours, source=source, rtol=rtol, atol=atol,
                                         why=f"{tolerance}: {fmt(value)} lies within this row's precision "
                                             f"({_precision_text(rtol, atol)}) of {fmt(limit)}")
        _check_source(key, source)
        if holds is not None and not tolerance:
            raise ValueError(f"claim {key}: a measured row needs a tolerance")
        if holds is not None and paper is ours and not isinstance(paper, (int, float)):
            raise ValueError(f"claim {key}: the paper value and this run's are the same object; "
                             "a value compared with itself is a consistency check")
        verdict = "not run" if holds is None else ("reproduced" if holds else "fails")
        self.rows.append(Claim(key, text, fmt(paper), fmt(ours), tolerance, verdict, asserted and holds is not None,
                               source, rtol, atol))
        return self

    def add_seeds(self, key: str, text: str, *, paper: Any, values: Sequence[float], threshold: float,
                  above: bool = True, tolerance: str = "", asserted: bool = False, source: str = "",
                  rtol: float | None = None, atol: float | None = None) -> "ClaimsTable":
        """A trained claim judged over seeds (the seed rule): `values` holds one measured value per
        seed (seeds trained as replicas of one program, in seed order), and the claim is `value ≥
        threshold` (`above`) or `value ≤ threshold`. "This run" prints the median, the spread
        (min–max) and the count of seeds (`seed_summary`).

        The rule: a seed *holds* (or *fails*) when its value is on the claim's side of the threshold
        (or the other) by more than the row's precision (atol + rtol of the larger, at least 1e-12:
        the distance another CPU could move it); otherwise it is *undecided*. The row is reproduced
        only when every seed holds, fails only when every seed fails, and is inconclusive otherwise
        (the tolerance column says how many seeds held, failed and were undecided). In other words,
        ✅ or ❌ only when the whole spread, widened by the precision, lies beyond the threshold. No
        rule picks a seed: the verdict and the printed cells depend on the set of values only.
        `asserted`: the chapter raises when the row fails (an inconclusive row never raises).
        `tolerance`: the criterion as the reader should see it (default '≥ threshold')."""
        rtol, atol = self._precision(rtol, atol)
        _check_source(key, source)
        v = _seed_values(values)
        limit = float(threshold)
        criterion = tolerance or f"{'≥' if above else '≤'} {fmt(limit)}"
        held = failed = 0
        for x in v:
            if abs(x - limit) <= max(atol + rtol * max(abs(x), abs(limit)), 1e-12):
                continue
            if (x >= limit) == above:
                held += 1
            else:
                failed += 1
        n = len(v)
        every = "the seed" if n == 1 else f"each of {n} seeds"
        if held == n:
            verdict, why = "reproduced", f"{criterion} in {every}"
        elif failed == n:
            verdict, why = "fails", f"{criterion} in {every}"
        else:
            verdict = "inconclusive"
            undecided = n - held - failed
            why = (f"{criterion} in {every}: holds in {held}, fails in {failed}, {undecided} within this row's "
                   f"precision ({_precision_text(rtol, atol) or 'exact'}) of {fmt(limit)}")
        self.rows.append(Claim(key, text, fmt(paper), seed_summary(v), why, verdict,
                               asserted and verdict != "inconclusive", source, rtol, atol))
        return self

    def add_seed_outcomes(self, key: str, text: str, *, paper: Any, ours: str, holds: Sequence[bool],
                          tolerance: str, asserted: bool = False, source: str = "") -> "ClaimsTable":
        """The seed rule (`add_seeds`) for a claim whose per-seed outcome is yes or no on discrete values (a
        grid point, a head count, an order): reproduced when it holds in every seed, fails when it fails in
        every seed, inconclusive otherwise (the tolerance column says in how many seeds it held). `holds`:
        one outcome per seed, in seed order; `ours`: the per-seed values as the reader should see them."""
        outcomes = [bool(x) for x in holds]
        if not outcomes:
            raise ValueError(f"claim {key}: no seeds: a trained claim needs one outcome per seed")
        n, k = len(outcomes), sum(outcomes)
        every = "the seed" if n == 1 else f"each of {n} seeds"
        if k in (0, n):
            return self.add(key, text, paper=paper, ours=ours, holds=k == n, tolerance=f"{tolerance} in {every}",
                            asserted=asserted, source=source)
        return self.inconclusive(key, text, paper=paper, ours=ours, source=source,
                                 why=f"{tolerance} in {every}: holds in {k}, fails in {n - k}")

    def consistency(self, key: str, text: str, *, expected: Any, ours: Any, holds: bool,
                    tolerance: str = "exact", asserted: bool = False, source: str = "",
                    rtol: float | None = None, atol: float | None = None) -> "ClaimsTable":
        """A consistency check (arithmetic, shapes, definitions, a value the formulas fix): shown,
        asserted if asked, never counted as a reproduction. A failing one is shown as failing. Exact
        The precision of its numbers is the table's unless given (a trained table's sanity checks are trained)."""
        _check_source(key, source)
        verdict = "consistency check" if holds else "fails"
        self.rows.append(Claim(key, text, fmt(expected), fmt(ours), tolerance, verdict, asserted, source,
                               *self._precision(rtol, atol)))
        return self

    def inconclusive(self, key: str, text: str, *, paper: Any, ours: Any, why: str,
                     source: str = "", rtol: float | None = None, atol: float | None = None) -> "ClaimsTable":
        """A check that cannot separate the paper's claim from its alternative at this scale; `why`
        goes in the tolerance column."""
        _check_source(key, source)
        self.rows.append(Claim(key, text, fmt(paper), fmt(ours), why, "inconclusive", False, source,
                               *self._precision(rtol, atol)))
        return self

    def not_run(self, key: str, text: str, *, paper: Any, command: str, source: str = "") -> "ClaimsTable":
        """A claim only paper scale can check; `command` produces it."""
        _check_source(key, source)
        self.rows.append(Claim(key, text, fmt(paper), "–", command, "not run", False, source))
        return self

    def markdown(self) -> str:
        """The table in Markdown; a "|" inside a cell (e.g. a norm ||J||) is escaped as "\\|"."""
        head = "| # | claim | paper | this run | tolerance | verdict | asserted |\n|---|---|---|---|---|---|---|\n"
        e = lambda text: str(text).replace("|", "\\|")  # noqa: E731
        return head + "\n".join(
            f"| {e(c.key)} | {e(c.text)} | {e(c.paper)}{f' ({e(c.source)})' if c.source else ''} | {e(c.ours)} | "
            f"{e(c.tolerance)} | {VERDICT_MARK[c.verdict]} | {'yes' if c.asserted else 'no'} |" for c in self.rows)

    def counts(self) -> dict[str, int]:
        """How many rows of each verdict kind."""
        return {k: sum(c.verdict == k for c in self.rows) for k in KINDS}

    def __repr__(self) -> str:  # text/plain
        return self.markdown()

    def data(self) -> dict:
        """The table as JSON (`MIME`): every row's printed cells and its precision."""
        return {"title": self.title, "rows": [asdict(c) for c in self.rows]}

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"text/plain": self.markdown(), "text/html": self._repr_html_(), MIME: self.data()}

    def _repr_html_(self) -> str:  # what the book shows: an HTML table, the verdict coloured
        import html

        cols = ("#", "claim", "paper", "this run", "tolerance", "verdict", "asserted")
        head = "".join(f"<th>{c}</th>" for c in cols)
        body = []
        for c in self.rows:
            paper = html.escape(c.paper) + (f' <span class="claims-source">({html.escape(c.source)})</span>'
                                            if c.source else "")
            ours = html.escape(c.ours) + (f' <span class="claims-precision">({_precision_text(c.rtol, c.atol)} '
                                          'across CPUs)</span>' if c.rtol or c.atol else "")
            cells = [html.escape(c.key), html.escape(c.text), paper, ours, html.escape(c.tolerance),
                     f'<span class="verdict" style="color:{VERDICT_COLOR[c.verdict]};font-weight:600">'
                     f"{html.escape(VERDICT_MARK[c.verdict])}</span>", "yes" if c.asserted else "no"]
            body.append(f'<tr class="verdict-{c.verdict.replace(" ", "-")}">' + "".join(f"<td>{x}</td>" for x in cells)
                        + "</tr>")
        return ('<div class="claims-table" style="overflow-x:auto"><table class="claims">'
                f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")

    def show(self) -> None:
        """Display the table (Markdown in the book, text for nbval), then `check`."""
        from IPython.display import display

        display(self)
        self.check()

    def check(self) -> "ClaimsTable":
        """Raise ClaimFailed naming every asserted claim that fails; return self otherwise."""
        failed = [c for c in self.rows if c.asserted and c.verdict == "fails"]
        if failed:
            raise ClaimFailed("; ".join(f"claim {c.key} ({c.text}): paper {c.paper}, this run {c.ours}"
                                        for c in failed))
        return self

    @staticmethod
    def compare(stored: dict, new: dict) -> list[str]:
        """What differs between a stored table (`data()`) and a re-executed one, at the stored table's
        declared precision: the rows (keys in order), every verdict and 'asserted' identical, the
        words of every cell identical, its numbers equal at the row's precision (`cell_differences`).
        An empty list: the re-execution reproduces the table."""
        old, now = stored.get("rows", []), new.get("rows", [])
        if [r["key"] for r in old] != [r["key"] for r in now]:
            return [f"rows differ: {[r['key'] for r in old]} -> {[r['key'] for r in now]}"]
        problems = []
        for a, b in zip(old, now):
            for name in ("verdict", "asserted", "source"):
                if a.get(name) != b.get(name):
                    problems.append(f"row {a['key']}: {name} {a.get(name)!r} -> {b.get(name)!r}")
            for name in ("text", "paper", "ours", "tolerance"):
                why = cell_differences(a[name], b[name], float(a.get("rtol", 0.0)), float(a.get("atol", 0.0)))
                if why:
                    problems.append(f"row {a['key']}, {name}: {a[name]!r} -> {b[name]!r} ({why})")
        return problems

    @staticmethod
    def parse(markdown: str) -> list[dict[str, str]]:
        """Rows of a table printed by `markdown()` (used by the scorecard)."""
        lines = [l for l in markdown.strip().splitlines() if l.startswith("|")]
        keys = ["key", "claim", "paper", "ours", "tolerance", "verdict", "asserted"]
        return [dict(zip(keys, [c.strip().replace("\\|", "|") for c in l.strip("|").split(" | ")]))
                for l in lines[2:]]
