"""The "paper vs this run" table: one row per checkable claim, with a verdict.

Verdicts: "reproduced" / "fails" (a measured value against the paper's, within a stated tolerance),
"inconclusive" (the check cannot separate the claim from its alternative at this scale), "not run"
(paper scale only; the command that runs it), "consistency check" (arithmetic, shapes, definitions,
a value a formula fixes: shown, never counted as a reproduction). Each row says where its paper value
comes from (`source`: the paper's text, a figure read-off, the authors' released data).
A claim `asserted` at this scale raises `ClaimFailed` after the table is shown if it fails,
so the chapter (and CI) fails. The table renders as Markdown in the book and as the same
stable, rounded text for nbval, which compares it cell by cell; the book shows an HTML table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

VERDICT_MARK = {"reproduced": "✅ reproduced", "fails": "❌ fails", "inconclusive": "❔ inconclusive",
                "not run": "⏳ not run", "consistency check": "🔁 consistency check"}
KINDS = tuple(VERDICT_MARK)  # only "reproduced" counts as a reproduction
VERDICT_COLOR = {"reproduced": "#1a7f37", "fails": "#cf222e", "not run": "#6e7781", "inconclusive": "#9a6700",
                 "consistency check": "#0969da"}
SOURCES = ("text", "figure", "data", "digest", "")  # where a paper value comes from: the paper's text
# or tables, a read-off of its figure, the authors' released data or code, the digest's derivation
LEGEND = ("✅ reproduced: measured by this run and within the stated tolerance of the paper's value. "
          "❌ fails: measured, and not within it. ❔ inconclusive: this scale cannot tell the claim from its "
          "alternative. ⏳ not run: paper scale only (the command is in the tolerance column). "
          "🔁 consistency check: arithmetic, shapes or definitions, never counted as a reproduction. "
          "Column 'asserted': 'yes' means the chapter raises (and CI fails) if the claim fails at this scale.")


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


@dataclass
class ClaimsTable:
    """Collects claims; `check` raises for asserted claims that fail."""

    title: str = "Paper vs this run"
    rows: list[Claim] = field(default_factory=list)

    def add(self, key: str, text: str, *, paper: Any, ours: Any, holds: bool | None,
            tolerance: str = "", asserted: bool = False, source: str = "") -> "ClaimsTable":
        """A reproduction: the paper's value (from `source`: text, figure, data) against a measured
        one, within `tolerance`. holds=None: not measured at this scale."""
        if source not in SOURCES:
            raise ValueError(f"source {source!r}: choose one of {SOURCES}")
        if holds is not None and not tolerance:
            raise ValueError(f"claim {key}: a measured row needs a tolerance")
        if holds is not None and paper is ours and not isinstance(paper, (int, float)):
            raise ValueError(f"claim {key}: the paper value and this run's are the same object; "
                             "a value compared with itself is a consistency check")
        verdict = "not run" if holds is None else ("reproduced" if holds else "fails")
        self.rows.append(Claim(key, text, fmt(paper), fmt(ours), tolerance, verdict, asserted and holds is not None,
                               source))
        return self

    def consistency(self, key: str, text: str, *, expected: Any, ours: Any, holds: bool,
                    tolerance: str = "exact", asserted: bool = False, source: str = "") -> "ClaimsTable":
        """A consistency check (arithmetic, shapes, definitions, a value the formulas fix): shown,
        asserted if asked, never counted as a reproduction. A failing one is shown as failing."""
        verdict = "consistency check" if holds else "fails"
        self.rows.append(Claim(key, text, fmt(expected), fmt(ours), tolerance, verdict, asserted, source))
        return self

    def inconclusive(self, key: str, text: str, *, paper: Any, ours: Any, why: str,
                     source: str = "") -> "ClaimsTable":
        """A check that cannot separate the paper's claim from its alternative at this scale; `why`
        goes in the tolerance column."""
        self.rows.append(Claim(key, text, fmt(paper), fmt(ours), why, "inconclusive", False, source))
        return self

    def not_run(self, key: str, text: str, *, paper: Any, command: str, source: str = "") -> "ClaimsTable":
        """A claim only paper scale can check; `command` produces it."""
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

    def __repr__(self) -> str:  # text/plain: what nbval compares
        return self.markdown()

    def _repr_html_(self) -> str:  # what the book shows: an HTML table, the verdict coloured
        import html

        cols = ("#", "claim", "paper", "this run", "tolerance", "verdict", "asserted")
        head = "".join(f"<th>{c}</th>" for c in cols)
        body = []
        for c in self.rows:
            paper = html.escape(c.paper) + (f' <span class="claims-source">({html.escape(c.source)})</span>'
                                            if c.source else "")
            cells = [html.escape(c.key), html.escape(c.text), paper, html.escape(c.ours), html.escape(c.tolerance),
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
    def parse(markdown: str) -> list[dict[str, str]]:
        """Rows of a table printed by `markdown()` (used by the scorecard)."""
        lines = [l for l in markdown.strip().splitlines() if l.startswith("|")]
        keys = ["key", "claim", "paper", "ours", "tolerance", "verdict", "asserted"]
        return [dict(zip(keys, [c.strip().replace("\\|", "|") for c in l.strip("|").split(" | ")]))
                for l in lines[2:]]
