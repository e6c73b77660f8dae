"""The live token builder (book/_js/slm_builder.js) on the built site, in headless Chromium,
opened from ``file://`` and served on 127.0.0.1: a text built by clicking bars, pressing
Greedy and Sample and rewinding is scored as Python's teacher-forced scoring scores it
(``shakespeare_lm.decoding.scoring.score_continuations``), greedy's line is Python's greedy
text, Sample pressed at every step writes the seeded sample's line, a text longer than the
context window is scored in generate's windows, and a failed action leaves nothing stale.

Run after ``make book``; a missing browser or site skips (fails with REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import json
import re

import pytest

import shakespeare_lm as slm
from shakespeare_lm.decoding.scoring import score_continuations

from .test_live_site import HELDOUT, PROMPT, visiting
from .test_site import SITE, browser, missing, site_url  # noqa: F401  (fixtures)

CHAPTER = "notebooks/01_generation_loop.html"
BOX = ".slm-live[data-kind='builder']"
TOL = 1e-4        # the page's log-probabilities against Python's, in nats
SHOWN = 5e-4 + TOL  # a value shown with 3 decimals


def builder_pages() -> list[str]:
    """Chapter 1, and every other page of the site that has a builder (the live page)."""
    pages = [CHAPTER]
    live = SITE / "book" / "live.html"
    if live.exists() and 'data-kind="builder"' in live.read_text("utf-8"):
        pages.append("book/live.html")
    return pages


@pytest.fixture(scope="module")
def model_tok():
    return slm.load_pretrained()


# every page opened from disk, as a reader of the offline site opens it, and the first also
# served: the builder computes in the page, the same whichever way the page arrived
VISITS = [(p, "file") for p in builder_pages()] + [(p, "served") for p in builder_pages()[:1]]


@pytest.fixture(scope="module", params=VISITS, ids=lambda x: f"{x[0].split('/')[-1]}-{x[1]}")
def builder(request, browser):  # noqa: F811
    page_path, how = request.param
    with visiting(request, browser, page_path, how) as visit:
        visit.page.wait_for_function(f'document.querySelector("{BOX}[data-ready]")',
                                     timeout=30000)
        b = Builder(visit.page)
        b.idle()
        yield b


class Builder:
    """The builder on a page, operated as a reader does."""

    def __init__(self, page):
        self.page, self.box = page, page.locator(BOX)

    def idle(self):
        self.page.wait_for_function(
            "el => el.getAttribute('data-busy') === '0' && el.getAttribute('data-state')",
            arg=self.box.element_handle(), timeout=60000)

    def state(self) -> dict:
        return json.loads(self.box.get_attribute("data-state"))

    def start(self, context: str, per_press: int = 1, temperature: float = 1.0, seed: int = 0):
        self.set(".slm-builder-count", per_press)
        self.set(".slm-builder-temperature", temperature)
        self.set(".slm-builder-seed", seed)
        self.box.locator(".slm-context").fill(context)
        self.idle()
        assert self.state()["text"] == "" and self.state()["prompt"] == context

    def set(self, selector: str, value):
        field = self.box.locator(selector)
        field.fill(str(value))
        field.dispatch_event("change")
        self.idle()

    def bar(self, rank: int) -> str:
        """Click the bar of rank `rank`: the character it adds."""
        bar = self.box.locator(f".slm-builder-bar[data-rank='{rank}']")
        char = bar.get_attribute("data-char")
        bar.click()
        self.idle()
        return char

    def press(self, name: str):
        buttons = {"greedy": ".slm-continue", "sample": ".slm-sample", "back": ".slm-builder-back",
                   "start over": ".slm-builder-restart"}
        self.box.locator(buttons[name]).click()
        self.idle()

    def rewind(self, t: int):
        """Click the t-th character (from 0) of the built text: back to just before it."""
        self.box.locator(f".slm-builder-char[data-t='{t}']").click()
        self.idle()

    def shown(self) -> dict:
        """The numbers on the page: each character's log p (its tooltip), and each line's total
        and mean per character (the table)."""
        def number(text):
            return float(text.replace("\u2212", "-"))
        titles = self.box.locator(".slm-builder-char").evaluate_all(
            "xs => xs.map(x => x.getAttribute('title'))")
        out = {"chars": [number(re.search(r"log p = (\S+) nats", t).group(1)) for t in titles]}
        for line in ("yours", "greedy", "sample"):
            row = self.box.locator(f".slm-builder-row[data-line='{line}']")
            out[line] = (number(row.locator(".slm-builder-total").inner_text()),
                         number(row.locator(".slm-builder-mean").inner_text()))
        return out


def check_scores(b: Builder, model, tok) -> dict:
    """The page's scores of its three lines equal Python's teacher-forced scores, as kept in
    data-state (within TOL) and as shown (3 decimals); greedy's line is Python's greedy text."""
    s = b.state()
    n = len(s["text"])
    assert n > 0 and s["error"] is None
    assert len(s["logprobs"]) == len(s["greedy"]["text"]) == len(s["sample"]["text"]) == n
    shown = b.shown()
    for line, js in (("yours", s), ("greedy", s["greedy"]), ("sample", s["sample"])):
        python = score_continuations(model, tok, s["prompt"], js["text"]).logprobs
        assert js["logprobs"] == pytest.approx(python, abs=TOL), line
        assert js["total"] == pytest.approx(sum(python), abs=TOL * n), line
        assert js["mean"] == pytest.approx(sum(python) / n, abs=TOL), line
        assert shown[line][0] == pytest.approx(sum(python), abs=SHOWN), line
        assert shown[line][1] == pytest.approx(sum(python) / n, abs=SHOWN), line
    python = score_continuations(model, tok, s["prompt"], s["text"]).logprobs
    assert shown["chars"] == pytest.approx(python, abs=SHOWN)
    greedy = slm.generate(model, tok, s["prompt"], n, temperature=0, context_overflow="slide")
    assert s["greedy"]["text"] == greedy.text
    return s


def test_a_text_built_by_clicks_greedy_sample_and_rewinding_scores_as_python(builder, model_tok):
    model, tok = model_tok
    b = builder
    b.start(PROMPT, per_press=1, temperature=0.8, seed=5)
    chosen = "".join(b.bar(rank) for rank in (0, 3, 1, 7))
    assert b.state()["text"] == chosen
    b.set(".slm-builder-count", 6)
    b.press("greedy")
    b.press("sample")
    b.set(".slm-builder-count", 1)
    chosen = b.state()["text"] + b.bar(12)  # a character the model gives little probability
    s = check_scores(b, model, tok)
    assert s["text"] == chosen and len(chosen) == 4 + 6 + 6 + 1
    assert s["temperature"] == 0.8 and s["seed"] == 5

    b.rewind(5)                                  # back to just before the 6th character
    assert b.state()["text"] == chosen[:5]
    assert b.state()["logprobs"] == s["logprobs"][:5]
    b.press("back")
    assert b.state()["text"] == chosen[:4]
    b.set(".slm-builder-count", 9)
    b.press("greedy")
    b.bar(2)
    s = check_scores(b, model, tok)
    assert s["text"].startswith(chosen[:4]) and len(s["text"]) == 14
    greedy_after = slm.generate(model, tok, PROMPT + chosen[:4], 9, temperature=0).text
    assert s["text"][4:13] == greedy_after        # Greedy continues the reader's own text
    b.press("start over")
    assert b.state()["text"] == "" and b.box.locator(".slm-builder-char").count() == 0


def test_greedy_at_every_step_is_pythons_greedy_and_sample_is_the_seeded_sample(builder, model_tok):
    model, tok = model_tok
    b = builder
    b.start(PROMPT, per_press=20, temperature=1.0, seed=3)
    b.press("greedy")
    b.press("greedy")
    s = check_scores(b, model, tok)
    python = slm.generate(model, tok, PROMPT, 40, temperature=0).text
    assert s["text"] == python == s["greedy"]["text"]
    assert s["total"] == pytest.approx(s["greedy"]["total"], abs=1e-12)
    b.press("start over")
    b.press("sample")
    b.press("sample")
    s = check_scores(b, model, tok)
    assert s["text"] == s["sample"]["text"] != s["greedy"]["text"]  # each draw: the seed's next
    assert s["greedy"]["mean"] > s["mean"]       # this seed's sample is less probable than greedy's
    b.set(".slm-builder-seed", 4)               # another seed: another sample line
    assert b.state()["sample"]["text"] != s["text"] and b.state()["text"] == s["text"]


def test_a_text_past_the_context_window_is_scored_in_generates_windows(builder, model_tok):
    model, tok = model_tok
    b = builder
    context = HELDOUT.read_text()[1000:1000 + model.config.block_size - 12]
    b.start(context, per_press=15)
    b.press("greedy")
    b.bar(1)
    b.press("sample")
    assert len(context) + len(b.state()["text"]) > model.config.block_size
    check_scores(b, model, tok)


def test_a_failed_action_clears_what_was_shown_and_says_why(builder):
    b = builder
    b.start(PROMPT, per_press=3)
    b.press("greedy")
    assert b.box.locator(".slm-builder-bar").count() == 20
    b.box.locator(".slm-context").fill("ROMEO{")
    b.idle()
    status = b.box.locator(".slm-status").inner_text()
    assert "'{'" in status and "not in the vocabulary" in status
    assert b.state() == {"error": status, "text": "", "logprobs": []}
    for part in (".slm-builder-bar", ".slm-builder-char", ".slm-builder-row", ".slm-builder-line"):
        assert b.box.locator(part).count() == 0, part
    assert b.box.locator(".slm-output").inner_text() == ""
    b.box.locator(".slm-context").fill("ROMEO:\n")
    b.idle()
    assert b.box.locator(".slm-builder-bar").count() == 20 and b.state()["error"] is None
    b.set(".slm-builder-seed", 1.5)
    assert "seed" in b.box.locator(".slm-status").inner_text() and b.state()["error"]
    assert b.box.locator(".slm-builder-bar").count() == 0
    b.set(".slm-builder-seed", 0)
    b.press("greedy")                            # after an error, a press starts again
    assert b.box.locator(".slm-builder-bar").count() == 20 and b.state()["error"] is None


def test_every_colour_is_in_the_legend_and_the_units_are_nats(builder):
    b = builder
    b.start(PROMPT, per_press=5, temperature=0.5)
    b.press("sample")
    legend = b.box.locator(".slm-builder-legend").inner_text()
    assert "p(v | context)" in legend and "T = 0.50" in legend
    rows = b.box.locator(".slm-builder-row").all_inner_texts()
    names = [r.split("\t")[0].strip() for r in rows]
    assert names == ["your text", "greedy (T = 0)", "sample (T = 0.50, seed 0)"]
    headers = b.box.locator(".slm-builder-scores th").all_inner_texts()
    assert "\u2113 (nats)" in headers and "per character (nats)" in headers
    colours = b.box.evaluate("""el => [...el.querySelectorAll('svg [fill], svg [stroke]')]
        .flatMap(e => [e.getAttribute('fill'), e.getAttribute('stroke')])""")
    marks = {c for c in colours if c and c.startswith("#")} - {"#222222", "#595959", "#e6e6e6"}
    # the bars, Sample's outline, and the three lines
    assert marks == {"#0072B2", "#E69F00", "#D55E00", "#009E73", "#CC79A7"}


def test_the_try_this_presets_do_what_they_say(builder, model_tok):
    model, tok = model_tok
    b = builder
    b.start("ROMEO:\n", per_press=3, temperature=1.5, seed=9)
    b.press("sample")
    presets = b.box.locator(".slm-presets button")
    names = ["greedy, then sample", "one unlikely character", "Sample at T = 0.5"]
    assert presets.all_inner_texts() == names

    presets.nth(0).click()
    b.idle()
    s = b.state()
    assert (s["prompt"], s["temperature"], s["seed"]) == (PROMPT, 1, 0)  # the controls' defaults
    greedy = slm.generate(model, tok, PROMPT, 40, temperature=0).text
    assert s["text"] == s["greedy"]["text"] == greedy
    assert "Look for: your row equals greedy's" in b.box.locator(".slm-hint").inner_text()

    presets.nth(1).click()
    b.idle()
    s = check_scores(b, model, tok)
    first = s["text"][0]
    assert len(s["text"]) == 41 and s["logprobs"][0] < -4.6  # under 1%, several nats
    assert s["text"][1:] == slm.generate(model, tok, PROMPT + first, 40, temperature=0).text

    presets.nth(2).click()
    b.idle()
    s = check_scores(b, model, tok)
    assert s["temperature"] == 0.5 and s["text"] == s["sample"]["text"] and len(s["text"]) == 40
