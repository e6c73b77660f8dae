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

Likelihood: ``char_logprobs`` (from ``shakespeare_lm.decoding.scoring``, importable from here)
scores continuations under the untruncated model (temperature 1, no truncation) in the windows of
``shakespeare_lm.decoding.context_window`` (``window_start``, also importable from here), which
``experiment.generate_long`` also uses to generate past the context window, so the two agree.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

import torch

from ..checks import check_count
from ..decoding.context_window import window_start
from ..decoding.scoring import char_logprobs

__all__ = [
    "char_logprobs", "distinct_n", "nats_per_char", "ngrams", "probability_shares",
    "real_word_counts", "real_word_share", "repeated_ngram_counts", "repeated_trigram_share",
    "vocabulary", "window_start", "words",
]

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
        raise TypeError(f"{name} must be a list of str (one per sample), "
                        f"got {type(texts).__name__}")
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
    check_count("n", n, 1)
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


# --- likelihood ---------------------------------------------------------------------
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
