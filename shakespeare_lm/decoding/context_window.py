"""The one context-window policy: where the context of a long text's character begins.

A model with a context of ``block_size`` characters generates or scores a longer text in
windows that restart every ``h = block_size // 2`` characters (counted from the start of the
prompt): the character at position i sees the text from ``window_start(i)`` on, so between
h and block_size - 1 earlier characters once i >= h, and a window that begins at i runs
until ``window_end(i)``. ``generate(..., context_overflow="slide")``, chapter 4's
``experiment.generate_long`` and ``metrics.char_logprobs`` all use these two functions, so a
generated text and its score see the same contexts.

``decode_in_windows`` is the one loop that decodes in such windows, row by row, with a
``WindowPolicy``: ``generate``, ``speculative_decode`` and ``experiment.generate_long`` run
their windows in it. Without sliding (``WindowPolicy(block, slide=False)``) there is one
window, up to ``block_size``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


def window_start(i: int, block_size: int) -> int:
    """Where the context of the character at position ``i`` begins: max(0, (i // h - 1) * h)."""
    h = block_size // 2
    return max(0, (i // h - 1) * h)


def window_end(i: int, block_size: int) -> int:
    """Where the window that holds position ``i`` ends (the next restart): the context of
    every position from i up to it begins at ``window_start(i)``."""
    h = block_size // 2
    return max(2, i // h + 1) * h


# --- the windowed decoding loop ---------------------------------------------------------
WINDOW_FULL = "window_full"  # a row's reason while it waits for the next window


@dataclass(frozen=True)
class Window:
    """One row's next window: where its context begins in the whole text, and how many
    tokens it may add before the window is full."""

    start: int
    budget: int


class WindowedRow:
    """A text that ``decode_in_windows`` decodes. Its subclasses (dataclasses) hold its
    ``prompt`` and what it has added, ``new`` (token ids, or characters), ``max_new`` (how
    many it may add) and ``reason`` (None while it goes on)."""

    prompt: Sequence
    new: Sequence
    max_new: int
    reason: str | None

    @property
    def length(self) -> int:
        """Its tokens so far, prompt included."""
        return len(self.prompt) + len(self.new)

    @property
    def left(self) -> int:
        """The tokens it may still add."""
        return self.max_new - len(self.new)

    def context_of(self, window: Window):
        """Its text, prompt included, from where ``window``'s context begins."""
        return (self.prompt + self.new)[window.start :]


@dataclass(frozen=True)
class WindowPolicy:
    """What a text does at the end of a context of ``block_size`` tokens: slide on to the
    windows above (``slide``), or stop there with reason "context_window"."""

    block_size: int
    slide: bool = True

    def window(self, length: int, left: int) -> Window:
        """The window in which a text of ``length`` tokens goes on, ``left`` more allowed."""
        if not self.slide:
            return Window(0, min(left, self.block_size - length))
        start, end = window_start(length, self.block_size), window_end(length, self.block_size)
        return Window(start, min(left, end - length))

    def open(self, rows: Sequence[WindowedRow]) -> list[Window | None] | None:
        """Each unfinished row's next window (None for a finished row). A row with no room
        ends: "max_tokens" if it has all its tokens, else "context_window". None when no
        row has a window."""
        windows = []
        for r in rows:
            w = None
            if r.reason is None:
                w = self.window(r.length, r.left)
                if w.budget <= 0:
                    r.reason, w = ("max_tokens" if r.left <= 0 else "context_window"), None
            windows.append(w)
        return windows if any(w is not None for w in windows) else None

    def close(self, rows: Sequence[WindowedRow]) -> None:
        """After a window: a row whose window is full goes on (``slide``) or ends."""
        for r in rows:
            if r.reason == WINDOW_FULL:
                r.reason = None if self.slide else "context_window"


def decode_in_windows(policy: WindowPolicy, rows: Sequence[WindowedRow],
                      run_window: Callable[[list[Window | None]], None]) -> None:
    """The one windowed decoding loop: open a window for every unfinished row, let
    ``run_window(windows)`` decode in it (setting each row's ``reason`` when it ends, or to
    ``WINDOW_FULL``), close it, until every row has ended."""
    while (windows := policy.open(rows)) is not None:
        run_window(windows)
        policy.close(rows)
