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
:func:`run_dialogue` does either, greedily, on one KV cache; the replies are the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..timing import benchmark, model_device
from .checks import check_count
from .generate import decode_one_token, prefill
from .rules import greedy

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


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the longest common prefix of two token sequences."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


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

    @property
    def prefilled(self) -> int:
        """Tokens run through prefill this turn."""
        return len(self.prompt_ids) - self.reused


@torch.no_grad()
def greedy_reply(model, logits: torch.Tensor, start: int, max_new: int,
                 stop: Sequence[int], limit: int) -> tuple[list[int], str]:
    """Greedy tokens after a prefill whose last slot was ``start - 1`` (logits (1, V)),
    until the ``stop`` ids appear, after ``max_new`` tokens, or at slot ``limit``."""
    device, ids = logits.device, []
    while True:
        nxt = greedy(logits)                                  # (1,)
        ids.append(int(nxt))
        if ids[-len(stop):] == list(stop):
            return ids, "stop_sequence"
        if len(ids) == max_new:
            return ids, "max_tokens"
        if start + len(ids) == limit:
            return ids, "context_window"
        pos = torch.tensor([start + len(ids) - 1], device=device)
        logits = decode_one_token(model, nxt.view(1, 1), pos)


@torch.no_grad()
def run_dialogue(model, tok, user_lines: Sequence[str], user: str, assistant: str,
                 max_reply: int, *, prefix_cache: bool = True) -> list[ChatTurn]:
    """A dialogue: ``user`` says each line; the model answers greedily as ``assistant``
    (until a blank line, ``max_reply`` characters or the end of the context window).

    Every turn sends the whole conversation. ``prefix_cache=True`` keeps one KV cache
    for the dialogue and prefills only the prompt's tokens after the prefix it already
    holds; ``False`` prefills the whole conversation each turn, as a stateless server.
    """
    check_count("max_reply", max_reply, 1)
    block, device = model.config.block_size, model_device(model)
    stop = tok.encode(END_OF_TURN)
    turns, text, cached = [], "", []
    with model.cache(1, block) as cache:
        for line in user_lines:
            text += speaker_turn(user, line) + open_turn(assistant)
            ids = tok.encode(text)
            if len(ids) >= block:
                raise ValueError(f"turn {len(turns) + 1}: the conversation is "
                                 f"{len(ids)} tokens, but the context holds {block} "
                                 "and the reply needs room; use fewer or shorter turns")
            keep = min(shared_prefix(cached, ids), len(ids) - 1) if prefix_cache else 0
            cache.truncate(keep)  # slots past the shared prefix are written again
            logits = prefill(model, torch.tensor([ids[keep:]], device=device),
                             torch.arange(keep, len(ids), device=device))
            reply_ids, why = greedy_reply(model, logits, len(ids), max_reply, stop,
                                          block)
            reply = tok.decode(reply_ids)
            turns.append(ChatTurn(line, ids, keep, reply_ids, reply, why))
            cached = ids + reply_ids[:-1]  # the last reply token was chosen, never fed
            text += close_reply(reply)
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
