"""What each page of the built site costs a reader before they do anything: the bytes that
come over HTTP in headless Chromium from opening the page until the network is idle, without
scrolling, clicking or typing. Every page must stay within BUDGET. The live model (the ONNX
graphs and ONNX Runtime's WebAssembly) and the explorers' Vega wait until the reader reaches
an explorer (book/_js/slm_runtime.js, slm_vega.js); once reached, the explorer loads them,
works, and says how long it took.

A page's kernel-free figures (and Vega, 0.83 MB) wait the same way: each draws as it nears
the screen (book/_js/slm_vega.js), so a page whose first figure lies below the first screen
loads no Vega until the reader scrolls.

``python -m tests.browser.test_page_weight`` prints the table for every page (bytes, requests,
the largest files).

Run after ``make book``; a missing browser or site skips (fails with REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import re
import sys
from urllib.parse import urlparse

import pytest

from .test_live_site import sample_on_own_context
from .page_check import VIEWPORT
from .test_site import (SITE, PageVisit, browser, launch, missing, serve,  # noqa: F401
                        site_url, toc_pages)

BUDGET = 2_500_000  # bytes before any interaction, per page
# what the live model loads (book/_js/slm_runtime.js): served, and as the file:// scripts
LIVE_MODEL = (".onnx.gz", ".wasm.gz", ".mjs", "ort.wasm.min.js", "ort_wasm.js", "model_draft.js",
              "model_shakespeare.js", "ngram.js")
PAGES = sorted(set(toc_pages()) | {"book/live.html"}, key=toc_pages().index)


def page_weight(browser, url: str) -> dict[str, int]:  # noqa: F811
    """Bytes of each response body (as transferred) while ``url`` opens in a fresh context
    (an empty cache) at 1280 x 720, until the network has been idle for half a second."""
    sizes: dict[str, int] = {}
    visit = PageVisit(browser, url, VIEWPORT, sizes=sizes)
    try:
        visit.page.wait_for_load_state("networkidle")
        visit.page.wait_for_timeout(500)  # anything a script starts after the network went quiet
    finally:
        visit.close()
    return sizes


def largest(sizes: dict[str, int], site: str, n: int = 5) -> str:
    """The ``n`` largest files of ``sizes``, as paths on the site with their size in kB."""
    top = sorted(sizes.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{url.removeprefix(site + '/')} {size / 1e3:.0f} kB" for url, size in top)


@pytest.mark.parametrize("path", PAGES)
def test_page_stays_within_its_byte_budget_before_interaction(browser, site_url, path):  # noqa: F811
    """Measured in the page's one visit at 1280 px (tests/browser/site_visits.py), before it
    scrolls."""
    from .site_visits import laptop

    sizes = laptop(browser, site_url, path).sizes
    total = sum(sizes.values())
    print(f"{path}: {total / 1e6:.2f} MB in {len(sizes)} requests; "
          f"largest: {largest(sizes, site_url)}")
    model = [u for u in sizes if urlparse(u).path.endswith(LIVE_MODEL)]
    assert model == [], f"{path} fetched the live model before the reader reached it: {model}"
    assert total <= BUDGET, (
        f"{path} transfers {total:,} bytes before the reader does anything, over the budget of "
        f"{BUDGET:,}; its largest files: {largest(sizes, site_url)}")


# (page, how it is opened, what the reader does to reach its first explorer)
REACHED = [("book/live.html", "served", "scroll"),
           ("notebooks/03_sampling_and_truncation.html", "served", "click"),
           ("notebooks/01_generation_loop.html", "file", "scroll")]


@pytest.mark.parametrize("path,how,action", REACHED)
def test_the_model_loads_when_the_reader_reaches_an_explorer(
        request, browser, path, how, action):  # noqa: F811
    """Before the reader does anything, no model and no WebAssembly is requested and the
    explorer says what will load and how large it is; scrolled into view (or pressed, its
    Sample button still disabled), it loads them, says its ready time, and samples."""
    if not (SITE / path).exists():
        missing(f"no {SITE / path}: run `make book` first")
    url = (SITE / path).as_uri() if how == "file" else \
        f"{request.getfixturevalue('site_url')}/{path}"
    # (not test_live_site's LiveVisit, which asks for the model as soon as the page opens)
    visit = PageVisit(browser, url, {"width": 1280, "height": 720}, ("data", "blob", "file"))
    page, requested = visit.page, []
    page.on("request", lambda r: requested.append(urlparse(r.url).path.rsplit("/", 1)[-1]))
    try:
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(500)
        box = page.locator(".slm-live").first
        status = box.locator(".slm-status")
        early = [r for r in requested if r.endswith(LIVE_MODEL)]
        assert early == [], f"requested before the reader reached an explorer: {early}"
        assert re.fullmatch(r"the target model \(\d+\.\d MB\) and ONNX Runtime \(\d+\.\d MB\) "
                            r"will load when you scroll to this explorer or click it",
                            status.inner_text()), status.inner_text()
        if action == "click":
            box.locator(".slm-sample").click(force=True)  # disabled: its press still counts
        else:
            box.scroll_into_view_if_needed()
        page.wait_for_function("el => el.hasAttribute('data-ready')", arg=box.element_handle(),
                               timeout=60000)
        assert re.search(r"ready in \d+\.\d s", status.inner_text()), status.inner_text()
        loaded = {r for r in requested if r.endswith(LIVE_MODEL)}
        wanted = ({"model_shakespeare.onnx.gz", "ort-wasm-simd-threaded.wasm.gz"} if how == "served"
                  else {"model_shakespeare.js", "ort_wasm.js"})
        assert wanted <= loaded, loaded
        sample_on_own_context(page, box.get_attribute("data-kind"))
        assert visit.external == [], f"requests that would leave the machine: {visit.external}"
        assert visit.failed == [], f"failed requests: {visit.failed}"
        assert visit.errors == [], f"console errors: {visit.errors}"
    finally:
        visit.close()


def main() -> None:
    from playwright.sync_api import sync_playwright

    if not (SITE / "index.html").exists():
        sys.exit(f"no built site at {SITE}: run `make book` first")
    with serve(SITE) as url, sync_playwright() as p:
        chromium = launch(p)
        print(f"{'page':<52} {'MB':>6} {'requests':>8}  largest files")
        for path in PAGES:
            sizes = page_weight(chromium, f"{url}/{path}")
            print(f"{path:<52} {sum(sizes.values()) / 1e6:6.2f} {len(sizes):8d}  "
                  f"{largest(sizes, url, 3)}", flush=True)
        chromium.close()


if __name__ == "__main__":
    main()
