"""The race (book/_js/slm_race.js) and the n-gram draft it runs (slm_runtime.js's
``loadNgram``), on the built site in headless Chromium:

* the page's n-gram is Python's ``NGramDraft`` of the same order: the same probabilities,
  bit for bit, after contexts of every length up to and past its order;
* speculative decoding with it keeps the target's distribution: its greedy text is
  Python's greedy text, and an unknown draft is refused with the names of the known ones;
* the race shows what it says: one row per pair, each ratio the pair's plain time over its
  speculative time, the summary's median the median of those ratios and its count the pairs
  speculative decoding won, the bars each side's median time per character and their ratio;
  the summary names a winner only where both ratios point to it, and calls the result mixed
  otherwise; at temperature 0 both runs of every pair write Python's greedy text; bad input
  is refused and clears the view.

Run after ``make book``; a missing browser or site skips (fails with REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import json
import statistics

import numpy as np
import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm import speculative as sp
from shakespeare_lm.site.book import LIVE_NGRAM_ORDER

from .test_live_explorers import CONTEXT, explorer, press, reset_explorers, set_context, set_input
from .test_live_site import HELDOUT, PAGE, visiting
from .test_site import SITE, browser, missing, site_url  # noqa: F401  (fixtures)


@pytest.fixture(scope="module")
def page(request, browser):  # noqa: F811
    with visiting(request, browser, PAGE, "file") as visit:
        yield visit.page


@pytest.fixture(scope="module")
def model_tok():
    return slm.load_pretrained()


def race(page, **settings) -> dict:
    """Set the race's controls, press Race, and return what it put on its root."""
    reset_explorers(page)
    box = explorer(page, "race")
    set_context(box, CONTEXT)
    for name, value in settings.items():
        set_input(box, name, value)
    press(page, box, ".slm-sample")
    return json.loads(box.get_attribute("data-race"))


def test_the_pages_ngram_gives_pythons_probabilities_bit_for_bit(page, model_tok):
    _, tok = model_tok
    python = sp.NGramDraft(tok, LIVE_NGRAM_ORDER)
    text = HELDOUT.read_text()
    lengths = [0, 1, 2, 3, 4, 5, 6, 40]  # shorter than the context, as long, longer
    contexts = [tok.encode(text[i:i + lengths[k % len(lengths)]])
                for k, i in enumerate(range(0, 48_000, 1_500))]
    contexts.append(tok.encode("Qzxq "))  # contexts the training text never had
    got = page.evaluate("cs => slm.loadNgram().then(g => [g.name, g.order, "
                        "cs.map(c => Array.from(g.probs(c)))])", contexts)
    assert got[:2] == [python.name, LIVE_NGRAM_ORDER]
    for js, ids in zip(got[2], contexts):
        assert np.array_equal(np.array(js), python.probs(ids)), tok.decode(ids)


def test_greedy_speculative_decoding_with_the_ngram_writes_pythons_greedy_text(page, model_tok):
    model, tok = model_tok
    prompt = "KATHARINA:\nMoved! in good time: "
    got = page.evaluate("""p => Promise.all([[150, 3, {}], [90, 8, {stop: "\\n"}]].map(
        ([n, g, s]) => slm.speculative(p, n, g, Object.assign({temperature: 0}, s), 0, null,
                                       'ngram')))""", prompt)
    for js, (n, settings) in zip(got, [(150, {}), (90, {"stop": "\n"})]):
        g = slm.generate(model, tok, prompt, n, temperature=0, **settings)
        assert (js["text"], js["stopReason"]) == (g.text, g.stop_reason)
        assert js["rounds"] < len(g.text)  # guesses were kept: fewer passes than characters


def test_the_first_character_after_an_ngram_round_has_the_models_distribution(page, model_tok):
    """Chi-square over 1,200 seeds: the character a round with the n-gram's proposal emits
    first has the target's distribution p, and not the draft's own q (the test tells
    them apart: the draft's q is rejected)."""
    model, tok = model_tok
    # a short context, which each run reads afresh, where the draft and p differ (total
    # variation about 0.4): the draft's guess is often rejected and the residual drawn
    n, context = 1200, "ROMEO:\nThou art "
    # four characters asked for: the first round proposes three (as Python's, it keeps room
    # for the token that ends it), and its first character is the first one of the text
    firsts = page.evaluate("""async ([c, n]) => { const out = [];
        for (let seed = 0; seed < n; seed++) {
          out.push((await slm.speculative(c, 4, 3, {}, seed, null, 'ngram')).text[0]); }
        return out; }""", [context, n])
    counts = np.bincount(tok.encode("".join(firsts)), minlength=tok.vocab_size)
    with torch.no_grad():
        p = torch.softmax(model(torch.tensor([tok.encode(context)]))[0, -1].double(), -1)
    q = sp.NGramDraft(tok, LIVE_NGRAM_ORDER).probs(tok.encode(context))
    assert sp.chi_square_test(counts, p)[2] > 1e-3, sp.chi_square_test(counts, p)
    assert sp.chi_square_test(counts, q)[2] < 1e-6, sp.chi_square_test(counts, q)


def test_an_unknown_draft_is_refused_with_the_known_ones(page):
    message = page.evaluate("""() => slm.speculative('ROMEO:', 10, 3, {}, 0, null, 'trigram')
        .then(() => 'accepted', e => e.message)""")
    assert message.startswith('draft="trigram" is invalid') and '"ngram"' in message, message


def direction(ratio: float) -> int:
    """Which way a ratio points, read as the race reads it, at the two decimals it shows:
    1 speculative decoding faster, -1 slower, 0 level."""
    shown = float(f"{ratio:.2f}")
    return (shown > 1) - (shown < 1)


def test_the_race_shows_each_pairs_ratio_and_their_median(page):
    r = race(page, pairs=3, length=80, seed=5)
    box = explorer(page, "race")
    assert (r["gamma"], r["length"], r["temperature"]) == (3, 80, 1)
    assert [p["pair"] for p in r["pairs"]] == [1, 2, 3]
    assert [p["seed"] for p in r["pairs"]] == [5, 6, 7]
    for p in r["pairs"]:
        assert p["ratio"] == pytest.approx(p["plain_ms"] / p["spec_ms"])
        assert len(p["plain_text"]) == len(p["spec_text"]) == 80
    assert r["median"] == pytest.approx(statistics.median(p["ratio"] for p in r["pairs"]))
    rows = box.locator(".slm-race-row").all_inner_texts()
    assert len(rows) == 3
    for row, p in zip(rows, r["pairs"]):
        assert row.split() == [str(p["pair"]), f"{p['plain_ms']:.3f}", f"{p['spec_ms']:.3f}",
                               f"{p['ratio']:.2f}"]
    summary = box.locator(".slm-race-summary").inner_text()
    wins = sum(direction(p["ratio"]) > 0 for p in r["pairs"])
    assert r["wins"] == wins and f"faster in {wins} of 3 pairs" in summary
    assert r["median_ratio"] == pytest.approx(r["plain_ms"] / r["spec_ms"])
    ways = direction(r["median"]), direction(r["median_ratio"])
    verdict = "mixed" if ways[0] != ways[1] or ways[0] == 0 else \
        "speculative" if ways[0] > 0 else "plain"
    assert r["verdict"] == verdict
    ratio = f"the median of the 3 paired ratios is {r['median']:.2f}"
    first = {"speculative": f"Speculative decoding ran {r['median']:.2f} times as fast as plain "
                            "decoding, by the median of the 3 paired ratios",
             "plain": f"Plain decoding was faster: {ratio}",
             "mixed": f"No winner: {ratio}" if ways == (0, 0) else
                      f"Mixed result, no winner: {ratio}"}[verdict]
    assert summary.startswith(first) and "WebAssembly" in summary, summary
    assert f"{r['chars_per_pass']:.2f} characters per pass" in summary
    assert ("Median time per character, over the 3 runs of each; their ratio, plain over "
            f"speculative: {r['median_ratio']:.2f}") in box.locator(".slm-race-bars").inner_text()
    assert "the same text" not in summary  # at temperature 1 the texts differ
    assert r["draft"] == f"{LIVE_NGRAM_ORDER}-gram" and r["draft"] in \
        box.locator(".slm-race-bars").inner_text()
    widths = box.locator(".slm-race-bar").evaluate_all("bs => bs.map(b => b.offsetWidth)")
    assert widths[0] / widths[1] == pytest.approx(r["plain_ms"] / r["spec_ms"], rel=0.05)
    last = r["pairs"][-1]
    assert last["spec_text"] in box.locator(".slm-output").inner_text()


def test_a_race_past_the_context_window_writes_every_character_both_ways(page):
    r = race(page, pairs=1, length=300)  # the context and 300 characters exceed 256
    assert len(r["pairs"][0]["plain_text"]) == len(r["pairs"][0]["spec_text"]) == 300


def test_at_temperature_0_both_runs_write_pythons_greedy_text(page, model_tok):
    model, tok = model_tok
    r = race(page, pairs=2, length=60, temperature=0)
    greedy = slm.generate(model, tok, CONTEXT, 60, temperature=0).text
    assert all(p["plain_text"] == p["spec_text"] == greedy for p in r["pairs"])
    summary = explorer(page, "race").locator(".slm-race-summary").inner_text()
    assert "In every pair the two runs wrote the same text." in summary


@pytest.mark.parametrize("name,value,words", [("pairs", 0, "pairs=0 is invalid"),
                                              ("pairs", 16, "at most 15"),
                                              ("length", 0, "length=0 is invalid")])
def test_bad_input_is_refused_and_clears_the_race(page, name, value, words):
    race(page, pairs=1, length=20)
    box = explorer(page, "race")
    set_input(box, name, value)
    box.locator(".slm-sample").click()
    page.wait_for_function("([el, w]) => el.querySelector('.slm-status').textContent.includes(w)",
                           arg=[box.element_handle(), words], timeout=30000)
    assert not box.locator(".slm-view").is_visible()
    assert box.locator(".slm-output").inner_text().strip() == ""
    assert box.get_attribute("data-race") is None
