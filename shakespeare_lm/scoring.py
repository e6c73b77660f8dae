"""How probable is a given continuation? Per-character log-probabilities under the model.

``score_continuations`` scores any text after any prompt (a generated continuation or the
one Shakespeare wrote) in one batch, using ``metrics.char_logprobs`` (the untruncated
model, temperature 1; texts longer than the context window in its documented windows).
The mean log-probability per character, in nats, is <= 0; ``nats_per_char`` is its
negation, as in ``Generation.nats_per_char``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .metrics import char_logprobs


@dataclass(frozen=True)
class ContinuationScore:
    """One continuation's per-character log-probabilities after its prompt."""

    prompt: str
    continuation: str
    logprobs: tuple[float, ...]      # log p(c_i | prompt, c_<i), nats, one per character

    @property
    def mean_logprob(self) -> float:
        """Mean log-probability per character (nats/char, <= 0; higher = more probable)."""
        return math.fsum(self.logprobs) / len(self.logprobs)

    @property
    def nats_per_char(self) -> float:
        """Mean negative log-probability per character (nats/char, >= 0)."""
        return -self.mean_logprob


def score_continuations(model, tok, prompts: str | Sequence[str],
                        continuations: str | Sequence[str],
                        batch_size: int = 64) -> ContinuationScore | list[ContinuationScore]:
    """Score each continuation after its prompt under the model, all in one batch.

    ``prompts`` is one str shared by every continuation, or one str per continuation.
    One continuation (a str) gives one ``ContinuationScore``; a list gives a list.
    """
    single = isinstance(continuations, str)
    conts = [continuations] if single else list(continuations)
    if not conts:
        raise ValueError("continuations is empty: give at least one continuation to score")
    bad = [i for i, c in enumerate(conts) if not isinstance(c, str) or not c]
    if bad:
        raise ValueError(f"continuation {bad[0]} is {conts[bad[0]]!r}: every continuation must "
                         "be a non-empty str (an empty one has no characters to score)")
    ps = [prompts] * len(conts) if isinstance(prompts, str) else list(prompts)
    if len(ps) != len(conts):
        raise ValueError(f"got {len(ps)} prompts for {len(conts)} continuations: give one "
                         "prompt per continuation, or a single str for all")
    for i, text in enumerate(ps + conts):
        try:
            tok.encode(text)
        except (ValueError, TypeError) as e:
            which = f"prompt {i}" if i < len(ps) else f"continuation {i - len(ps)}"
            raise type(e)(f"{which}: {e}") from None
    lps = char_logprobs(model, tok, ps, conts, batch_size=batch_size)
    scores = [ContinuationScore(p, c, tuple(lp.tolist())) for p, c, lp in zip(ps, conts, lps)]
    return scores[0] if single else scores
