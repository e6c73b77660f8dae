"""Why a generated text ends: the one stop check of every decoder.

After each new token a text ends for the first of these that holds:

- ``"stop_sequence"``: it ends with one of the ``stop`` sequences (kept in the text);
- ``"constraint"``: the constraint's automaton accepts and cannot continue;
- ``"max_tokens"``: it has ``max_new_tokens`` new tokens;
- ``"window_full"`` (``WINDOW_FULL``): its context window has no room left. The windowed
  loop of ``shakespeare_lm.decoding.context_window`` then slides on to the next window, or
  ends the text with ``"context_window"``.

``generate`` and ``speculative_decode`` check every token with ``StopCheck.reason``. Beam
search ends a hypothesis by its content alone (``StopCheck.ended``) and asks about the
constraint before the stop sequences; its live hypotheses end at the budget with
``limit_reason``, as contrastive search's rows do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .context_window import WINDOW_FULL

STOP_REASONS = ("max_tokens", "stop_sequence", "context_window", "constraint")


@dataclass(frozen=True)
class StopCheck:
    """The stop conditions of one call: stop sequences, a constraint, a token budget.

    ``is_stop``, if given, replaces the stop-sequence test: it is called with whatever
    ``reason``/``ended`` are given as the text (``beam_core`` passes token ids).
    ``constraint_first`` asks about the constraint before the stop sequences (beam search).
    """

    stop: tuple[str, ...] = ()
    constraint: object = None
    max_new_tokens: int | None = None
    is_stop: Callable | None = None
    constraint_first: bool = False

    @classmethod
    def for_sampler(cls, sampler, max_new_tokens: int | None = None) -> StopCheck:
        """The stop check of a ``Sampler``'s stop sequences and constraint."""
        return cls(sampler.config.stop, sampler.constraint, max_new_tokens)

    def stopped(self, text) -> bool:
        """Whether ``text`` ends with a stop sequence (or ``is_stop(text)`` holds)."""
        if self.is_stop is not None:
            return bool(self.is_stop(text))
        return bool(self.stop) and text.endswith(self.stop)

    def complete(self, state) -> bool:
        """Whether the constraint, in ``state``, accepts and cannot continue."""
        c = self.constraint
        return c is not None and c.is_accepting(state) and not c.can_continue(state)

    def ended(self, text, state=None) -> str | None:
        """"stop_sequence" or "constraint" if the text's content ends it, else None."""
        if self.constraint_first and self.complete(state):
            return "constraint"
        if self.stopped(text):
            return "stop_sequence"
        if not self.constraint_first and self.complete(state):
            return "constraint"
        return None

    def reason(self, text, new_tokens: int, state=None,
               window_left: int | None = None) -> str | None:
        """Why a text ends after its latest token (``new_tokens`` so far, ``window_left``
        more fit in its context window, the constraint in ``state``), or None if it goes on."""
        why = self.ended(text, state)
        if why is None and new_tokens == self.max_new_tokens:
            why = "max_tokens"
        if why is None and window_left == 0:
            why = WINDOW_FULL
        return why


def limit_reason(new_tokens: int, max_new_tokens: int) -> str:
    """Why a text that used all the room it had ended: ``max_new_tokens`` if that many
    tokens were asked for, else the context window."""
    return "max_tokens" if new_tokens == max_new_tokens else "context_window"
