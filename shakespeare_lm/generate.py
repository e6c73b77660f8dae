"""The generation loop, as small named steps (after gpt-fast's ``generate.py``).

``prefill`` runs the prompt through the model once, filling the KV cache;
``decode_one_token`` feeds one token and returns the next distribution; ``decode_n_tokens``
repeats that; ``generate`` wraps them with the decoding rules, stop conditions and timing.

Batches of prompts with different lengths are left-padded: padding slots are masked out of
attention and positions count from each row's first real character, so a row generates
exactly what it would alone. Context window: the prompt plus the generated text never
exceeds ``model.config.block_size`` characters. A longer prompt is an error; a generation
that reaches the limit stops with ``stop_reason == "context_window"``, or, with
``context_overflow="slide"``, keeps the last half of its window and goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from . import constrained, rules
from .timing import Stopwatch, model_device

STOP_REASONS = ("max_tokens", "stop_sequence", "context_window", "constraint")


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


# --- input checks -------------------------------------------------------------------
def _check_prompts(tok, prompt) -> tuple[list[str], list[list[int]]]:
    if isinstance(prompt, str):
        prompts = [prompt]
    elif isinstance(prompt, Sequence) and prompt and all(isinstance(p, str) for p in prompt):
        prompts = list(prompt)
    else:
        raise TypeError(f"prompt must be a str or a non-empty list of str, got {prompt!r:.80}")
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
    return prompts, encoded


def _check_stop(tok, stop) -> list[str]:
    stops = [] if stop is None else [stop] if isinstance(stop, str) else list(stop)
    for s in stops:
        if not isinstance(s, str) or not s:
            raise ValueError(f"stop={stop!r} is invalid: every stop sequence must be a non-empty str")
        tok.encode(s)  # a character the model cannot produce could never match: say so
    return stops


def _check_max_new_tokens(n) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"max_new_tokens={n!r} is invalid: it must be an integer >= 0")


def make_generator(seed: int | None, device) -> torch.Generator:
    gen = torch.Generator(device=device)
    if seed is None:
        gen.seed()
    else:
        gen.manual_seed(int(seed))
    return gen


# --- generate -----------------------------------------------------------------------
@torch.no_grad()
def generate(model, tok, prompt: str | list[str], max_new_tokens: int, *,
             temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None,
             min_p: float | None = None, typical_p: float | None = None,
             epsilon: float | None = None, eta: float | None = None,
             repetition_penalty: float | None = None, frequency_penalty: float | None = None,
             presence_penalty: float | None = None, stop: str | list[str] | None = None,
             seed: int | None = None, use_cache: bool = True,
             warmup: bool = False, constraint=None,
             context_overflow: str = "stop") -> Generation | list[Generation]:
    """Continue ``prompt`` (a str, or a list of str generated as one batch).

    temperature=0 is greedy (argmax after any penalties); otherwise the rules in
    ``shakespeare_lm.rules`` shape the logits in their documented order and a token is
    sampled. ``seed`` makes sampling reproducible. Generation of a row ends at
    ``max_new_tokens``, at the end of a ``stop`` sequence (kept in the text), or when the
    context window is full. With ``context_overflow="slide"`` a full window instead keeps
    its last ``block_size // 2`` characters (re-prefilled at new positions) and generation
    goes on, so any length can be generated; the model then sees between half a window and
    a full window of context. ``constraint`` (see ``shakespeare_lm.constrained``) masks the
    characters its automaton forbids, after the penalties and before temperature and
    truncation, with one automaton state per row; a row stops with reason "constraint" once
    the automaton accepts and cannot continue. ``use_cache=False`` recomputes the whole
    context every step (for comparison). ``warmup=True`` runs a short untimed generation first so the timings
    leave out one-off costs. Returns a ``Generation`` (a list for a list of prompts).
    """
    prompts, encoded = _check_prompts(tok, prompt)
    _check_max_new_tokens(max_new_tokens)
    stops = _check_stop(tok, stop)
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature >= 0:
        raise ValueError(f"temperature={temperature!r} is invalid: temperature must be a "
                         "number >= 0 (0 means greedy)")
    settings = rules.validate(temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                              typical_p=typical_p, epsilon=epsilon, eta=eta,
                              repetition_penalty=repetition_penalty,
                              frequency_penalty=frequency_penalty,
                              presence_penalty=presence_penalty)
    if constraint is not None:
        constrained.check_constraint(constraint, model.config.vocab_size)
    block = model.config.block_size
    too_long = [(i, len(e)) for i, e in enumerate(encoded) if len(e) > block]
    if too_long:
        i, n = too_long[0]
        raise ValueError(f"prompt {i} has {n} characters but the model's context window is "
                         f"{block}; keep its last {block} characters (prompt[-{block}:]) or fewer")
    if context_overflow not in ("stop", "slide"):
        raise ValueError(f"context_overflow={context_overflow!r} is invalid: it must be "
                         "'stop' (end with stop_reason 'context_window') or 'slide'")
    device = model_device(model)
    greedy = temperature == 0
    gen = None if greedy else make_generator(seed, device)

    if warmup:
        _warm_up(model, encoded[0], device)

    B = len(encoded)
    keep = block // 2                       # "slide": characters kept when a window is full
    rows = [list(e) for e in encoded]       # what each row's context window holds
    remaining = [max_new_tokens] * B        # new tokens each row may still add
    out_ids = [[] for _ in range(B)]
    out_lp = [[] for _ in range(B)]
    texts = [""] * B
    reasons = [None if max_new_tokens > 0 else "max_tokens" for _ in range(B)]
    max_stop = max((len(s) for s in stops), default=0)
    states = [constraint.start() for _ in range(B)] if constraint is not None else None
    penalties = {k: v for k, v in settings.items() if k.endswith("penalty")}
    shaping = {k: v for k, v in settings.items() if k not in penalties}
    taken, ttft, prefill_s, decode_s = 0, 0.0, 0.0, 0.0

    while True:  # one pass per context window (only "slide" ever needs a second one)
        for b in range(B):
            if reasons[b] is None and len(rows[b]) == block:   # a full window, no room left
                reasons[b] = "context_window"
            if reasons[b] is not None:
                rows[b] = rows[b][-1:]  # a finished row only occupies a slot from now on
        budgets = [0 if reasons[b] else min(remaining[b], block - len(rows[b])) for b in range(B)]
        steps = max(budgets)
        if steps == 0:
            break
        lengths = [len(r) for r in rows]
        L = max(lengths)
        pad = torch.tensor([L - n for n in lengths], device=device)
        seq = torch.full((B, L + steps), -1, dtype=torch.long, device=device)  # -1: padding
        for b, r in enumerate(rows):
            seq[b, L - len(r) : L] = torch.tensor(r, device=device)
        window_start = [len(ids) for ids in out_ids]

        def choose(logits: torch.Tensor, slot: int) -> bool:
            history = seq[:, :slot] if penalties else None
            shaped = rules.compose(logits, history, **penalties)
            if constraint is not None:  # finished rows are not masked: their tokens are discarded
                where = "" if isinstance(prompt, str) else " (prompt {} of the batch)"
                allowed = torch.stack([
                    torch.ones(logits.shape[-1], dtype=torch.bool) if reasons[b] is not None else
                    constrained.allowed_or_raise(constraint, states[b], texts[b], where.format(b))
                    for b in range(B)])
                shaped = constrained.mask_logits(shaped, allowed)
            shaped = rules.compose(shaped, None, **shaping)
            nxt = rules.greedy(shaped) if greedy else rules.sample(shaped, gen)
            logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, nxt[:, None]).squeeze(-1)
            seq[:, slot] = nxt
            for b, (t, lp) in enumerate(zip(nxt.tolist(), logp.tolist())):
                if reasons[b] is not None:
                    continue
                out_ids[b].append(t)
                out_lp[b].append(lp)
                texts[b] += tok.chars[t]
                if constraint is not None:
                    states[b] = constraint.advance(states[b], t)
                tail = texts[b][-max_stop:] if max_stop else ""
                if stops and any(tail.endswith(s) for s in stops):
                    reasons[b] = "stop_sequence"
                elif (constraint is not None and constraint.is_accepting(states[b])
                      and not constraint.can_continue(states[b])):
                    reasons[b] = "constraint"
                elif len(out_ids[b]) == max_new_tokens:
                    reasons[b] = "max_tokens"
                elif len(out_ids[b]) - window_start[b] == budgets[b]:
                    reasons[b] = "window_full"  # its window is full: stop or slide below
            # A row that is done or whose window is full is parked: its padding grows so the
            # token fed next stays inside the window. Its outputs are discarded.
            model.pad.clamp_(min=slot - (block - 1))
            return all(r is not None for r in reasons)

        model.setup_cache(B, L + steps, pad)
        try:
            with Stopwatch(device) as sw_first:
                with Stopwatch(device) as sw_prefill:
                    logits = prefill(model, seq[:, :L].clamp(min=0), torch.arange(L, device=device))
                done = choose(logits, L)
            window_steps, window_decode = 1, 0.0
            if not done:
                with Stopwatch(device) as sw_decode:
                    window_steps += decode_n_tokens(model, seq, L + 1, steps - 1, choose, use_cache)
                window_decode = sw_decode.seconds
        finally:
            model.clear_cache()
        if taken == 0:  # the first window's prefill is the time to first token
            prefill_s, ttft, decode_s = sw_prefill.seconds, sw_first.seconds, window_decode
        else:           # later windows' re-prefill is part of the cost of decoding
            decode_s += sw_first.seconds + window_decode
        taken += window_steps
        for b in range(B):
            if reasons[b] == "window_full":
                if context_overflow == "stop":
                    reasons[b] = "context_window"
                else:  # slide: keep the last half of the window and carry on
                    rows[b] = (rows[b] + out_ids[b][window_start[b]:])[-keep:]
                    remaining[b] = max_new_tokens - len(out_ids[b])
                    reasons[b] = None
        if all(r is not None for r in reasons):
            break

    timings = Timings(prefill_s, ttft, decode_s, taken, B, str(device))
    results = [Generation(p, texts[b], out_ids[b], out_lp[b], reasons[b], timings)
               for b, p in enumerate(prompts)]
    return results[0] if isinstance(prompt, str) else results


def _warm_up(model, ids: list[int], device) -> None:
    """One short untimed prefill and decode step, so allocation and lazy init are not timed."""
    n = min(len(ids), model.config.block_size - 1)
    model.setup_cache(1, n + 1)
    try:
        idx = torch.tensor([ids[:n]], device=device)
        logits = prefill(model, idx, torch.arange(n, device=device))
        decode_one_token(model, logits.argmax(-1, keepdim=True), torch.tensor([n], device=device))
    finally:
        model.clear_cache()
