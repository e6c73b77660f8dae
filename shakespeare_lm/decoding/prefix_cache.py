"""Prefix caching: one KV cache kept from one ``generate`` call to the next.

A server that keeps the keys and values of what it has processed prefills, for a new
prompt, only the part after the longest prefix it shares with them (vLLM's automatic
prefix caching; SGLang's RadixAttention, Zheng et al. 2024). With causal attention the
keys and values of a position depend only on the tokens up to it, so the generated text is
the same as with a fresh cache; only the prefill is shorter. Chapter 8's dialogue
(``shakespeare_lm.decoding.chat``) runs every turn through ``generate`` on one of these:

    with PrefixCache(model) as prefix:
        a = generate(model, tok, prompt, 40, temperature=0, prefix_cache=prefix)
        b = generate(model, tok, prompt + a.text + more, 40, temperature=0,
                     prefix_cache=prefix)       # prefills only what follows the held prefix
        prefix.reused                           # how many prompt tokens b did not prefill
"""

from __future__ import annotations

from collections.abc import Sequence

from .checks import check_count


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the longest common prefix of two token sequences."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class PrefixCache:
    """A KV cache of one row and ``max_len`` slots (default: the context window) kept
    across ``generate(..., prefix_cache=...)`` calls; ``held`` are the ids whose keys and
    values it holds, slot by slot, and ``reused`` how many of them the last prompt reused."""

    def __init__(self, model, max_len: int | None = None):
        block = model.config.block_size
        self.max_len = block if max_len is None else max_len
        check_count("max_len", self.max_len, 1, hint=" (the KV cache's slots)")
        self.handle = model.cache(1, self.max_len)
        self.held: list[int] = []
        self.reused = 0

    def __repr__(self) -> str:
        return f"PrefixCache({self.max_len} slots, holding {len(self.held)})"

    def __enter__(self) -> PrefixCache:
        return self

    def __exit__(self, *exc) -> None:
        self.handle.close()  # free the cache: the model runs without one again

    def reuse(self, ids: Sequence[int]) -> int:
        """Keep the longest prefix of ``ids`` the cache holds, but never the last id (it is
        fed to get the next token's distribution), and forget the slots after it. Returns
        how many ids are kept: the prefill starts there."""
        keep = min(shared_prefix(self.held, ids), len(ids) - 1)
        self.handle.truncate(keep)
        self.held, self.reused = list(ids[:keep]), keep
        return keep

    def hold(self, ids: Sequence[int]) -> None:
        """Record that the cache now holds the keys and values of ``ids`` (slots 0 on)."""
        self.held = list(ids)

    def check_call(self, prompt, n_slots: int, slide: bool, use_cache: bool,
                   warmup: bool) -> None:
        """The ``generate`` calls a prefix cache can serve: one prompt, no sliding, on the
        cache, within its ``max_len``; anything else is a ValueError that says why."""
        if not isinstance(prompt, str):
            raise ValueError(f"prefix_cache serves one prompt (a str), not a batch of "
                             f"{len(prompt)}: its cache has one row")
        if slide or not use_cache or warmup:
            raise ValueError(f"prefix_cache needs context_overflow='stop', use_cache=True "
                             f"and warmup=False (got slide={slide}, use_cache={use_cache}, "
                             f"warmup={warmup}): it keeps one cache at fixed positions")
        if n_slots > self.max_len:
            raise ValueError(f"the prompt and max_new_tokens need {n_slots} KV cache slots but "
                             f"the prefix cache holds {self.max_len}; make it with "
                             f"PrefixCache(model, max_len={n_slots}) or more")
