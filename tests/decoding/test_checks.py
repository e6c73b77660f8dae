"""The argument checks every decoder shares (``shakespeare_lm.decoding.checks``)."""

from __future__ import annotations

import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm import speculative as sp
from shakespeare_lm.decoding.checks import (as_prompt_list, check_context_overflow,
                                            check_max_new_tokens, one_or_list, prompt_labels)


def test_context_overflow_is_stop_or_slide():
    assert check_context_overflow("slide") is True
    assert check_context_overflow("stop") is False
    for bad in ("wrap", None, "Slide"):
        with pytest.raises(ValueError, match=rf"context_overflow={bad!r} is invalid: it must be "
                                             r"'stop' \(end with stop_reason 'context_window'\) "
                                             r"or 'slide'"):
            check_context_overflow(bad)


@pytest.mark.parametrize("decode", ["generate", "speculative"])
def test_every_decoder_refuses_the_same_bad_context_overflow(tiny, tok, decode):
    with pytest.raises(ValueError, match="context_overflow='wrap' is invalid"):
        if decode == "generate":
            slm.generate(tiny, tok, "K", 5, context_overflow="wrap")
        else:
            sp.speculative_decode(tiny, sp.PromptLookupDraft(tok.vocab_size), tok, "K", 5, 2,
                                  context_overflow="wrap")


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3", None])
def test_max_new_tokens_is_a_count(bad):
    with pytest.raises(ValueError, match=rf"max_new_tokens={bad!r} is invalid: max_new_tokens "
                                         r"must be an integer >= 0"):
        check_max_new_tokens(bad)
    check_max_new_tokens(0)


def test_one_prompt_or_a_batch():
    assert as_prompt_list("K") == ["K"] and as_prompt_list(("K", "P")) == ["K", "P"]
    assert prompt_labels("K") == [""]
    assert prompt_labels(["K", "P"]) == [" (prompt 0 of the batch)", " (prompt 1 of the batch)"]
    assert one_or_list("K", ["a"]) == "a"
    assert one_or_list(["K"], ["a"]) == ["a"]
    rows = torch.arange(6).view(2, 3)
    assert one_or_list("K", rows).tolist() == [0, 1, 2]
    assert one_or_list(["K", "P"], rows) is rows
    for bad in ([], 3, ["K", 3]):
        with pytest.raises(TypeError, match="prompt must be a str or a non-empty list of str"):
            prompt_labels(bad)


def test_a_bad_prompt_in_a_batch_is_named_by_its_place(tiny, tok):
    with pytest.raises(ValueError, match=r"empty prompt \(prompt 1 of the batch\)"):
        slm.generate(tiny, tok, ["K", ""], 5)
    with pytest.raises(ValueError, match=r"empty prompt: "):
        slm.generate(tiny, tok, "", 5)


def test_a_constraint_refuses_a_token_id_outside_the_vocabulary(tok):
    c = slm.ChoiceConstraint(["KATE"], tok)
    for bad in (tok.vocab_size, -1, True, 1.0):
        with pytest.raises(ValueError, match=rf"token_id={bad!r} is invalid: token_id must be an "
                                             rf"integer in \[0, {tok.vocab_size - 1}\]"):
            c.advance(c.start(), bad)
