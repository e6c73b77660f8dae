"""The generation loop, as small named steps (after gpt-fast's ``generate.py``).

``prefill`` runs the prompt through the model once, filling the KV cache;
``decode_one_token`` feeds one token and returns the next distribution; ``decode_n_tokens``
repeats that; ``generate`` wraps them with the decoding rules, stop conditions and timing.

Batches of prompts with different lengths are left-padded: padding slots are masked out of
attention and positions count from each row's first real character, so a row generates
exactly what it would alone. Context window: the prompt plus the generated text never
exceeds ``model.config.block_size`` characters. A longer prompt is an error; a generation
that reaches the limit stops with ``stop_reason == "context_window"``, or, with
``context_overflow="slide"``, goes on in the windows of ``shakespeare_lm.decoding.context_window``
(its ``decode_in_windows`` loop runs the windows). How each token is chosen is
``shakespeare_lm.decoding.sampler``'s job; why a row ends, ``shakespeare_lm.decoding.stopping``'s.
A ``PrefixCache`` (``shakespeare_lm.decoding.prefix_cache``) keeps the KV cache from one call
to the next, so a prompt that extends an earlier one prefills only its new tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field

import torch

from ..timing import Stopwatch, model_device
from .checks import (as_prompt_list, check_context_overflow, check_max_new_tokens,
                     encode_prompts, one_or_list, prompt_labels)
from .context_window import Window, WindowedRow, WindowPolicy, decode_in_windows
from .prefix_cache import PrefixCache
from .sampler import FREE, DecodingConfig, Sampler
from .stopping import STOP_REASONS as STOP_REASONS
from .stopping import StopCheck


@dataclass
class Timings:
    """Wall-clock cost of one ``generate`` call (whole batch)."""

    prefill_s: float                 # the forward pass over the prompt(s)
    time_to_first_token_s: float     # prefill + choosing the first token
    decode_s: float                  # every later step
    new_tokens: int                  # steps taken after the prompt (per row)
    batch_size: int
    device: str

    @property
    def time_per_output_token_s(self) -> float:
        """Mean seconds per decode step after the first token (nan if there was none)."""
        return self.decode_s / (self.new_tokens - 1) if self.new_tokens > 1 else float("nan")

    @property
    def tokens_per_s(self) -> float:
        """Generated tokens per second over the whole batch, first token included."""
        total = self.time_to_first_token_s + self.decode_s
        return self.new_tokens * self.batch_size / total if total > 0 else float("nan")


@dataclass
class Generation:
    """One prompt's continuation. ``text`` includes the stop sequence that ended it."""

    prompt: str
    text: str
    ids: list[int]
    logprobs: list[float]            # log p(token) under the untruncated model (T = 1)
    stop_reason: str
    timings: Timings | None = field(default=None, repr=False)

    @property
    def nats_per_char(self) -> float:
        """Mean negative log-probability per generated character."""
        return -sum(self.logprobs) / len(self.logprobs) if self.logprobs else float("nan")


# --- the loop's steps ---------------------------------------------------------------
@torch.no_grad()
def prefill(model, idx: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
    """Process the prompt slots ``input_pos`` (T,) of idx (B, T) into the cache; logits (B, V)
    for the next token."""
    return model(idx, input_pos)[:, -1]


@torch.no_grad()
def decode_one_token(model, cur_token: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
    """Feed cur_token (B, 1) at slot input_pos (1,); logits (B, V) for the token after it."""
    return model(cur_token, input_pos)[:, -1]


@torch.no_grad()
def recompute_one_token(model, seq: torch.Tensor, length: int) -> torch.Tensor:
    """Without the cache's benefit: run every slot 0..length-1 of seq (B, L) again and
    return the logits (B, V) after the last one. Costs ``length`` positions per token."""
    return model(seq[:, :length].clamp(min=0), torch.arange(length, device=seq.device))[:, -1]


@torch.no_grad()
def decode_n_tokens(model, seq: torch.Tensor, start: int, n: int,
                    choose: Callable[[torch.Tensor, int], bool], use_cache: bool = True) -> int:
    """Extend seq (B, L) in place from slot ``start`` for up to n steps.

    Each step feeds the token at slot ``start + i - 1`` and calls ``choose(logits, slot)``,
    which writes the chosen tokens into ``seq[:, slot]`` and returns True to stop early.
    Returns the number of steps taken.
    """
    for i in range(n):
        slot = start + i
        if use_cache:
            pos = torch.tensor([slot - 1], device=seq.device)
            logits = decode_one_token(model, seq[:, slot - 1 : slot], pos)
        else:
            logits = recompute_one_token(model, seq, slot)
        if choose(logits, slot):
            return i + 1
    return n


# --- one call's rows ------------------------------------------------------------------
@dataclass
class _Row(WindowedRow):
    """One prompt's progress: its ids, what it generated and why it stopped."""

    prompt: list[int]                            # the prompt's ids
    where: str                                   # " (prompt b of the batch)" or ""
    max_new: int = 0                             # max_new_tokens
    new: list[int] = field(default_factory=list)  # the generated ids
    logprobs: list[float] = field(default_factory=list)
    text: str = ""
    reason: str | None = None
    state: object = FREE                         # the constraint's state (FREE: none)
    context: list[int] = field(default_factory=list)  # what its context window holds
    window_from: int = 0                         # len(new) when this window began
    budget: int = 0                              # tokens this window may add


class _Batch:
    """Every row of one ``generate`` call, and the choice of each step's tokens."""

    def __init__(self, tok, prompt, encoded, max_new_tokens, sampler: Sampler):
        self.tok, self.sampler = tok, sampler
        self.stop = StopCheck.for_sampler(sampler, max_new_tokens)
        c = sampler.constraint
        self.rows = [_Row(list(e), where, max_new_tokens, state=FREE if c is None else c.start(),
                          context=list(e)) for e, where in zip(encoded, prompt_labels(prompt))]
        self.seq = self.cache = self.generator = None

    @property
    def done(self) -> bool:
        return all(r.reason is not None for r in self.rows)

    def start_window(self, windows: list[Window | None]) -> int:
        """Set each row's context and budget for this window; the steps it needs."""
        for r, w in zip(self.rows, windows):
            if w is None:
                r.context, r.budget = r.context[-1:], 0       # a finished row holds a slot
            else:
                r.context, r.budget = r.context_of(w), w.budget
            r.window_from = len(r.new)
        return max(r.budget for r in self.rows)

    def window_tensor(self, steps: int, device) -> tuple[torch.Tensor, torch.Tensor, int]:
        """(seq (B, L + steps) left-padded with -1, padding (B,), L) for this window."""
        L = max(len(r.context) for r in self.rows)
        seq = torch.full((len(self.rows), L + steps), -1, dtype=torch.long, device=device)
        for b, r in enumerate(self.rows):
            seq[b, L - len(r.context) : L] = torch.tensor(r.context, device=device)
        pad = torch.tensor([L - len(r.context) for r in self.rows], device=device)
        return seq, pad, L

    def choose(self, logits: torch.Tensor, slot: int) -> bool:
        """Choose every row's token at ``slot`` (written into ``seq``); True when all are done."""
        s = self.sampler
        history = self.seq[:, :slot] if s.needs_history else None
        allowed = None
        if s.constraint is not None:  # finished rows are not masked: their tokens are discarded
            allowed = s.allowed([FREE if r.reason else r.state for r in self.rows],
                                [r.text for r in self.rows], [r.where for r in self.rows])
        nxt = s.choose(s.shape(logits, history, allowed, self.generator), self.generator)
        logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, nxt[:, None]).squeeze(-1)
        self.seq[:, slot] = nxt
        for r, t, lp in zip(self.rows, nxt.tolist(), logp.tolist()):
            if r.reason is None:
                self._record(r, t, lp)
        # A row that is done or whose window is full is parked: its padding grows so the
        # token fed next stays inside the window. Its outputs are discarded.
        self.cache.park(slot - (self.cache.model.config.block_size - 1))
        return self.done

    def _record(self, r: _Row, t: int, lp: float) -> None:
        r.new.append(t)
        r.logprobs.append(lp)
        r.text += self.tok.chars[t]
        c = self.sampler.constraint
        if c is not None:
            r.state = c.advance(r.state, t)
        r.reason = self.stop.reason(r.text, len(r.new), r.state,
                                    r.budget - (len(r.new) - r.window_from))


@dataclass
class _Clock:
    """The timings of one call, window by window."""

    prefill_s: float = 0.0
    ttft: float = 0.0
    decode_s: float = 0.0
    steps: int = 0

    def add_window(self, prefill_s: float, first_s: float, decode_s: float, steps: int) -> None:
        if self.steps == 0:   # the first window's prefill is the time to first token
            self.prefill_s, self.ttft, self.decode_s = prefill_s, first_s, decode_s
        else:                 # later windows' re-prefill is part of the cost of decoding
            self.decode_s += first_s + decode_s
        self.steps += steps


def _run_window(model, batch: _Batch, steps: int, use_cache: bool, clock: _Clock,
                prefix: PrefixCache | None = None) -> None:
    """Prefill one window's contexts and decode up to ``steps`` tokens per row on a cache:
    a fresh one, or the ``prefix`` cache, which holds the first ``prefix.reused`` slots."""
    device = model_device(model)
    seq, pad, L = batch.window_tensor(steps, device)
    first = 0 if prefix is None else prefix.reused
    cache_cm = model.cache(len(batch.rows), L + steps, pad) if prefix is None else nullcontext(
        prefix.handle)
    with cache_cm as cache:
        batch.seq, batch.cache = seq, cache
        with Stopwatch(device) as sw_first:
            with Stopwatch(device) as sw_prefill:
                logits = prefill(model, seq[:, first:L].clamp(min=0),
                                 torch.arange(first, L, device=device))
            done = batch.choose(logits, L)
        taken, decode_s = 1, 0.0
        if not done:
            with Stopwatch(device) as sw_decode:
                taken += decode_n_tokens(model, seq, L + 1, steps - 1, batch.choose, use_cache)
            decode_s = sw_decode.seconds
    if prefix is not None:  # it holds the prompt and every new token but the last (never fed)
        prefix.hold(seq[0, : L + taken - 1].tolist())
    clock.add_window(sw_prefill.seconds, sw_first.seconds, decode_s, taken)


# --- generate -----------------------------------------------------------------------
@torch.no_grad()
def generate(model, tok, prompt: str | list[str], max_new_tokens: int, *,
             constraint=None, context_overflow: str = "stop", use_cache: bool = True,
             warmup: bool = False, config: DecodingConfig | None = None,
             prefix_cache: PrefixCache | None = None,
             **settings) -> Generation | list[Generation]:
    """Continue ``prompt`` (a str, or a list of str generated as one batch).

    How tokens are chosen: a ``DecodingConfig`` as ``config=``, or its fields as keyword
    settings (``temperature``, ``top_k``, ``top_p``, ``min_p``, ``typical_p``, ``epsilon``,
    ``eta``, ``repetition_penalty``, ``frequency_penalty``, ``presence_penalty``, ``seed``,
    ``stop``); ``shakespeare_lm.decoding.sampler`` applies them. temperature=0 is greedy: the argmax
    after the penalties and the constraint mask, truncation rules ignored. A row ends at
    ``max_new_tokens``, at the end of a ``stop`` sequence (kept in the text), or when the
    context window is full; with ``context_overflow="slide"`` it goes on instead in the
    windows of ``shakespeare_lm.decoding.context_window`` (re-prefilled at new positions), so any
    length can be generated. ``constraint`` (``shakespeare_lm.decoding.automata``) masks the
    characters its automaton forbids, one state per row; a row stops with reason
    "constraint" once the automaton accepts and cannot continue. ``use_cache=False``
    recomputes the whole context every step; ``warmup=True`` runs a short untimed
    generation first. ``prefix_cache`` (a ``PrefixCache``, one str prompt) decodes on that
    cache, prefilling only the prompt's tokens after the prefix it holds from earlier calls;
    the text is the same. Returns a ``Generation`` (a list for a list of prompts).
    """
    cfg = DecodingConfig.from_settings(config, **settings)
    block = model.config.block_size
    encoded = encode_prompts(tok, prompt, block)
    check_max_new_tokens(max_new_tokens)
    cfg.check_stop_characters(tok)
    policy = WindowPolicy(block, check_context_overflow(context_overflow))
    sampler = Sampler(cfg, constraint, model.config.vocab_size, tok)
    device = model_device(model)
    if prefix_cache is not None:
        _use_prefix_cache(prefix_cache, prompt, encoded[0], max_new_tokens, policy,
                          use_cache, warmup)
    if warmup:
        _warm_up(model, encoded[0], device)
    batch = _Batch(tok, prompt, encoded, max_new_tokens, sampler)
    batch.generator = None if cfg.greedy else cfg.generator(device)
    clock = _Clock()
    decode_in_windows(policy, batch.rows, lambda windows: _run_window(
        model, batch, batch.start_window(windows), use_cache, clock, prefix_cache))
    timings = Timings(clock.prefill_s, clock.ttft, clock.decode_s, clock.steps, len(encoded),
                      str(device))
    return one_or_list(prompt, [Generation(p, r.text, r.new, r.logprobs, r.reason, timings)
                                for p, r in zip(as_prompt_list(prompt), batch.rows)])


def _use_prefix_cache(prefix: PrefixCache, prompt, ids: list[int], max_new_tokens: int,
                      policy: WindowPolicy, use_cache: bool, warmup: bool) -> None:
    """Check that ``prefix`` can serve this call and keep the prefix of ``ids`` it holds."""
    if not isinstance(prefix, PrefixCache):
        raise TypeError(f"prefix_cache must be a PrefixCache, got {type(prefix).__name__}")
    room = policy.window(len(ids), max_new_tokens).budget
    prefix.check_call(prompt, len(ids) + room - 1, policy.slide, use_cache, warmup)
    prefix.reuse(ids)


def _warm_up(model, ids: list[int], device) -> None:
    """One short untimed prefill and decode step, so allocation and lazy init are not timed."""
    n = min(len(ids), model.config.block_size - 1)
    with model.cache(1, n + 1):
        idx = torch.tensor([ids[:n]], device=device)
        logits = prefill(model, idx, torch.arange(n, device=device))
        decode_one_token(model, logits.argmax(-1, keepdim=True), torch.tensor([n], device=device))
