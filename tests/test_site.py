"""The built static site, in a real headless Chromium (Debian's, driven by Playwright).

Serves ``_build/html`` on 127.0.0.1 and checks every page in ``_toc.yml``: it loads without
console errors, no request fails or leaves the machine, MathJax renders, every image
loads, widget views render, and moving a slider of a kernel-free figure redraws it.

Run after ``make book`` (``make test`` does both). Locally, a missing browser or site skips
these tests; with ``REQUIRE_BROWSER=1`` (set by ``.ci/run``) it fails them.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
REQUIRED = os.environ.get("REQUIRE_BROWSER") == "1"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def missing(reason: str):
    if REQUIRED:
        pytest.fail(f"{reason} (REQUIRE_BROWSER=1: the browser tests must run)")
    pytest.skip(reason)


def toc_pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for entry in toc.get("chapters", []):
        files.append(entry["file"])
    return [f + ".html" for f in files]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(directory: Path):
    """Serve ``directory`` on 127.0.0.1 (a free port) for the block; yields its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def launch(playwright):
    """Debian's headless Chromium with the flags that keep it off the network."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


@pytest.fixture(scope="module")
def site_url():
    if not (SITE / "index.html").exists():
        missing(f"no built site at {SITE}: run `make book` first")
    with serve(SITE) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        missing("Debian's chromium is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright is not installed")
    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def typeset_math(page) -> None:
    """Wait until MathJax has typeset the page's formulas (returns at once on a page without)."""
    if page.locator(".math").count():
        page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.document"
                               " && document.querySelectorAll('mjx-container').length > 0")
        page.evaluate("MathJax.startup.promise")


class PageVisit:
    """Open one page, recording console errors, failed and off-machine requests."""

    def __init__(self, browser, url: str, viewport: dict | None = None):
        self.page = browser.new_page(viewport=viewport) if viewport else browser.new_page()
        self.errors, self.failed, self.external = [], [], []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", lambda r: self.failed.append(f"{r.url} ({r.failure})"))
        self.page.route("**/*", self._route)
        response = self.page.goto(url, wait_until="load")
        assert response is not None and response.ok, f"{url}: HTTP {response and response.status}"

    def _route(self, route):
        url = urlparse(route.request.url)
        if url.scheme in ("data", "blob") or url.hostname == "127.0.0.1":
            route.continue_()
        else:  # record and refuse: nothing may leave the machine
            self.external.append(route.request.url)
            route.abort()

    def close(self):
        self.page.close()


@pytest.mark.parametrize("path", toc_pages())
def test_page_loads_offline_without_errors(browser, site_url, path):
    visit = PageVisit(browser, f"{site_url}/{path}")
    page = visit.page
    try:
        page.wait_for_load_state("networkidle")
        if page.locator(".math").count():  # MathJax typeset every formula
            typeset_math(page)
            assert page.locator("mjx-container").count() >= page.locator(".math").count() // 2
            assert page.locator("mjx-merror").count() == 0, "a formula failed to typeset"
        broken = page.evaluate("Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0))"
                               ".map(i => i.src)")
        assert broken == [], f"images that did not load: {broken}"
        views = page.locator("script[type='application/vnd.jupyter.widget-view+json']").count()
        if views:
            page.wait_for_selector(".jupyter-widgets", timeout=15000)
            assert page.locator(".widget-slider, .widget-hslider").count() >= 1
        for fig in page.locator(".kernel-free-figure").all():
            assert fig.get_attribute("data-state") is not None, "kernel-free figure did not mount"
            assert fig.locator("svg *").count() > 0, "kernel-free figure drew nothing"
        assert visit.external == [], f"requests that would leave the machine: {visit.external}"
        assert visit.failed == [], f"failed requests: {visit.failed}"
        assert visit.errors == [], f"console errors: {visit.errors}"
    finally:
        visit.close()


def test_site_has_kernel_free_figures_and_widgets(browser, site_url):
    """At least one page must carry each kind of interactive element (else the checks above
    would pass vacuously)."""
    counts = {"figures": 0, "widgets": 0}
    for path in toc_pages():
        visit = PageVisit(browser, f"{site_url}/{path}")
        counts["figures"] += visit.page.locator(".kernel-free-figure").count()
        counts["widgets"] += visit.page.locator(
            "script[type='application/vnd.jupyter.widget-view+json']").count()
        visit.close()
    assert counts["figures"] >= 1 and counts["widgets"] >= 1, counts


@pytest.mark.parametrize("path", toc_pages())
def test_moving_a_kernel_free_slider_redraws_the_figure(browser, site_url, path):
    visit = PageVisit(browser, f"{site_url}/{path}")
    page = visit.page
    try:
        for fig in page.locator(".kernel-free-figure").all():
            slider = fig.locator("input[type='range']").first
            before_svg = fig.locator("svg").inner_html()
            before_state = fig.get_attribute("data-state")
            at_max = slider.get_attribute("value") == slider.get_attribute("max")
            slider.focus()
            page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
            page.wait_for_function("([el, s]) => el.getAttribute('data-state') !== s",
                                   arg=[fig.element_handle(), before_state])
            assert fig.locator("svg").inner_html() != before_svg, "slider moved but the figure did not change"
        assert visit.errors == [], f"console errors: {visit.errors}"
    finally:
        visit.close()
