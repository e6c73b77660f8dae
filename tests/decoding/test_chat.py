"""A dialogue on one KV cache: prefix caching prefills less and answers the same
(``shakespeare_lm.decoding.chat``), on the tiny seeded model."""

from __future__ import annotations

import pytest

import shakespeare_lm as slm
from shakespeare_lm.decoding import chat

from ..conftest import make_tiny

LINES = ["Why, what's a moveable?", "Whose tongue?", "Then show it me."]
USER, BOT = "P", "K"  # short headers: the tiny model's context is 128 characters


@pytest.fixture(scope="module")
def talker():
    """A tiny model (context 128) whose greedy replies do not begin with a blank line."""
    return make_tiny(seed=1)


@pytest.mark.parametrize("model", ["tiny", "talker"])
@pytest.mark.parametrize("max_reply", [1, 5, 12])
def test_prefix_caching_answers_as_resending_does(request, tok, model, max_reply):
    model = request.getfixturevalue(model)
    resent = chat.run_dialogue(model, tok, LINES, USER, BOT, max_reply,
                               prefix_cache=False)
    cached = chat.run_dialogue(model, tok, LINES, USER, BOT, max_reply)
    assert [t.reply_ids for t in cached] == [t.reply_ids for t in resent]
    assert [t.prompt_ids for t in cached] == [t.prompt_ids for t in resent]
    assert all(t.reused == 0 and t.prefilled == len(t.prompt_ids) for t in resent)
    assert cached[0].reused == 0
    for before, t in zip(cached, cached[1:]):
        # all that was sent before, and each reply token but the last (never fed)
        assert t.reused == len(before.prompt_ids) + len(before.reply_ids) - 1
        assert t.prefilled < len(t.prompt_ids)


def test_each_reply_is_what_generate_gives_for_the_whole_conversation(talker, tok):
    turns = chat.run_dialogue(talker, tok, LINES, USER, BOT, 10)
    text = ""
    for t in turns:
        text += chat.speaker_turn(USER, t.user) + chat.open_turn(BOT)
        assert tok.encode(text) == t.prompt_ids
        g = slm.generate(talker, tok, text, 10, temperature=0, stop=chat.END_OF_TURN)
        assert (g.ids, g.stop_reason) == (t.reply_ids, t.stop_reason)
        text += chat.close_reply(t.reply)


@pytest.mark.parametrize("prefix_cache", [True, False])
@pytest.mark.parametrize("max_reply, reason", [(3, "max_tokens"), (5, "max_tokens"),
                                               (9, "context_window")])
def test_a_reply_stops_at_its_limit_or_the_window(talker, tok, prefix_cache, max_reply,
                                                   reason):
    line = "O" * (128 - 8 - 5)   # "P:\n" + line + "\n\nK:\n" leaves 5 slots for the reply
    [turn] = chat.run_dialogue(talker, tok, [line], USER, BOT, max_reply,
                               prefix_cache=prefix_cache)
    assert len(turn.prompt_ids) == 123
    assert turn.stop_reason == reason and len(turn.reply_ids) == min(max_reply, 5)
    g = slm.generate(talker, tok, tok.decode(turn.prompt_ids), max_reply, temperature=0)
    assert (turn.reply_ids, turn.reply, turn.stop_reason) == (g.ids, g.text, g.stop_reason)


def test_each_turn_is_timed_as_generate_times_it(tiny, tok):
    for t in chat.run_dialogue(tiny, tok, LINES, USER, BOT, 6):
        assert t.timings.new_tokens == len(t.reply_ids) and t.timings.batch_size == 1
        assert 0 < t.timings.prefill_s <= t.timings.time_to_first_token_s
    assert tiny.active_cache is None   # the dialogue's cache is freed


def test_a_conversation_past_the_window_is_refused(tiny, tok):
    with pytest.raises(ValueError, match=r"turn 1: the conversation is \d+ tokens, "
                                         r"but the context holds 128"):
        chat.run_dialogue(tiny, tok, ["O" * 200], USER, BOT, 5)
    with pytest.raises(ValueError, match="max_reply=0 is invalid"):
        chat.run_dialogue(tiny, tok, LINES, USER, BOT, 0)


@pytest.mark.parametrize("a, b, n", [([1, 2, 3], [1, 2, 4], 2), ([], [1], 0),
                                     ([1, 2], [1, 2, 3], 2), ([5], [6], 0)])
def test_shared_prefix(a, b, n):
    assert chat.shared_prefix(a, b) == n


def test_template_pieces():
    turns = chat.speaker_turn("ROMEO", "Hi") + chat.open_turn("JULIET")
    assert turns == "ROMEO:\nHi\n\nJULIET:\n"
    assert chat.close_reply("Ay me\n\n") == "Ay me\n\n"
    assert chat.close_reply("Ay me\n") == chat.close_reply("Ay me") == "Ay me\n\n"


def test_prefill_seconds(tiny, tok):
    ids = tok.encode("P:\nWhy, what's a moveable?\n\nK:\n")
    assert chat.prefill_seconds(tiny, ids, 0, repeats=2) > 0
    assert chat.prefill_seconds(tiny, ids, len(ids) - 1, repeats=2) > 0
    with pytest.raises(ValueError, match="reused=.* is invalid"):
        chat.prefill_seconds(tiny, ids, len(ids))
