"""The real book, built once with tiny parameters (:func:`built_book`), and opened in headless Chromium.

Every page of ``_toc.yml`` must load without console errors or uncaught exceptions, every image
must actually load, and every link inside the book must lead to an existing page (and anchor).
The book is served from a local ``http.server`` and every request to another host is refused, as
it would fail offline: the book needs no network. Its formulas are typeset by the MathJax copy in
``_static/mathjax/`` (also when a page is opened from disk), each page shows one search box, and
searching from it finds a word that only a notebook page holds.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import re
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

from iclmem.book.build import toc_pages

pytestmark = pytest.mark.slow  # the whole file is slow (a module or session fixture builds a book)

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
#: MathJax as sphinx-mathjax-offline (pinned in pyproject.toml) ships it; the book loads it from _static/mathjax/.
MATHJAX_VERSION = "3.2.2"
#: A word of a notebook page that no other page of the book has; the search box must find the page.
SEARCH_TERM, NOTEBOOK_PAGE = "Wasserstein", "notebooks/01_split_validation"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; remembers the paths it could not find instead of logging every request."""

    missing: list[str]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        if code == 404:
            self.missing.append(self.path)
        super().send_error(code, message, explain)


@pytest.fixture(scope="module")
def server(built_book: Path) -> Iterator[tuple[str, list[str]]]:
    """``(base_url, missing_paths)`` of the built book served on 127.0.0.1 at a free port."""
    missing: list[str] = []
    handler = functools.partial(
        type("Handler", (_QuietHandler,), {"missing": missing}), directory=str(built_book / "html")
    )
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/", missing
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not CHROMIUM.exists():
        pytest.fail("Chromium is missing: `make test` installs it (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


#: Waits for MathJax's first typesetting pass, then counts the page's formulas (Sphinx's ``.math``
#: elements), those typeset (holding MathJax's ``mjx-container`` output) and any TeX delimiters left
#: in the page's text outside code, where a formula that was not typeset would show.
MATH_STATE = r"""async () => {
  const mathjax = window.MathJax && window.MathJax.startup ? window.MathJax.version : null;
  if (mathjax) await window.MathJax.startup.promise;
  const formulas = Array.from(document.querySelectorAll('.math'));
  const text = document.body.cloneNode(true);
  text.querySelectorAll('pre, code, script, style, textarea, mjx-container').forEach(e => e.remove());
  const content = text.textContent;
  const raw = Array.from(content.matchAll(/\\\(|\\\)|\\\[|\\\]|\$\$/g),
                         m => content.slice(Math.max(0, m.index - 40), m.index + 40));
  const scripts = Array.from(document.scripts, s => s.src).filter(src => /mathjax/i.test(src));
  return {mathjax, scripts, formulas: formulas.length,
          typeset: formulas.filter(f => f.querySelector('mjx-container')).length, raw};
}"""

#: The search boxes a reader can see: search fields (a form with a search input) and the theme's
#: buttons that open its search dialog.
VISIBLE_SEARCH_BOXES = """() => Array.from(document.querySelectorAll('.search-button__button, form'))
  .filter(e => !e.matches('form') || e.querySelector('input[type=search], input[name=q]'))
  .filter(e => e.checkVisibility({visibilityProperty: true, opacityProperty: true}))
  .map(e => e.outerHTML.slice(0, 120))"""


@contextlib.contextmanager
def _open(browser, url: str, base: str, **context_options: object) -> Iterator[tuple[object, dict]]:  # noqa: ANN001
    """A page showing ``url`` in a fresh browser context where every request outside ``base`` is refused.

    Yields ``(page, record)``: ``record`` collects the page's console errors, uncaught exceptions,
    the refused requests (``external``) and the response ``status`` of ``url``.
    """
    context = browser.new_context(**context_options)
    record: dict = {"console": [], "errors": [], "external": [], "status": None}

    def route(r) -> None:  # noqa: ANN001
        if r.request.url.startswith(base):
            r.continue_()
        else:
            record["external"].append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on(
        "console",
        lambda m: record["console"].append(f"{m.text} ({m.location.get('url')})") if m.type == "error" else None,
    )
    page.on("pageerror", lambda e: record["errors"].append(str(e)))
    try:
        response = page.goto(url, wait_until="load")
        page.wait_for_load_state("networkidle")
        record["status"] = response.status if response else None
        yield page, record
    finally:
        context.close()


def _visit(browser, url: str, base: str) -> dict:  # noqa: ANN001
    """Open ``url``; return console errors, page errors, images, links, formulas and search boxes found on it."""
    with _open(browser, url, base) as (page, record):
        return {
            **record,
            "images": page.evaluate(
                "() => Array.from(document.images).map(i => ({src: i.currentSrc || i.src, ok: i.complete && "
                "i.naturalWidth > 0}))"
            ),
            "links": page.evaluate("() => Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"),
            "title": page.title(),
            "math": page.evaluate(MATH_STATE),
            "search_boxes": page.evaluate(VISIBLE_SEARCH_BOXES),
            "overflow": page.evaluate(PAGE_OVERFLOW),
            "tables": page.evaluate(TABLES),
        }


#: How far the page body is wider than the window (0: nothing sticks out to the right).
PAGE_OVERFLOW = "() => Math.max(0, document.documentElement.scrollWidth - window.innerWidth)"
#: Every data table of the page: formatted by the book's formatter, with or without an index column.
TABLES = """() => Array.from(document.querySelectorAll('.cell_output table')).map(t => ({
    formatted: t.classList.contains('iclmem-table') || t.classList.contains('scorecard')
      || t.classList.contains('bad-inputs'),
    index: t.querySelectorAll('tbody th').length > 0,
    raw_exponent: /\\d\\.\\d{3}e[+-]\\d\\d/.test(t.innerText)}))"""


def _page_urls(base: str) -> list[str]:
    return [urljoin(base, f"{page.name}.html") for page in toc_pages(REPO)]


@pytest.fixture(scope="module")
def visits(browser, server: tuple[str, list[str]]) -> dict[str, dict]:  # noqa: ANN001
    base, _ = server
    return {url: _visit(browser, url, base) for url in [base, *_page_urls(base)]}


def test_every_toc_page_loads_without_errors(visits: dict[str, dict], server: tuple[str, list[str]]) -> None:
    base, missing = server
    assert len(visits) == len(toc_pages(REPO)) + 1
    for url, visit in visits.items():
        assert visit["status"] == 200, url
        assert "iclmem" in visit["title"], (url, visit["title"])
        assert visit["errors"] == [], (url, visit["errors"])
        assert visit["console"] == [], (url, visit["console"])
    assert missing == [], f"the pages requested files that do not exist: {missing}"


def test_no_page_requests_anything_outside_the_book(visits: dict[str, dict]) -> None:
    hosts = {urlparse(u).hostname for visit in visits.values() for u in visit["external"]}
    assert hosts == set(), f"the pages need the network: {hosts}"


def test_formulas_are_typeset_by_the_local_mathjax(visits: dict[str, dict], server: tuple[str, list[str]]) -> None:
    base, _ = server
    with_math = {url for url, visit in visits.items() if visit["math"]["formulas"]}
    assert {urljoin(base, "book/intro.html"), urljoin(base, f"{NOTEBOOK_PAGE}.html")} <= with_math, (
        "pages with formulas"
    )
    for url, visit in visits.items():
        math = visit["math"]
        assert math["raw"] == [], f"{url}: TeX left untypeset: {math['raw']}"
        if url in with_math:
            assert math["mathjax"] == MATHJAX_VERSION, (url, math)
            assert math["scripts"] and all(
                src.startswith(urljoin(base, "_static/mathjax/")) for src in math["scripts"]
            ), (url, math)
            assert math["typeset"] == math["formulas"], (
                f"{url}: {math['typeset']} of {math['formulas']} formulas typeset"
            )


def test_formulas_are_typeset_when_the_book_is_opened_from_disk(browser, built_book: Path) -> None:  # noqa: ANN001
    html = built_book / "html"
    with _open(browser, (html / "book" / "intro.html").as_uri(), html.as_uri() + "/") as (page, record):
        math = page.evaluate(MATH_STATE)
    assert record["external"] == [] and record["errors"] == [] and record["console"] == [], record
    assert math["mathjax"] == MATHJAX_VERSION and math["formulas"] > 0, math
    assert math["typeset"] == math["formulas"] and math["raw"] == [], math


def test_every_page_shows_one_search_box(visits: dict[str, dict], browser, server: tuple[str, list[str]]) -> None:  # noqa: ANN001
    for url, visit in visits.items():
        assert len(visit["search_boxes"]) == 1, (url, visit["search_boxes"])
    base, _ = server  # on a phone the sidebar folds away and the header's search button is the one left
    with _open(browser, urljoin(base, f"{NOTEBOOK_PAGE}.html"), base, viewport={"width": 400, "height": 800}) as (
        page,
        _record,
    ):
        narrow = page.evaluate(VISIBLE_SEARCH_BOXES)
    assert len(narrow) == 1, narrow


def test_the_search_box_finds_a_word_that_only_a_notebook_page_holds(browser, server: tuple[str, list[str]]) -> None:  # noqa: ANN001
    base, _ = server
    assert not [
        p.name for p in toc_pages(REPO) if not p.is_notebook and SEARCH_TERM.lower() in p.source.read_text().lower()
    ]
    with _open(browser, urljoin(base, "book/intro.html"), base) as (page, record):
        page.locator(".search-button__button:visible").click()
        field = page.locator("#pst-search-dialog input[type=search]")
        field.fill(SEARCH_TERM)
        field.press("Enter")
        page.wait_for_url("**/search.html?q=*")
        page.wait_for_function(
            "() => /Search finished|did not match/.test(document.querySelector('#search-results "
            ".search-summary')?.innerText || '')"
        )
        page.wait_for_load_state("networkidle")  # the result summaries are fetched from the pages
        summary = page.inner_text("#search-results .search-summary")
        hits = page.evaluate(
            "() => Array.from(document.querySelectorAll('#search-results ul.search > li > a'), a => a.href)"
        )
    assert {urlparse(hit).path for hit in hits} >= {urlparse(urljoin(base, f"{NOTEBOOK_PAGE}.html")).path}, (
        summary,
        hits,
    )
    assert record["external"] == [] and record["errors"] == [] and record["console"] == [], record


def test_no_page_is_wider_than_the_window(visits: dict[str, dict]) -> None:
    """Wide tables scroll inside their box (book/_static/iclmem.css); the page body never scrolls sideways."""
    assert {url: v["overflow"] for url, v in visits.items() if v["overflow"] > 0} == {}


def test_tables_come_from_the_book_formatter(visits: dict[str, dict]) -> None:
    """Every data table is the formatter's (or one of the two the chapters write as HTML themselves: the scorecard and
    the bad-input catalogue): no index column, no raw 1.000e-02 numbers (iclmem/report/display.py)."""
    tables = [(url, t) for url, v in visits.items() for t in v["tables"]]
    assert tables, "the tiny book shows tables"
    assert [url for url, t in tables if not t["formatted"] or t["index"] or t["raw_exponent"]] == []


def test_every_image_loads(visits: dict[str, dict], server: tuple[str, list[str]]) -> None:
    base, _ = server
    notebook_page = urljoin(base, "notebooks/01_split_validation.html")
    assert visits[notebook_page]["images"], "the split validation page shows at least one figure"
    for url, visit in visits.items():
        broken = [image["src"] for image in visit["images"] if not image["ok"]]
        assert broken == [], (url, broken)


def test_internal_links_resolve(visits: dict[str, dict], server: tuple[str, list[str]]) -> None:
    base, _ = server
    targets = {link for visit in visits.values() for link in visit["links"] if link.startswith(base)}
    assert len(targets) > len(visits), "the pages link to each other"
    ids: dict[str, set[str]] = {}
    for link in sorted(targets):
        page, fragment = urldefrag(link)
        if page not in ids:
            with urllib.request.urlopen(page, timeout=10) as response:
                assert response.status == 200, link
                ids[page] = set(re.findall(r'\bid="([^"]+)"', response.read().decode("utf-8", "replace")))
        if fragment:
            assert fragment in ids[page], f"{link}: no element with id {fragment!r}"


def test_executed_notebooks_store_no_progress_bars_or_widget_warnings(built_book: Path) -> None:
    """Progress belongs to the terminal: no tqdm line and no "IProgress not found" warning is stored in an executed
    chapter.

    The bars run (notebook 06 shows its own, and transformers converts the GGUF file with one), but
    they write to the kernel's real stderr, which :mod:`iclmem.runtime.progress` and the kernel options of
    :func:`iclmem.book.execute.execute` keep out of the notebook.
    """
    executed = sorted((built_book / "executed").rglob("*.ipynb"))
    assert len(executed) >= 10
    stored = {p.name: p.read_text() for p in executed}
    assert {name for name, text in stored.items() if "IProgress" in text} == set()
    assert {
        name for name, text in stored.items() if re.search(r"\d+/\d+ \[\d\d:\d\d<", text)
    } == set()  # tqdm's "3/8 [00:01<"


# --- what the build wrote (no browser needed) ------------------------------------------------------


def test_real_book_renders_the_split_validation_table(built_book: Path) -> None:
    html = (built_book / "html" / "notebooks" / "01_split_validation.html").read_text()
    assert "<table" in html
    headers = re.findall(r"<th[^>]*>(.*?)</th>", html, flags=re.S)
    assert any(h.strip() in {"TVD", "KS", "KS stat", "tvd", "ks"} for h in headers), headers
    assert (built_book / "html" / "index.html").is_file()


def test_real_book_ran_with_the_overrides_from_the_command_line(built_book: Path, book_overrides: dict) -> None:
    executed = json.loads((built_book / "executed" / "notebooks" / "01_split_validation.ipynb").read_text())
    assert executed["metadata"]["papermill"]["parameters"] == book_overrides["01_split_validation"]


def test_real_book_scorecard_holds_every_claim_with_a_verdict(built_book: Path) -> None:
    """The scorecard page reads every claim (C1-C16 with C12 as C12a-c, P1-P3, D1-D9, M1-M2) from the executed chapters;
    none is missing."""
    from iclmem.report.glue import scorecard_table
    from iclmem.report.records import VERDICTS
    from iclmem.report.registry import CLAIMS

    table = scorecard_table(built_book / "executed")
    assert list(table.claim) == [c.id for c in CLAIMS] and len(table) == 32  # C1-C16 (C12a-c), P1-P3, D1-D9, M1-M2
    missing = table[~table.verdict.isin(VERDICTS)]
    assert missing.empty, f"claims without a record: {missing[['claim', 'reason']].to_dict('records')}"
    assert (built_book / "html" / "notebooks" / "00_scorecard.html").is_file()
    # no chapter read a design here (`design: ""`): the book's grid decides every row, with nothing beside it
    assert (table["other verdict"] == "").all() and set(table["decided by"]) == {"book grid"}


# : The scorecard as a reader sees it: overflow, the table's rows and badges, the opening counts, code and sidebars
# shown.
SCORECARD_STATE = """() => {
  const rows = Array.from(document.querySelectorAll('table.scorecard tbody tr'));
  const counts = {};
  document.querySelectorAll('.scorecard-counts .verdict-count').forEach(c => {
    counts[c.dataset.verdict] = parseInt(c.querySelector('b').textContent); });
  const visible = e => e && e.checkVisibility();
  return {
    overflow: Math.max(0, document.documentElement.scrollWidth - window.innerWidth),
    table_scrolls: Array.from(document.querySelectorAll('table.scorecard'))
      .some(t => t.scrollWidth > t.parentElement.clientWidth + 1),
    rows: rows.length,
    badges_per_row: rows.map(r => r.querySelectorAll('.verdict-badge').length),
    row_verdicts: rows.map(r => r.querySelector('.verdict-badge').dataset.verdict),
    counts,
    links: rows.map(r => r.querySelector('td a').href),
    code_shown: Array.from(document.querySelectorAll('.cell_input, div.highlight')).filter(visible).length,
    secondary_sidebar: visible(document.querySelector('.bd-sidebar-secondary')),
    first_text: document.querySelector('article').innerText.split('\\n').filter(t => t.trim()).slice(0, 2).join(' | '),
  };
}"""


#: Per page at 1280 px: how far the page scrolls sideways, and how far each parameters table (iclmem/book/page_view.py)
#: runs past its box.
PARAMETER_TABLES_STATE = """() => ({
  page: Math.max(0, document.documentElement.scrollWidth - window.innerWidth),
  tables: Array.from(document.querySelectorAll('.iclmem-parameters table')).map(t =>
    Math.round(t.getBoundingClientRect().right - t.closest('.iclmem-parameters').getBoundingClientRect().right)),
})"""


def test_every_parameters_table_fits_its_page_at_1280_px(
    browser, server: tuple[str, list[str]], built_book: Path
) -> None:  # noqa: ANN001
    """Issue 54 item 7: a page's parameters table wraps its long values (book/_static/iclmem.css) instead of running
    past the page's right edge, where a reader at 1280 px saw it cut off."""
    base, _ = server
    pages = sorted(
        p.relative_to(built_book / "html").as_posix() for p in (built_book / "html" / "notebooks").glob("*.html")
    )
    seen = {}
    for name in pages:
        with _open(browser, urljoin(base, name), base, viewport={"width": 1280, "height": 900}) as (page, _):
            seen[name] = page.evaluate(PARAMETER_TABLES_STATE)
    assert sum(len(state["tables"]) for state in seen.values()) >= 10  # every chapter but the scorecard shows one
    assert {name: state for name, state in seen.items() if state["page"] or any(x > 1 for x in state["tables"])} == {}


def test_the_scorecard_reads_at_a_glance_at_1280_px(browser, server: tuple[str, list[str]], built_book: Path) -> None:  # noqa: ANN001
    from collections import Counter

    import pandas as pd

    from iclmem.chapters.ch00_scorecard import split_beyond
    from iclmem.report.glue import scorecard_table
    from iclmem.report.registry import CLAIMS

    base, _ = server
    with _open(
        browser, urljoin(base, "notebooks/00_scorecard.html"), base, viewport={"width": 1280, "height": 900}
    ) as (page, _):
        state = page.evaluate(SCORECARD_STATE)
    assert state["overflow"] == 0 and state["table_scrolls"] is False
    # one badge per row, and a second on the rows a chapter also read on the registered design (none in this build)
    papers, beyond = split_beyond(scorecard_table(built_book / "executed"))
    beside = [1 + bool(v) for v in pd.concat([papers, beyond])["other verdict"]]
    assert state["rows"] == len(CLAIMS) and state["badges_per_row"] == beside
    # the opening counts match the table (the opening also lists the verdicts no row has, as 0)
    assert {k: v for k, v in state["counts"].items() if v} == dict(Counter(state["row_verdicts"]))
    assert state["code_shown"] == 0 and not state["secondary_sidebar"]
    assert "Of the" in state["first_text"]  # the page opens on the counts
    ids: dict[str, set[str]] = {}
    for link in state["links"]:
        target, fragment = urldefrag(link)
        assert fragment, f"{link}: the claim links to its page, not to the section that computes it"
        if target not in ids:
            with urllib.request.urlopen(target, timeout=10) as response:
                ids[target] = set(re.findall(r'\bid="([^"]+)"', response.read().decode("utf-8", "replace")))
        assert fragment in ids[target], f"{link}: no element with id {fragment!r}"
