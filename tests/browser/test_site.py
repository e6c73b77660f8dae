"""The built static site, in a real headless Chromium (Debian's, driven by Playwright).

Serves ``_build/html`` on 127.0.0.1 and checks every page in ``_toc.yml``: it loads without
console errors, no request fails or leaves the machine, MathJax renders, every image
loads, widget views render, every kernel-free figure (a notebook's Vega-Lite output) is
drawn, and moving one of its sliders redraws it.

Run after ``make book`` (``make test`` does both). Locally, a missing browser or site skips
these tests; with ``REQUIRE_BROWSER=1`` (set by ``.ci/run``) it fails them.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
REQUIRED = os.environ.get("REQUIRE_BROWSER") == "1"
FIGURE = ".slm-vega-figure"  # a kernel-free figure on a page (book/_ext/vega_figures)
VEGALITE = "application/vnd.vegalite.v5+json"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def missing(reason: str):
    if REQUIRED:
        pytest.fail(f"{reason} (REQUIRE_BROWSER=1: the browser tests must run)")
    pytest.skip(reason)


def toc_pages(main_only: bool = False) -> list[str]:
    """The site's pages in the order of ``_toc.yml``: the root, each chapter and, unless
    ``main_only``, the pages under it (its ``sections:``, at any depth)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())

    def walk(entries) -> list[str]:
        files = []
        for entry in entries or []:
            files.append(entry["file"])
            if not main_only:
                files += walk(entry.get("sections"))
        return files

    return [f + ".html" for f in [toc["root"], *walk(toc.get("chapters"))]]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(directory: Path, handler_class=_QuietHandler):
    """Serve ``directory`` on 127.0.0.1 (a free port) for the block with ``handler_class``
    (a SimpleHTTPRequestHandler); yields its base URL."""
    handler = functools.partial(handler_class, directory=str(directory))
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


def offline_router(external: list, local_schemes=("data", "blob")):
    """A Playwright route handler: requests to 127.0.0.1 or a ``local_schemes`` URL go
    through; any other is recorded in ``external`` and refused (nothing may leave the
    machine)."""
    def route(route):
        url = urlparse(route.request.url)
        if url.scheme in local_schemes or url.hostname == "127.0.0.1":
            route.continue_()
        else:
            external.append(route.request.url)
            route.abort()
    return route


def _count_bytes(sizes: dict[str, int], request) -> None:
    if urlparse(request.url).scheme in ("http", "https"):
        sizes[request.url] = sizes.get(request.url, 0) + request.sizes()["responseBodySize"]


class PageVisit:
    """Open one page, recording console errors, failed and off-machine requests."""

    def __init__(self, browser, url: str, viewport: dict | None = None,
                 local_schemes=("data", "blob"), sizes: dict[str, int] | None = None):
        """``sizes``, when given, gathers the bytes of each HTTP response body as transferred
        ({url: bytes}); a new page has a context of its own, so its cache starts empty."""
        self.page = browser.new_page(viewport=viewport) if viewport else browser.new_page()
        self.errors, self.failed, self.external = [], [], []
        if sizes is not None:
            self.page.on("requestfinished", lambda r: _count_bytes(sizes, r))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        # A request the page's own next navigation cuts short (a test reloads the page while
        # a script is still arriving) fails with net::ERR_ABORTED; that is not a failure.
        self._navigations, self._begun = 0, {}
        self.page.on("request", self._on_request)
        self.page.on("requestfailed", self._on_failed)
        self.page.route("**/*", offline_router(self.external, local_schemes))
        response = self.page.goto(url, wait_until="load")
        if not url.startswith("file:"):  # a page opened from disk has no HTTP response
            assert response is not None and response.ok, \
                f"{url}: HTTP {response and response.status}"

    def _on_request(self, request) -> None:
        if request.is_navigation_request() and request.frame == self.page.main_frame:
            self._navigations += 1
        self._begun[request] = self._navigations

    def _on_failed(self, request) -> None:
        cut_short = "ERR_ABORTED" in (request.failure or "") and \
            self._begun.get(request, self._navigations) < self._navigations
        if not cut_short:
            self.failed.append(f"{request.url} ({request.failure})")

    def close(self):
        self.page.close()


def laptop_visit(browser, site_url, path):
    """The page's one visit at 1280 px, shared with the page check and the page weight
    (tests/browser/site_visits.py)."""
    from .site_visits import laptop

    return laptop(browser, site_url, path)


@pytest.mark.parametrize("path", toc_pages())
def test_page_loads_offline_without_errors(browser, site_url, path):
    """No console error, no failed request, none that would leave the machine; MathJax
    typeset every formula; every image loaded; widget views drew; every kernel-free figure
    is drawn and reads (``drawn_chart``); a description and a favicon."""
    record = laptop_visit(browser, site_url, path)
    assert record.load + record.figures == [], f"{path}:\n" + "\n".join(record.load +
                                                                        record.figures)


def vega_outputs(path: str) -> int:
    """How many Vega-Lite outputs (kernel-free figures) the page's notebook stores."""
    notebook = ROOT / Path(path).with_suffix(".ipynb")
    if not notebook.exists():
        return 0
    cells = json.loads(notebook.read_text())["cells"]
    return sum(VEGALITE in out.get("data", {})
               for c in cells for out in c.get("outputs", []))


def test_site_has_every_kernel_free_figure_and_widgets(browser, site_url):
    """Each notebook's Vega-Lite outputs are figures on its page (at least one, else the
    checks above would pass vacuously), and no page carries an ipywidgets view: a widget
    needs a kernel, so on the site it would be frozen (live panels are lab-only)."""
    counts = {"figures": 0, "widgets": 0}
    for path in toc_pages():
        record = laptop_visit(browser, site_url, path)
        assert record.n_figures == vega_outputs(path), f"{path}: {record.n_figures} figures"
        counts["figures"] += record.n_figures
        counts["widgets"] += record.n_widgets
    assert counts["figures"] >= 1 and counts["widgets"] == 0, counts


# What a reader of a figure must be able to read, measured in the drawn SVG: the
# smallest text, axis labels that overlap, a legend over a plot or caption, a chart
# wider than its place on the page.
LAYOUT = """el => {
  const svg = el.querySelector('.slm-vega-view svg.marks');
  const box = r => r.getBoundingClientRect();
  const meet = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 &&
                         Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  // a text's outline on the screen, rotated labels too: four corners
  const corners = t => { const b = t.getBBox(), m = t.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height],
            [b.x, b.y + b.height]].map(([x, y]) => new DOMPoint(x, y).matrixTransform(m)); };
  const overlap = (p, q) => [p, q].every(poly => poly.every((a, i) => {  // no gap on any axis
    const b = poly[(i + 1) % 4], nx = a.y - b.y, ny = b.x - a.x;
    const proj = pts => pts.map(c => c.x * nx + c.y * ny), n = Math.hypot(nx, ny);
    const [u, v] = [proj(p), proj(q)];
    return Math.min(Math.max(...u), Math.max(...v)) -
           Math.max(Math.min(...u), Math.min(...v)) > n; }));  // by more than 1 px
  const pairs = xs => xs.flatMap((a, i) => xs.slice(i + 1).map(b => [a, b]));
  const shown = t => t.textContent.trim() && getComputedStyle(t).opacity !== '0';
  const texts = g => Array.from(g.querySelectorAll('text')).filter(shown);
  const sizes = texts(svg).map(t => parseFloat(getComputedStyle(t).fontSize));
  const collide = Array.from(svg.querySelectorAll('g.role-axis-label')).flatMap(g =>
    pairs(texts(g)).filter(([a, b]) => overlap(corners(a), corners(b)))
      .map(([a, b]) => a.textContent + '/' + b.textContent));
  const views = Array.from(svg.querySelectorAll(
    'g.role-scope[class*="concat_"] > g > path.background'));
  const covered = Array.from(svg.querySelectorAll('g.role-legend')).filter(l =>
    views.some(v => meet(box(l), box(v)))).length;
  return {minFont: Math.min(...sizes), collide: collide, legendsOverViews: covered,
          tooWide: el.scrollWidth > el.clientWidth + 1};
}"""


def reach_figure(page, fig) -> None:
    """Scroll the figure into view (a figure draws as it nears the screen, slm_vega.js) and
    wait until it is drawn or has failed (a Playwright TimeoutError after 20 s)."""
    fig.scroll_into_view_if_needed()
    page.wait_for_function("el => ['drawn', 'failed'].includes(el.dataset.state)",
                           arg=fig.element_handle(), timeout=20000)


def drawn_chart(page, fig) -> str:
    """Reach the figure (``reach_figure``), and check that it drew and that it reads
    (LAYOUT); its SVG."""
    reach_figure(page, fig)
    assert fig.get_attribute("data-state") == "drawn", fig.inner_text()[:300]
    chart = fig.locator(".slm-vega-view svg.marks")
    assert chart.locator("g.role-mark > *").count() > 0, "the figure drew no marks"
    layout = fig.evaluate(LAYOUT)
    assert layout["minFont"] >= 11, f"text of {layout['minFont']} px in a figure"
    assert layout["collide"] == [], f"axis labels on each other: {layout['collide']}"
    assert layout["legendsOverViews"] == 0, "a legend covers a plot or its caption"
    assert not layout["tooWide"], "the figure is wider than its place on the page"
    return chart.inner_html()


def move_first_input(page, fig) -> str:
    """Move the figure's first slider (a range, radio buttons or a list) to another
    value; the input's label."""
    bind = fig.locator(".vega-bindings .vega-bind").first
    name = bind.locator(".vega-bind-name").inner_text()
    if bind.locator("input[type='range']").count():
        slider = bind.locator("input[type='range']")
        at_max = slider.input_value() == slider.get_attribute("max")
        slider.focus()
        page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
    elif bind.locator("input[type='radio']").count():
        bind.locator("input[type='radio']:not(:checked)").first.check()
    else:
        select = bind.locator("select")
        chosen = select.evaluate("s => s.selectedIndex")
        select.select_option(index=1 if chosen == 0 else 0)
    return name


@pytest.mark.parametrize("path", toc_pages())
def test_moving_a_kernel_free_slider_redraws_the_figure(browser, site_url, path):
    """Each figure's first slider, moved, redraws its chart (in the page's one visit, after
    everything else was read)."""
    record = laptop_visit(browser, site_url, path)
    assert record.sliders == [], f"{path}: " + "\n".join(record.sliders)


def test_a_request_cut_short_by_a_reload_is_not_a_failed_request(browser):
    """PageVisit keeps every failed request except one the page's own next navigation cut
    short: a test that reloads the page while a script is still arriving has not found a
    broken page, but a fetch the page itself aborts, or a missing file, is one."""
    page_path = SITE / "book" / "live.html"
    if not page_path.exists():
        missing(f"no {page_path}: run `make book` first")
    visit = PageVisit(browser, page_path.as_uri(), None, ("data", "blob", "file"))
    raw, held = [], []
    visit.page.on("requestfailed", lambda r: raw.append(r.failure))
    try:  # the script is held on its way, so the reload always overtakes it
        def hold(route):
            held.append(route)

        visit.page.route("**/held.js", hold)
        visit.page.evaluate("""() => { const s = document.createElement('script');
            s.src = '../_static/held.js'; document.head.append(s); }""")
        visit.page.wait_for_function("() => true")  # let the request reach the route
        visit.page.reload(wait_until="load")
        visit.page.unroute("**/held.js", hold)
        assert held and raw == ["net::ERR_ABORTED"], (held, raw)
        assert visit.failed == [], visit.failed
        visit.page.evaluate("""() => new Promise(done => {
            const s = document.createElement('script'); s.src = '../_static/no-such-file.js';
            s.onerror = done; document.head.append(s); })""")
        visit.page.evaluate("""() => { const stop = new AbortController();
            const asked = fetch('../_static/vega/vega.min.js', {signal: stop.signal});
            stop.abort(); return asked.catch(() => null); }""")
        visit.page.wait_for_timeout(300)
        assert [f.rsplit(" ", 1)[-1] for f in visit.failed] == \
            ["(net::ERR_FILE_NOT_FOUND)", "(net::ERR_ABORTED)"], visit.failed
    finally:
        visit.close()


SEARCH_SCRIPT = re.compile(r'<script\b([^>]*)\bsrc="[^"]*(?:searchtools|language_data|searchindex)'
                           r'\.js[^"]*"')


@pytest.mark.parametrize("path", toc_pages())
def test_the_search_scripts_do_not_hold_up_the_first_paint(path):
    """The theme loads Sphinx's search scripts and the search index in every page's <head>;
    book/_templates/layout.html defers them, so the page paints before they run."""
    page_html = (SITE / path).read_text("utf-8")
    found = SEARCH_SCRIPT.findall(page_html)
    assert len(found) == 3 and all("defer" in attrs for attrs in found), (path, found)


def test_the_search_field_finds_a_chapter(browser, site_url):
    """From a chapter page, as a reader searches: the search field (Ctrl+K), a query, Enter;
    the results list the chapter whose title matches."""
    visit = PageVisit(browser, f"{site_url}/notebooks/05_constrained_decoding.html",
                      {"width": 1280, "height": 800})
    page = visit.page
    try:
        page.wait_for_load_state("load")
        page.keyboard.press("Control+k")
        field = page.locator("input.form-control[name='q']:visible").first
        field.wait_for(timeout=10000)
        field.fill("beam search")
        field.press("Enter")
        page.wait_for_url("**/search.html?q=*", timeout=15000)
        results = page.locator("#search-results ul.search li a")
        results.first.wait_for(timeout=30000)
        titles = results.all_inner_texts()
        assert any("Greedy and beam search" in t for t in titles), titles
        assert visit.errors == [] and visit.failed == [], (visit.errors, visit.failed)
    finally:
        visit.close()
