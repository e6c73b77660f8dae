"""Chapter 7's two widgets on the built site, operated in a real headless Chromium, served
and from ``file://``, offline: the batching figure's control moved to the H200's knee,
where both curves' values are read back and compared with the stored measurement and
the package's roofline; the prefill/decode player's play, pause and step buttons.

Run after ``make book``; a missing browser or site skips these tests (fails them with
``REQUIRE_BROWSER=1``).
"""

from __future__ import annotations

import json

import pytest

from shakespeare_lm import cost as rf
from shakespeare_lm.site import roofline_charts as charts

from .test_site import (  # noqa: F401  (browser, site_url: fixtures)
    FIGURE,
    ROOT,
    SITE,
    browser,
    drawn_chart,
    missing,
    PageVisit,
    site_url,
)

PAGE = "notebooks/07_cost_of_generation.html"
H200 = json.loads((ROOT / "notebooks" / "07_cost_of_generation_h200.json").read_text())
B7, H100, ROUND = rf.MODELS["7b"], rf.HARDWARE["h100"], rf.HARDWARE["round-gpu"]

# every mark item the figure's Vega view drew, with its datum's fields and opacity
ITEMS = """root => {
  const out = [];
  const walk = node => {
    if (node.marktype && node.items && node.marktype !== 'group') {
      for (const item of node.items) if (item.datum) out.push({
        mark: node.marktype, role: node.role,
        text: item.text === undefined ? null : item.text,
        opacity: item.opacity === undefined ? 1 : item.opacity,
        datum: Object.assign({}, item.datum)});
    }
    for (const item of node.items || []) for (const child of item.items || []) walk(child);
  };
  walk(root.slmView.scenegraph().root);
  return out;
}"""


class Visit(PageVisit):
    """The chapter in a 1280 px window, recording console errors, failed requests and any
    request that would leave the machine (only the site's own files may load)."""

    def __init__(self, browser, url: str):  # noqa: F811
        super().__init__(browser, url, {"width": 1280, "height": 900},
                         ("data", "blob", "file"))


@pytest.fixture(params=["served", "file"])
def chapter(request, browser):  # noqa: F811
    if not (SITE / PAGE).exists():
        missing(f"no {SITE / PAGE}: run `make book` first")
    url = ((SITE / PAGE).as_uri() if request.param == "file"
           else f"{request.getfixturevalue('site_url')}/{PAGE}")
    visit = Visit(browser, url)
    yield visit
    assert visit.external == [], f"requests that would leave the machine: {visit.external}"
    assert visit.failed == [], f"failed requests: {visit.failed}"
    assert visit.errors == [], f"console errors: {visit.errors}"
    visit.close()


def figure_with(page, control: str):
    """The kernel-free figure that has a control named ``control``, drawn (a figure draws,
    and gets its controls, as it nears the screen: each is scrolled to first)."""
    for each in page.locator(FIGURE).all():
        drawn_chart(page, each)
    fig = page.locator(FIGURE).filter(
        has=page.locator(".vega-bind-name", has_text=control))
    assert fig.count() == 1, f"{fig.count()} figures with a control {control!r}"
    drawn_chart(page, fig)
    return fig


def set_range(fig, control: str, value: int) -> None:
    """Move the range input named ``control`` to ``value``, as a reader's drag does."""
    range_input(fig, control).fill(str(value))


def range_input(fig, control: str):
    bind = fig.locator(".vega-bind").filter(
        has=fig.page.locator(".vega-bind-name", has_text=control))
    return bind.locator("input[type='range']")


def test_the_batching_control_reaches_the_h200s_knee_and_reads_both_curves(chapter):
    page = chapter.page
    fig = figure_with(page, "log\u2082 batch size")
    slider = fig.locator("input[type='range']")
    assert int(slider.get_attribute("max")) >= 13  # at least 8,192 = 2^13
    set_range(fig, "log\u2082 batch size", 12)  # 4,096, the H200's knee
    page.wait_for_function("el => el.querySelector('svg.marks').textContent"
                           ".includes('batch\u00a04,096')", arg=fig.element_handle())
    items = fig.evaluate(ITEMS)
    # the marked points: the figure's bigger circles at the chosen batch, by run
    chosen = {}
    for i in items:
        d = i["datum"]
        if i["mark"] == "symbol" and d.get("batch") == 4096 and "run" in d:
            chosen.setdefault(d["run"], []).append(d)
    gpu = next(r for r in H200["batching_large"] if r["batch"] == 4096)
    for d in chosen["H200 (measured)"]:  # throughput above, time per token below
        assert d["tps"] == pytest.approx(gpu["tokens_per_s"], rel=1e-3)
        assert d["ms"] == pytest.approx(gpu["seconds_per_token"] * 1e3, rel=1e-3)
    roof = next(name for name in chosen if name.startswith("7B"))
    for d in chosen[roof]:
        assert d["tps"] == pytest.approx(rf.decode_tokens_per_s(B7, H100, 128, 4096), rel=1e-3)
        assert d["ms"] == pytest.approx(rf.decode_cost(B7, H100, 128, 4096).seconds * 1e3,
                                        rel=1e-3)
    assert "CPU (measured)" not in chosen  # measured up to 256 only: nothing made up
    knees = {i["datum"]["run"]: i["datum"]["batch"] for i in items
             if i["mark"] == "symbol" and i["datum"].get("run") and "batch" in i["datum"]
             and i["role"] == "mark" and i["datum"].get("tps") is not None
             and i["datum"].get("fits") is None and i["datum"].get("limit") is None}
    assert knees["H200 (measured)"] == 4096 and knees[roof] == 1024
    drawn_chart(page, fig)  # and it still reads: no text too small, nothing too wide
    table = fig.locator("svg.marks").text_content().replace("\u00a0", " ")
    assert f"{gpu['tokens_per_s']:,.0f}" in table
    assert "not measured beyond a batch of 256" in table
    set_range(fig, "log\u2082 batch size", 15)  # past the knee, the largest batch stored
    page.wait_for_function("el => el.querySelector('svg.marks').textContent"
                           ".includes('batch\u00a032,768')", arg=fig.element_handle())
    drawn_chart(page, fig)


def step_of(fig) -> int:
    return int(range_input(fig, "step (0 = prefill)").input_value())


def caption_of(fig) -> str:
    return fig.locator("svg.marks").text_content().replace("\u00a0", " ")


def button(fig, label: str):
    return fig.locator("svg.marks text", has_text=label).first


def test_play_pause_and_step_drive_the_prefill_decode_player(chapter):
    page = chapter.page
    fig = figure_with(page, "step (0 = prefill)")
    # the buttons show once the player runs (the patch's timer has fired)
    page.wait_for_function("el => el.slmView && el.slmView.signal('slm_player') === true",
                           arg=fig.element_handle(), timeout=10000)
    assert step_of(fig) == 0 and "prefill: 1,000 tokens in one pass" in caption_of(fig)
    button(fig, "\u25b6 play").click()
    page.wait_for_function("el => el.slmView.signal('step') >= 2",
                           arg=fig.element_handle(), timeout=10000)
    assert step_of(fig) >= 2  # the slider follows the play button
    button(fig, "pause").click()
    paused = step_of(fig)
    page.wait_for_timeout(2 * charts.STEP_INTERVAL_MS + 300)
    assert step_of(fig) == paused  # pause stops it
    button(fig, "step \u25b8").click()
    page.wait_for_function(f"el => el.slmView.signal('step') === {(paused + 1) % 9}",
                           arg=fig.element_handle(), timeout=5000)
    stepped = step_of(fig)
    page.wait_for_timeout(charts.STEP_INTERVAL_MS + 300)
    assert step_of(fig) == stepped  # a step leaves it paused
    cost = charts.request_steps(B7, ROUND, 1000)[stepped]
    for line in charts.step_caption(B7, ROUND, 1000, stepped, cost, 8):
        assert line in caption_of(fig)
    # the bars drawn so far, and none after: the steps played are the steps shown
    shown = {i["datum"]["step"] for i in fig.evaluate(ITEMS)
             if i["mark"] == "rect" and i["role"] == "mark" and "step" in i["datum"]
             and i["opacity"] > 0}
    assert shown == set(range(stepped + 1))
    set_range(fig, "step (0 = prefill)", 0)  # the slider still goes anywhere
    page.wait_for_function("el => el.slmView.signal('step') === 0", arg=fig.element_handle())
    drawn_chart(page, fig)
