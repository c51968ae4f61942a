"""The built book as a reader sees it, in a real headless browser (Debian's Chromium): every page is
loaded, its scripts run (MathJax typesets the math), and the rendered DOM is checked. A claims table
that is not an HTML <table>, math left as raw TeX, a broken internal link or image, or a visible
traceback fails the test. Every chapter is also laid out at a desktop's size and at a phone's
(390 px, mobile emulation, through the DevTools protocol): its verdicts open the page, within the
first screen; its claims table needs no sideways scrolling on the phone. The Makefile installs
Chromium (apt) before `make test`."""

import json
import os
import queue
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from bs4 import BeautifulSoup, CData, NavigableString

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


TRAMPOLINE = """import fcntl, os, sys
src, dst = (fcntl.fcntl(int(fd), fcntl.F_DUPFD_CLOEXEC, 10) for fd in sys.argv[1:3])  # out of 3 and 4's way
os.dup2(src, 3)  # inheritable: Chromium reads its commands here
os.dup2(dst, 4)  # and writes its answers here
os.execv(sys.argv[3], sys.argv[3:])"""


class DevTools:
    """One headless Chromium driven through the DevTools protocol over a pipe (--remote-debugging-pipe:
    JSON messages ending in NUL, commands on its fd 3, answers on its fd 4): no library needed."""

    def __init__(self):
        self.profile = tempfile.mkdtemp()
        cmd_r, self._cmd = os.pipe()
        self._res, res_w = os.pipe()
        # A Python trampoline puts the pipe's ends on fds 3 and 4 of the exec'd Chromium (sh cannot name fds > 9).
        self.proc = subprocess.Popen(
            [sys.executable, "-c", TRAMPOLINE, str(cmd_r), str(res_w), CHROMIUM, *FLAGS, "--remote-debugging-pipe",
             f"--user-data-dir={self.profile}", "about:blank"],
            pass_fds=(cmd_r, res_w), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(res_w)
        self._buf, self._id, self._events = b"", 0, []
        self._session: str | None = None

    def _receive(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            ready, _, _ = select.select([self._res], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self._res, 1 << 20)
            if not chunk:
                raise EOFError("Chromium exited")
            self._buf += chunk
        message, self._buf = self._buf.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 90):
        self._id += 1
        message = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._cmd, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self._events.append(answer)

    def _wait_for(self, method: str, session: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self._events):
                if event.get("method") == method and event.get("sessionId") == session:
                    del self._events[i]
                    return
            self._events.append(self._receive(deadline))

    def evaluate(self, url: str, script: str, width: int, height: int, mobile: bool):
        """Load `url` with a viewport of width x height CSS pixels (a phone's: mobile=True) and return the value
        of the JavaScript expression `script` (awaited if a promise). Every call is a fresh load (a navigation
        after the viewport is set) in this browser's one tab: a new tab per page costs a renderer process
        each time (about a third of the pass)."""
        if self._session is None:
            target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            self._session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            self.send("Page.enable", session=self._session)
        session = self._session
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "mobile": mobile,
                                                         "deviceScaleFactor": 1}, session=session)
        self.send("Page.navigate", {"url": url}, session=session)
        self._wait_for("Page.loadEventFired", session)
        result = self.send("Runtime.evaluate", {"expression": f"Promise.all([location.href, {script}])",
                                                "awaitPromise": True, "returnByValue": True}, session=session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{url}: {result['exceptionDetails']}")
        href, value = result["result"]["value"]
        if unquote(href) != unquote(url):  # the answer must come from the page just loaded, not the one before
            raise RuntimeError(f"measured {href}, asked for {url}")
        return value

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
            self.proc.wait(timeout=30)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd)
        os.close(self._res)
        shutil.rmtree(self.profile, ignore_errors=True)


def rendered(page: Path, budget_ms: int = 15000) -> BeautifulSoup:
    """The DOM after the page's scripts ran (MathJax included), from a Chromium of its own (--dump-dom)."""
    return BeautifulSoup(chromium(f"--virtual-time-budget={budget_ms}", "--dump-dom", page.as_uri(), timeout=120),
                         "html.parser")


SCREENS = {"desktop": (1280, 800, False), "phone": (390, 844, True)}

# Once MathJax has typeset the page: where things are (page coordinates, CSS pixels) and, if asked, the
# rendered DOM (the page's HTML as its scripts left it).
MEASURE = r"""async (withDom) => {
  const typeset = window.MathJax && MathJax.startup && MathJax.startup.promise;
  if (typeset) { try { await typeset; } catch (e) {} }
  await document.fonts.ready;
  await new Promise(done => requestAnimationFrame(() => setTimeout(done, 50)));
  const box = el => { if (!el) return null; const r = el.getBoundingClientRect();
                      return {top: r.top + scrollY, bottom: r.bottom + scrollY, right: r.right}; };
  const wraps = [...document.querySelectorAll("main div.claims-table")];
  const shown = el => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== "hidden";
  return {
    viewport: [innerWidth, innerHeight], pageWidth: document.documentElement.scrollWidth,
    summary: box(document.querySelector("main .verdict-summary")),
    counts: box(document.querySelector("main .verdict-summary .vs-counts")),
    firstCell: box(document.querySelector("main div.cell")),
    tables: wraps.map(w => ({...box(w), scrollWidth: w.scrollWidth, clientWidth: w.clientWidth})),
    checkCodeShown: [...document.querySelectorAll("main .cell_input, main div.highlight")]
      .filter(el => el.textContent.includes("NBVAL_CHECK_OUTPUT") && shown(el)).length,
    dom: withDom ? document.documentElement.outerHTML : null,
  };
}"""


@pytest.fixture(scope="module")
def browser_pass(built_book):
    """One pass of headless Chromium over the built book, shared by the DOM tests and the layout tests, in two
    browsers side by side: every page is loaded at a desktop's size for its rendered DOM (and measured, MEASURE,
    if a chapter), and every chapter is also loaded at a phone's size and measured (a fresh load for each
    screen: a page resized after loading is not laid out quite as a page loaded at that size). Returns (the HTML
    root, {page: rendered DOM}, {(chapter id, screen): MEASURE's measurements} for every chapter on both
    screens)."""
    out, root = built_book
    assert out.returncode == 0, out.stdout[-3000:]
    chapters = {root / "book" / f"{exp_id}.html": exp_id for exp_id in registry()}
    files = sorted(root.glob("book/**/*.html"), key=lambda p: (p not in chapters, p))  # the longer visits first
    todo = queue.SimpleQueue()
    for path in files:
        todo.put(path)

    def visit_all():
        browser, doms, layouts = DevTools(), {}, {}
        try:
            while True:
                try:
                    path = todo.get_nowait()
                except queue.Empty:
                    return doms, layouts
                for screen in SCREENS if path in chapters else ["desktop"]:
                    m = browser.evaluate(path.as_uri(), f"({MEASURE})({str(screen == 'desktop').lower()})",
                                         *SCREENS[screen])
                    dom = m.pop("dom")
                    if screen == "desktop":
                        doms[path] = BeautifulSoup(dom, "html.parser")
                    if path in chapters:
                        layouts[chapters[path], screen] = m
        finally:
            browser.close()

    with ThreadPoolExecutor(max_workers=2) as pool:
        parts = list(pool.map(lambda _: visit_all(), range(2)))
    doms = {p: d for part, _ in parts for p, d in part.items()}
    layouts = {k: m for _, part in parts for k, m in part.items()}
    assert set(doms) == set(files) and len(layouts) == 2 * len(chapters)
    return root, doms, layouts


@pytest.fixture(scope="module")
def pages(browser_pass):
    """(the HTML root, {page: its DOM after the page's scripts ran (MathJax included)}) for every page."""
    root, doms, _ = browser_pass
    return root, doms


@pytest.fixture(scope="module")
def layouts(browser_pass):
    """{(chapter id, screen): MEASURE's measurements} for every chapter on both screens."""
    return browser_pass[2]


HIDDEN = {"script", "style", "pre", "code", "mjx-container", "mjx-assistive-mml"}


def _visible_text(soup: BeautifulSoup) -> str:
    """The page's text without its code, scripts, styles and typeset math: the strings of <main> (else <body>)
    that no such tag encloses, joined with spaces (what get_text(" ") gives once those tags are removed,
    without copying the DOM the tests share)."""
    body = soup.find("main") or soup.body or soup

    def shown(string) -> bool:
        tag = string.parent
        while tag is not None and tag is not body.parent:
            if tag.name in HIDDEN:
                return False
            tag = tag.parent
        return True

    return " ".join(s for s in body.descendants if type(s) in (NavigableString, CData) and shown(s))


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


# --- The reader's view of a chapter: verdicts first, on a desktop and on a phone -------------------------


def test_every_chapter_opens_with_its_verdicts_within_the_first_screen(layouts):
    """The verdict summary comes before the first code cell, and its counts are on the first screen
    without scrolling, on a desktop and on a phone."""
    for (exp_id, screen), m in layouts.items():
        assert m["summary"] and m["counts"], f"{exp_id} ({screen}): no verdict summary"
        assert m["firstCell"] is None or m["summary"]["bottom"] <= m["firstCell"]["top"], \
            f"{exp_id} ({screen}): the verdict summary is not above the first code cell"
        assert m["counts"]["bottom"] <= m["viewport"][1], \
            f"{exp_id} ({screen}): the verdict counts end {m['counts']['bottom']:.0f} px down, below the first screen"


def test_claims_tables_need_no_sideways_scrolling_on_a_phone(layouts):
    """On a 390-px phone every claims table fits its column, and nothing widens the page (a phone would
    zoom the whole page out)."""
    width = SCREENS["phone"][0]
    for (exp_id, screen), m in layouts.items():
        if screen != "phone":
            continue
        assert m["viewport"][0] == width and m["pageWidth"] <= width, \
            f"{exp_id}: the page is {m['pageWidth']} px wide on a {width}-px phone"
        assert m["tables"], f"{exp_id}: no claims table"
        for t in m["tables"]:
            assert t["scrollWidth"] <= t["clientWidth"] + 1 and t["right"] <= width + 1, \
                f"{exp_id}: a claims table is {t['scrollWidth']} px wide in {t['clientWidth']} px on a 390-px phone"


def test_the_claims_code_is_hidden_and_its_table_shown(layouts, pages):
    root, doms = pages
    for (exp_id, screen), m in layouts.items():
        assert m["checkCodeShown"] == 0, f"{exp_id} ({screen}): the claims table's code is visible"
    for exp in registry().values():
        soup = doms[root / "book" / f"{exp.id}.html"]
        assert not [c for c in soup.select("main .cell_input") if "NBVAL_CHECK_OUTPUT" in c.get_text()], exp.id
        assert soup.select("main table.claims"), exp.id


def test_the_verdict_summary_counts_the_claims_table(pages):
    """The summary's count of each verdict kind is the number of rows of that kind in the table, and its
    headline is one of the table's rows."""
    root, doms = pages
    for exp in registry().values():
        soup = doms[root / "book" / f"{exp.id}.html"]
        box = soup.select_one("main .verdict-summary")
        assert box is not None, exp.id
        tables = soup.select("main .claims-checked table.claims") or soup.select("main table.claims")[:1]
        assert len(tables) == 1, f"{exp.id}: {len(tables)} claims tables in the cell marked NBVAL_CHECK_OUTPUT"
        rows = tables[0].select("tbody tr")
        for chip in box.select(".vs-counts li"):
            kind = next(c for c in chip["class"] if c.startswith("verdict-"))
            shown = int(chip.select_one(".vs-n").get_text())
            assert shown == sum(kind in r.get("class", []) for r in rows), f"{exp.id}: {kind} count {shown}"
        assert sum(int(n.get_text()) for n in box.select(".vs-n")) == len(rows), exp.id
        headline = box.select_one(".vs-row")
        assert headline is not None and headline.select_one(".vs-claim"), f"{exp.id}: no headline row"
        key = headline.select_one(".vs-key").get_text().removeprefix("#")
        assert key in {r.find("td").get_text() for r in rows}, f"{exp.id}: headline row {key} not in the table"


def test_captions_carry_the_papers_numbering_and_titles_no_tex(pages):
    root, doms = pages
    for path, soup in doms.items():
        name = path.relative_to(root)
        title = soup.title.get_text() if soup.title else ""
        assert "$" not in title and "\\(" not in title and "\\" not in title, f"{name}: raw TeX in the title {title!r}"
        for caption in soup.select("figcaption"):
            text = " ".join(caption.get_text(" ").split())
            assert not re.match(r"(Fig(ure)?\.?|Table) ?\d+\s+(Figs?\.|Table)", text), \
                f"{name}: a book-wide number in front of the paper's: {text[:60]!r}"


def test_every_chapter_has_one_rerun_box_with_its_commands_and_code(pages):
    root, doms = pages
    for exp in registry().values():
        page = root / "book" / f"{exp.id}.html"
        soup = doms[page]
        boxes = [t for t in soup.select("main .admonition-title") if t.get_text().strip() == "Rerun this chapter"]
        assert len(boxes) == 1, f"{exp.id}: {len(boxes)} 'Rerun this chapter' boxes"
        box = soup.select_one("main #rerun-this-chapter")
        assert box is not None, exp.id
        text = " ".join(box.get_text(" ").split())
        assert f"attnlab run {exp.id} " in text and f"attnlab run {exp.id} --scale full --headless" in text, exp.id
        links = {a.get_text().strip(): a["href"] for a in box.select("a.attnlab-source")}
        module = "lib/attnlab/papers/p" + exp.paper[:3] + "_"
        assert f"notebooks/{exp.id}.md" in links, f"{exp.id}: no link to its source notebook"
        assert any(k.startswith(module) and "/results/" in k and k.endswith(".py") for k in links), \
            f"{exp.id}: no link to its results module"
        for href in links.values():
            if not urlparse(href).scheme:
                assert (page.parent / unquote(href)).resolve().is_file(), f"{exp.id}: broken link {href}"
