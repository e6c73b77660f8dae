"""Text metrics for comparing decoding rules (chapter 4).

Words. A *word* is a maximal run of ASCII letters, where an apostrophe between two letters
stays inside the word (``o'er``, ``ne'er``); other apostrophes, hyphens, digits, spaces and
punctuation separate words, and words are lower-cased. So ``'Tis`` gives ``tis``,
``well-a-day`` gives ``well``, ``a``, ``day``, and a speaker line ``KATHARINA:`` gives
``katharina``. A sample cut off in the middle of a word would count a fragment, so
``words(text, complete=True)`` drops a last word that runs into the end of the text.

Quality (crude): ``real_word_share``, the share of words that occur in a vocabulary, for
the book the set of words of the training corpus. Repetition: ``repeated_trigram_share``,
the share of word trigrams that already occurred earlier in the same sample. Diversity:
``distinct_n`` (Li et al. 2016), distinct word n-grams over all n-grams of a set of samples.

Likelihood: ``char_logprobs`` scores continuations under the untruncated model
(temperature 1, no truncation) with the windowing rule ``window_start`` that
``experiment.generate_long`` also uses to generate past the context window, so the two agree.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

import torch

_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*")


def words(text: str, complete: bool = False, keep_case: bool = False) -> list[str]:
    """The lower-cased words of ``text`` (see the module docstring for the definition).

    ``complete=True`` drops the last word when it touches the end of the text, since the
    sample may have been cut inside it; ``keep_case=True`` leaves the words as written.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    found = list(_WORD.finditer(text))
    if complete and found and found[-1].end() == len(text):
        found.pop()
    return [m.group() if keep_case else m.group().lower() for m in found]


def vocabulary(text: str) -> frozenset[str]:
    """The set of words of a corpus, e.g. ``vocabulary(corpus.load_train())``."""
    return frozenset(words(text))


def _check_texts(texts, name="texts") -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Iterable):
        raise TypeError(f"{name} must be a list of str (one per sample), got {type(texts).__name__}")
    texts = list(texts)
    bad = [type(t).__name__ for t in texts if not isinstance(t, str)]
    if bad:
        raise TypeError(f"{name} must hold only str, found a {bad[0]}")
    return texts


def real_word_counts(texts: Sequence[str], vocab: frozenset[str] | set[str]) -> tuple[int, int]:
    """(words found in ``vocab``, all words) over the complete words of every sample."""
    texts = _check_texts(texts)
    found = total = 0
    for t in texts:
        ws = words(t, complete=True)
        total += len(ws)
        found += sum(w in vocab for w in ws)
    return found, total


def real_word_share(texts: Sequence[str], vocab: frozenset[str] | set[str]) -> float:
    """Share of the complete words of all samples that occur in ``vocab`` (nan if none)."""
    found, total = real_word_counts(texts, vocab)
    return found / total if total else math.nan


def ngrams(ws: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """The n-grams of a list of words, in order."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n={n!r} is invalid: n must be an integer >= 1")
    return [tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)]


def repeated_ngram_counts(text: str, n: int = 3) -> tuple[int, int]:
    """(n-grams that occurred earlier in the same text, all n-grams) of one sample."""
    seen, repeated = set(), 0
    grams = ngrams(words(text, complete=True), n)
    for g in grams:
        repeated += g in seen
        seen.add(g)
    return repeated, len(grams)


def repeated_trigram_share(texts: Sequence[str], n: int = 3) -> float:
    """Share of word n-grams (trigrams by default) that repeat an earlier n-gram of the
    same sample, pooled over samples (nan if no sample has n words)."""
    texts = _check_texts(texts)
    counts = [repeated_ngram_counts(t, n) for t in texts]
    total = sum(c[1] for c in counts)
    return sum(c[0] for c in counts) / total if total else math.nan


def distinct_n(texts: Sequence[str], n: int) -> float:
    """Distinct-n (Li et al. 2016): distinct word n-grams / all word n-grams, over all
    samples together (nan if there are none)."""
    texts = _check_texts(texts)
    grams = Counter(g for t in texts for g in ngrams(words(t, complete=True), n))
    total = sum(grams.values())
    return len(grams) / total if total else math.nan


# --- likelihood -----------------------------------------------------------------------
def window_start(i: int, block_size: int) -> int:
    """Where the context of the character at position ``i`` of a text begins.

    A model with a context of ``block_size`` characters scores a longer text in windows that
    restart every ``h = block_size // 2`` characters: the character at i sees the text from
    ``max(0, (i // h - 1) * h)`` on, so between h and block_size - 1 earlier characters once
    i >= h. Generation past the window (``experiment.generate_long``) restarts at the same
    places, so a generated text and its score see the same contexts.
    """
    h = block_size // 2
    return max(0, (i // h - 1) * h)


@torch.no_grad()
def char_logprobs(model, tok, prompts: Sequence[str], continuations: Sequence[str],
                  batch_size: int = 64) -> list[torch.Tensor]:
    """log p(c | context) of every character c of each continuation under the untruncated
    model (T = 1): a list of 1-D float tensors, one per (prompt, continuation) pair.

    Texts longer than the context window are scored with the windows of ``window_start``.
    """
    prompts, continuations = _check_texts(prompts, "prompts"), _check_texts(continuations, "continuations")
    if len(prompts) != len(continuations):
        raise ValueError(f"got {len(prompts)} prompts but {len(continuations)} continuations: "
                         "give one continuation per prompt")
    empty = [i for i, p in enumerate(prompts) if not p]
    if empty:
        raise ValueError(f"prompt {empty[0]} is empty: the first character has no context to be scored in")
    block = model.config.block_size
    h = block // 2
    # every window: (text index, start, first scored position, end)
    windows, texts = [], []
    for k, (p, c) in enumerate(zip(prompts, continuations)):
        text = p + c
        texts.append(tok.encode(text))
        pos = len(p)
        while pos < len(text):
            start = window_start(pos, block)
            end = min(len(text), max(2, pos // h + 1) * h)  # where the next window starts
            windows.append((k, start, pos, end))
            pos = end
    out = [[] for _ in prompts]
    device = next(model.parameters()).device
    for b in range(0, len(windows), batch_size):
        chunk = windows[b : b + batch_size]
        width = max(end - start for _, start, _, end in chunk)
        idx = torch.zeros(len(chunk), width, dtype=torch.long, device=device)
        for r, (k, start, _, end) in enumerate(chunk):
            idx[r, : end - start] = torch.tensor(texts[k][start:end], device=device)  # right pad
        logp = torch.log_softmax(model(idx).float(), dim=-1)  # (B, W, V); causal: padding unseen
        for r, (k, start, first, end) in enumerate(chunk):
            target = idx[r, first - start : end - start]                  # characters scored
            pred = logp[r, first - start - 1 : end - start - 1]           # the logits before each
            out[k].append(pred.gather(-1, target[:, None]).squeeze(-1).cpu())
    return [torch.cat(parts) if parts else torch.zeros(0) for parts in out]


def nats_per_char(logprobs: Sequence[torch.Tensor]) -> float:
    """Mean negative log-likelihood per character over all samples, in nats."""
    flat = torch.cat([torch.as_tensor(lp, dtype=torch.float64).reshape(-1) for lp in logprobs])
    if flat.numel() == 0:
        return math.nan
    return float(-flat.mean())


def probability_shares(logprobs: Sequence[torch.Tensor], low: float = 0.1,
                       high: float = 0.9) -> tuple[float, float]:
    """(share of characters with model probability < low, share with probability > high)."""
    if not 0 <= low <= high <= 1:
        raise ValueError(f"low={low!r}, high={high!r} are invalid: need 0 <= low <= high <= 1")
    p = torch.cat([torch.as_tensor(lp, dtype=torch.float64).reshape(-1) for lp in logprobs]).exp()
    if p.numel() == 0:
        return math.nan, math.nan
    return float((p < low).double().mean()), float((p > high).double().mean())
