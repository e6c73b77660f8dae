"""The live model on the built site (book/live.html), in headless Chromium, opened both from
``file://`` and served on 127.0.0.1: ``window.slm`` computes what the Python model does (its
greedy text is Python's, under the same stop sequences and penalties), refuses what Python
refuses with Python's messages, sampling is reproducible, the explorers answer Sample, and
nothing leaves the machine.

Run after ``make book``; a missing browser or site skips (fails with REQUIRE_BROWSER=1).
``python -m tests.browser.test_live_site`` prints the live model's speed in Chromium instead, and
the race's ratios (plain decoding over speculative decoding with the n-gram) by gamma.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import fields

import numpy as np
import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm.decoding.sampler import DecodingConfig, Sampler
from shakespeare_lm.site import live as live_site

from .test_site import SITE, PageVisit, browser, missing, site_url  # noqa: F401  (fixtures)

PAGE = "book/live.html"
HELDOUT = SITE.parent.parent / "data" / "shakespeare_heldout.txt"
PROMPT = "KATHARINA:\nMoved! in good time: "
READY = "window.slm && window.slm.ready"


class LiveVisit(PageVisit):
    """One page, open for a whole module: records console errors, failed requests and every
    request that is not a file of the site (file://, 127.0.0.1, data:, blob:)."""

    def __init__(self, chromium, url: str):
        super().__init__(chromium, url, {"width": 1200, "height": 1600},
                         ("data", "blob", "file"))
        self.page.wait_for_function(READY, timeout=30000)
        self.page.evaluate("window.slm.ready.then(() => true)")

    def check_clean(self):
        assert self.external == [], f"requests that would leave the machine: {self.external}"
        assert self.failed == [], f"failed requests: {self.failed}"
        assert self.errors == [], f"console errors: {self.errors}"


@pytest.fixture(scope="module", params=["file", "served"])
def live(request, browser):  # noqa: F811
    with visiting(request, browser, PAGE, request.param) as visit:
        yield visit


@contextlib.contextmanager
def visiting(request, browser, page_path: str, how: str):  # noqa: F811
    """A LiveVisit of the built page ``page_path``, opened from disk (``how="file"``) or
    served (``"served"``); its console must be clean when the block ends."""
    if not (SITE / page_path).exists():
        missing(f"no {SITE / page_path}: run `make book` first")
    url = (SITE / page_path).as_uri() if how == "file" else \
        f"{request.getfixturevalue('site_url')}/{page_path}"
    visit = LiveVisit(browser, url)
    try:
        yield visit
        visit.check_clean()
    finally:
        visit.page.close()


@pytest.fixture(scope="module")
def model_tok():
    return slm.load_pretrained()


def heldout_contexts(n: int) -> list[str]:
    text = HELDOUT.read_text()
    lengths = [1, 2, 5, 17, 40, 100, 180, 255, 256, 400][:n]  # 400: longer than the window
    starts = np.linspace(0, len(text) - 500, n).astype(int)
    return [text[s:s + length] for s, length in zip(starts, lengths)]


def test_next_distribution_matches_python_softmax_on_10_contexts(live, model_tok):
    model, tok = model_tok
    contexts = heldout_contexts(10)
    got = live.page.evaluate("cs => Promise.all(cs.map(c => slm.nextDistribution(c)))", contexts)
    for context, probs in zip(contexts, got):
        ids = tok.encode(context)[-model.config.block_size:]
        with torch.no_grad():
            expected = torch.softmax(model(torch.tensor([ids]))[0, -1].double(), -1).numpy()
        np.testing.assert_allclose(np.array(probs), expected, rtol=0, atol=1e-4,
                                   err_msg=repr(context[-30:]))
        assert abs(sum(probs) - 1) < 1e-9


def test_greedy_generate_equals_python_greedy_for_200_chars(live, model_tok):
    model, tok = model_tok
    expected = slm.generate(model, tok, PROMPT, 200, temperature=0).text
    got = live.page.evaluate("p => slm.generate(p, 200, {temperature: 0}, 0)", PROMPT)
    assert got == expected


GREEDY_CASES = [  # (characters, settings): Python's generate takes the same keywords
    (300, {"stop": ["\n", "xyzzy"]}), (120, {"stop": "xyzzy"}), (150, {"stop": [" the", "!", "?"]}),
    (120, {"repetition_penalty": 1.3}), (120, {"repetition_penalty": 0.8, "stop": "\n\n"}),
    (120, {"frequency_penalty": 0.5}), (120, {"presence_penalty": 0.8}),
    (120, {"frequency_penalty": -0.3, "presence_penalty": 0.4, "repetition_penalty": 1.1,
           "stop": [",", ";"]}),
    (300, {"presence_penalty": 0.5}),                                # the window ends it
    (300, {"repetition_penalty": 1.2, "context_overflow": "slide"}),  # and slides on
]


def test_greedy_generate_with_stop_sequences_and_penalties_equals_python(live, model_tok):
    model, tok = model_tok
    got = live.page.evaluate("""([p, cases]) => Promise.all(cases.map(([n, s]) =>
        slm.sample(p, n, Object.assign({temperature: 0}, s), 0)))""", [PROMPT, GREEDY_CASES])
    reasons = set()
    for (n, settings), js in zip(GREEDY_CASES, got):
        g = slm.generate(model, tok, PROMPT, n, temperature=0, **settings)
        assert (js["text"], js["stopReason"]) == (g.text, g.stop_reason), settings
        assert js["ids"] == g.ids and js["logprobs"] == pytest.approx(g.logprobs, abs=1e-4)
        reasons.add(g.stop_reason)
    assert reasons == {"stop_sequence", "max_tokens", "context_window"}
    first = got[0]["text"]  # the list is a list, not the string "\n,xyzzy"
    assert first.endswith("\n") and "\n" not in first[:-1] and len(first) < 300
    assert len({js["text"] for js in got[3:8]}) == 5  # each penalty changes the greedy text


SPECULATIVE_CASES = [(120, {"stop": ["\n", "xyzzy"]}), (80, {"stop": "xyzzy"}), (60, {})]


def test_greedy_speculative_decoding_stops_where_python_greedy_does(live, model_tok):
    """Greedy speculative decoding emits the target's greedy text, so it ends where
    Python's greedy generate ends: at a stop sequence of a list, or at n characters."""
    model, tok = model_tok
    got = live.page.evaluate("""([p, cases]) => Promise.all(cases.map(([n, s]) =>
        slm.speculative(p, n, 4, Object.assign({temperature: 0}, s), 0)))""",
                             [PROMPT, SPECULATIVE_CASES])
    for (n, settings), js in zip(SPECULATIVE_CASES, got):
        g = slm.generate(model, tok, PROMPT, n, temperature=0, **settings)
        assert (js["text"], js["stopReason"]) == (g.text, g.stop_reason), settings
    assert {js["stopReason"] for js in got} == {"stop_sequence", "max_tokens"}


def test_seeded_sampling_is_reproducible_and_the_seed_matters(live):
    settings = {"temperature": 0.9, "top_p": 0.95, "min_p": 0.02, "repetition_penalty": 1.2,
                "frequency_penalty": 0.1, "presence_penalty": 0.2}
    texts = live.page.evaluate(
        "([p, s]) => Promise.all([7, 7, 8].map(seed => slm.generate(p, 120, s, seed)))",
        [PROMPT, settings])
    assert texts[0] == texts[1] and len(texts[0]) == 120
    assert texts[0] != texts[2]
    same = live.page.evaluate("([p, s]) => slm.generate(p, 120, Object.assign({seed: 7}, s))",
                              [PROMPT, settings])
    assert same == texts[0]  # the seed as a setting, as in Python


def test_the_page_applies_the_rules_and_the_penalties_as_python_does(live, model_tok):
    """The distribution a character is drawn from, after the penalties (counting the
    history) and the rules, equals Python's sampler's on the same logits."""
    model, tok = model_tok
    ids = tok.encode(PROMPT)
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0, -1].double()
    cases = [{"temperature": 0.7, "top_k": 20, "repetition_penalty": 1.3},
             {"temperature": 1.2, "typical_p": 0.8, "repetition_penalty": 0.8},
             {"temperature": 0, "repetition_penalty": 2.0}, {"eta": 0.01, "epsilon": 0.001},
             {"temperature": 0.9, "frequency_penalty": 0.7, "top_p": 0.9},
             {"presence_penalty": 1.5, "min_p": 0.05}, {"temperature": 0, "frequency_penalty": 3.0},
             {"frequency_penalty": -0.5, "presence_penalty": 0.5, "repetition_penalty": 1.2}]
    got = live.page.evaluate("""([l, h, cs]) => cs.map(s =>
        slm.decoding.probs(l, h, slm.decoding.config(s)))""", [logits.tolist(), ids, cases])
    for settings, js in zip(cases, got):
        expected = Sampler(DecodingConfig(**settings)).probs(logits[None], torch.tensor([ids]))[0]
        np.testing.assert_allclose(np.array(js), expected.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=str(settings))


BAD_CALLS = [  # (prompt, characters, settings): each refused by Python's generate
    (PROMPT, 10, {"top_q": 0.9}), (PROMPT, 10, {"top_p": 1.5}), (PROMPT, 10, {"temperature": -1}),
    (PROMPT, 10, {"repetition_penalty": 0}), (PROMPT, 10, {"frequency_penalty": "a"}),
    (PROMPT, 10, {"presence_penalty": float("inf")}), (PROMPT, 10, {"stop": ["\n", ""]}),
    (PROMPT, 10, {"stop": ["\n", 3]}), (PROMPT, 10, {"stop": "{"}), (PROMPT, 10, {"seed": 1.5}),
    (PROMPT, 10, {"top_k": 0, "min_p": 2}), (PROMPT, -1, {}), ("", 10, {}), ("ROMEO{", 10, {}),
    ("a" * 257, 10, {}), (PROMPT, 10, {"context_overflow": "wrap"}),
]


def test_bad_settings_are_refused_with_pythons_messages(live, model_tok):
    model, tok = model_tok
    messages = live.page.evaluate("""calls => Promise.all(calls.map(([p, n, s]) =>
        slm.generate(p, n, s).then(() => "accepted", e => e.name + ": " + e.message)))""",
                                  BAD_CALLS)
    for (prompt, n, settings), js in zip(BAD_CALLS, messages):
        with pytest.raises((TypeError, ValueError)) as python:
            slm.generate(model, tok, prompt, n, **settings)
        assert js == f"{type(python.value).__name__}: {python.value}", (prompt[:10], n, settings)


def test_the_truncation_explorer_offers_every_setting_up_to_the_vocabulary(live, model_tok):
    _, tok = model_tok
    ready = "document.querySelector(\".slm-live[data-kind='truncation'][data-ready]\")"
    live.page.wait_for_function(ready, timeout=30000)
    box = live.page.locator(".slm-live[data-kind='truncation']")
    names = box.locator("input[type='range']").evaluate_all("xs => xs.map(x => x.dataset.name)")
    known = [f.name for f in fields(DecodingConfig)]
    # every rule, the two of today's samplers the browser has, then the penalties
    assert names == known[:7] + ["top_n_sigma", "xtc_probability", "xtc_threshold"] + known[7:10]
    top_k = box.locator("input[data-name='top_k']")
    assert top_k.get_attribute("max") == str(tok.vocab_size) == top_k.get_attribute("value")
    assert live.page.evaluate("slm.config.vocab_size") == tok.vocab_size


@pytest.mark.parametrize("kind", ["truncation", "step", "speculative"])
def test_typing_a_context_and_pressing_sample_changes_the_output(live, kind):
    sample_on_own_context(live.page, kind)


# each chapter page with live explorers, and their kinds
CHAPTER_EXPLORERS = {"notebooks/01_generation_loop.html": ["step"],
                     "notebooks/03_sampling_and_truncation.html": ["truncation"],
                     "notebooks/06_speculative_decoding.html": ["speculative", "race"]}


@pytest.mark.parametrize("how", ["file", "served"])
@pytest.mark.parametrize("page_path", CHAPTER_EXPLORERS)
def test_each_chapter_samples_from_the_live_model_on_the_readers_context(
        request, browser, page_path, how):  # noqa: F811
    """Every explorer of the page, in one visit: the page loads the model once for them all."""
    with visiting(request, browser, page_path, how) as visit:
        for kind in CHAPTER_EXPLORERS[page_path]:
            sample_on_own_context(visit.page, kind)


def sample_on_own_context(page, kind):
    box = page.locator(f".slm-live[data-kind='{kind}']")
    page.wait_for_function("k => document.querySelector(`.slm-live[data-kind='${k}'][data-ready]`)",
                           arg=kind, timeout=30000)
    box.locator(".slm-context").fill("ROMEO:\nBut soft, what light ")
    before = box.locator(".slm-output").inner_text()
    box.locator(".slm-sample").click()
    page.wait_for_function(
        "([el, b]) => !el.querySelector('.slm-sample').disabled && "
        "el.querySelector('.slm-output').innerText !== b", arg=[box.element_handle(), before],
        timeout=30000)
    out = box.locator(".slm-output").inner_text()
    typed = "ROMEO:\nBut soft, what light "
    assert out.startswith(typed) and len(out) > len(typed)
    assert "invalid" not in box.locator(".slm-status").inner_text()


def test_explorer_html_loads_the_runtime_only_on_the_site():
    fragment = live_site.explorer_html("step", seed=3)
    assert 'class="slm-live"' in fragment and '"seed": 3' in fragment
    assert "data-content_root" in fragment and "http" not in fragment
    assert fragment == live_site.explorer_html("step", seed=3)  # stable for nbval
    with pytest.raises(ValueError, match="kind='beams' is invalid"):
        live_site.explorer_html("beams")


@pytest.mark.parametrize("page_path", [PAGE, *CHAPTER_EXPLORERS])
def test_pages_with_an_explorer_load_loader_runtime_and_explorers_in_order(page_path):
    """book/_ext/live_explorers.py: the algorithms (decoding.js, then beam.js and
    speculative.js, which need it, vendored beside the model) and slm_vega.js (the one script
    loader) before the runtime, the runtime before the explorers."""
    if not (SITE / page_path).exists():
        missing(f"no {SITE / page_path}: run `make book` first")
    html = (SITE / page_path).read_text("utf-8")
    found = [re.search(rf'<script src="[./]*_static/{name}(\?v=\w+)?"', html)
             for name in ("live/decoding.js", "live/beam.js", "live/speculative.js",
                          "slm_vega.js", "slm_runtime.js", "slm_explorers.js")]
    assert None not in found, found
    assert [m.start() for m in found] == sorted(m.start() for m in found), found
    for name in ("decoding.js", "beam.js", "speculative.js"):
        assert (SITE / "_static" / "live" / name).exists(), name


# --- the bench: python -m tests.browser.test_live_site --------------------------------------------
RACE_JS = """async ([p, gammas, pairs, n]) => {
  const out = {};
  for (const g of gammas) {
    const ratios = (await slm.race(p, n, g, {}, 0, pairs, 60)).map(r => r.ratio);
    ratios.sort((a, b) => a - b);
    out['gamma ' + g] = {median: ratios[(pairs - 1) >> 1], min: ratios[0], max: ratios[pairs - 1]};
  }
  return out;
}"""


def bench(n: int = 400, repeats: int = 3, race_pairs: int = 7) -> dict:
    """Characters per second of slm.generate at batch 1 (greedy and sampled), time from
    navigation to ready, the size of what the live model adds to the site, and the race
    (slm.race, what slm_race.js shows) without its page: plain decoding against speculative
    decoding with the n-gram, ``race_pairs`` pairs of 200 characters at T = 1 per gamma, the
    median of the paired ratios (plain time over speculative time) and their range."""
    from playwright.sync_api import sync_playwright

    from .test_site import CHROMIUM, CHROMIUM_ARGS

    added = sum(f.stat().st_size for f in (SITE / "_static" / "live").rglob("*") if f.is_file())
    added += sum((SITE / "_static" / f).stat().st_size
                 for f in ("slm_runtime.js", "slm_explorers.js", "slm_vega.js", "slm_beam.js",
                           "slm_builder.js", "slm_race.js"))
    out = {"site_growth_MB": round(added / 1e6, 2)}
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        ready = []
        for _ in range(repeats):
            page = b.new_page()
            page.goto((SITE / PAGE).as_uri())
            page.wait_for_function(READY)
            ready.append(page.evaluate("slm.ready.then(() => performance.now())"))
            out["phases_ms"] = page.evaluate("slm.timings")
            page.close()
        page = b.new_page()
        page.goto((SITE / PAGE).as_uri())
        page.wait_for_function(READY)
        page.evaluate("slm.ready.then(() => slm.generate('KATHARINA:\\n', 50, {}, 0))")  # warm
        for name, settings in [("greedy", {"temperature": 0}),
                               ("sampled", {"temperature": 0.8, "top_p": 0.95})]:
            settings = {**settings, "context_overflow": "slide"}  # n past the window
            t = page.evaluate("""([n, s]) => { const t0 = performance.now();
                return slm.generate('KATHARINA:\\n', n, s, 1)
                  .then(() => performance.now() - t0); }""", [n, settings])
            out[f"chars_per_s_{name}"] = round(n / (t / 1000))
        race = page.evaluate(RACE_JS, ["KATHARINA:\nMoved! in good time: let him that moved you ",
                                       [2, 3, 4, 8], race_pairs, 200])
        out["race_plain_over_speculative"] = {
            g: {k: round(v, 2) for k, v in r.items()} for g, r in race.items()}
        b.close()
    out["ready_ms_from_navigation"] = [round(r) for r in ready]
    return out


if __name__ == "__main__":
    print(json.dumps(bench(), indent=1))
