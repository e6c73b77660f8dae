"""Serving a queue of requests: static vs continuous batching, contiguous vs paged KV memory.

A small engine with ``max_batch`` rows runs the real model one decode step at a time. At
every step each busy row feeds one token: the next prompt character while it reads its
prompt (chunked prefill with a chunk of one), then its last generated character (greedy).
The rows share the cache's slot counter; a request that joins at slot s gets left padding
s, so it sees only its own keys and its positions count from 0 (the ``pad`` of
``with model.cache(batch, max_len, pad) as cache:``, changed with ``cache.set_padding``).

Two schedulers decide when a waiting request takes a free row:

* ``"static"``: a new batch starts only when every row of the last one is free, so rows
  whose requests finished early idle until the longest one ends;
* ``"continuous"``: a free row takes the next request at once (Yu et al. 2022, Orca).

Two allocators decide how much KV memory a running request holds, counted in tokens:

* ``"contiguous"``: a region for the longest possible sequence (the context window),
  reserved when the request starts, whatever its real length;
* ``"paged"``: fixed blocks of ``block_tokens`` tokens, taken as the sequence grows
  (Kwon et al. 2023, PagedAttention). When a row needs a block and none is free, the most
  recently started request is preempted: its blocks are freed and it waits at the head of
  the queue, to be recomputed from its prompt.

With a ``kv_budget_tokens`` the allocator also limits how many requests run at once.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import torch

from ..checks import check_count
from ..decoding.generate import decode_one_token
from ..timing import Stopwatch, model_device

POLICIES = ("static", "continuous")
ALLOCATORS = ("contiguous", "paged")


@dataclass(frozen=True)
class Request:
    """One request: a prompt and the number of characters to generate for it."""

    rid: int
    prompt: str
    max_new_tokens: int


def make_requests(n: int, text: str, *, seed: int, prompt_len: tuple[int, int] = (8, 64),
                  new_tokens: tuple[int, int] = (8, 128)) -> list[Request]:
    """``n`` requests with prompts cut from ``text`` and lengths drawn uniformly from the
    inclusive ranges ``prompt_len`` and ``new_tokens``, reproducibly from ``seed``."""
    check_count("n", n, 1, hint=" (the number of requests)")
    for name, (lo, hi) in (("prompt_len", prompt_len), ("new_tokens", new_tokens)):
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
            raise ValueError(f"{name}={(lo, hi)!r} is invalid: it must be integers 1 <= lo <= hi")
    if len(text) <= prompt_len[1]:
        raise ValueError(f"text of {len(text)} characters is too short for prompts of up to "
                         f"{prompt_len[1]} characters")
    gen = torch.Generator().manual_seed(int(seed))

    def draw(lo: int, hi: int) -> int:
        return int(torch.randint(lo, hi + 1, (1,), generator=gen))

    requests = []
    for rid in range(n):
        p = draw(*prompt_len)
        start = draw(0, len(text) - p)
        requests.append(Request(rid, text[start : start + p], draw(*new_tokens)))
    return requests


@dataclass
class ServingResult:
    """What one simulated run did, step by step."""

    policy: str
    allocator: str
    max_batch: int
    block_tokens: int
    kv_budget_tokens: int | None
    steps: int = 0
    seconds: float = float("nan")          # wall-clock of the whole run (nan without a model)
    generated_tokens: int = 0              # characters generated for finished requests
    preemptions: int = 0
    outputs: dict[int, list[int]] = field(default_factory=dict)   # rid -> generated ids
    finish_step: dict[int, int] = field(default_factory=dict)     # rid -> step it finished
    active_rows: list[int] = field(default_factory=list)          # busy rows, per step
    used_tokens: list[int] = field(default_factory=list)          # KV tokens really stored
    reserved_tokens: list[int] = field(default_factory=list)      # KV tokens held by the allocator

    @property
    def tokens_per_step(self) -> float:
        return self.generated_tokens / self.steps

    @property
    def tokens_per_s(self) -> float:
        return self.generated_tokens / self.seconds

    @property
    def row_utilization(self) -> float:
        """Fraction of row-steps that served a request."""
        return sum(self.active_rows) / (self.steps * self.max_batch)

    @property
    def kv_waste(self) -> float:
        """Fraction of the reserved KV memory (summed over steps) that held nothing."""
        return 1 - sum(self.used_tokens) / sum(self.reserved_tokens)

    @property
    def mean_finish_step(self) -> float:
        """Mean number of steps a request waited until it was complete (all arrive at 0)."""
        return sum(self.finish_step.values()) / len(self.finish_step)


@dataclass
class _Row:
    request: Request
    ids: list[int]          # prompt ids, then generated ids
    fed: int = 0            # tokens of this request already in the cache
    order: int = 0          # when it was admitted (for choosing whom to preempt)

    @property
    def generated(self) -> int:
        return len(self.ids) - len(self.request.prompt)


def _blocks(tokens: int, block_tokens: int) -> int:
    return math.ceil(tokens / block_tokens)


def _check_settings(requests, model, tok, policy, max_batch, allocator, block_tokens,
                    kv_budget_tokens, context, cache_len) -> tuple[int, int]:
    """Validate ``simulate``'s arguments; (context, cache_len) with their defaults filled in."""
    if policy not in POLICIES:
        raise ValueError(f"policy={policy!r} is invalid: choose one of {POLICIES}")
    if allocator not in ALLOCATORS:
        raise ValueError(f"allocator={allocator!r} is invalid: choose one of {ALLOCATORS}")
    for name, value in (("max_batch", max_batch), ("block_tokens", block_tokens)):
        check_count(name, value, 1)
    if model is not None and tok is None:
        raise ValueError("tok=None is invalid with a model: pass the model's tokenizer")
    context = context or (model.config.block_size if model is not None else None)
    if context is None:
        raise ValueError("context=None is invalid without a model: give the longest sequence "
                         "length a request may reach")
    if model is not None and context > model.config.block_size:
        raise ValueError(f"context={context} is invalid: the model's window is "
                         f"{model.config.block_size}")
    too_long = [r.rid for r in requests if len(r.prompt) + r.max_new_tokens > context]
    if too_long:
        raise ValueError(f"requests {too_long[:5]} are longer than context={context} "
                         "(prompt plus max_new_tokens)")
    if any(r.max_new_tokens < 1 or not r.prompt for r in requests):
        raise ValueError("every request needs a non-empty prompt and max_new_tokens >= 1")
    longest = (context if allocator == "contiguous"
               else _blocks(context, block_tokens) * block_tokens)
    if kv_budget_tokens is not None and kv_budget_tokens < longest:
        raise ValueError(f"kv_budget_tokens={kv_budget_tokens} is invalid: it must hold at "
                         f"least one request of the longest length ({longest} tokens)")
    cache_len = cache_len or 2 * context
    if cache_len <= context:
        raise ValueError(f"cache_len={cache_len} is invalid: it must exceed context={context}")
    return context, cache_len


class _Engine:
    """One simulated server: the queue, the batch's rows, their KV accounting and, with a
    model, the cache the rows decode on. ``step()`` is one decoding step of the batch."""

    def __init__(self, requests, model, tok, result: ServingResult, context: int,
                 cache_len: int):
        self.model, self.tok, self.result = model, tok, result
        self.context, self.cache_len = context, cache_len
        self.queue = deque(requests)
        self.rows: list[_Row | None] = [None] * result.max_batch
        self.admitted = self.slot = 0
        self.pads = [0] * result.max_batch  # left padding of each row: where its request started
        self.device = model_device(model) if model is not None else None
        self.cache = None

    @property
    def running(self) -> bool:
        return bool(self.queue) or any(r is not None for r in self.rows)

    def held(self, tokens: int) -> int:
        """KV tokens the allocator holds for a row that stores ``tokens`` tokens."""
        if self.result.allocator == "contiguous":
            return self.context
        return _blocks(max(tokens, 1), self.result.block_tokens) * self.result.block_tokens

    def total_held(self, extra: int = 0) -> int:
        return sum(self.held(r.fed + extra) for r in self.rows if r is not None)

    def fits(self, more: int) -> bool:
        budget = self.result.kv_budget_tokens
        return budget is None or self.total_held() + more <= budget

    def admit(self) -> None:
        """Fill free rows from the queue while the KV budget allows (static batching waits
        until the whole batch is free)."""
        if self.result.policy != "continuous" and any(r is not None for r in self.rows):
            return
        for i in range(self.result.max_batch):
            if self.rows[i] is None and self.queue:
                first = (self.held(len(self.queue[0].prompt)) if self.result.allocator == "paged"
                         else self.context)
                if not self.fits(first):
                    break
                req = self.queue.popleft()
                ids = self.tok.encode(req.prompt) if self.tok is not None else [0] * len(req.prompt)
                self.rows[i] = _Row(req, ids, 0, self.admitted)
                self.admitted += 1
                self.pads[i] = self.slot

    def preempt(self) -> None:
        """Paged growth: while a row that starts a new block finds none free, the request
        admitted last goes back to the front of the queue."""
        budget = self.result.kv_budget_tokens
        if self.result.allocator != "paged" or budget is None:
            return
        while self.total_held(extra=1) > budget:
            victim = max((i for i, r in enumerate(self.rows) if r is not None),
                         key=lambda i: self.rows[i].order)
            self.queue.appendleft(self.rows[victim].request)
            self.rows[victim] = None
            self.result.preemptions += 1

    def decode(self, busy: list[int]) -> dict[int, int]:
        """One real decode step over every row (idle rows feed a dummy token); the greedy
        next id of each busy row. Without a model, nothing."""
        if self.model is None:
            return {}
        feed = [[0] if r is None else [r.ids[r.fed]] for r in self.rows]
        for i, r in enumerate(self.rows):
            if r is None:
                self.pads[i] = self.slot  # an idle row sees only its own dummy slot
        self.cache.set_padding(self.pads)
        feed = torch.tensor(feed, device=self.device)  # (B, 1)
        logits = decode_one_token(self.model, feed, torch.tensor([self.slot], device=self.device))
        choice = logits.argmax(-1).tolist()
        return {i: choice[i] for i in busy}

    def finish_step(self, busy: list[int], next_ids: dict[int, int]) -> None:
        """Every busy row has fed one token: record new tokens and retire finished requests."""
        result = self.result
        for i in busy:
            row = self.rows[i]
            row.fed += 1
            if row.fed >= len(row.request.prompt):  # this step predicted a new token
                row.ids.append(next_ids.get(i, 0))
                if row.generated == row.request.max_new_tokens:
                    result.outputs[row.request.rid] = row.ids[len(row.request.prompt):]
                    result.finish_step[row.request.rid] = result.steps + 1
                    result.generated_tokens += row.generated
                    self.rows[i] = None
        result.steps += 1
        self.slot += 1
        if self.model is not None and self.slot == self.cache_len:
            shift = min((self.pads[i] for i in _busy_rows(self.rows)), default=self.slot)
            self.cache.drop_oldest(shift)
            self.pads = [max(p - shift, 0) for p in self.pads]
            self.slot -= shift

    def step(self) -> None:
        """Admit, preempt, record the KV occupancy, decode one token per busy row."""
        self.admit()
        self.preempt()
        busy = _busy_rows(self.rows)
        if not busy:
            raise RuntimeError("no request fits the KV budget")  # guarded by _check_settings
        self.result.active_rows.append(len(busy))
        self.result.used_tokens.append(sum(self.rows[i].fed + 1 for i in busy))
        self.result.reserved_tokens.append(self.total_held(extra=1))
        self.finish_step(busy, self.decode(busy))


def simulate(requests: list[Request], model=None, tok=None, *, policy: str = "continuous",
             max_batch: int = 8, allocator: str = "contiguous", block_tokens: int = 16,
             kv_budget_tokens: int | None = None, context: int | None = None,
             cache_len: int | None = None) -> ServingResult:
    """Serve ``requests`` (all waiting at step 0) and record what happened.

    With a ``model`` (and its ``tok``) every step is a real ``decode_one_token`` over all
    ``max_batch`` rows, timed as a whole; without one, only the schedule is computed.
    ``context``: the longest sequence a request may reach (default: the model's context
    window); the contiguous allocator reserves that much per request. ``cache_len``: slots
    in the engine's cache before it drops the slots no running request can see.
    """
    context, cache_len = _check_settings(requests, model, tok, policy, max_batch, allocator,
                                         block_tokens, kv_budget_tokens, context, cache_len)
    result = ServingResult(policy, allocator, max_batch, block_tokens, kv_budget_tokens)
    engine = _Engine(requests, model, tok, result, context, cache_len)
    if model is None:
        while engine.running:
            engine.step()
        return result
    with model.cache(max_batch, cache_len) as cache, Stopwatch(engine.device) as sw:
        engine.cache = cache
        while engine.running:
            engine.step()
    result.seconds = sw.seconds
    return result


def _busy_rows(rows) -> list[int]:
    return [i for i, r in enumerate(rows) if r is not None]

