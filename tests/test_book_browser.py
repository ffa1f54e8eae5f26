"""The rendered book, opened as a web page in headless Chromium.

Every page of ``_toc.yml`` must load without console errors or uncaught exceptions, every image
must actually load, and every link inside the book must lead to an existing page (and anchor).
The book is served from a local ``http.server``; requests to other hosts (MathJax from its CDN)
are answered with an empty script, since this machine is offline.
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

from iclmem.book import toc_pages

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
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
    handler = functools.partial(type("Handler", (_QuietHandler,), {"missing": missing}), directory=str(built_book / "html"))
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


def _visit(browser, url: str, base: str) -> dict:  # noqa: ANN001
    """Open ``url``; return console errors, page errors, images and links found on it."""
    context = browser.new_context()
    external: list[str] = []

    def route(r) -> None:  # noqa: ANN001
        if r.request.url.startswith(base):
            r.continue_()
        else:
            external.append(r.request.url)
            r.fulfill(status=200, content_type="application/javascript", body="")

    context.route("**/*", route)
    page = context.new_page()
    console: list[str] = []
    errors: list[str] = []
    page.on("console", lambda m: console.append(f"{m.text} ({m.location.get('url')})") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    response = page.goto(url, wait_until="load")
    page.wait_for_load_state("networkidle")
    images = page.evaluate(
        "() => Array.from(document.images).map(i => ({src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0}))"
    )
    links = page.evaluate("() => Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
    title = page.title()
    context.close()
    return {
        "status": response.status if response else None,
        "console": console,
        "errors": errors,
        "images": images,
        "links": links,
        "title": title,
        "external": external,
    }


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


def test_the_only_external_requests_are_known_cdns(visits: dict[str, dict]) -> None:
    hosts = {urlparse(u).hostname for visit in visits.values() for u in visit["external"]}
    assert hosts <= {"cdn.jsdelivr.net"}, hosts


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
