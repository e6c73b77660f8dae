"""The one stop check (``shakespeare_lm.decoding.stopping``) and the one windowed decoding
loop (``shakespeare_lm.decoding.context_window.decode_in_windows``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

import shakespeare_lm as slm
from shakespeare_lm.decoding.context_window import (WINDOW_FULL, Window, WindowedRow,
                                                    WindowPolicy, decode_in_windows, window_end,
                                                    window_start)
from shakespeare_lm.decoding.stopping import STOP_REASONS, StopCheck, limit_reason


# --- the stop check ---------------------------------------------------------------------
def walk(constraint, tok, text):
    state = constraint.start()
    for ch in text:
        state = constraint.advance(state, tok.stoi[ch])
    return state


def test_a_stop_string_ends_a_text_that_ends_with_it():
    check = StopCheck(("\n\n",))
    assert check.reason("Nay.\n\n", 6) == "stop_sequence"
    assert check.reason("Nay.\n", 5) is None
    assert check.reason("\n\nNay.", 6) is None          # only the end counts


def test_any_of_a_list_of_stop_strings_ends_it():
    check = StopCheck(("!", "the"))
    assert check.reason("see the", 7) == "stop_sequence"
    assert check.reason("O!", 2) == "stop_sequence"
    assert check.reason("th", 2) is None
    assert StopCheck().reason("the!", 4) is None         # no stop strings: never


def test_a_constraint_ends_a_text_once_it_accepts_and_cannot_continue(tok):
    c = slm.ChoiceConstraint(["KATE", "KATHARINA"], tok)
    check = StopCheck(constraint=c)
    assert check.reason("KATE", 4, walk(c, tok, "KATE")) == "constraint"
    assert check.reason("KATHARINA", 9, walk(c, tok, "KATHARINA")) == "constraint"
    assert check.reason("KAT", 3, walk(c, tok, "KAT")) is None  # accepts nothing yet
    assert StopCheck().reason("KATE", 4, walk(c, tok, "KATE")) is None  # no constraint


def test_max_tokens_and_a_full_window():
    check = StopCheck(max_new_tokens=3)
    assert check.reason("abc", 3) == "max_tokens"
    assert check.reason("ab", 2) is None
    assert check.reason("ab", 2, window_left=0) == WINDOW_FULL
    assert check.reason("ab", 2, window_left=1) is None
    # the last token allowed also fills the window: it ended because it has all its tokens
    assert check.reason("abc", 3, window_left=0) == "max_tokens"
    assert StopCheck().reason("abc", 3) is None          # no budget given: never max_tokens


def test_the_order_of_the_reasons(tok):
    c = slm.ChoiceConstraint(["K:\n"], tok)
    state = walk(c, tok, "K:\n")
    both = StopCheck((":\n",), c, max_new_tokens=3)
    # a stop sequence, then the constraint, then the budget, then the window
    assert both.reason("K:\n", 3, state, window_left=0) == "stop_sequence"
    assert StopCheck(("Q",), c, 3).reason("K:\n", 3, state, 0) == "constraint"
    assert StopCheck(("Q",), None, 3).reason("K:\n", 3, state, 0) == "max_tokens"
    # beam search asks about the constraint first
    beam = StopCheck((":\n",), c, constraint_first=True)
    assert beam.ended("K:\n", state) == "constraint"
    assert StopCheck((":\n",), c).ended("K:\n", state) == "stop_sequence"


def test_is_stop_replaces_the_stop_strings():
    check = StopCheck(("never",), is_stop=lambda ids: ids[-2:] == [4, 4])
    assert check.ended([1, 4, 4]) == "stop_sequence"
    assert check.ended([4, 1, 4]) is None


def test_for_sampler_takes_the_configs_stops_and_the_constraint(tok):
    c = slm.ChoiceConstraint(["KATE"], tok)
    sampler = slm.Sampler(slm.DecodingConfig(stop=["\n", "!"]), c, tok.vocab_size)
    check = StopCheck.for_sampler(sampler, 7)
    assert (check.stop, check.constraint, check.max_new_tokens) == (("\n", "!"), c, 7)


def test_limit_reason():
    assert limit_reason(10, 10) == "max_tokens"
    assert limit_reason(4, 10) == "context_window"
    assert set(STOP_REASONS) == {"max_tokens", "stop_sequence", "context_window", "constraint"}


def test_generate_and_beam_search_differ_only_in_which_reason_they_name_first(tiny, tok):
    # a completion of the constraint that ends with the stop sequence: generate names the
    # stop sequence, beam search the constraint (both end the text at the same character)
    c = slm.ChoiceConstraint(["K:\n"], tok)
    g = slm.generate(tiny, tok, "P:\nNay.\n\n", 10, temperature=0, constraint=c, stop=":\n")
    b = slm.beam_search(tiny, tok, "P:\nNay.\n\n", 10, 2, constraint=c, stop=":\n")
    assert g.text == b.text == "K:\n"
    assert (g.stop_reason, b.stop_reason) == ("stop_sequence", "constraint")


# --- the window loop ----------------------------------------------------------------------
@pytest.mark.parametrize("length", [0, 1, 7, 8, 15, 16, 23, 24, 40])
def test_a_sliding_window_is_the_context_windows_policy(length):
    w = WindowPolicy(16).window(length, 100)
    assert w == Window(window_start(length, 16), window_end(length, 16) - length)
    assert w.budget > 0 and length - w.start + w.budget <= 16   # context + new fit the block
    assert WindowPolicy(16).window(length, 3).budget == min(3, w.budget)


def test_without_sliding_the_window_is_the_block():
    policy = WindowPolicy(16, slide=False)
    assert policy.window(10, 100) == Window(0, 6)
    assert policy.window(10, 4) == Window(0, 4)
    assert policy.window(16, 4) == Window(0, 0)


@dataclass
class Text(WindowedRow):
    """A row for the loop: its prompt, what it added, its stop check."""

    prompt: str
    max_new: int
    stop: StopCheck
    new: str = ""
    reason: str | None = None
    seen: list = field(default_factory=list)   # the context of each of its windows


def writer(rows, calls, source="abcdefghij"):
    """A run_window that writes ``source``'s characters one by one, as a decoder would."""
    def run_window(windows):
        calls.append([(w.start, w.budget) if w else None for w in windows])
        for r, w in zip(rows, windows):
            if w is None:
                continue
            r.seen.append(r.context_of(w))
            for i in range(w.budget):
                r.new += source[len(r.new) % len(source)]
                r.reason = r.stop.reason(r.new, len(r.new), window_left=w.budget - i - 1)
                if r.reason:
                    break
    return run_window


def test_the_loop_slides_each_row_window_after_window():
    rows = [Text("ab", 20, StopCheck(max_new_tokens=20)),
            Text("abcdefghij", 20, StopCheck(max_new_tokens=20))]
    calls = []
    decode_in_windows(WindowPolicy(16), rows, writer(rows, calls))
    # prompt of 2: 14 new characters fill the first window, 6 more in the next (8 of
    # context); prompt of 10: 6, then 8, then 6, each later window with 8 of context
    assert calls == [[(0, 14), (0, 6)], [(8, 6), (8, 8)], [None, (16, 6)]]
    assert [len(r.new) for r in rows] == [20, 20]
    assert [r.reason for r in rows] == ["max_tokens", "max_tokens"]
    assert all(len(c) == 8 for r in rows for c in r.seen[1:])


def test_without_sliding_the_loop_ends_rows_at_the_window():
    rows = [Text("ab", 20, StopCheck(max_new_tokens=20)),
            Text("abcdefghij", 4, StopCheck(max_new_tokens=4))]
    calls = []
    decode_in_windows(WindowPolicy(16, slide=False), rows, writer(rows, calls))
    assert calls == [[(0, 14), (0, 4)]]
    assert [(len(r.new), r.reason) for r in rows] == [(14, "context_window"), (4, "max_tokens")]


def test_a_row_that_stops_early_gets_no_more_windows():
    rows = [Text("ab", 40, StopCheck(("e",), max_new_tokens=40)),
            Text("abc", 40, StopCheck(max_new_tokens=40))]
    calls = []
    decode_in_windows(WindowPolicy(16), rows, writer(rows, calls))
    assert rows[0].new == "abcde" and rows[0].reason == "stop_sequence"
    assert all(c[0] is None for c in calls[1:]) and len(calls) > 1
    assert len(rows[1].new) == 40 and rows[1].reason == "max_tokens"


def test_rows_with_no_room_end_before_any_window():
    calls = []
    full = [Text("x" * 16, 5, StopCheck(max_new_tokens=5)), Text("ab", 0, StopCheck())]
    decode_in_windows(WindowPolicy(16, slide=False), full, writer(full, calls))
    assert calls == [] and [r.reason for r in full] == ["context_window", "max_tokens"]
    sliding = [Text("x" * 16, 5, StopCheck(max_new_tokens=5))]   # sliding always has room
    decode_in_windows(WindowPolicy(16), sliding, writer(sliding, calls))
    assert calls == [[(8, 5)]] and sliding[0].reason == "max_tokens"
