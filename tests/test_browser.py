"""The built book as a reader sees it, in a real headless browser (Debian's Chromium): every page is
loaded, its scripts run (MathJax typesets the math), and the rendered DOM is checked. A claims table
that is not an HTML <table>, math left as raw TeX, a broken internal link or image, or a visible
traceback fails the test. The Makefile installs Chromium (apt) before `make test`."""

import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from bs4 import BeautifulSoup

from attnlab.papers import registry

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    if os.environ.get("CI"):
        raise RuntimeError("Chromium is not installed: `make test` installs it (apt-get install chromium)")
    pytest.skip("Chromium is not installed (apt-get install chromium); CI installs it", allow_module_level=True)

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--allow-file-access-from-files"]


def chromium(*args: str, timeout: int = 60) -> str:
    with tempfile.TemporaryDirectory() as profile:
        out = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                             text=True, timeout=timeout)
    return out.stdout


def rendered(page: Path, budget_ms: int = 15000) -> BeautifulSoup:
    """The DOM after the page's scripts ran (MathJax included)."""
    return BeautifulSoup(chromium(f"--virtual-time-budget={budget_ms}", "--dump-dom", page.as_uri(), timeout=120),
                         "html.parser")


@pytest.fixture(scope="module")
def pages(built_book):
    out, root = built_book
    assert out.returncode == 0, out.stdout[-3000:]
    files = sorted(root.glob("book/**/*.html"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        doms = list(pool.map(rendered, files))
    return root, dict(zip(files, doms))


def _visible_text(soup: BeautifulSoup) -> str:
    body = soup.find("main") or soup.body or soup
    for tag in body.find_all(["script", "style", "pre", "code", "mjx-container", "mjx-assistive-mml"]):
        tag.decompose()
    return body.get_text(" ")


def test_every_claims_table_is_an_html_table(pages):
    root, doms = pages
    for exp in registry().values():
        soup = doms[root / "book" / f"{exp.id}.html"]
        tables = soup.select("table.claims")
        assert tables, f"{exp.id}: the claims table is not rendered as an HTML <table>"
        rows = tables[0].select("tbody tr")
        assert rows and all(len(r.find_all("td")) == 7 for r in rows), exp.id
        assert "| claim |" not in _visible_text(soup), f"{exp.id}: a claims table shows as raw pipes"


def test_math_is_typeset(pages):
    root, doms = pages
    for path, soup in doms.items():
        name = path.relative_to(root)
        if any(not span.find("mjx-container") for span in soup.select(".math")):
            soup = rendered(path, budget_ms=60000)  # a page with much math on a busy machine: give MathJax longer
        for span in soup.select(".math"):
            assert span.find("mjx-container"), f"{name}: math not typeset: {span.get_text()[:80]!r}"
        text = _visible_text(soup)
        raw = re.findall(r"(?<![\w$])\$(?!\s)[^$\n]{1,80}(?<!\s)\$(?![\w$])", text)
        assert not raw, f"{name}: raw $…$ math left in the text: {raw[:3]}"
        assert "\\(" not in text and "\\[" not in text, f"{name}: raw \\( \\) math left in the text"


def test_no_broken_internal_link_or_image(pages):
    root, doms = pages
    for path, soup in doms.items():
        for tag, attr in (("a", "href"), ("img", "src")):
            for el in soup.find_all(tag):
                ref = el.get(attr)
                if not ref or ref.startswith(("#", "mailto:", "javascript:", "data:")):
                    continue
                url = urlparse(ref)
                if url.scheme in ("http", "https"):
                    continue
                target = (path.parent / unquote(url.path)).resolve() if url.scheme != "file" else Path(unquote(url.path))
                assert target.exists(), f"{path.relative_to(root)}: broken {tag} {ref}"


def test_no_visible_traceback_or_error_output(pages):
    root, doms = pages
    for path, soup in doms.items():
        text = _visible_text(soup)
        assert "Traceback (most recent call last)" not in text, f"{path.relative_to(root)} shows a traceback"
        assert not soup.select(".output.traceback, .output.error, .cell_output .stderr"), \
            f"{path.relative_to(root)} shows an error or stderr output"


def test_every_figure_has_a_caption_and_alt_text(pages):
    root, doms = pages
    for exp in registry().values():
        soup = doms[root / "book" / f"{exp.id}.html"]
        for img in soup.select("main img"):
            alt = img.get("alt", "")
            assert alt and not alt.endswith((".png", ".jpg", ".svg")), \
                f"{exp.id}: a figure without alt text ({img.get('src')})"
            assert img.find_parent("figure") is not None, f"{exp.id}: a figure without a caption ({img.get('src')})"


def test_screenshots_at_desktop_and_phone_width(built_book, tmp_path):
    """The index and a chapter render at 1280 px and at 400 px (non-empty screenshots)."""
    _, root = built_book
    chapter = next(iter(registry().values()))
    for page in (root / "book" / "intro.html", root / "book" / f"{chapter.id}.html"):
        for width in (1280, 400):
            shot = tmp_path / f"{page.stem}-{width}.png"
            chromium(f"--window-size={width},1600", f"--screenshot={shot}", "--virtual-time-budget=10000",
                     page.as_uri())
            assert shot.exists() and shot.stat().st_size > 10_000, shot
