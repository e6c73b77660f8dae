"""Argument checks every decoder shares, with messages that name the argument and the fix."""

from __future__ import annotations

import math
from collections.abc import Sequence


def check_count(name: str, value, low: int = 0, high: int | None = None, hint: str = "") -> None:
    """Raise ValueError unless ``value`` is an int (not a bool) in [low, high]."""
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        where = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name}={value!r} is invalid: {name} must be an integer {where}{hint}")


def check_number(name: str, value, low: float | None = None, high: float | None = None,
                 hint: str = "") -> None:
    """Raise ValueError unless ``value`` is a finite real number (not a bool) in [low, high]."""
    ok = (not isinstance(value, bool) and isinstance(value, (int, float))
          and math.isfinite(value) and (low is None or value >= low)
          and (high is None or value <= high))
    if not ok:
        where = "" if low is None and high is None else f" in [{low}, {high}]"
        kind = "a finite number" if not where else "a number"
        raise ValueError(f"{name}={value!r} is invalid: {name} must be {kind}{where}{hint}")


def check_positive(name: str, value, integer: bool = False, allow_zero: bool = False) -> None:
    """Raise ValueError unless ``value`` is a positive (or, with ``allow_zero``, non-negative)
    finite number, or an int with ``integer``; bools are refused."""
    ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
    low_ok = value >= 0 if allow_zero else value > 0
    if isinstance(value, bool) or not ok_type or not low_ok or (not integer and not math.isfinite(value)):
        kind = "an integer" if integer else "a finite number"
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name}={value!r} is invalid: {name} must be {kind} {bound}")


def check_max_new_tokens(n) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"max_new_tokens={n!r} is invalid: it must be an integer >= 0")


def as_prompt_list(prompt) -> list[str]:
    """A str -> [str]; a non-empty list of str -> that list; anything else is a TypeError."""
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, Sequence) and prompt and all(isinstance(p, str) for p in prompt):
        return list(prompt)
    raise TypeError(f"prompt must be a str or a non-empty list of str, got {prompt!r:.80}")


def encode_prompts(tok, prompt, block_size: int | None = None) -> list[list[int]]:
    """The ids of each prompt (``prompt``: a str or a list of str). An empty prompt, a character
    the tokenizer lacks or a prompt longer than ``block_size`` raises ValueError naming it."""
    prompts = as_prompt_list(prompt)
    encoded = []
    for i, p in enumerate(prompts):
        where = "" if isinstance(prompt, str) else f" (prompt {i} of the batch)"
        if not p:
            raise ValueError(f"empty prompt{where}: a character model needs at least one "
                             "character to condition on, e.g. a speaker line such as 'KATHARINA:\\n'")
        try:
            encoded.append(tok.encode(p))
        except ValueError as e:
            raise ValueError(f"{e}{where}") from None
    if block_size is not None:
        check_prompt_fits(encoded, block_size)
    return encoded


def check_prompt_fits(encoded: list[list[int]], block: int) -> None:
    """A prompt longer than the context window is an error that says what to keep."""
    too_long = [(i, len(e)) for i, e in enumerate(encoded) if len(e) > block]
    if too_long:
        i, n = too_long[0]
        raise ValueError(f"prompt {i} has {n} characters but the model's context window is "
                         f"{block}; keep its last {block} characters (prompt[-{block}:]) or fewer")
