"""One visit per page and width for every check that reads each page of the built site.

Five test modules judge every page: it loads offline without errors and its figures draw
and respond (test_site), it reads cleanly and fits its size budget (test_page_check), it
stays within its byte budget (test_page_weight), it fits a phone (test_phone) and axe finds
no serious violation (test_accessibility). Opening each page once per module cost seven
visits of every page; here a page is opened twice, and each visit records what all of its
checks need:

- at a laptop's width (LAPTOP, 1280 x 720, a fresh context: an empty cache): the bytes that
  came over HTTP until the network was idle (before anything scrolls), the load checks, each
  kernel-free figure scrolled into view and judged as drawn (``test_site.drawn_chart``), the
  page check (``page_check.inspect``), then each figure's first slider moved;
- at a phone's width (``test_phone.PHONE``): the figures drawn and judged again, the phone
  layout, axe over the whole page, then, resized to 1280 px, axe over what a laptop shows
  besides (the header and the sidebars).

A check that fails inside a visit is recorded as a problem of its kind (its assertion's
message), and the visit goes on, so each test reports its own kind for its own page. The
records are kept for the session (``laptop``, ``phone``): whichever module asks first opens
the page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urljoin

from . import page_check as pc
from .test_site import FIGURE, PageVisit, drawn_chart, move_first_input, typeset_math

LAPTOP = pc.VIEWPORT  # 1280 x 720
WIDGET_VIEW = "script[type='application/vnd.jupyter.widget-view+json']"


def problem(error: Exception) -> str:
    """A failed check as one line of text: its assertion's message, or the error."""
    text = str(error).split("\nassert ")[0].strip() or type(error).__name__
    return text if isinstance(error, AssertionError) else f"{type(error).__name__}: {text}"


@dataclass
class LaptopRecord:
    """What one visit at 1280 px found. Each list holds one line per problem."""

    path: str
    sizes: dict[str, int] = field(default_factory=dict)  # bytes per URL before interaction
    load: list[str] = field(default_factory=list)       # errors, requests, maths, images
    figures: list[str] = field(default_factory=list)    # a figure that did not draw or read
    sliders: list[str] = field(default_factory=list)    # a slider that did not redraw
    n_figures: int = 0
    n_widgets: int = 0
    report: pc.PageReport | None = None


@dataclass
class PhoneRecord:
    """What one visit at 390 px found: the phone layout's defects, the figures' problems,
    console errors, and axe's serious or critical violations ({rule: (width, violation)})."""

    path: str
    layout: dict[str, str] = field(default_factory=dict)
    figures: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    axe: dict[str, tuple[int, dict]] = field(default_factory=dict)
    axe_checked: bool = False


def check(record_list: list[str], fn, *args) -> object:
    """Run one check; a failure becomes a line of ``record_list`` instead of an exception."""
    try:
        return fn(*args)
    except Exception as error:  # an assertion or a Playwright timeout alike
        record_list.append(problem(error))
        return None


def draw_figures(page, into: list[str]) -> None:
    """Scroll each kernel-free figure into view (they draw as they near the screen) and judge
    it as drawn; the page goes back to its top."""
    for i, fig in enumerate(page.locator(FIGURE).all()):
        check(into, lambda f=fig, n=i: _judged(page, f, n))
    page.evaluate("window.scrollTo(0, 0)")


def _judged(page, fig, n: int) -> None:
    try:
        drawn_chart(page, fig)
    except AssertionError as error:
        raise AssertionError(f"figure {n + 1}: {error}") from None


# --- at 1280 px ---------------------------------------------------------------------------
def _load_checks(page) -> None:
    """Formulas typeset (and not Tab stops), images loaded, widget views drawn, a page
    description and a favicon."""
    if page.locator(".math").count():
        typeset_math(page)
        assert page.locator("mjx-container").count() >= page.locator(".math").count() // 2, \
            "MathJax typeset fewer than half of the formulas"
        assert page.locator("mjx-merror").count() == 0, "a formula failed to typeset"
        # a formula is a Tab stop only while it scrolls sideways (slm_scrollers.js marks it
        # data-slm-tabindex then, so a keyboard can scroll it); the rest are not
        tab_stops = page.locator("mjx-container[tabindex='0']:not([data-slm-tabindex])").count()
        assert tab_stops == 0, f"{tab_stops} formulas that fit are Tab stops"
    broken = page.evaluate("Array.from(document.images)"
                           ".filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)")
    assert broken == [], f"images that did not load: {broken}"
    if page.locator(WIDGET_VIEW).count():
        page.wait_for_selector(".jupyter-widgets", timeout=15000)
        assert page.locator(".widget-slider, .widget-hslider").count() >= 1, "no widget slider"
    about = page.locator("meta[name='description']").get_attribute("content") or ""
    assert len(about.split()) >= 5, f"meta description: {about!r}"
    icon = page.locator("link[rel='icon']").get_attribute("href")
    assert icon and page.request.get(urljoin(page.url, icon)).ok, f"favicon {icon}"


def _move_sliders(page) -> None:
    """Move each figure's first slider; its chart must change (test_site.move_first_input)."""
    for fig in page.locator(FIGURE).all():
        before = drawn_chart(page, fig)
        name = move_first_input(page, fig)
        page.wait_for_function("([el, b]) => el.querySelector('.slm-vega-view svg.marks')"
                               ".innerHTML !== b", arg=[fig.element_handle(), before],
                               timeout=10000)
        assert drawn_chart(page, fig) != before, f"moved {name!r}: the chart did not change"


def visit_laptop(browser, url: str, path: str) -> LaptopRecord:
    record, sizes = LaptopRecord(path), {}
    visit = PageVisit(browser, url, LAPTOP, sizes=sizes)
    page = visit.page
    try:
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(500)  # anything a script starts after the network went quiet
        record.sizes = dict(sizes)  # what came before the reader does anything
        check(record.load, _load_checks, page)
        record.n_figures = page.locator(FIGURE).count()
        record.n_widgets = page.locator(WIDGET_VIEW).count()
        draw_figures(page, record.figures)
        record.report = check(record.load, pc.inspect, page, path)
        check(record.sliders, _move_sliders, page)
        if visit.external:
            record.load.append(f"requests that would leave the machine: {visit.external}")
        if visit.failed:
            record.load.append(f"failed requests: {visit.failed}")
        if visit.errors:
            record.load.append(f"console errors: {visit.errors}")
    finally:
        visit.close()
    return record


# --- at 390 px -----------------------------------------------------------------------------
def visit_phone(browser, url: str, path: str, axe_source: str | None) -> PhoneRecord:
    from .test_accessibility import LAPTOP as AXE_LAPTOP
    from .test_accessibility import LAPTOP_PARTS, settle_scrollers, violations
    from .test_phone import PHONE, defects, measure

    record = PhoneRecord(path, axe_checked=axe_source is not None)
    visit = PageVisit(browser, url, PHONE)
    page = visit.page
    try:
        check(record.errors, typeset_math, page)
        draw_figures(page, record.figures)
        record.layout = defects(measure(page))
        if axe_source is not None:
            check(record.errors, settle_scrollers, page)
            record.axe = {v["id"]: (PHONE["width"], v) for v in violations(page, axe_source)}
            page.set_viewport_size(AXE_LAPTOP)
            for v in violations(page, axe_source, LAPTOP_PARTS):
                record.axe.setdefault(v["id"], (AXE_LAPTOP["width"], v))
        record.errors += [f"console error: {e}" for e in visit.errors]
    finally:
        visit.close()
    return record


# --- kept for the session -------------------------------------------------------------------
_LAPTOP: dict[str, LaptopRecord] = {}
_PHONE: dict[str, PhoneRecord] = {}


def laptop(browser, site_url: str, path: str) -> LaptopRecord:
    """The page's visit at 1280 px: made by the first test that asks, then kept."""
    if path not in _LAPTOP:
        _LAPTOP[path] = visit_laptop(browser, f"{site_url}/{path}", path)
    return _LAPTOP[path]


def phone(browser, site_url: str, path: str, axe_source: str | None) -> PhoneRecord:
    """The page's visit at 390 px (with axe, when ``axe_source`` is given): made once."""
    if path not in _PHONE or (axe_source is not None and not _PHONE[path].axe_checked):
        _PHONE[path] = visit_phone(browser, f"{site_url}/{path}", path, axe_source)
    return _PHONE[path]
