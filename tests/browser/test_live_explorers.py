"""The live explorers show what their labels say (book/_js/slm_explorers.js on the built
site, in headless Chromium, from ``file://`` and served):

* the step explorer's bars are the distribution the character was drawn from: the drawn
  character's bar equals its probability in the title, and the page's own sampler's;
* the truncation explorer's outline is the model's own distribution: it and the model's
  entropy in the caption do not move when a rule or a penalty changes;
* the speculative explorer's acceptance is the chapter's alpha, accepted over tested, on a
  seeded run checked against the run's own counts, with characters per pass at most
  1 / (1 - alpha); each colour of its rounds means one thing and its legend names them all;
* the small things: a failed action clears what is on screen, the units, the temperature's
  readout, the title, the legend under it, Sample's length, stop and seed, the presets.

Run after ``make book``; a missing browser or site skips (fails with REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import math
import re

import pytest

from .test_live_site import PAGE, visiting
from .test_site import SITE, browser, missing, site_url  # noqa: F401  (fixtures)

CONTEXT = "KATHARINA:\nMoved! in good time: let him that moved you "


@pytest.fixture(scope="module")
def page(request, browser):  # noqa: F811
    """The page opened from disk, as a reader of the offline site opens it. The explorers
    compute in the page, the same whichever way it arrived, so every check runs on this
    one; ``test_served_page_samples_as_the_file_does`` checks the page as served."""
    with visiting(request, browser, PAGE, "file") as visit:
        yield visit.page


def explorer(page, kind: str):
    page.wait_for_function("k => document.querySelector(`.slm-live[data-kind='${k}'][data-ready]`)",
                           arg=kind, timeout=30000)
    return page.locator(f".slm-live[data-kind='{kind}']")


def set_input(box, name: str, value) -> None:
    """Set the control named ``name`` (a range, number, checkbox or text input) as a reader
    would, firing its input and change events."""
    box.locator(f"input[data-name='{name}']").evaluate(
        """(e, v) => { if (e.type === 'checkbox') e.checked = v; else e.value = v;
                       e.dispatchEvent(new Event('input', {bubbles: true}));
                       e.dispatchEvent(new Event('change', {bubbles: true})); }""", value)


def set_context(box, text: str) -> None:
    box.locator(".slm-context").fill(text)


def press(page, box, button: str) -> None:
    """Click ``button`` (a selector in the explorer) and wait until the explorer is idle
    again and has set its data-state (every explorer sets it when an action is done)."""
    box.evaluate("e => e.removeAttribute('data-state')")
    box.locator(button).click()
    page.wait_for_function(
        "el => !el.querySelector('.slm-sample').disabled && el.hasAttribute('data-state')",
        arg=box.element_handle(), timeout=60000)


def changed(page, box, action) -> None:
    """Run ``action`` and wait for the explorer's data-state to change (a redraw)."""
    before = box.get_attribute("data-state")
    action()
    page.wait_for_function("([el, b]) => el.getAttribute('data-state') !== b",
                           arg=[box.element_handle(), before], timeout=30000)


def view_of(box, dataset: str) -> dict:
    return box.evaluate("""(e, d) => e.slmUi.chartView.then(v =>
        ({title: v.signal('title'), rows: v.data(d)}))""", dataset)


def chart_text(box) -> list[str]:
    return box.locator(".slm-chart svg text").evaluate_all("ts => ts.map(t => t.textContent)")


def reset_explorers(page):
    """A fresh page state between tests of the module-scoped page: reload and wait."""
    page.reload(wait_until="load")
    page.wait_for_function("window.slm && window.slm.ready", timeout=30000)
    page.evaluate("window.slm.ready.then(() => true)")


# --- 1. each explorer shows exactly what its labels say --------------------------------------
def test_step_explorer_bar_of_the_drawn_character_is_its_probability(page):
    """At T = 0.5 the drawn character's bar is the probability it was drawn with: the
    title's, and the page's sampler's on the same logits (not the model's untempered one)."""
    reset_explorers(page)
    box = explorer(page, "step")
    set_context(box, CONTEXT)
    set_input(box, "temperature", 0.5)
    for steps in range(1, 4):
        press(page, box, ".slm-sample")
        assert box.get_attribute("data-state") == str(steps)
        generated = box.locator(".slm-output").inner_text()[len(CONTEXT):]
        assert len(generated) == steps
        view = view_of(box, "top")
        drawn = [r for r in view["rows"] if r["drawn"]]
        assert len(drawn) == 1, view["rows"]
        expected = page.evaluate("""([c, ch]) => slm.nextLogits(c).then(r => {
            const D = slm.decoding, id = slm.chars.indexOf(ch);
            return {p: D.probs(r.logits, r.ids, D.config({temperature: 0.5}))[id],
                    raw: D.softmax(r.logits)[id]}; })""",
                                 [CONTEXT + generated[:-1], generated[-1]])
        assert drawn[0]["p"] == pytest.approx(expected["p"], abs=1e-6), view["title"]
        shown = float(re.search(r"(\d\.\d{3})", view["title"]).group(1))
        assert shown == round(expected["p"], 3), view["title"]
        assert drawn[0]["raw_p"] == pytest.approx(expected["raw"], abs=1e-6)
        assert "T = 0.5" in view["title"]
    labels = chart_text(box)  # the legend names the bars, the drawn one and the outline
    for name in ("drawn from", "the character drawn", "the model's own"):
        assert any(name in t for t in labels), (name, labels)


RAW_ENTROPY = re.compile(r"the model's own (\d+\.\d\d) bits")
FILTERED_ENTROPY = re.compile(r"entropy after the rules (\d+\.\d\d) bits")


def test_truncation_outline_is_the_models_own_whatever_the_rules_and_penalties(page):
    """The outline (the model's own distribution) and the model's entropy in the caption
    stay put when a rule or a penalty changes; the entropy after the rules moves, and is
    labelled as such."""
    reset_explorers(page)
    box = explorer(page, "truncation")
    context = "KATHARINA:\nMoved! in good time: let him that moved you hither\nRemove you "
    set_context(box, context)
    page.wait_for_function("([el, end]) => Array.from(el.querySelectorAll('.slm-chart svg text'))"
                           ".some(t => t.textContent.endsWith(end))",
                           arg=[box.element_handle(), context[-10:].rstrip()], timeout=30000)
    expected = page.evaluate("""c => slm.nextDistribution(c).then(p =>
        p.reduce((h, x) => x > 0 ? h - x * Math.log2(x) : h, 0))""", context)
    seen = []
    for name, value in [(None, None), ("repetition_penalty", 1.5), ("top_p", 0.5),
                        ("repetition_penalty", 1), ("temperature", 0.7),
                        ("presence_penalty", 1)]:
        if name:
            changed(page, box, lambda name=name, value=value: set_input(box, name, value))
        rows = view_of(box, "chars")["rows"]
        text = " ".join(chart_text(box))
        raw = RAW_ENTROPY.search(text)
        after = FILTERED_ENTROPY.search(text)
        assert raw and after, text
        seen.append(({r["id"]: r["raw_p"] for r in rows}, raw.group(1), after.group(1)))
    outlines, raws, afters = zip(*seen)
    assert all(o == outlines[0] for o in outlines)
    assert set(raws) == {f"{expected:.2f}"}
    assert len(set(afters)) > 2  # the rules and penalties did change the distribution drawn from
    assert "raw" not in " ".join(chart_text(box)).replace("drawn", "")  # one name: the model's own


def _speculative_run(page, box, gamma: int, seed: int, n: int, context: str) -> dict:
    set_context(box, context)
    set_input(box, "gamma", gamma)
    if box.locator("input[data-name='seed']").count():
        set_input(box, "seed", seed)
    if box.locator("input[data-name='length']").count():
        set_input(box, "length", n)
    press(page, box, ".slm-sample")
    status = box.locator(".slm-status").inner_text()
    used_seed = int(re.search(r"seed (\d+)", status).group(1))
    # the same run again, by the page's runtime, counting what each round tested
    run = page.evaluate("""([c, n, g, seed]) => {
        const rounds = [];
        return slm.speculative(c, n, g, {}, seed, r => rounds.push(
            {k: r.accepted, g: r.proposed.length})).then(res => ({text: res.text, rounds}));
    }""", [context[-256:], n, gamma, used_seed])
    return {"status": status, "run": run}


def test_speculative_acceptance_is_accepted_over_tested_and_obeys_the_bound(page):
    reset_explorers(page)
    box = explorer(page, "speculative")
    got = _speculative_run(page, box, 8, 3, 80, CONTEXT)
    rounds = got["run"]["rounds"]
    accepted = sum(r["k"] for r in rounds)
    tested = sum(min(r["k"] + 1, r["g"]) for r in rounds)
    alpha = accepted / tested
    status = got["status"]
    assert box.locator(".slm-output .slm-new").inner_text() == got["run"]["text"]
    shown_alpha = float(re.search(r"acceptance[^0-9%]*(\d+\.\d)%", status).group(1))
    assert shown_alpha == round(100 * alpha, 1), (status, accepted, tested)
    per_pass = float(re.search(r"(\d+\.\d\d) characters per pass", status).group(1))
    assert per_pass == round(len(got["run"]["text"]) / len(rounds), 2), status
    assert per_pass <= 1 / (1 - alpha) + 0.005, (per_pass, alpha)
    # what the rounds show: one span per proposal, each classed by what happened to it
    spans = box.locator(".slm-rounds span[data-what]").evaluate_all(
        "xs => xs.map(x => x.dataset.what)")
    assert spans.count("accepted") == accepted
    assert spans.count("rejected") == tested - accepted
    assert spans.count("unchecked") == sum(r["g"] for r in rounds) - tested
    assert spans.count("bonus") + spans.count("replacement") == len(rounds)
    assert spans.count("replacement") == tested - accepted


def test_speculative_colours_mean_one_thing_each_and_the_legend_names_them(page):
    reset_explorers(page)
    box = explorer(page, "speculative")
    _speculative_run(page, box, 6, 1, 120, CONTEXT)
    colours = box.locator(".slm-rounds span[data-what]").evaluate_all(
        "xs => xs.map(x => [x.dataset.what, getComputedStyle(x).backgroundColor])")
    by_what: dict[str, set] = {}
    for what, colour in colours:
        by_what.setdefault(what, set()).add(colour)
    assert {"accepted", "rejected", "bonus", "replacement"} <= set(by_what), by_what
    assert all(len(c) == 1 for c in by_what.values()), by_what  # one colour per meaning
    used = {next(iter(c)) for c in by_what.values()}
    assert len(used) == len(by_what)                             # one meaning per colour
    legend = box.locator(".slm-legend [data-what]").evaluate_all(
        "xs => xs.map(x => [x.dataset.what, getComputedStyle(x).backgroundColor, x.textContent])")
    named = {what: colour for what, colour, text in legend if text.strip()}
    assert set(named) == {"accepted", "rejected", "unchecked", "replacement", "bonus"}, legend
    for what, colour in by_what.items():
        assert named[what] in colour, (what, colour, named)


# --- 2. the small breaks ---------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["step", "truncation", "speculative", "race"])
def test_a_failed_action_clears_what_is_on_screen(page, kind):
    reset_explorers(page)
    box = explorer(page, kind)
    set_context(box, CONTEXT)
    press(page, box, ".slm-sample")
    assert box.locator(".slm-output").inner_text().strip()
    set_context(box, "KATHARINA:\n{")  # a character the model does not know
    box.locator(".slm-sample").click()
    page.wait_for_function(
        "el => el.querySelector('.slm-status').textContent.includes('vocabulary')",
        arg=box.element_handle(), timeout=30000)
    assert box.locator(".slm-output").inner_text().strip() == ""
    assert not box.locator(".slm-view").is_visible() or \
        box.locator(".slm-view").evaluate("v => getComputedStyle(v).visibility") == "hidden"


def test_step_kv_cache_in_kilobytes_and_temperature_shows_its_value(page):
    reset_explorers(page)
    box = explorer(page, "step")
    readout = box.locator("input[data-name='temperature'] + output")
    assert readout.inner_text() == "1"
    set_input(box, "temperature", 0)
    assert readout.inner_text().startswith("0")
    set_context(box, CONTEXT)
    press(page, box, ".slm-sample")
    cache = box.locator(".slm-cache").inner_text()
    assert "KiB" not in cache
    config = page.evaluate("slm.config")
    per_slot = 2 * config["n_layer"] * config["d_model"] * 4
    slots = len(CONTEXT)  # the context is in the cache; the drawn character is fed next step
    assert f"{slots * per_slot / 1000:.1f} KB" in cache, cache
    assert f"{per_slot:,} bytes" in cache, cache


def test_truncation_title_shows_newlines_as_the_symbol_and_sits_above_the_legend(page):
    reset_explorers(page)
    box = explorer(page, "truncation")
    changed(page, box, lambda: set_context(box, "KATHARINA:\nMoved!\n"))
    title = view_of(box, "chars")["title"]
    assert "\\n" not in title and "\n" not in title and "\u21b5" in title, title
    tops = box.evaluate("""e => {
        const svg = e.querySelector('.slm-chart svg'), top = el => el.getBoundingClientRect().top;
        const title = Array.from(svg.querySelectorAll('text'))
          .find(t => t.textContent.startsWith('next character'));
        const legend = svg.querySelector('.role-legend');
        return [top(title), top(legend)]; }""")
    assert tops[0] < tops[1], tops


def test_sample_writes_the_length_asked_for_and_the_seed_repeats_it(page):
    reset_explorers(page)
    box = explorer(page, "truncation")
    set_context(box, CONTEXT)
    set_input(box, "top_p", 0.95)
    set_input(box, "length", 300)
    set_input(box, "seed", 11)
    texts = []
    for seed in (11, 11, 12):
        set_input(box, "seed", seed)
        press(page, box, ".slm-sample")
        texts.append(box.locator(".slm-output .slm-new").inner_text())
    assert len(texts[0]) == 300 and texts[0] == texts[1] != texts[2]
    set_input(box, "stop", True)  # now stop at a blank line
    set_input(box, "seed", 11)
    press(page, box, ".slm-sample")
    stopped = box.locator(".slm-output .slm-new").inner_text()
    assert "\n\n" not in stopped[:-2] and len(stopped) <= 300
    assert stopped == texts[0][:len(stopped)]


def _seeded_sample(page) -> str:
    """The truncation explorer's 120 characters at top-p 0.95, seed 11."""
    box = explorer(page, "truncation")
    set_context(box, CONTEXT)
    set_input(box, "top_p", 0.95)
    set_input(box, "length", 120)
    set_input(box, "seed", 11)
    press(page, box, ".slm-sample")
    return box.locator(".slm-output .slm-new").inner_text()


def test_served_page_samples_as_the_file_does(request, browser, page):  # noqa: F811
    """Served over HTTP, the explorers load and write the same seeded text as from disk."""
    reset_explorers(page)
    from_file = _seeded_sample(page)
    with visiting(request, browser, PAGE, "served") as visit:
        served = _seeded_sample(visit.page)
    assert len(served) == 120 and served == from_file


@pytest.mark.parametrize("kind", ["truncation", "step", "speculative", "race"])
def test_each_explorer_offers_presets_that_set_the_controls_and_run(page, kind):
    reset_explorers(page)
    box = explorer(page, kind)
    presets = box.locator(".slm-presets button")
    assert 2 <= presets.count() <= 3
    for i in range(presets.count()):
        button = presets.nth(i)
        press(page, box, f".slm-presets button >> nth={i}")
        hint = box.locator(".slm-hint").inner_text()
        assert hint.strip() and "Look for" in hint, hint
        assert button.get_attribute("title"), "each preset says what it sets"
    assert not math.isnan(len(box.locator(".slm-output").inner_text()))


def test_a_page_with_only_the_truncation_explorer_loads_none_of_the_other_kinds_scripts(
        browser):  # noqa: F811
    """book/_ext/live_explorers.py adds the scripts of the kinds on a page: chapter 3 has
    only the truncation explorer, which slm_explorers.js draws, so the page never asks for
    slm_beam.js, slm_builder.js or slm_race.js, and its explorer still mounts."""
    path = SITE / "notebooks" / "03_sampling_and_truncation.html"
    if not path.exists():
        missing(f"no {path}: run `make book` first")
    page = browser.new_page()
    asked, errors = [], []
    page.on("request", lambda r: asked.append(r.url.split("?")[0].rsplit("/", 1)[-1]))
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(path.as_uri(), wait_until="load")
        kinds = page.eval_on_selector_all(".slm-live", "es => es.map(e => e.dataset.kind)")
        assert kinds == ["truncation"], kinds
        page.wait_for_selector(".slm-live[data-kind='truncation'][data-mounted] .slm-context",
                               state="attached", timeout=30000)
        assert {"style.js", "slm_explorers.js", "slm_runtime.js"} <= set(asked), asked
        assert not {"slm_beam.js", "slm_builder.js", "slm_race.js"} & set(asked), asked
        assert errors == [], errors
    finally:
        page.close()
