"""The built site on a phone: every page at 390 px wide (an iPhone 12 to 14), in headless
Chromium. The page does not scroll sideways; each kernel-free figure (a notebook's Vega-Lite
output, redrawn for the column by book/_js/slm_vega.js) is drawn within its column and reads
as at 1280 px (``test_site.drawn_chart``: text at least 11 px, no axis labels on each other,
no legend over a plot); the text in any other SVG on the page (an explorer's) is at least
10 px on the screen. The live explorers draw nothing until a reader reaches them (the model
loads then), so the live page is checked once more as a reader leaves it: the model loaded,
Sample pressed in each explorer, the truncation explorer's chart within its column.

Run after ``make book``; a missing browser or site skips (fails with REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import pytest

from shakespeare_lm.site import style

from .test_site import (FIGURE, PageVisit, browser, drawn_chart, site_url,  # noqa: F401
                        toc_pages, typeset_math)

PHONE = {"width": 390, "height": 844}
MIN_TEXT_PX = 10
# the pages a reader reaches besides those of _toc.yml: the theme's search and index
EXTRA_PAGES = ["search.html", "genindex.html"]
LIVE = "book/live.html"
EXPLORERS = "book/live.html, every explorer drawn"
# the explorers whose Sample the checks press (the race's takes seconds and draws no chart)
SAMPLED = ("truncation", "step", "speculative", "beam", "builder")
READY = ("Array.from(document.querySelectorAll('.slm-live .slm-sample'))"
         ".every(b => !b.disabled)")
# Defects in files this test's author may not change, each with where its fix belongs. A
# listed defect that is gone fails the test too: take it off the list.
KNOWN: dict[tuple[str, str], str] = {}

# The smallest text of a figure image (a matplotlib figure, a diagram) at its own size, in px
# (the style's smallest font size; the diagrams' smallest is 12.2)
IMAGE_TEXT_PX = min(style.FONT_SIZES.values())
# What a phone shows of the page: how wide the document is, the SVG text (outside the
# kernel-free figures, which drawn_chart measures) smaller than min_px on the screen, where
# the SVG's own scale (a viewBox drawn narrower than its size) counts, and the figure images
# shown so small that their smallest text is under min_px.
LAYOUT = """([min_px, image_px]) => {
  const shown = t => t.textContent.trim() && t.getClientRects().length &&
                     getComputedStyle(t).visibility !== 'hidden';
  const small = [];
  for (const t of document.querySelectorAll('#main-content svg text')) {
    if (t.closest('.slm-vega-figure') || !shown(t)) continue;
    const m = t.getScreenCTM(), px = parseFloat(getComputedStyle(t).fontSize) *
                                     (m ? Math.hypot(m.a, m.b) : 1);
    if (px < min_px) {
      const host = t.closest('[class*="slm-"]');
      small.push(`${px.toFixed(1)} px "${t.textContent.trim().slice(0, 30)}" in ` +
                 (host ? host.className : 'the page'));
    }
  }
  const images = [];
  for (const img of document.querySelectorAll('#main-content figure img')) {
    const px = image_px * img.getBoundingClientRect().width / img.naturalWidth;
    if (img.naturalWidth && px < min_px - 0.05)
      images.push(`${px.toFixed(1)} px in ${img.src.split('/').pop().slice(0, 24)}`);
  }
  const root = document.documentElement, viewport = root.clientWidth;
  const scrolls = e => { for (let p = e.parentElement; p; p = p.parentElement)
    if (getComputedStyle(p).overflowX !== 'visible') return p !== root && p !== document.body;
    return false; };
  const wide = root.scrollWidth <= viewport ? [] : Array.from(
      document.querySelectorAll('#main-content *'))
    .filter(e => e.getBoundingClientRect().right > viewport + 1 && !scrolls(e))
    .slice(0, 3).map(e => e.tagName.toLowerCase() + '.' + String(e.className.baseVal ??
                                                                  e.className).slice(0, 40));
  return {width: root.scrollWidth, viewport: viewport, small_text: small.slice(0, 5),
          n_small: small.length, culprits: wide, small_images: images};
}"""


def measure(page) -> dict:
    """LAYOUT on ``page`` as it is now, at this module's text sizes."""
    return page.evaluate(LAYOUT, [MIN_TEXT_PX, IMAGE_TEXT_PX])


def phone_layout(page) -> dict:
    """The page as a phone shows it (LAYOUT), once its formulas are typeset and its
    kernel-free figures drawn, each checked with ``drawn_chart`` (which asserts)."""
    typeset_math(page)
    for fig in page.locator(FIGURE).all():
        drawn_chart(page, fig)
    return measure(page)


def defects(layout: dict) -> dict[str, str]:
    """What is wrong with a page's phone layout, by kind: ``width``, ``small_text``,
    ``small_images``."""
    found = {}
    if layout["width"] > layout["viewport"]:
        found["width"] = (f"the page is {layout['width']} px wide on a {layout['viewport']} px "
                          f"screen (scrolls sideways); wide: {layout['culprits']}")
    if layout["n_small"]:
        found["small_text"] = (f"{layout['n_small']} SVG texts under {MIN_TEXT_PX} px: "
                               f"{layout['small_text']}")
    if layout["small_images"]:
        found["small_images"] = (f"{len(layout['small_images'])} figure images whose "
                                 f"{IMAGE_TEXT_PX} px text shows under {MIN_TEXT_PX} px: "
                                 f"{layout['small_images'][:5]}")
    return found


def judge(path: str, found: dict[str, str], known: dict = KNOWN,
          listed_in: str = "tests/browser/test_phone.py") -> None:
    """Fail with every defect of ``path`` (``found``: {kind: what}) that is not ``known``
    ({(path, kind): where its fix belongs}), and with every known one that is gone."""
    new = [f"{kind}: {text}" for kind, text in found.items() if (path, kind) not in known]
    gone = [f"{kind} is fixed ({why}): take it off KNOWN in {listed_in}"
            for (page, kind), why in known.items() if page == path and kind not in found]
    assert not new + gone, f"{path}: " + "\n".join(new + gone)


@pytest.mark.parametrize("path", toc_pages() + EXTRA_PAGES)
def test_page_fits_a_phone(browser, site_url, path):  # noqa: F811
    """In the page's one visit at 390 px, shared with axe (tests/browser/site_visits.py)."""
    from .site_visits import phone

    record = phone(browser, site_url, path, None)
    judge(path, record.layout)
    assert record.figures + record.errors == [], f"{path}: " + "\n".join(record.figures +
                                                                        record.errors)


def woken_explorers(page, kinds=SAMPLED) -> None:
    """The live explorers as a reader leaves them: the model loaded by a press on the first
    explorer (as a reader's click), then Sample pressed in each of ``kinds``, one after
    another, each run to its end (every Sample button enabled again), and the beam tree's
    table opened."""
    page.locator(".slm-live .slm-title").first.click()
    page.wait_for_function(READY, timeout=60000)
    for kind in kinds:
        page.locator(f".slm-live[data-kind='{kind}'] .slm-sample").click()
        page.wait_for_function(READY, timeout=60000)
    # and what a reader opens besides: the beam tree's numbers as a table
    page.locator(".slm-beam-steps summary").evaluate_all("ss => ss.forEach(s => s.click())")
    page.locator(".slm-beam-table").first.wait_for(timeout=30000)


def test_live_explorers_fit_a_phone(browser, site_url):  # noqa: F811
    """Every explorer drawn (the truncation explorer's chart is drawn hidden, then shown: it
    must come out within its column all the same)."""
    visit = PageVisit(browser, f"{site_url}/{LIVE}", PHONE)
    page = visit.page
    try:
        woken_explorers(page)
        explorer = page.locator(".slm-live[data-kind='truncation']")
        chart = explorer.locator(".slm-chart svg.marks")
        chart.wait_for(state="visible", timeout=30000)
        box, room = chart.bounding_box(), explorer.bounding_box()
        assert box["x"] + box["width"] <= room["x"] + room["width"] + 1, \
            f"the truncation chart ends at {box['x'] + box['width']:.0f} px, its column at " \
            f"{room['x'] + room['width']:.0f} px"
        judge(EXPLORERS, defects(measure(page)))
        assert visit.errors == [], f"console errors: {visit.errors}"
    finally:
        visit.close()


SYNTHETIC = """<!doctype html><meta name="viewport" content="width=device-width">
<div id="main-content">{body}</div>"""


@pytest.mark.parametrize("body, kind", [
    ('<div style="width:500px">a fixed-width box</div>', "width"),
    ('<code style="white-space:nowrap">' + "penalties;dry;top_n_sigma;" * 4 + "</code>", "width"),
    ('<svg viewBox="0 0 680 100" width="100%"><text x="0" y="50" font-size="12">a '
     'label</text></svg>', "small_text"),
])
def test_phone_layout_finds_each_defect(browser, body, kind):  # noqa: F811
    """The checks can fail: a box wider than the phone, a long unbreakable line, a 680-wide
    viewBox drawn 390 px wide (its 12 px labels come out at about 7 px)."""
    page = browser.new_page(viewport=PHONE)
    try:
        page.set_content(SYNTHETIC.format(body=body))
        assert kind in defects(phone_layout(page))
        page.set_content(SYNTHETIC.format(body="<p>Plain text wraps.</p><svg width='200' "
                                          "height='40'><text y='20' font-size='12'>ok</text>"
                                          "</svg>"))
        assert defects(phone_layout(page)) == {}
    finally:
        page.close()


def test_captions_rewrap_for_the_column_without_losing_a_character(browser, site_url):  # noqa: F811
    """slmWrap (slm_vega.js), which wraps a figure's caption again for a narrower column:
    lines that figures.wrap_lines broke at a space for the old width are joined, then broken
    at spaces to the new width; a row with no space (a table of non-breaking spaces) is cut;
    a line that was a line of its own stays one; no character is lost or added."""
    from shakespeare_lm.site.figures import wrap_lines

    prose = ("KV cache = 2 x 32 layers x 4096 x 2 B x 4,096 tokens x 32 = 68.719 GB (524.3 KB "
             "per token); weights 14.000 GB, and the rest of a long caption")
    table = "batch\u00a01" + "\u00a0" * 30 + "tokens/s\u00a0\u00a0x\u00a0batch\u00a01"
    speech = ["QUINCE:", "And what say you were not an hour in the state?"]
    lines = wrap_lines(prose, 550) + [table] + speech
    before, chars = int(550 / (0.6 * 12)), 30
    visit = PageVisit(browser, f"{site_url}/notebooks/01b_inference_vs_training.html", PHONE)
    try:
        visit.page.locator(FIGURE).first.scroll_into_view_if_needed()  # Vega loads then
        visit.page.wait_for_function("window.vega && vega.expressionFunction('slmWrap')")
        out, up = visit.page.evaluate("""([lines, chars, before]) => {
            const wrap = vega.expressionFunction('slmWrap');
            return [wrap(lines, chars, before, false), wrap('one two three', 5, 0, true)]; }""",
                                      [lines, chars, before])
    finally:
        visit.close()
    # a line may end in the space it broke at, which takes no room on the screen
    assert len(wrap_lines(prose, 550)) == 2 and all(len(line.rstrip(" ")) <= chars
                                                    for line in out), out
    assert "".join(out) == "".join(lines)
    assert "QUINCE:" in out and speech[1] not in "".join(out[:out.index("QUINCE:")])
    assert up == ["three", "two ", "one "]  # upwards: the last line first
