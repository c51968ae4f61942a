"""An executed chapter as one self-contained HTML page, which `attnlab run` writes beside the
executed .ipynb: open it in any browser, no Jupyter needed.

Markdown cells are rendered with markdown-it-py (installed with jupyter-book's MyST parser: tables,
`$…$` math typeset by MathJax (the offline copy the book uses), `:::{admonition}` boxes); code cells are
highlighted with Pygments and followed by their outputs: figures embedded as data: URIs with the
chapter's captions, the claims table as HTML, text, errors. Cells follow jupyter-book's tags:
remove-cell, remove-input and remove-output drop those parts, hide-input folds the code.
(nbconvert's HTMLExporter would do the same job but is not installed with jupyter-book 1.x, and it
does not know MyST either.)
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import nbformat

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
MIME_ORDER = ("text/html", "image/svg+xml", "image/png", "image/jpeg", "text/markdown", "text/latex", "text/plain")
ADMONITION_COLOR = {"tip": "#1a7f37", "note": "#0969da", "warning": "#9a6700", "important": "#8250df",
                    "caution": "#cf222e", "danger": "#cf222e", "attention": "#9a6700", "hint": "#1a7f37"}

CSS = """
body { font: 16px/1.55 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1f2328; margin: 0; }
main { max-width: 980px; margin: 0 auto; padding: 1.5rem 1.2rem 4rem; }
header.run { font-size: 0.85rem; color: #59636e; border-bottom: 1px solid #d1d9e0; padding-bottom: 0.6rem; }
header.run code { font-size: 0.8rem; }
h1, h2, h3 { line-height: 1.25; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9rem; }
th, td { border: 1px solid #d1d9e0; padding: 0.3em 0.6em; vertical-align: top; text-align: left; }
th { background: #f6f8fa; }
pre { background: #f6f8fa; padding: 0.7em 0.9em; overflow-x: auto; font-size: 0.85rem; line-height: 1.4;
      border-radius: 6px; margin: 0.4em 0; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.cell-input pre, .cell-input .highlight pre { border-left: 3px solid #0969da; }
.output pre { background: #fff; border: 1px solid #e5e9ed; }
.output pre.stderr { background: #fff5f5; }
.output pre.error { background: #ffebe9; border-color: #ff8182; }
.output img { max-width: 100%; }
figure { margin: 0.8em 0; }
figcaption { font-size: 0.9rem; color: #59636e; margin-top: 0.3em; }
details > summary { cursor: pointer; color: #59636e; font-size: 0.85rem; }
.label { font-size: 0.8rem; color: #59636e; margin-top: 1em; }
.admonition { border-left: 4px solid var(--c, #0969da); background: #f6f8fa; padding: 0.2em 1em; margin: 1em 0;
              border-radius: 4px; }
.admonition > .title { font-weight: 600; color: var(--c, #0969da); margin: 0.5em 0 0.2em; }
"""
def _mathjax_src() -> str:
    """MathJax 3 from this environment (the copy the book itself uses, shipped by sphinx-mathjax-offline), so
    the page typesets its math offline; a CDN only where that copy is absent."""
    import sysconfig

    local = Path(sysconfig.get_paths()["purelib"]) / "sphinx-mathjax-offline" / "static" / "mathjax" / "tex-chtml.js"
    return local.as_uri() if local.exists() else "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"


MATHJAX = ("<script>MathJax = {tex: {inlineMath: [['\\\\(', '\\\\)']], displayMath: [['\\\\[', '\\\\]']]}};</script>\n"
           f'<script defer src="{_mathjax_src()}"></script>')


def _markdown():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.colon_fence import colon_fence_plugin
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    def math(content: str, options: dict[str, Any]) -> str:
        text = html.escape(content)
        return f'<div class="math">\\[{text}\\]</div>' if options.get("display_mode") else f"\\({text}\\)"

    md = MarkdownIt("commonmark", {"html": True}).enable("table").use(colon_fence_plugin).use(
        dollarmath_plugin, renderer=math)

    def colon_fence(self, tokens, idx, options, env):
        """`:::{admonition} Title` (with `:class: tip` option lines) as a coloured box; other directives as text."""
        token = tokens[idx]
        directive, _, title = token.info.strip().partition(" ")
        lines = token.content.splitlines()
        opts = {m.group(1): m.group(2).strip() for m in (re.match(r":(\w+):(.*)", l) for l in lines) if m}
        body = "\n".join(l for l in lines if not re.match(r":\w+:", l))
        kind = directive.strip("{}")
        title = title or kind.capitalize()
        color = ADMONITION_COLOR.get(opts.get("class", kind), "#0969da")
        return (f'<div class="admonition" style="--c: {color}"><p class="title">{md.renderInline(title)}</p>'
                f"{md.render(body)}</div>")

    md.add_render_rule("colon_fence", colon_fence)
    return md


def _highlight(source: str) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return highlight(source, PythonLexer(), HtmlFormatter(cssclass="highlight"))


def _text(text: str | list[str]) -> str:
    """Output text as a terminal would have left it: ANSI colours dropped, each line after its last
    carriage return (a progress bar shows its final state)."""
    text = ANSI.sub("", "".join(text))
    return "\n".join(line.rsplit("\r", 1)[-1] if line.strip("\r") else "" for line in text.split("\n"))


def _output(out: dict, meta: dict, md) -> str:
    kind = out.get("output_type")
    if kind == "stream":
        text = _text(out.get("text", "")).strip("\n")
        return f'<pre class="{out.get("name", "stdout")}">{html.escape(text)}</pre>' if text.strip() else ""
    if kind == "error":
        return f'<pre class="error">{html.escape(_text(chr(10).join(out.get("traceback", []))))}</pre>'
    data = out.get("data", {})
    mime = next((m for m in MIME_ORDER if m in data), None)
    if mime is None:
        return ""
    value = data[mime]
    value = "".join(value) if isinstance(value, list) else value
    if mime == "text/html":
        return f"<div>{value}</div>"
    if mime == "image/svg+xml":
        return f"<div>{value}</div>"
    if mime.startswith("image/"):
        figure = meta.get("mystnb", {}).get("figure", {})
        alt = meta.get("mystnb", {}).get("image", {}).get("alt", "a figure of the chapter")
        img = f'<img src="data:{mime};base64,{value.strip()}" alt="{html.escape(str(alt), quote=True)}">'
        caption = figure.get("caption")
        return (f"<figure>{img}<figcaption>{md.render(str(caption))}</figcaption></figure>" if caption else
                f"<figure>{img}</figure>")
    if mime == "text/markdown":
        return f"<div>{md.render(value)}</div>"
    if mime == "text/latex":
        return f'<div class="math">{html.escape(value)}</div>'
    return f"<pre>{html.escape(value)}</pre>"


def notebook_html(nb: nbformat.NotebookNode, title: str = "", header: str = "") -> str:
    """The page of an executed notebook: `title` for the browser tab, `header` (HTML) above the cells."""
    from pygments.formatters import HtmlFormatter

    md = _markdown()
    body = []
    for cell in nb.cells:
        tags = set(cell.metadata.get("tags", []))
        if "remove-cell" in tags:
            continue
        if cell.cell_type == "markdown":
            body.append(f'<section class="markdown">{md.render(cell.source)}</section>')
            continue
        if cell.cell_type != "code":
            continue
        parts = []
        if cell.source.strip() and "remove-input" not in tags:
            code = f'<div class="cell-input">{_highlight(cell.source)}</div>'
            if "injected-parameters" in tags:
                code = '<p class="label">The parameters of this run (injected by papermill):</p>' + code
            elif "hide-input" in tags:
                code = f"<details><summary>Show code</summary>{code}</details>"
            parts.append(code)
        if "remove-output" not in tags:
            outs = [_output(o, cell.metadata, md) for o in cell.get("outputs", [])]
            parts.append('<div class="output">' + "".join(o for o in outs if o) + "</div>")
        body.append('<section class="code">' + "".join(parts) + "</section>")
    style = CSS + HtmlFormatter(cssclass="highlight").get_style_defs(".highlight")
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(title)}</title>\n<style>{style}</style>\n{MATHJAX}\n</head>\n<body>\n<main>\n"
            f"{header}\n" + "\n".join(body) + "\n</main>\n</body>\n</html>\n")


def write_page(notebook: Path, title: str = "", header: str = "") -> Path:
    """Write the page of the executed `notebook` beside it (same name, .html); return its path."""
    nb = nbformat.read(notebook, as_version=4)
    page = Path(notebook).with_suffix(".html")
    page.write_text(notebook_html(nb, title or Path(notebook).stem, header), encoding="utf-8")
    return page
