"""A Sphinx extension for the book (named in _config.yml `extra_extensions`): the reader's view of
every chapter, computed at build time from the executed notebooks and the registry, so it is always
current with the executed outputs and needs no re-execution.

On every chapter page (a document book/<paper>/<slug> built from book/**.ipynb whose id is in the
registry):

- **Verdicts at a glance** right after the title: what the chapter checks (the registry's label),
  the number of claims of each verdict kind, counted from the rows of the claims table (the output
  of the `# NBVAL_CHECK_OUTPUT` cell, the raw HTML `<div class="claims-table">`), and its headline
  row (`headline_rows`), with links down to the table and to the rerun box.
- The claims table's code is hidden (its output is kept; nbval reads the cell's source, not the
  page), and every cell of the table carries `data-label="<column>"`, so that the book's CSS
  (book_static/attnlab-book.css) stacks each row into a card, verdict first, on a phone.
- **Rerun this chapter**, before the first code cell: `attnlab run <id>` at CI scale with its
  measured time (book/timings.csv), the paper-scale command, and links to the chapter's source
  notebook and results module. The links go to `attnlab_repository_url` + path when that is set in
  _config.yml (`sphinx: config:`), else to copies of those files that the build writes into the
  HTML (`_repo/<path>.txt`), so they work offline and wherever the HTML is moved.

On every page, a title with math (`$d_h$`) gets a plain-text twin (`tex_to_text`: Unicode, e.g.
"dₕ") for the HTML <title>, the navigation sidebar, the previous/next links and the search index;
the page's own heading keeps the typeset math. MathJax is loaded on every page (Sphinx adds it only
to pages with math of their own, but headings of other pages appear in the in-page navigation).
"""

from __future__ import annotations

import csv
import html
import re
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path

from docutils import nodes

STATIC = Path(__file__).parent / "book_static"
CSS = "attnlab-book.css"
CHECK_MARK = "# NBVAL_CHECK_OUTPUT"
REPO_COPIES = "_repo"  # where the build copies the linked sources when no repository URL is set

# Verdict kinds, in the order of attnlab.core.claims.KINDS (the class of a row is verdict-<kind with dashes>).
KINDS = ("reproduced", "fails", "inconclusive", "not run", "consistency check")
MARK = {"reproduced": "✅", "fails": "❌", "inconclusive": "❔", "not run": "⏳", "consistency check": "🔁"}
PLURAL = {"reproduced": "reproduced", "fails": "fail", "inconclusive": "inconclusive", "not run": "not run",
          "consistency check": "consistency checks"}
SINGULAR = {**PLURAL, "fails": "fails", "consistency check": "consistency check"}
MEASURED = ("reproduced", "fails")


# --- the claims table's rows -------------------------------------------------------------------------------

class _TableParser(HTMLParser):
    """Header labels and body rows of a claims table: per row, its verdict kind (from the row's class
    `verdict-<kind>`, else from the verdict's mark) and each cell's text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.headers: list[str] = []
        self.rows: list[dict] = []
        self._cell: list[str] | None = None
        self._row: dict | None = None
        self._skip = 0  # depth inside a span.claims-precision (a footnote on the number, not shown in the summary)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr":
            kind = next((c[len("verdict-"):].replace("-", " ") for c in (a.get("class") or "").split()
                         if c.startswith("verdict-")), None)
            self._row = {"kind": kind, "cells": []}
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "span" and self._cell is not None and (self._skip or "claims-precision" in (a.get("class") or "")):
            self._skip += 1

    def handle_endtag(self, tag):
        if tag == "span" and self._skip:
            self._skip -= 1
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row["cells"].append(re.sub(r"\s+", " ", "".join(self._cell)).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._row["kind"] is None and not self.headers and not self.rows:
                self.headers = self._row["cells"]
            else:
                self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None and not self._skip:
            self._cell.append(data)


def claims_rows(table_html: str) -> tuple[list[str], list[dict[str, str]]]:
    """(column labels, rows) of a claims table in HTML; each row maps the labels to its cells' text,
    plus "kind" (one of KINDS)."""
    p = _TableParser()
    p.feed(table_html)
    p.close()
    headers = p.headers or ["#", "claim", "paper", "this run", "tolerance", "verdict", "asserted"]
    rows = []
    for r in p.rows:
        row = dict(zip(headers, r["cells"]))
        kind = r["kind"]
        if kind not in KINDS:
            verdict = row.get("verdict", "")
            kind = next((k for k in KINDS if verdict.startswith(MARK[k]) or verdict.endswith(k)), "not run")
        row["kind"] = kind
        rows.append(row)
    return headers, rows


def count_kinds(rows: list[dict[str, str]]) -> dict[str, int]:
    return {k: sum(r["kind"] == k for r in rows) for k in KINDS}


def headline_rows(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """The rows the summary shows: the headline, that is the first asserted row with a measured verdict
    (reproduced or fails), else the first measured row, else the first inconclusive row, else the first
    row; and, when the headline does not fail but a row does, the first failing row too."""
    if not rows:
        return []
    measured = [r for r in rows if r["kind"] in MEASURED]
    head = (next((r for r in measured if r.get("asserted") == "yes"), None) or (measured[0] if measured else None)
            or next((r for r in rows if r["kind"] == "inconclusive"), None) or rows[0])
    out = [head]
    if head["kind"] != "fails":
        out += [r for r in rows if r["kind"] == "fails"][:1]
    return out


def with_data_labels(table_html: str, headers: list[str]) -> str:
    """The table's HTML with data-label="<column>" on every header and body cell (the CSS sizes the
    columns by it on a wide screen and prints it as the cell's label on a phone)."""

    def row(m: re.Match) -> str:
        labels = iter(headers)

        def cell(c: re.Match) -> str:
            label = next(labels, "")
            if "data-label" in (c.group(2) or ""):
                return c.group(0)
            return f'<{c.group(1)} data-label="{html.escape(label, quote=True)}"' + (c.group(2) or "")

        return re.sub(r"<(td|th)(\s[^>]*)?(?=>)", cell, m.group(0))

    return re.sub(r"<tr\b.*?</tr>", row, table_html, flags=re.S)


# --- what the page shows -----------------------------------------------------------------------------------

def _shorten(text: str, limit: int = 200) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(",;:(")
    return cut + " …"


def _verdict_span(kind: str) -> str:
    return (f'<span class="verdict vs-verdict verdict-{kind.replace(" ", "-")}">{MARK[kind]} '
            f"{html.escape(SINGULAR[kind])}</span>")


def _row_html(row: dict[str, str], lead: str) -> str:
    e = html.escape
    values = []
    if row.get("paper", "–") not in ("", "–"):
        values.append(f"paper {e(row['paper'])}")
    if row.get("this run", "–") not in ("", "–"):
        values.append(f"this run {e(row['this run'])}")
    if row.get("tolerance", "") not in ("", "–") and row["kind"] in MEASURED:
        values.append(f"tolerance {e(row['tolerance'])}")
    vals = f' <span class="vs-values">({"; ".join(values)})</span>' if values else ""
    key = f'<span class="vs-key">#{e(row["#"])}</span> ' if row.get("#") else ""
    return (f'<p class="vs-row"><span class="vs-lead">{e(lead)}</span> {_verdict_span(row["kind"])} '
            f'{key}<span class="vs-claim">{e(_shorten(row.get("claim", "")))}</span>{vals}</p>')


def _counts_text(rows: list[dict[str, str]]) -> str:
    n = count_kinds(rows)
    return ", ".join(f"{MARK[k]} {n[k]} {PLURAL[k] if n[k] != 1 else SINGULAR[k]}" for k in KINDS if n[k])


def summary_html(exp, rows: list[dict[str, str]], table_anchor: str | None,
                 others: list[tuple[list[dict[str, str]], str | None, str]] = ()) -> str:
    """The box "Verdicts at a glance" (raw HTML): the chapter's claims table (`rows`, in the section
    `table_anchor`) counted by verdict kind, its headline rows, and a line per other claims table on the
    page (`others`: rows, section anchor, section title)."""
    e = html.escape
    n = count_kinds(rows)
    total = len(rows)
    what = (f'<p class="vs-what"><strong>Verdicts at a glance.</strong> This chapter checks '
            f"{e(exp.label)} of paper {e(exp.paper[:3])}: {total} claim{'s' if total != 1 else ''}.</p>")
    if not rows:
        return (f'<div class="verdict-summary" role="note" aria-label="Verdicts at a glance">{what}'
                '<p class="vs-row">This chapter has not been executed yet: no claims table.</p></div>')
    chips = "".join(f'<li class="vs-count verdict-{k.replace(" ", "-")}{" vs-zero" if not n[k] else ""}">'
                    f'{MARK[k]} <span class="vs-n">{n[k]}</span> {e(PLURAL[k] if n[k] != 1 else SINGULAR[k])}</li>'
                    for k in KINDS)
    picked = headline_rows(rows)
    lines = [_row_html(picked[0], "Headline:")] + [_row_html(r, "First failure:") for r in picked[1:]]
    for other_rows, anchor, title in others:
        name = e(title or "Another claims table")
        link = f'<a href="#{e(anchor, quote=True)}">{name}</a>' if anchor else name
        lines.append(f'<p class="vs-also">{link}: {len(other_rows)} claims, {e(_counts_text(other_rows))}.</p>')
    links = []
    if table_anchor:
        links.append(f'<a href="#{e(table_anchor, quote=True)}">All {total} claims: Paper vs this run</a>')
    links.append('<a href="#rerun-this-chapter">Rerun this chapter</a>')
    return (f'<div class="verdict-summary" role="note" aria-label="Verdicts at a glance">{what}'
            f'<ul class="vs-counts">{chips}</ul>{"".join(lines)}'
            f'<p class="vs-links">{" · ".join(links)}</p></div>')


def _ci_time(seconds: str | None) -> str:
    if not seconds:
        return "seconds to a minute, one CPU thread"
    s = float(seconds)
    if s < 2:
        return "under 2 s measured, one CPU thread"
    return f"{s:.0f} s measured, one CPU thread"


def rerun_html(exp, timing: dict | None, sources: list[tuple[str, str, str]], rerun_href: str) -> str:
    """The box "Rerun this chapter" (raw HTML): the commands and the links to the chapter's code.
    `sources`: (repository path, href, what it is)."""
    e = html.escape

    def code(text: str) -> str:
        return f'<code class="docutils literal notranslate">{e(text)}</code>'

    links = "; ".join(f'<a class="attnlab-source" href="{e(href, quote=True)}">{code(path)}</a> ({e(what)})'
                      for path, href, what in sources)
    return (f'<div class="admonition tip attnlab-rerun" id="rerun-this-chapter">'
            f'<p class="admonition-title">Rerun this chapter</p>'
            f"<p>At CI scale ({e(_ci_time((timing or {}).get('seconds')))}): {code('attnlab run ' + exp.id)} "
            f"(add {code('-p NAME VALUE')} to change a parameter).</p>"
            f"<p>At paper scale: {code('attnlab run ' + exp.id + ' --scale full --headless')}.</p>"
            f"<p>The code: {links}. See <a href=\"{e(rerun_href, quote=True)}\">Rerun a chapter</a>.</p></div>")


# --- titles with math ----------------------------------------------------------------------------------------

GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ϵ", "varepsilon": "ε", "zeta": "ζ",
         "eta": "η", "theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
         "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "upsilon": "υ", "phi": "ϕ", "varphi": "φ",
         "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ",
         "Pi": "Π", "Sigma": "Σ", "Upsilon": "Υ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω"}
SYMBOL = {**GREEK, "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "approx": "≈",
          "sim": "∼", "times": "×", "cdot": "·", "cdots": "⋯", "dots": "…", "ldots": "…", "infty": "∞",
          "in": "∈", "notin": "∉", "to": "→", "rightarrow": "→", "mapsto": "↦", "pm": "±", "mp": "∓",
          "lceil": "⌈", "rceil": "⌉", "lfloor": "⌊", "rfloor": "⌋", "mid": "|", "ell": "ℓ", "partial": "∂",
          "sum": "∑", "prod": "∏", "sqrt": "√", "propto": "∝", "equiv": "≡", "ll": "≪", "gg": "≫",
          "langle": "⟨", "rangle": "⟩", "{": "{", "}": "}", "%": "%", "&": "&", "_": "_", "#": "#",
          ",": " ", ";": " ", ":": " ", " ": " ", "quad": " ", "qquad": "  ", "!": "", "prime": "′",
          "top": "ᵀ", "star": "⋆", "ast": "∗", "circ": "∘", "emptyset": "∅", "cup": "∪", "cap": "∩",
          "subset": "⊂", "subseteq": "⊆", "forall": "∀", "exists": "∃", "neg": "¬", "wedge": "∧", "vee": "∨",
          "lvert": "|", "rvert": "|", "vert": "|", "|": "‖"}
NAMED = ("log", "ln", "exp", "max", "min", "sup", "inf", "lim", "det", "rank", "tr", "arg", "sin", "cos",
         "tanh", "softmax", "argmax", "argmin", "dim", "ker", "Pr", "gcd")
SIZING = ("big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr", "biggl", "biggr", "left", "right",
          "displaystyle", "textstyle", "limits", "nolimits")
FONT = ("text", "mathrm", "textrm", "mathit", "textit", "mathbf", "textbf", "boldsymbol", "bm", "mathsf",
        "mathtt", "texttt", "operatorname", "mathcal", "mathbb", "mathfrak", "hat", "tilde", "bar", "vec",
        "overline", "widehat", "widetilde")
SUB = dict(zip("0123456789+−=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"))
SUP = dict(zip("0123456789+−=()inT′*", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁱⁿᵀ′*"))


def tex_to_text(tex: str) -> str:
    """Plain Unicode text for a short TeX math expression (a title's): Greek letters and common symbols
    as characters, sub- and superscripts as Unicode ones where every character has one (else d_model),
    \\frac{a}{b} as (a/b), sizing commands dropped, font commands reduced to their argument."""
    tokens = re.findall(r"\\[A-Za-z]+|\\.|[{}_^']|\s+|[^\\{}_^'\s]", tex)
    pos = 0

    def arg() -> str:
        nonlocal pos
        while pos < len(tokens) and tokens[pos].isspace():
            pos += 1
        if pos >= len(tokens):
            return ""
        tok = tokens[pos]
        pos += 1
        if tok == "{":
            return group()
        return atom(tok)

    def group() -> str:
        nonlocal pos
        out = []
        while pos < len(tokens):
            tok = tokens[pos]
            pos += 1
            if tok == "}":
                break
            out.append(item(tok))
        return "".join(out)

    def script(text: str, table: dict, mark: str) -> str:
        text = text.strip()
        if text and all(ch in table for ch in text):
            return "".join(table[ch] for ch in text)
        return mark + (text if len(text) <= 1 or re.fullmatch(r"\w+", text) else f"({text})")

    def atom(tok: str) -> str:
        if tok.startswith("\\"):
            name = tok[1:]
            if name == "frac" or name in ("dfrac", "tfrac"):
                a, b = arg(), arg()
                return f"({a}/{b})"
            if name in FONT:
                return arg()
            if name in SIZING:
                return ""
            if name in NAMED:
                return "\x01" + name  # a space before it, unless it opens the text or a parenthesis
            if name in SYMBOL:
                return SYMBOL[name]
            return name
        if tok == "'":
            return "′"
        if tok == "-":
            return "−"
        return tok

    def item(tok: str) -> str:
        if tok == "{":
            return group()
        if tok == "_":
            return script(arg(), SUB, "_")
        if tok == "^":
            return script(arg(), SUP, "^")
        return atom(tok)

    out = []
    while pos < len(tokens):
        tok = tokens[pos]
        pos += 1
        out.append(item(tok))
    text = re.sub(r"(?<=[^\s(])\x01", " ", "".join(out)).replace("\x01", "")
    return re.sub(r" {2,}", " ", text).strip()


def _plain_title(node: nodes.Element) -> nodes.Element:
    """A copy of a title node with every math node replaced by its plain text."""
    node = node.deepcopy()
    for math in list(node.findall(nodes.math)):
        math.parent.replace(math, nodes.Text(tex_to_text(math.astext())))
    return node


def plain_titles(app, doctree) -> None:
    """The page's title without math, for the HTML <title>, the sidebar, previous/next and search."""
    env = app.env
    docname = env.docname
    for store in (env.titles, env.longtitles):
        if docname in store and any(True for _ in store[docname].findall(nodes.math)):
            store[docname] = _plain_title(store[docname])
    toc = env.tocs.get(docname)
    if toc is not None:
        for ref in toc.findall(nodes.reference):  # the first entry is the page's title
            for math in list(ref.findall(nodes.math)):
                math.parent.replace(math, nodes.Text(tex_to_text(math.astext())))
            break


# --- the chapter transform ---------------------------------------------------------------------------------

def _ancestor(node: nodes.Node, test) -> nodes.Element | None:
    node = node.parent
    while node is not None and not test(node):
        node = node.parent
    return node


def _chapter(docname: str):
    """The registry's experiment of a chapter document, or None."""
    if not docname.startswith("book/"):
        return None
    from attnlab.papers import registry

    return registry().get(docname[len("book/"):])


def results_module(exp) -> Path | None:
    """The file of the results module that defines `exp`."""
    for name, module in list(sys.modules.items()):
        if ".results." in name and any(e is exp for e in getattr(module, "EXPERIMENTS", ())):
            return Path(module.__file__)
    return None


def sources_of(exp, repo: Path) -> list[tuple[str, str]]:
    """(repository path, what it is) of a chapter's source notebook and results module."""
    out = []
    for path, what in ((exp.notebook, "this chapter's source notebook"),
                       (results_module(exp), "its experiment and claims")):
        try:
            out.append((path.resolve().relative_to(repo.resolve()).as_posix(), what))
        except (AttributeError, ValueError):  # no module found, or one outside the repository
            pass
    return out


def _timings(srcdir: Path) -> dict[str, dict]:
    path = srcdir / "book" / "timings.csv"
    if not path.exists():
        return {}
    with path.open() as f:
        return {row["result"]: row for row in csv.DictReader(f)}


def _is_rerun_admonition(node: nodes.Node) -> bool:
    return (isinstance(node, nodes.admonition) and len(node) > 0 and isinstance(node[0], nodes.title)
            and node[0].astext().strip().lower() == "rerun this chapter")


def chapter_view(app, doctree) -> None:
    env = app.env
    docname = env.docname
    if not str(env.doc2path(docname)).endswith(".ipynb"):
        return
    exp = _chapter(docname)
    if exp is None:
        return
    srcdir = Path(app.srcdir)
    env.note_dependency(str(srcdir / "book" / "timings.csv"))

    # The claims tables get data-label on their cells. The chapter's own table (the output of the cell
    # marked CHECK_MARK, else the first) gives the summary its rows; any other (a stored paper-scale
    # run's) gets a line of counts.
    tables = []  # (rows, anchor of its section, title of its section, in the checked cell)
    for raw in list(doctree.findall(nodes.raw)):
        text = raw.astext()
        if 'class="claims-table"' not in text or "html" not in raw.get("format", ""):
            continue
        headers, found = claims_rows(text)
        new = nodes.raw("", with_data_labels(text, headers), format=raw["format"], classes=raw["classes"])
        raw.parent.replace(raw, new)
        cell = _ancestor(new, lambda n: isinstance(n, nodes.container) and "cell" in n["classes"])
        checked = cell is not None and any(CHECK_MARK in c.astext() for c in cell.children
                                           if "cell_input" in c.get("classes", []))
        if checked:
            cell["classes"].append("claims-checked")
        section = _ancestor(new, lambda n: isinstance(n, nodes.section))
        inner = section is not None and section["ids"] and section.parent is not doctree
        tables.append((found, section["ids"][0] if inner else None,
                       section[0].astext() if inner and isinstance(section[0], nodes.title) else "", checked))
    main = next((t for t in tables if t[3]), tables[0] if tables else ([], None, "", False))
    rows, anchor = main[0], main[1]
    others = [(t[0], t[1], t[2]) for t in tables if t is not main]

    # The claims table's code is hidden (nbval reads it from the notebook; the reader needs the table).
    for source in list(doctree.findall(lambda n: isinstance(n, nodes.container) and "cell_input" in n["classes"])):
        if CHECK_MARK in source.astext():
            cell = source.parent
            cell.remove(source)
            cell["classes"].append("tag_remove-input")

    # No page shows two rerun boxes: the generated one replaces any written by hand.
    for node in list(doctree.findall(_is_rerun_admonition)):
        node.parent.remove(node)

    # Verdicts at a glance, right after the title.
    top = next(iter(doctree.findall(nodes.section)), None)
    if top is not None:
        title = next((i for i, c in enumerate(top.children) if isinstance(c, nodes.title)), -1)
        top.insert(title + 1, nodes.raw("", summary_html(exp, rows, anchor, others), format="html"))

    # Rerun this chapter, before the first code cell.
    base = app.config.attnlab_repository_url.rstrip("/")
    up = "../" * docname.count("/")
    sources = [(path, f"{base}/{path}" if base else f"{up}{REPO_COPIES}/{path}.txt", what)
               for path, what in sources_of(exp, srcdir)]
    box = nodes.raw("", rerun_html(exp, _timings(srcdir).get(exp.id), sources, f"{up}book/rerun.html"),
                    format="html")
    first = next(iter(doctree.findall(lambda n: isinstance(n, nodes.container) and "cell" in n["classes"])), None)
    if first is not None:
        first.parent.insert(first.parent.index(first), box)
    elif top is not None:
        top.append(box)


def copy_sources(app, exception) -> None:
    """Copy every chapter's linked source notebook and results module into the HTML (`_repo/<path>.txt`),
    when the links point there (no `attnlab_repository_url`)."""
    if exception is not None or app.builder.format != "html" or app.config.attnlab_repository_url:
        return
    from attnlab.papers import registry

    srcdir = Path(app.srcdir)
    for exp in registry().values():
        for path, _ in sources_of(exp, srcdir):
            src, dst = srcdir / path, Path(app.outdir) / REPO_COPIES / f"{path}.txt"
            if src.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)


def _static_path(app, config) -> None:
    config.html_static_path.append(str(STATIC))


def setup(app):
    app.set_html_assets_policy("always")
    app.add_config_value("attnlab_repository_url", "", "html", types=[str])
    app.connect("config-inited", _static_path)
    app.add_css_file(CSS)
    # After Sphinx's own collectors (titles, tocs: priority 500) have read the document.
    app.connect("doctree-read", plain_titles, priority=900)
    app.connect("doctree-read", chapter_view, priority=900)
    app.connect("build-finished", copy_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
