"""A chat with our model: the speaker header is the template; every turn is one prompt.

A chat model keeps no state between turns. The application holds the conversation and
sends all of it again each turn: the earlier turns, the new message, and the header that
says who speaks next. Our corpus already has that shape (``SPEAKER:\\n``, the speech, a
blank line), so a dialogue with our model is a growing play:

    PETRUCHIO:\\nWhy, what's a moveable?\\n\\nKATHARINA:\\n    <- the model writes here

Re-sent, each turn's prefill runs the whole conversation through the model again. With
*prefix caching* (vLLM's automatic prefix caching; SGLang's RadixAttention, Zheng et
al. 2024) the server keeps the keys and values of what it has processed and prefills
only the part of the new prompt after the longest prefix it shares with them.
:func:`run_dialogue` does either: each reply is ``generate``'s greedy continuation of the
whole conversation, re-sent on a fresh KV cache or on one ``PrefixCache``
(``shakespeare_lm.decoding.prefix_cache``) kept for the dialogue; the replies are the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field

import torch

from ..timing import benchmark, model_device
from .checks import check_count
from .generate import Timings, generate, prefill
from .prefix_cache import PrefixCache
from .prefix_cache import shared_prefix as shared_prefix

END_OF_TURN = "\n\n"  # a blank line closes every speech, as an end-of-turn token would


def speaker_turn(speaker: str, text: str) -> str:
    """One finished turn in our template: the header, the speech, the blank line."""
    return f"{speaker}:\n{text}{END_OF_TURN}"


def open_turn(speaker: str) -> str:
    """The header that asks ``speaker`` to speak next (the prompt ends here)."""
    return f"{speaker}:\n"


def close_reply(reply: str) -> str:
    """A reply as the conversation keeps it: ending in exactly one blank line (the
    application closes a reply that its length limit cut off)."""
    return reply if reply.endswith(END_OF_TURN) else reply.rstrip("\n") + END_OF_TURN


@dataclass
class ChatTurn:
    """One turn of a dialogue: the prompt sent, how much of it the cache already held,
    and the reply."""

    user: str
    prompt_ids: list[int]   # the whole conversation, up to the open header
    reused: int             # leading prompt tokens whose keys and values were cached
    reply_ids: list[int]
    reply: str              # as generated (with its blank line if it got that far)
    stop_reason: str        # "stop_sequence", "max_tokens" or "context_window"
    timings: Timings | None = field(default=None, repr=False)  # the reply's generate call

    @property
    def prefilled(self) -> int:
        """Tokens run through prefill this turn."""
        return len(self.prompt_ids) - self.reused


@torch.no_grad()
def run_dialogue(model, tok, user_lines: Sequence[str], user: str, assistant: str,
                 max_reply: int, *, prefix_cache: bool = True) -> list[ChatTurn]:
    """A dialogue: ``user`` says each line; the model answers greedily as ``assistant``
    (until a blank line, ``max_reply`` characters or the end of the context window).

    Every turn sends the whole conversation to ``generate``. ``prefix_cache=True`` keeps
    one ``PrefixCache`` for the dialogue, so each turn prefills only the prompt's tokens
    after the prefix it already holds; ``False`` prefills the whole conversation each turn,
    on a fresh cache, as a stateless server. ``ChatTurn.timings`` splits each turn's time
    into that prefill and the reply's decoding.
    """
    check_count("max_reply", max_reply, 1)
    block = model.config.block_size
    turns, text = [], ""
    with PrefixCache(model) if prefix_cache else nullcontext() as prefix:
        for line in user_lines:
            text += speaker_turn(user, line) + open_turn(assistant)
            ids = tok.encode(text)
            if len(ids) >= block:
                raise ValueError(f"turn {len(turns) + 1}: the conversation is "
                                 f"{len(ids)} tokens, but the context holds {block} "
                                 "and the reply needs room; use fewer or shorter turns")
            g = generate(model, tok, text, max_reply, temperature=0, stop=END_OF_TURN,
                         prefix_cache=prefix)
            reused = 0 if prefix is None else prefix.reused
            turns.append(ChatTurn(line, ids, reused, g.ids, g.text, g.stop_reason, g.timings))
            text += close_reply(g.text)
    return turns


@torch.no_grad()
def prefill_seconds(model, ids: Sequence[int], reused: int, repeats: int = 20) -> float:
    """Seconds to prefill ``ids[reused:]`` when the cache already holds ``ids[:reused]``
    (the best of ``repeats`` after a warm-up: noise only adds time)."""
    check_count("reused", reused, 0, len(ids) - 1, hint=" (prefill at least one token)")
    device = model_device(model)
    idx = torch.tensor([list(ids)], device=device)
    with model.cache(1, len(ids)):
        if reused:
            prefill(model, idx[:, :reused], torch.arange(reused, device=device))
        pos = torch.arange(reused, len(ids), device=device)
        return benchmark(lambda: prefill(model, idx[:, reused:], pos), device, warmup=2,
                         repeats=repeats, reduce=min)
