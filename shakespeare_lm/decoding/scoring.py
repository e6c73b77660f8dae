"""How probable is a given text? Teacher-forced scoring under the untruncated model.

``teacher_forced_logits`` is the one place where the model reads a known text: for each
(context ids, text ids) pair it returns the logits of every character of the text given
what precedes it; ``next_token_logits`` gives the logits after each context. Everything that
scores text uses it: ``char_logprobs`` (texts of any length, in the windows of
``shakespeare_lm.decoding.context_window``), ``score_continuations``, constrained decoding's
exact distributions, beam search's naive and prefix scorers, and chapter 3's explorer.

The mean log-probability per character, in nats, is <= 0; ``nats_per_char`` is its
negation, as in ``Generation.nats_per_char``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..timing import model_device
from .context_window import window_end, window_start


def _padded_forward(model, rows: list[list[int]], device) -> torch.Tensor:
    """One plain causal pass over rows of ids right-padded to the longest: (N, T, V)."""
    idx = torch.zeros(len(rows), max(len(r) for r in rows), dtype=torch.long, device=device)
    for r, ids in enumerate(rows):
        idx[r, : len(ids)] = torch.tensor(ids, device=device)
    return model(idx)


@torch.no_grad()
def next_token_logits(model, contexts: Sequence[Sequence[int]]) -> torch.Tensor:
    """Logits (N, V) of the token after each context, in one plain pass (no cache)."""
    contexts = [list(c) for c in contexts]
    if not contexts or not all(contexts):
        raise ValueError("next_token_logits needs at least one context, none of them empty")
    out = _padded_forward(model, contexts, model_device(model))
    return torch.stack([out[r, len(c) - 1] for r, c in enumerate(contexts)])


@torch.no_grad()
def _cached_logits(model, contexts, texts, W: int, device) -> torch.Tensor:
    """Each distinct context runs once, left-padded, and its cache row is copied to every
    row that continues it; then every text runs on the cache (right-padded)."""
    rest = torch.tensor([t[:-1] + [0] * (W - len(t)) for t in texts], device=device)  # (N, W-1)
    distinct = list(dict.fromkeys(tuple(c) for c in contexts))          # in order
    owner = torch.tensor([distinct.index(tuple(c)) for c in contexts], device=device)
    L = max(len(c) for c in distinct)
    pad = torch.tensor([L - len(c) for c in distinct], device=device)
    idx = torch.tensor([[0] * (L - len(c)) + list(c) for c in distinct], device=device)
    with model.cache(len(distinct), L + W - 1, pad) as cache:
        logits = model(idx, torch.arange(L, device=device))[:, -1][owner][:, None]  # (N, 1, V)
        if W > 1:
            cache.reorder(owner)                                  # row n continues its context
            later = model(rest, torch.arange(L, L + W - 1, device=device))  # (N, W-1, V)
            logits = torch.cat([logits, later], dim=1)
    return logits


@torch.no_grad()
def teacher_forced_logits(model, contexts: Sequence[Sequence[int]],
                          texts: Sequence[Sequence[int]], use_cache: bool = False) -> torch.Tensor:
    """Logits (N, W, V) of text n's character t given context n + text n [:t], for every
    pair (W: the longest text; steps past a shorter text are padding, to be ignored).

    Without the cache, row n is context + text, right-padded: the causal mask keeps the
    padding out of every real position. With ``use_cache`` (a model with a KV cache),
    each distinct context runs once (worth it when many texts share a context).
    """
    contexts, texts = [list(c) for c in contexts], [list(t) for t in texts]
    if not texts or len(contexts) != len(texts) or not all(contexts) or not all(texts):
        raise ValueError(f"got {len(contexts)} contexts and {len(texts)} texts: give one "
                         "non-empty context per non-empty text")
    device = model_device(model)
    W = max(len(t) for t in texts)
    if use_cache and hasattr(model, "cache"):
        return _cached_logits(model, contexts, texts, W, device)
    out = _padded_forward(model, [c + t for c, t in zip(contexts, texts)], device)
    V = out.shape[-1]
    logits = torch.zeros(len(texts), W, V, dtype=out.dtype, device=device)
    for r, (c, t) in enumerate(zip(contexts, texts)):
        logits[r, : len(t)] = out[r, len(c) - 1 : len(c) - 1 + len(t)]
    return logits


def teacher_forced_logprobs(model, contexts, texts, use_cache: bool = False) -> torch.Tensor:
    """``teacher_forced_logits`` as float64 log-probabilities (N, W, V)."""
    return torch.log_softmax(teacher_forced_logits(model, contexts, texts, use_cache).double(), -1)


def _windows(texts: list[list[int]], firsts: list[int], block: int) -> list[tuple]:
    """(text index, start, first scored position, end) of every window of every text."""
    windows = []
    for k, (ids, pos) in enumerate(zip(texts, firsts)):
        while pos < len(ids):
            end = min(len(ids), window_end(pos, block))  # where the next window starts
            windows.append((k, window_start(pos, block), pos, end))
            pos = end
    return windows


@torch.no_grad()
def char_logprobs(model, tok, prompts: Sequence[str], continuations: Sequence[str],
                  batch_size: int = 64) -> list[torch.Tensor]:
    """log p(c | context) of every character c of each continuation under the untruncated
    model (T = 1): a list of 1-D float tensors, one per (prompt, continuation) pair.

    Texts longer than the context window are scored in the windows of
    ``shakespeare_lm.decoding.context_window``, as generation past the window generates them.
    """
    for name, seq in (("prompts", prompts), ("continuations", continuations)):
        if isinstance(seq, str) or not all(isinstance(t, str) for t in seq):
            raise TypeError(f"{name} must be a list of str (one per sample), got {seq!r:.60}")
    if len(prompts) != len(continuations):
        raise ValueError(f"got {len(prompts)} prompts but {len(continuations)} continuations: "
                         "give one continuation per prompt")
    empty = [i for i, p in enumerate(prompts) if not p]
    if empty:
        raise ValueError(f"prompt {empty[0]} is empty: the first character has no context "
                         "to be scored in")
    texts = [tok.encode(p + c) for p, c in zip(prompts, continuations)]
    windows = _windows(texts, [len(p) for p in prompts], model.config.block_size)
    out = [[] for _ in prompts]
    for b in range(0, len(windows), batch_size):
        chunk = windows[b : b + batch_size]
        logits = teacher_forced_logits(model, [texts[k][s:f] for k, s, f, _ in chunk],
                                       [texts[k][f:e] for k, _, f, e in chunk])
        logp = torch.log_softmax(logits.float(), dim=-1)   # (B, W, V)
        for r, (k, _, first, end) in enumerate(chunk):
            target = torch.tensor(texts[k][first:end], device=logp.device)
            out[k].append(logp[r, : end - first].gather(-1, target[:, None]).squeeze(-1).cpu())
    return [torch.cat(parts) if parts else torch.zeros(0) for parts in out]


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
