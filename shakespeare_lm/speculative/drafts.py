"""Drafts for speculative decoding: what proposes the tokens the target verifies.

They share one small interface (``Draft``): a smoothed character n-gram counted from the
training text (``NGramDraft``), a small transformer with its own KV cache (``ModelDraft``),
prompt lookup (``PromptLookupDraft``, Saxena 2023), and Medusa heads on the target's own
hidden state (``HeadsDraft``, Cai et al. 2024).

A draft that sets ``reads_target_hidden = True`` is also given, after each target pass,
``observe(n, h)``: the target's last hidden state h (C,) after reading the first n ids.
"""

from __future__ import annotations

import copy
import math
from typing import Protocol, runtime_checkable

import numpy as np
import torch

from ..checks import check_count
from ..decoding.generate import decode_one_token, prefill
from ..model import Transformer
from ..paths import TRAIN_FILE
from ..timing import model_device
from .heads import DraftHeads


# --- drafts ---------------------------------------------------------------------------
@runtime_checkable
class Draft(Protocol):
    """What speculative decoding asks of a proposer."""

    name: str

    def start(self, ids: list[int], max_len: int) -> None:
        """A new text begins with ``ids``; it will grow to at most ``max_len`` ids."""

    def next_logits(self, ids: list[int]) -> torch.Tensor | None:
        """Logits (V,) for the id after ``ids`` (which extends the previous call's ids);
        None when the draft has nothing to propose."""

    def rollback(self, length: int) -> None:
        """Forget everything past ``ids[:length]``: those ids were rejected."""

    def finish(self) -> None:
        """The text is done: release any state."""


class ModelDraft:
    """A (small) transformer as the draft, with its own KV cache that is cut back on rejection."""

    def __init__(self, model: Transformer, name: str = "transformer"):
        self.model, self.name = model, name
        self.fed: list[int] = []  # the ids whose keys and values are in the cache
        self.device = model_device(model)
        self.cache = None         # the model's KV cache handle while a text is decoded

    @property
    def block_size(self) -> int:
        return self.model.config.block_size

    def start(self, ids: list[int], max_len: int) -> None:
        self.device = device = model_device(self.model)
        self.cache = self.model.cache(1, max_len)
        self.fed = []
        if len(ids) > 1:  # all but the last id: next_logits feeds what is new
            prefill(self.model, torch.tensor([ids[:-1]], device=device),
                    torch.arange(len(ids) - 1, device=device))
            self.fed = list(ids[:-1])

    def next_logits(self, ids: list[int]) -> torch.Tensor:
        n = len(self.fed)
        if len(ids) <= n or ids[:n] != self.fed:
            raise RuntimeError("ModelDraft.next_logits: ids must extend the ids already in "
                               "the cache; call rollback(length) after a rejection")
        device = self.device
        new = ids[n:]  # one id, or two after a round that accepted every proposal
        if len(new) == 1:
            logits = decode_one_token(self.model, torch.tensor([new], device=device),
                                      torch.tensor([n], device=device))
        else:
            logits = prefill(self.model, torch.tensor([new], device=device),
                             torch.arange(n, len(ids), device=device))
        self.fed = list(ids)
        return logits[0]

    def rollback(self, length: int) -> None:
        if length < len(self.fed):
            self.cache.truncate(length)
            self.fed = self.fed[:length]

    def finish(self) -> None:
        if self.cache is not None:
            self.cache.close()
        self.cache, self.fed = None, []


def _encode_array(tok, text: str) -> np.ndarray:
    """Text -> int64 ids quickly (the training text has millions of characters)."""
    if all(ord(c) < 256 for c in tok.chars):
        lookup = np.full(256, -1, dtype=np.int64)
        lookup[[ord(c) for c in tok.chars]] = np.arange(tok.vocab_size)
        ids = lookup[np.frombuffer(text.encode("latin-1", errors="replace"), dtype=np.uint8)]
        if (ids >= 0).all():
            return ids
    return np.asarray(tok.encode(text), dtype=np.int64)  # names the offending character


class NGramDraft:
    """A character n-gram model counted from text, as a draft with no parameters to train.

    Smoothing interpolates each order with the one below it (a Dirichlet prior with
    ``smoothing`` pseudo-counts on the shorter context's estimate, down to uniform), so every
    character has some probability and unseen contexts fall back to shorter ones. Contexts
    shorter than ``order - 1`` (the very start of a text) use the lower orders.

    Counts are kept sparse (only the n-grams the text contains), and a context's smoothed
    distribution is worked out the first time it is asked for and then remembered, so orders
    up to ``MAX_ORDER`` fit in memory and a repeated context costs one dictionary lookup.
    """

    MAX_ORDER = 8
    MEMO_LIMIT = 200_000  # remembered distributions; forgotten all at once past this

    def __init__(self, tok, order: int = 3, smoothing: float = 1.0, text: str | None = None):
        check_count("order", order, 1, self.MAX_ORDER, " (3 is a trigram)")
        if (not isinstance(smoothing, (int, float)) or not smoothing > 0
                or not math.isfinite(smoothing)):
            raise ValueError(f"smoothing={smoothing!r} is invalid: smoothing must be a number > 0")
        if text is None:
            text = TRAIN_FILE.read_text(encoding="utf-8")
        V = tok.vocab_size
        ids = _encode_array(tok, text)
        if len(ids) < order:
            raise ValueError(f"text of {len(ids)} characters is too short to count {order}-grams")
        self.name, self.order, self.vocab_size = f"{order}-gram", order, V
        self.smoothing = float(smoothing)
        # per context length k: the contexts seen (base-V codes, sorted), where each one's
        # followers start in ``nexts``/``counts``, and those followers with their counts
        self._counts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        for k in range(order):
            code = np.zeros(len(ids) - k, dtype=np.int64)
            for j in range(k + 1):  # base-V number of the (k+1)-gram, oldest id most significant
                code = code * V + ids[j : len(ids) - k + j]
            grams, n = np.unique(code, return_counts=True)
            contexts, first = np.unique(grams // V, return_index=True)
            self._counts.append((contexts, np.append(first, len(grams)), grams % V,
                                 n.astype(np.float64)))
        self._memo: dict[tuple[int, int], np.ndarray] = {}
        self._logits: dict[tuple[int, ...], torch.Tensor] = {}

    def _probs(self, ids) -> np.ndarray:
        """P(next | ids) (V,) in float64, ids being the last k < order ids (k may be 0)."""
        k, code = len(ids), 0
        for i in ids:
            code = code * self.vocab_size + i
        key = (k, code)
        probs = self._memo.get(key)
        if probs is not None:
            return probs
        prior = (np.full(self.vocab_size, 1.0 / self.vocab_size) if k == 0
                 else self._probs(ids[1:]))
        contexts, starts, nexts, counts = self._counts[k]
        j = int(np.searchsorted(contexts, code))
        row = np.zeros(self.vocab_size)
        if j < len(contexts) and contexts[j] == code:
            row[nexts[starts[j]:starts[j + 1]]] = counts[starts[j]:starts[j + 1]]
        probs = (row + self.smoothing * prior) / (row.sum() + self.smoothing)
        if len(self._memo) >= self.MEMO_LIMIT:
            self._memo.clear()
        self._memo[key] = probs
        return probs

    def distribution(self, ids: list[int]) -> torch.Tensor:
        """log P(next | ids) (V,) from the last ``order - 1`` ids (fewer at the start)."""
        ctx = tuple(ids[len(ids) - min(self.order - 1, len(ids)):])
        out = self._logits.get(ctx)
        if out is None:
            out = torch.from_numpy(np.log(self._probs(ctx))).float()
            if len(self._logits) >= self.MEMO_LIMIT:
                self._logits.clear()
            self._logits[ctx] = out
        return out

    def forget(self) -> None:
        """Drop every remembered distribution: the next lookups cost what they cost on text
        this draft has never seen (the bench calls this before each timed run)."""
        self._memo.clear()
        self._logits.clear()

    def start(self, ids: list[int], max_len: int) -> None:
        pass

    def next_logits(self, ids: list[int]) -> torch.Tensor:
        return self.distribution(ids)

    def rollback(self, length: int) -> None:
        pass

    def finish(self) -> None:
        pass


class PromptLookupDraft:
    """Prompt lookup (Saxena 2023): find the most recent earlier occurrence of the last n ids
    (n from ``max_ngram`` down to ``min_ngram``) and propose the id that followed it, with
    certainty (q is one-hot). No match: no proposal, and the round is a plain decode step."""

    def __init__(self, vocab_size: int, max_ngram: int = 8, min_ngram: int = 3):
        check_count("min_ngram", min_ngram, 1)
        check_count("max_ngram", max_ngram, min_ngram, hint=f" (min_ngram={min_ngram})")
        if vocab_size > 256:
            raise ValueError(f"vocab_size={vocab_size} is invalid: prompt lookup here searches "
                             "bytes, so at most 256 ids")
        self.vocab_size, self.max_ngram, self.min_ngram = vocab_size, max_ngram, min_ngram
        self.name = "prompt lookup"

    def lookup(self, ids: list[int]) -> int | None:
        """The id that followed the latest earlier match of the longest suffix, or None."""
        text = bytes(ids)
        for n in range(min(self.max_ngram, len(ids) - 1), self.min_ngram - 1, -1):
            j = text.rfind(text[-n:], 0, len(ids) - 1)  # a match that ends before the last id
            if j >= 0:
                return ids[j + n]
        return None

    def start(self, ids: list[int], max_len: int) -> None:
        pass

    def next_logits(self, ids: list[int]) -> torch.Tensor | None:
        nxt = self.lookup(ids)
        if nxt is None:
            return None
        logits = torch.full((self.vocab_size,), float("-inf"))
        logits[nxt] = 0.0
        return logits

    def rollback(self, length: int) -> None:
        pass

    def finish(self) -> None:
        pass


class HeadsDraft:
    """Medusa heads (Cai et al. 2024) as the draft: from ONE target hidden state, head i
    gives q for the i-th token after the one the target is about to emit.

    The verifier draws the next token from the target; the heads then propose up to
    ``n_heads`` tokens past it, each from its own distribution (heads do not see each
    other's proposals). Any q keeps speculative sampling exact, so the output distribution
    is still the target's. A drafting step costs one row lookup; the heads' forward pass
    (a few small matmuls) runs once per round, in ``observe``.
    """

    reads_target_hidden = True

    def __init__(self, heads: DraftHeads, name: str = "heads"):
        if not isinstance(heads, DraftHeads):
            raise TypeError("heads must be DraftHeads "
                            "(shakespeare_lm.speculative.heads.load_heads(model)), "
                            f"got {type(heads).__name__}")
        self.heads, self.name = heads, name
        self.logits: dict[int, torch.Tensor] = {}  # n -> (n_heads, V) after the first n ids

    @property
    def max_gamma(self) -> int:
        """The most proposals a round can get: one per head."""
        return self.heads.n_heads

    def start(self, ids: list[int], max_len: int) -> None:
        self.logits = {}

    @torch.no_grad()
    def observe(self, n: int, hidden: torch.Tensor) -> None:
        """The target's last hidden state (C,) after reading ids[:n]: every head's logits."""
        self.logits[n] = self.heads(hidden)

    def next_logits(self, ids: list[int]) -> torch.Tensor | None:
        # the latest state before the last id: head i proposes ids[n + i]
        n = max((k for k in self.logits if k < len(ids)), default=None)
        i = None if n is None else len(ids) - n
        if i is None or not 1 <= i <= self.heads.n_heads:
            return None
        return self.logits[n][i - 1]

    def rollback(self, length: int) -> None:
        self.logits = {n: v for n, v in self.logits.items() if n <= length}

    def finish(self) -> None:
        self.logits = {}


def as_draft(draft, target: Transformer) -> Draft:
    """A ``Draft`` from a Transformer (wrapped in ``ModelDraft``) or a ``Draft`` itself."""
    if isinstance(draft, Transformer):
        if draft.config.vocab_size != target.config.vocab_size:
            raise ValueError(f"draft vocab_size={draft.config.vocab_size} does not match the "
                             f"target's vocab_size={target.config.vocab_size}")
        if draft is target:  # one module cannot hold two caches: draft with a copy
            return ModelDraft(copy.deepcopy(target), name="target itself")
        return ModelDraft(draft)
    if isinstance(draft, Draft):
        return draft
    if isinstance(draft, DraftHeads):
        return HeadsDraft(draft)
    raise TypeError(f"draft must be a Transformer, DraftHeads or a Draft (NGramDraft, "
                    f"ModelDraft, PromptLookupDraft, HeadsDraft), got {type(draft).__name__}")
