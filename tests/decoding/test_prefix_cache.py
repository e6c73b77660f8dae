"""``generate(..., prefix_cache=PrefixCache(model))``: one KV cache across calls, each
prefilling only what follows the prefix it holds; the text is what a fresh cache gives."""

from __future__ import annotations

import pytest

import shakespeare_lm as slm
from shakespeare_lm.decoding.prefix_cache import PrefixCache, shared_prefix

PROMPT = "KATHARINA:\nMoved! in good time: "


@pytest.mark.parametrize("settings", [dict(temperature=0), dict(temperature=0.9, seed=4),
                                      dict(temperature=0, repetition_penalty=1.3)])
def test_a_prompt_that_extends_the_last_one_prefills_only_its_new_tokens(tiny, tok, settings):
    with PrefixCache(tiny) as prefix:
        a = slm.generate(tiny, tok, PROMPT, 20, prefix_cache=prefix, **settings)
        assert prefix.reused == 0
        ids = tok.encode(PROMPT) + a.ids
        assert prefix.held == ids[:-1]                 # the last token was never fed
        follow = PROMPT + a.text + "\n\nPETRUCHIO:\n"
        b = slm.generate(tiny, tok, follow, 20, prefix_cache=prefix, **settings)
        assert prefix.reused == len(ids) - 1
    for g, alone in zip((a, b), (slm.generate(tiny, tok, p, 20, **settings)
                                 for p in (PROMPT, follow))):
        assert (g.ids, g.stop_reason) == (alone.ids, alone.stop_reason)
        assert g.logprobs == pytest.approx(alone.logprobs, abs=1e-5)
    assert tiny.active_cache is None


def test_a_prompt_that_departs_from_the_held_text_reuses_the_shared_part(tiny, tok):
    with PrefixCache(tiny) as prefix:
        slm.generate(tiny, tok, PROMPT + "Nay", 5, temperature=0, prefix_cache=prefix)
        other = PROMPT + "Ay, sir"
        g = slm.generate(tiny, tok, other, 5, temperature=0, prefix_cache=prefix)
        assert prefix.reused == shared_prefix(tok.encode(PROMPT + "Nay"), tok.encode(other))
        assert prefix.reused == len(PROMPT)
        # the same prompt again: everything but its last token is held
        again = slm.generate(tiny, tok, other, 5, temperature=0, prefix_cache=prefix)
        assert prefix.reused == len(other) - 1 and again.ids == g.ids
    assert g.ids == slm.generate(tiny, tok, other, 5, temperature=0).ids


def test_stop_reasons_on_a_prefix_cache(tiny, tok):
    free = slm.generate(tiny, tok, PROMPT, 30, temperature=0)
    stop = free.text[6:8]
    with PrefixCache(tiny) as prefix:
        g = slm.generate(tiny, tok, PROMPT, 30, temperature=0, stop=stop, prefix_cache=prefix)
        assert g.stop_reason == "stop_sequence" and g.text == free.text[: free.text.find(stop) + 2]
        long = "O" * 125
        g = slm.generate(tiny, tok, long, 9, temperature=0, prefix_cache=prefix)
        assert (len(g.ids), g.stop_reason) == (3, "context_window")
        g = slm.generate(tiny, tok, long, 0, temperature=0, prefix_cache=prefix)
        assert (g.ids, g.stop_reason) == ([], "max_tokens")


def test_what_a_prefix_cache_cannot_serve(tiny, tok):
    with PrefixCache(tiny) as prefix:
        with pytest.raises(ValueError, match="prefix_cache serves one prompt"):
            slm.generate(tiny, tok, [PROMPT, PROMPT], 5, prefix_cache=prefix)
        with pytest.raises(ValueError, match="prefix_cache needs context_overflow='stop'"):
            slm.generate(tiny, tok, PROMPT, 5, context_overflow="slide", prefix_cache=prefix)
        with pytest.raises(ValueError, match="use_cache=False"):
            slm.generate(tiny, tok, PROMPT, 5, use_cache=False, prefix_cache=prefix)
    n = len(PROMPT) + 8           # the prompt and 9 new tokens, the last never fed
    with PrefixCache(tiny, max_len=n) as small:
        with pytest.raises(ValueError, match=rf"need {n + 1} KV cache slots but the prefix "
                                             rf"cache holds {n}; .*max_len={n + 1}"):
            slm.generate(tiny, tok, PROMPT, 10, prefix_cache=small)
        assert len(slm.generate(tiny, tok, PROMPT, 9, prefix_cache=small, seed=0).ids) == 9
    with pytest.raises(TypeError, match="prefix_cache must be a PrefixCache, got dict"):
        slm.generate(tiny, tok, PROMPT, 5, prefix_cache={})
    with pytest.raises(ValueError, match="max_len=0 is invalid"):
        PrefixCache(tiny, max_len=0)
    assert tiny.active_cache is None


@pytest.mark.parametrize("a, b, n", [([1, 2, 3], [1, 2, 4], 2), ([], [1], 0),
                                     ([1, 2], [1, 2, 3], 2), ([5], [6], 0)])
def test_shared_prefix(a, b, n):
    assert shared_prefix(a, b) == n
