"""axe-core (Deque's accessibility engine, from npm: package.json) over every page of the built
site, in headless Chromium: the WCAG 2.0 and 2.1 A and AA rules, no serious or critical
violation. Each page is checked whole as a phone shows it (390 px: the sidebars folded away,
a long formula or table scrolling sideways, the figures redrawn for the column), then, resized
in the same visit, the parts a laptop shows that a phone does not (1280 px: the header and the
two sidebars, with the table of contents and the search field).

Run after ``make book``; a missing browser, site or axe-core skips (fails with
REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import pytest

from .test_phone import EXPLORERS, EXTRA_PAGES, LIVE, PHONE, woken_explorers
from .test_phone import judge as judge_defects
from .test_site import (FIGURE, ROOT, PageVisit, browser, missing, site_url,  # noqa: F401
                        reach_figure, toc_pages, typeset_math)

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
IMPACTS = ("serious", "critical")
LAPTOP = {"width": 1280, "height": 800}
# Defects in files this test's author may not change, each with where its fix belongs. A
# listed one that is gone fails the test too: take it off the list.
KNOWN: dict[tuple[str, str], str] = {}
# what a laptop shows besides a phone's page: the header and the two sidebars
LAPTOP_PARTS = [[".bd-header"], [".bd-header-article"], [".bd-sidebar-primary"],
                [".bd-sidebar-secondary"]]
RUN = """([context, tags]) => axe.run(context, {runOnly: {type: 'tag', values: tags},
                                            resultTypes: ['violations']})
  .then(r => r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => n.target.join(' ') + ': ' + n.html.slice(0, 120))})))"""


@pytest.fixture(scope="module")
def axe_source() -> str:
    if not AXE.exists():
        missing(f"no {AXE}: run `npm ci` (or `make book`, which does)")
    return AXE.read_text()


def violations(page, axe_source: str, context=None) -> list[dict]:
    """axe's serious and critical violations of the WCAG 2.x A and AA rules on ``page`` (in
    ``context``: axe's include list, by default the whole document)."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(content=axe_source)
    if context:  # the parts that this page has (the search page has no table of contents)
        context = {"include": page.evaluate("parts => parts.filter(p => "
                                            "document.querySelector(p[0]))", context)}
    return [v for v in page.evaluate(RUN, [context or {"exclude": []}, TAGS])
            if v["impact"] in IMPACTS]


def described(width: int, v: dict) -> str:
    """A violation in a line: the width, the rule's help, and its first nodes."""
    return (f"at {width} px ({v['impact']}, {v['help']}) on {len(v['nodes'])} node(s): "
            + " | ".join(v["nodes"][:3]))


def settle_scrollers(page) -> None:
    """Wait for the Tab stops that slm_scrollers.js gives boxes that scroll (its last pass)."""
    page.wait_for_function("document.documentElement.dataset.slmScrollers === 'marked'",
                           timeout=10000)


def settle(page) -> None:
    """Wait for what draws after load: formulas, kernel-free figures (each scrolled into
    view, and their menus), and the scrollers' Tab stops."""
    typeset_math(page)
    for fig in page.locator(FIGURE).all():
        reach_figure(page, fig)
    page.evaluate("window.scrollTo(0, 0)")
    settle_scrollers(page)


@pytest.mark.parametrize("path", toc_pages() + EXTRA_PAGES)
def test_page_has_no_serious_accessibility_violation(browser, site_url,  # noqa: F811
                                                    axe_source, path):
    """At 390 px over the whole page, then at 1280 px over what a laptop shows besides, in the
    page's one visit at 390 px, shared with the phone check (tests/browser/site_visits.py)."""
    from .site_visits import phone

    judge(path, phone(browser, site_url, path, axe_source).axe)


def judge(path: str, found: dict) -> None:
    """Fail with every violation (``{rule: (width, violation)}``) of ``path`` that is not
    KNOWN, and with every KNOWN one that is gone (test_phone.judge)."""
    lines = {rule: described(width, v) for rule, (width, v) in found.items()}
    judge_defects(path, lines, KNOWN, "tests/browser/test_accessibility.py")


def test_live_explorers_have_no_serious_accessibility_violation(browser, site_url,  # noqa: F811
                                                                axe_source):
    """The live page as a reader leaves it: the model loaded, Sample pressed in each explorer
    (what the explorers draw only exists then)."""
    visit = PageVisit(browser, f"{site_url}/{LIVE}", PHONE)
    try:
        woken_explorers(visit.page)
        settle(visit.page)
        judge(EXPLORERS, {v["id"]: (PHONE["width"], v)
                          for v in violations(visit.page, axe_source)})
    finally:
        visit.close()


SYNTHETIC = """<!doctype html><html lang="en"><title>t</title><main>{body}</main></html>"""


@pytest.mark.parametrize("body, rule", [
    ("<details><summary><svg width='9' height='9'></svg></summary>menu</details>",
     "summary-name"),
    ("<button aria-label='Toggle hidden content'>Show code cell source</button>",
     "label-content-name-mismatch"),
    ("<p style='color:#777;background:#f7f7f7'>context</p>", "color-contrast"),
    ("<div style='width:100px;overflow-x:auto;white-space:nowrap'>a formula too long for "
     "the box it is in</div>", "scrollable-region-focusable"),
])
def test_axe_finds_each_kind_of_violation(browser, axe_source, body, rule):  # noqa: F811
    """The check can fail: the defects the site had, each on a page of its own, are found."""
    page = browser.new_page(viewport=PHONE)
    try:
        page.set_content(SYNTHETIC.format(body=body))
        assert rule in [v["id"] for v in violations(page, axe_source)]
    finally:
        page.close()
