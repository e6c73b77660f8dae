"""The live beam-search explorer (book/_js/slm_beam.js) on chapter 2's page, in headless
Chromium, opened from ``file://`` and served on 127.0.0.1, offline and without console errors:

* operated as a reader would (context, width, length penalty, new characters, the end, Play),
  its final beams are Python's ``slm.beam_search`` (texts, log-probabilities, scores and
  why each ended) on several contexts, widths and penalties, with and without a stop; its
  greedy line is ``slm.generate(temperature=0)``'s and its exact best ``beam.exact_search``'s;
* the tree has one column per step; Step adds one, Play grows it to the end, Pause stops it;
* the "try this" presets show what chapter 2 says they show;
* every colour of the tree is in its legend; a failed action clears the tree and the text;
* the tree's numbers are a table too, opened from the keyboard: a row per node drawn, with the
  numbers of its tooltip.

Run after ``make book``; a missing browser or site skips (fails with REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import json

import pytest

import shakespeare_lm as slm
from shakespeare_lm.decoding import beam

from .test_live_site import visiting
from .test_site import SITE, browser, missing, site_url  # noqa: F401  (fixtures)

PAGE = "notebooks/02_greedy_and_beam.html"
START = "KATHARINA:\nMoved! in good time: let him that moved you "
TOL = 1e-4
# (context, width, length penalty, new characters, stop): the explorer's controls
CASES = [
    ("KATHARINA:\nMoved! in good time: ", 1, 0.0, 8, None),
    (START, 3, 0.0, 6, None),
    ("ROMEO:\n", 5, 0.6, 6, None),
    ("PETRUCHIO:\n", 8, 0.0, 9, None),
    (START, 4, 1.0, 12, "\n"),
    ("JULIET:\n", 4, 2.0, 20, "\n\n"),
]


@pytest.fixture(scope="module")
def page(request, browser):  # noqa: F811
    """The page opened from disk, as a reader of the offline site opens it. The explorer's
    search runs in the page, the same whichever way the page arrived, so every check runs
    on this one; ``test_served_page_runs_the_same_search`` checks the page as served."""
    with visiting(request, browser, PAGE, "file") as visit:
        yield visit.page


@pytest.fixture(scope="module")
def model_tok():
    return slm.load_pretrained()


def explorer(page):
    page.wait_for_function("document.querySelector(\".slm-live[data-kind='beam'][data-ready]\")",
                           timeout=30000)
    return page.locator(".slm-live[data-kind='beam']")


def state(box) -> dict:
    return json.loads(box.get_attribute("data-state") or "{}")


def set_control(box, name: str, value) -> None:
    """Set the control named ``name`` (a range or a menu) as a reader would."""
    box.locator(f"[data-name='{name}']").evaluate(
        """(e, v) => { e.value = v;
                       e.dispatchEvent(new Event('input', {bubbles: true}));
                       e.dispatchEvent(new Event('change', {bubbles: true})); }""", value)


def wait_done(page, box, timeout=120000) -> dict:
    page.wait_for_function(
        """el => { const s = JSON.parse(el.getAttribute('data-state') || '{}');
                   const idle = el.querySelector('.slm-sample').textContent === 'Play';
                   return s.error || (s.done && idle); }""",
        arg=box.element_handle(), timeout=timeout)
    s = state(box)
    assert "error" not in s, s
    return s


def search(page, box, context, width, lam, n, stop) -> dict:
    """Set the controls, press Play and wait for the whole search."""
    box.locator(".slm-context").fill(context)
    for name, value in (("width", width), ("length_penalty", lam), ("horizon", n),
                        ("stop", stop or "")):
        set_control(box, name, value)
    box.locator(".slm-sample").click()
    s = wait_done(page, box)
    assert (s["context"], s["width"], s["length_penalty"], s["horizon"], s["stop"]) == \
        (context, width, lam, n, stop)
    return s


def columns(box) -> int:
    return box.locator(".slm-beam-svg .slm-beam-col").count()


def python_beams(model, tok, context, width, lam, n, stop):
    kw = {"stop": stop} if stop else {}
    return slm.beam_search(model, tok, context, n, width, lam, return_all=True, **kw)


def assert_same_beams(js: dict, py: list, label) -> None:
    assert [b["text"] for b in js["beams"]] == [g.text for g in py], label
    for b, g in zip(js["beams"], py):
        assert b["ids"] == g.ids, label
        assert b["logprob"] == pytest.approx(g.logprob, abs=TOL), (label, b["text"])
        assert b["score"] == pytest.approx(g.score, abs=TOL), (label, b["text"])
        assert b["reason"] == g.stop_reason, (label, b["text"])


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"w{c[1]}-lam{c[2]}-n{c[3]}-{c[4]!r}")
def test_final_beams_equal_python_beam_search(page, model_tok, case):
    model, tok = model_tok
    context, width, lam, n, stop = case
    box = explorer(page)
    js = search(page, box, *case)
    py = python_beams(model, tok, *case)
    assert_same_beams(js, py, case)
    assert js["steps"] == columns(box) == js["columns"]      # one column per step
    assert js["steps"] == (n if not stop else max(len(g.ids) for g in py))
    kw = {"stop": stop} if stop else {}
    greedy = slm.generate(model, tok, context, n, temperature=0, **kw)
    assert js["greedy"]["text"] == greedy.text
    assert js["greedy"]["logprob"] == pytest.approx(sum(greedy.logprobs), abs=TOL)
    if stop is None and n <= 6:                              # the exact best, branch and bound
        exact = beam.exact_search(model, tok, context, n).best
        assert js["exact"]["text"] == exact.text
        assert js["exact"]["logprob"] == pytest.approx(exact.logprob, abs=TOL)
        assert js["exact"]["logprob"] >= js["beams"][0]["logprob"] - TOL
    else:
        assert js["exact"] is None


def test_served_page_runs_the_same_search(request, browser, model_tok):  # noqa: F811
    """Served over HTTP, the explorer loads and its search equals Python's too."""
    model, tok = model_tok
    case = CASES[4]
    with visiting(request, browser, PAGE, "served") as visit:
        js = search(visit.page, explorer(visit.page), *case)
    assert_same_beams(js, python_beams(model, tok, *case), case)


def test_step_adds_a_column_and_play_pause_grow_it(page, model_tok):
    model, tok = model_tok
    box = explorer(page)
    box.locator(".slm-context").fill("ROMEO:\n")
    for name, value in (("width", 4), ("length_penalty", 0), ("horizon", 10), ("stop", "")):
        set_control(box, name, value)
    assert columns(box) == 0 and state(box)["steps"] == 0
    for k in (1, 2, 3):
        box.locator(".slm-continue").click()
        page.wait_for_function("([el, k]) => JSON.parse(el.getAttribute('data-state')).steps === k",
                               arg=[box.element_handle(), k], timeout=30000)
        assert columns(box) == k and not state(box)["done"]
        kept = box.locator(f".slm-beam-col[data-step='{k}'] .slm-beam-node[data-kind='kept']")
        assert kept.count() == 4
    play = box.locator(".slm-sample")
    play.click()                                             # Play, then Pause midway
    assert play.text_content() == "Pause"
    page.wait_for_function("el => JSON.parse(el.getAttribute('data-state')).steps >= 5",
                           arg=box.element_handle(), timeout=30000)
    play.click()
    page.wait_for_function("el => el.textContent === 'Play'", arg=play.element_handle(),
                           timeout=30000)
    paused = state(box)["steps"]
    assert 5 <= paused < 10
    page.wait_for_timeout(1500)
    assert state(box)["steps"] == paused == columns(box)      # paused: it does not grow
    play.click()                                             # and on to the end
    js = wait_done(page, box)
    assert js["steps"] == columns(box) == 10
    assert_same_beams(js, python_beams(model, tok, "ROMEO:\n", 4, 0.0, 10, None), "step+play")
    box.locator(".slm-continue").click()                     # a finished search starts again
    page.wait_for_function("el => JSON.parse(el.getAttribute('data-state')).steps === 1",
                           arg=box.element_handle(), timeout=30000)
    assert columns(box) == 1


def preset(page, box, name: str) -> dict:
    """Press a "try this" button: it sets the controls, says what to look for, and plays."""
    box.locator(".slm-presets button", has_text=name).click()
    page.wait_for_timeout(100)
    s = wait_done(page, box)
    assert box.locator(".slm-hint").inner_text().startswith(name + ". Look for: ")
    return s


def test_the_presets_show_what_the_chapter_says(page, model_tok):
    model, tok = model_tok
    box = explorer(page)
    # greedy falls out; the exact best is pruned at its second character, and ends above the beam
    s = preset(page, box, "greedy falls out")
    assert (s["context"], s["width"], s["horizon"]) == (START, 3, 6)
    assert not any(b["text"].startswith(s["greedy"]["text"][:4]) for b in s["beams"])
    key = ",".join(map(str, s["exact"]["ids"][:2]))
    assert box.locator(f".slm-beam-col[data-step='2'] .slm-beam-node[data-key='{key}']") \
        .get_attribute("data-kind") == "pruned"
    assert s["exact"]["logprob"] > s["beams"][0]["logprob"] + 0.5
    # a wider beam finds the exact best; a narrower one does not
    s = preset(page, box, "a wider beam finds the best")
    assert s["beams"][0]["text"] == s["exact"]["text"]
    set_control(box, "width", 3)
    box.locator(".slm-sample").click()
    s3 = wait_done(page, box)
    assert s3["width"] == 3 and s3["beams"][0]["logprob"] < s["exact"]["logprob"] - 0.1
    # the length penalty decides between lines of different lengths once a line may end
    s = preset(page, box, "a length penalty at work")
    assert (s["stop"], s["width"], s["length_penalty"], s["horizon"]) == ("\n", 4, 1, 12)
    assert s["beams"][0]["text"] == "all.\n"
    assert any(b["reason"] == "stop_sequence" for b in s["beams"])
    assert box.locator(".slm-beam-node[data-kind='ended']").count() > 0  # finished keep their slots
    set_control(box, "length_penalty", 0)
    box.locator(".slm-sample").click()
    s0 = wait_done(page, box)
    assert s0["beams"][0]["text"] == "to\n"
    assert_same_beams(s0, python_beams(model, tok, START, 4, 0.0, 12, "\n"), "preset 3 at 0")


NEUTRAL = {"#ffffff", "#222222", "#595959", "#8c8c8c", "#b3b3b3", "#f2f2f2", "#d9d9d9", "none"}


def test_every_colour_of_the_tree_is_in_the_legend(page):
    box = explorer(page)
    preset(page, box, "greedy falls out")                    # beam, pruned, greedy, exact, best
    tree = set(box.locator(".slm-beam-svg [fill], .slm-beam-svg [stroke]").evaluate_all(
        "es => es.flatMap(e => [e.getAttribute('fill'), e.getAttribute('stroke')])"))
    preset(page, box, "a length penalty at work")            # and lines that ended
    tree |= set(box.locator(".slm-beam-svg [fill], .slm-beam-svg [stroke]").evaluate_all(
        "es => es.flatMap(e => [e.getAttribute('fill'), e.getAttribute('stroke')])"))
    legend = set(box.locator(".slm-beam-legend svg *").evaluate_all(
        "es => es.flatMap(e => [e.getAttribute('fill'), e.getAttribute('stroke')])"))
    coloured = {c.lower() for c in tree if c} - NEUTRAL
    assert coloured >= {"#0072b2", "#d55e00", "#e69f00", "#009e73", "#000000"}, coloured
    assert coloured <= {c.lower() for c in legend if c}, coloured - legend
    words = box.locator(".slm-beam-legend").inner_text()
    for name in ("in the beam", "pruned", "best beam", "greedy", "exact best", "ended"):
        assert name in words, words
    # the smallest text of the tree is at least 11 px
    sizes = box.locator(".slm-beam-svg text").evaluate_all(
        "ts => ts.map(t => parseFloat(getComputedStyle(t).fontSize))")
    assert sizes and min(sizes) >= 11


def test_the_trees_numbers_are_a_table_that_a_keyboard_opens(page):
    """The tree is an image whose numbers are otherwise only in tooltips (a mouse's): the
    table under the legend opens from the keyboard and holds a row per node the tree draws,
    in its order, with the numbers of that node's tooltip and where the node stands."""
    box = explorer(page)
    preset(page, box, "a length penalty at work")  # lines that end, a score column
    steps = box.locator(".slm-beam-steps")
    assert steps.get_attribute("open") is None and box.locator(".slm-beam-table").count() == 0
    steps.locator("summary").focus()
    page.keyboard.press("Enter")
    box.locator(".slm-beam-table").wait_for(timeout=5000)
    assert steps.get_attribute("open") is not None
    tips = box.locator(".slm-beam-svg .slm-beam-node").evaluate_all(
        "ns => ns.map(n => [n.getAttribute('data-key'), n.querySelector('title').textContent])")
    rows = box.locator(".slm-beam-table tbody tr").evaluate_all(
        "rs => rs.map(r => [r.getAttribute('data-key'), [...r.cells].map(c => c.textContent)])")
    header = box.locator(".slm-beam-table thead th").all_inner_texts()
    assert header == ["step", "line so far", "\u2113", "log p(character)", "score", "where"]
    assert sorted(key for key, _ in rows) == sorted(key for key, _ in tips) and rows
    tip = dict(tips)
    for key, (step, line, ell, lp, score, _) in rows:
        assert tip[key].startswith(line + ": \u2113 = " + ell), (tip[key], line, ell)
        assert ("log p(" not in tip[key] and lp == "") or f") = {lp}" in tip[key], (tip[key], lp)
        assert f"score = {score}" in tip[key], (tip[key], score)
        assert len(line) - 2 <= int(step), (step, line)  # t characters, fewer if it ended
    kinds = " | ".join(cells[5] for _, cells in rows)
    for words in ("in the beam", "missed the cut", "ended at the stop", "the best beam's line"):
        assert words in kinds, (words, kinds)
    box.locator(".slm-context").fill("ROMEO:\nD\u00e9j\u00e0 vu")   # a failed action empties it
    page.wait_for_function("el => JSON.parse(el.getAttribute('data-state')).error",
                           arg=box.element_handle(), timeout=10000)
    assert box.locator(".slm-beam-table").count() == 0
    steps.evaluate("d => { d.open = false; }")  # closed again for the tests after this one


def test_a_failed_action_clears_the_tree_and_the_text(page):
    box = explorer(page)
    preset(page, box, "greedy falls out")
    assert columns(box) == 6 and box.locator(".slm-output").inner_text()
    box.locator(".slm-context").fill("ROMEO:\nD\u00e9j\u00e0 vu")
    page.wait_for_function("el => JSON.parse(el.getAttribute('data-state')).error",
                           arg=box.element_handle(), timeout=10000)
    assert box.locator(".slm-beam-svg").count() == 0
    assert box.locator(".slm-output").inner_text() == ""
    status = box.locator(".slm-status").inner_text()
    assert "'\u00e9'" in status and "not in the vocabulary" in status
    box.locator(".slm-sample").click()                       # Play cannot run on it either
    page.wait_for_timeout(300)
    assert "error" in state(box) and box.locator(".slm-beam-svg").count() == 0
    box.locator(".slm-context").fill("ROMEO:\n")             # a good context works again
    box.locator(".slm-sample").click()
    assert wait_done(page, box)["steps"] > 0


def test_a_long_context_is_cut_to_leave_room_for_the_search(page, model_tok):
    """A context longer than the window less the horizon: the search runs on its end, as
    Python's beam_search does on that end."""
    model, tok = model_tok
    box = explorer(page)
    text = (SITE.parent.parent / "data" / "shakespeare_heldout.txt").read_text()[1000:1300]
    n = 5
    box.locator(".slm-context").fill(text)
    for name, value in (("width", 2), ("length_penalty", 0), ("horizon", n), ("stop", "")):
        set_control(box, name, value)
    box.locator(".slm-sample").click()
    js = wait_done(page, box)
    kept = model.config.block_size - n
    assert js["context"] == text[-kept:]
    assert "last " + str(kept) + " characters" in box.locator(".slm-status").inner_text()
    assert_same_beams(js, python_beams(model, tok, text[-kept:], 2, 0.0, n, None), "long")


def test_changing_a_control_while_playing_starts_over(page, model_tok):
    model, tok = model_tok
    box = explorer(page)
    box.locator(".slm-presets button", has_text="a wider beam finds the best").click()
    page.wait_for_function("el => JSON.parse(el.getAttribute('data-state')).steps >= 2",
                           arg=box.element_handle(), timeout=30000)
    set_control(box, "width", 2)                             # mid-play: a new, empty search
    s = state(box)
    assert s["steps"] == 0 and s["width"] == 2
    assert box.locator(".slm-sample").text_content() == "Play"
    page.wait_for_timeout(1000)                              # the old search does not come back
    assert state(box)["steps"] == 0 and columns(box) == 0
    box.locator(".slm-sample").click()
    js = wait_done(page, box)
    assert js["steps"] == columns(box) == 6
    assert_same_beams(js, python_beams(model, tok, "ROMEO:\n", 2, 0.0, 6, None), "restart")
