"""The one context-window policy: where the context of a long text's character begins.

A model with a context of ``block_size`` characters generates or scores a longer text in
windows that restart every ``h = block_size // 2`` characters (counted from the start of the
prompt): the character at position i sees the text from ``window_start(i)`` on, so between
h and block_size - 1 earlier characters once i >= h, and a window that begins at i runs
until ``window_end(i)``. ``generate(..., context_overflow="slide")``, chapter 4's
``experiment.generate_long`` and ``metrics.char_logprobs`` all use these two functions, so a
generated text and its score see the same contexts.
"""

from __future__ import annotations


def window_start(i: int, block_size: int) -> int:
    """Where the context of the character at position ``i`` begins: max(0, (i // h - 1) * h)."""
    h = block_size // 2
    return max(0, (i // h - 1) * h)


def window_end(i: int, block_size: int) -> int:
    """Where the window that holds position ``i`` ends (the next restart): the context of
    every position from i up to it begins at ``window_start(i)``."""
    h = block_size // 2
    return max(2, i // h + 1) * h
