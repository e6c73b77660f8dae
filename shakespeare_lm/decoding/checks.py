"""Argument checks every decoder shares, with messages that name the argument and the fix.
The general ones (``check_count``, ``check_number``, ``check_positive``) live in
``shakespeare_lm.checks`` and are imported here for the decoders."""

from __future__ import annotations

from collections.abc import Sequence

from ..checks import check_count, check_number, check_positive

__all__ = ["as_prompt_list", "check_context_overflow", "check_count", "check_max_new_tokens",
           "check_number", "check_positive", "check_prompt_fits", "encode_prompts",
           "one_or_list", "prompt_labels"]


def check_max_new_tokens(n) -> None:
    check_count("max_new_tokens", n, 0)


CONTEXT_OVERFLOWS = ("stop", "slide")


def check_context_overflow(context_overflow) -> bool:
    """Whether ``context_overflow`` asks to slide past the context window ("slide") or to
    stop there ("stop"); anything else is a ValueError."""
    if context_overflow not in CONTEXT_OVERFLOWS:
        raise ValueError(f"context_overflow={context_overflow!r} is invalid: it must be "
                         "'stop' (end with stop_reason 'context_window') or 'slide'")
    return context_overflow == "slide"


def as_prompt_list(prompt) -> list[str]:
    """A str -> [str]; a non-empty list of str -> that list; anything else is a TypeError."""
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, Sequence) and prompt and all(isinstance(p, str) for p in prompt):
        return list(prompt)
    raise TypeError(f"prompt must be a str or a non-empty list of str, got {prompt!r:.80}")


def prompt_labels(prompt) -> list[str]:
    """What an error names each prompt by: "" for a single prompt (a str), else
    " (prompt i of the batch)"."""
    prompts = as_prompt_list(prompt)
    return [""] if isinstance(prompt, str) else [f" (prompt {i} of the batch)"
                                                  for i in range(len(prompts))]


def one_or_list(prompt, results):
    """What a decoder returns for ``prompt``: the one result (``results[0]``) of a str, all
    the results (a list, or a tensor with one row per prompt) of a list."""
    return results[0] if isinstance(prompt, str) else results


def encode_prompts(tok, prompt, block_size: int | None = None) -> list[list[int]]:
    """The ids of each prompt (``prompt``: a str or a list of str). An empty prompt, a character
    the tokenizer lacks or a prompt longer than ``block_size`` raises ValueError naming it."""
    encoded = []
    for p, where in zip(as_prompt_list(prompt), prompt_labels(prompt)):
        if not p:
            raise ValueError(f"empty prompt{where}: a character model needs at least one "
                             "character to condition on, e.g. a speaker line such as "
                             "'KATHARINA:\\n'")
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
