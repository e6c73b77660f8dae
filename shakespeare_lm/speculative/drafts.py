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
from array import array
from bisect import bisect_right
from itertools import accumulate
from typing import Protocol, runtime_checkable

import numpy as np
import torch
import torch.nn.functional as F

from ..checks import check_count
from ..decoding.generate import decode_one_token, prefill
from ..model import Transformer
from ..paths import TRAIN_FILE
from ..timing import model_device
from .eagle import FeatureHead
from .heads import DraftHeads


# --- drafts ---------------------------------------------------------------------------
def draw(weights: list[float], u: float) -> int:
    """The inverse-CDF draw of one index from unnormalised ``weights`` (V,) with the uniform
    ``u`` in [0, 1): the first index whose cumulative weight exceeds u times the total. An
    index of weight 0 is never drawn. One uniform per draw, taken a round's worth at a time
    (``torch.rand``), costs a few microseconds in Python, where a ``torch.multinomial`` call
    on a row of 63 costs about 25; a round makes up to 2 gamma + 1 of them."""
    acc = list(accumulate(weights))
    i = bisect_right(acc, u * acc[-1])
    if i >= len(acc):  # u * total rounded up to the total: the last index with weight
        i = max(j for j, w in enumerate(weights) if w > 0)
    return i


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


def _gram_codes(ids: np.ndarray, m: int, V: int) -> np.ndarray:
    """The base-V code of every m-gram of ids, oldest id most significant, in text order."""
    code = np.zeros(len(ids) - m + 1, dtype=np.int64)
    for j in range(m):
        code = code * V + ids[j : len(ids) - m + 1 + j]
    return code


def _runs(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For sorted codes: each distinct value, where its run starts, and the run's length
    (``np.unique`` with ``return_index`` and ``return_counts``, without sorting again)."""
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    return codes[starts], starts, np.diff(np.r_[starts, len(codes)])


def _count_grams(ids: np.ndarray, order: int,
                 V: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """``NGramDraft``'s counts for k = 0 .. order - 1, from one sort. Sorted order-grams
    have sorted prefixes, so each shorter gram's codes are the sorted longest ones divided
    down, plus the order - 1 - k grams that start too near the end to be a prefix of one,
    put in their places."""
    longest = np.sort(_gram_codes(ids, order, V))
    last = ids[len(ids) - order + 1:]  # the last order - 1 ids
    out = []
    for k in range(order):
        late = np.sort(_gram_codes(last, k + 1, V))  # none when k = order - 1
        prefixes = longest // V ** (order - 1 - k)
        grams, _, n = _runs(np.insert(prefixes, np.searchsorted(prefixes, late), late))
        contexts, first, _ = _runs(grams // V)
        out.append((contexts, np.append(first, len(grams)), grams % V, n.astype(np.float64)))
    return out


class _Order:
    """One order's counts, laid out for single lookups from Python: each context's place
    (a dict), where its followers start, their total, the followers as bytes (ids < 256)
    and their counts. Numpy's per-call cost is larger than such a lookup."""

    def __init__(self, contexts: np.ndarray, starts: np.ndarray, nexts: np.ndarray,
                 counts: np.ndarray):
        self.place = dict(zip(contexts.tolist(), range(len(contexts))))
        totals = np.add.reduceat(counts, starts[:-1]) if len(counts) else counts
        self.starts, self.totals, self.counts = array("q"), array("d"), array("d")
        self.starts.frombytes(starts.astype(np.int64).tobytes())
        self.totals.frombytes(totals.astype(np.float64).tobytes())
        self.counts.frombytes(counts.astype(np.float64).tobytes())
        self.nexts = nexts.astype(np.uint8).tobytes()

    def level(self, code: int) -> tuple[int, int, float]:
        """Where the followers of context ``code`` lie, and their total (unseen: 0, 0, 0)."""
        j = self.place.get(code)
        if j is None:
            return 0, 0, 0.0
        return self.starts[j], self.starts[j + 1], self.totals[j]

    def follower(self, level: tuple[int, int, float], target: float) -> int:
        """The follower whose share of the cumulative count covers ``target`` in [0, n)."""
        a, b, _ = level
        acc = 0.0
        for i in range(a, b):
            acc += self.counts[i]
            if target < acc:
                return self.nexts[i]
        return self.nexts[b - 1]  # target rounded up to the total

    def count(self, level: tuple[int, int, float], token: int) -> float:
        """How often ``token`` followed the context (0.0 when it never did)."""
        i = self.nexts.find(token, level[0], level[1])
        return self.counts[i] if i >= 0 else 0.0


class NGramDraft:
    """A character n-gram model counted from text, as a draft with no parameters to train.

    Smoothing interpolates each order with the one below it (a Dirichlet prior with
    ``smoothing`` pseudo-counts on the shorter context's estimate, down to uniform), so every
    character has some probability and unseen contexts fall back to shorter ones. Contexts
    shorter than ``order - 1`` (the very start of a text) use the lower orders.

    Counts are kept sparse (only the n-grams the text contains), so orders up to
    ``MAX_ORDER`` fit in memory. ``sample_chain`` draws proposals without working out any
    whole distribution; ``distribution`` (the logits a sampler shapes) works a context's
    out the first time it is asked for and remembers it, so a repeated context costs one
    dictionary lookup.
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
        self._counts = _count_grams(ids, order, V)
        self._logits: dict[tuple[int, ...], torch.Tensor] = {}
        self._tables: list[_Order] | None = None  # for ``sample_chain``, made when first used

    @property
    def can_sample(self) -> bool:
        """Whether ``sample_chain`` works: its lookups hold ids as bytes, so at most 256."""
        return self.vocab_size <= 256

    def counts_by_order(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """The counts, one entry per context length k = 0 .. order - 1: the contexts of k ids
        seen in the text (base-V codes, the oldest id most significant, sorted), where each
        one's followers start in the next two arrays (one more entry than contexts: the end),
        the followers' ids and how often each followed. ``probs`` is computed from these
        alone; the live site's copy of this draft (``slm_runtime.js``) reads them."""
        return [(contexts.copy(), starts.copy(), nexts.copy(), counts.copy())
                for contexts, starts, nexts, counts in self._counts]

    def _orders(self) -> list[_Order]:
        """Each order's counts as ``_Order`` lookups (about 40 MB for a 6-gram of the
        training text), made the first time a draw needs them."""
        if self._tables is None:
            self._tables = [_Order(*c) for c in self._counts]
        return self._tables

    def _codes(self, ids) -> list[int]:
        """The base-V codes of the last k ids, k = 0 .. min(order - 1, len(ids))."""
        codes, code, scale = [0], 0, 1
        for k in range(1, min(self.order - 1, len(ids)) + 1):
            code += ids[-k] * scale  # the oldest of the last k ids is the most significant
            scale *= self.vocab_size
            codes.append(code)
        return codes

    def sample_chain(self, ids: list[int], us: list[float]) -> tuple[list[int], list[float]]:
        """``len(us)`` ids drawn one after another after ``ids``, the i-th from P(next | ids
        and the ids drawn before it) with the uniform ``us[i]``, and each one's probability,
        without working out a whole distribution.

        The smoothed estimate is a mixture: with weight n / (n + smoothing) the counts of
        the longest context (n of them), otherwise the estimate one order down. So a draw
        walks down the orders, and u, rescaled at each, picks the order and then the
        follower. A probability is computed as ``probs`` computes that entry, with the same
        floating-point operations, so it equals ``probs(...)[id]`` bit for bit."""
        orders, s, V = self._orders(), self.smoothing, self.vocab_size
        codes, drawn, out = self._codes(ids), [], []
        top = self.order - 1
        for u in us:
            levels = [orders[k].level(code) for k, code in enumerate(codes)]
            token = None
            for k in range(len(levels) - 1, -1, -1):
                n = levels[k][2]
                w = n / (n + s)
                if u < w:  # from this order's counts: the follower whose count covers u n / w
                    token = orders[k].follower(levels[k], u / w * n)
                    break
                u = (u - w) / (1 - w)  # uniform again, given that it fell past this order
            if token is None:  # past every order: the uniform prior
                token = min(int(u * V), V - 1)
            q = 1.0 / V
            for k, level in enumerate(levels):
                q = (orders[k].count(level, token) + s * q) / (level[2] + s)
            out.append(token)
            drawn.append(q)
            # the contexts after the new id: each is the one a character shorter, extended
            codes = [0] + [c * V + token for c in codes[: top]]
        return out, drawn

    def sample(self, ids: list[int], u: float) -> tuple[int, float]:
        """One draw of the next id with the uniform ``u``, and its probability
        (``sample_chain`` of one)."""
        out, drawn = self.sample_chain(ids, [u])
        return out[0], drawn[0]

    def probs(self, ids: list[int]) -> np.ndarray:
        """P(next | ids) (V,) in float64, from the last ``order - 1`` ids (fewer at the start),
        order by order from the uniform prior up, with nothing remembered (on unseen text a
        context is rarely asked for again)."""
        orders = self._orders()
        probs = np.full(self.vocab_size, 1.0 / self.vocab_size)
        for k, code in enumerate(self._codes(ids)):
            a, b, n = orders[k].level(code)
            _, _, nexts, counts = self._counts[k]
            row = np.zeros(self.vocab_size)
            row[nexts[a:b]] = counts[a:b]
            probs = (row + self.smoothing * probs) / (n + self.smoothing)
        return probs

    def distribution(self, ids: list[int]) -> torch.Tensor:
        """log P(next | ids) (V,) from the last ``order - 1`` ids (fewer at the start)."""
        ctx = tuple(ids[len(ids) - min(self.order - 1, len(ids)):])
        out = self._logits.get(ctx)
        if out is None:
            out = torch.from_numpy(np.log(self.probs(list(ctx)))).float()
            if len(self._logits) >= self.MEMO_LIMIT:
                self._logits.clear()
            self._logits[ctx] = out
        return out

    def forget(self) -> None:
        """Drop every remembered distribution: the next lookups cost what they cost on text
        this draft has never seen (the bench calls this before each timed run)."""
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


class _ReadsTarget:
    """A draft fed the target's last hidden states (``observe``): what it made of each one,
    by the length of text the state follows, forgotten past a rollback."""

    reads_target_hidden = True

    def __init__(self):
        self.states: dict[int, object] = {}  # n -> what the draft keeps of the state after ids[:n]

    def start(self, ids: list[int], max_len: int) -> None:
        self.states = {}

    def latest(self, length: int) -> int | None:
        """The latest n < length with a state, or None."""
        return max((n for n in self.states if n < length), default=None)

    def rollback(self, length: int) -> None:
        self.states = {n: v for n, v in self.states.items() if n <= length}

    def finish(self) -> None:
        self.start([], 0)


class HeadsDraft(_ReadsTarget):
    """Medusa heads (Cai et al. 2024) as the draft: from ONE target hidden state, head i
    gives q for the i-th token after the one the target is about to emit.

    The verifier draws the next token from the target; the heads then propose up to
    ``n_heads`` tokens past it, each from its own distribution (heads do not see each
    other's proposals). Any q keeps speculative sampling exact, so the output distribution
    is still the target's. A drafting step costs one row lookup; the heads' forward pass
    (a few small matmuls) runs once per round, in ``observe``.
    """

    def __init__(self, heads: DraftHeads, name: str = "heads"):
        if not isinstance(heads, DraftHeads):
            raise TypeError("heads must be DraftHeads "
                            "(shakespeare_lm.speculative.heads.load_heads(model)), "
                            f"got {type(heads).__name__}")
        super().__init__()  # states: n -> every head's logits (n_heads, V) after ids[:n]
        self.heads, self.name = heads, name

    @property
    def max_gamma(self) -> int:
        """The most proposals a round can get: one per head."""
        return self.heads.n_heads

    @torch.no_grad()
    def observe(self, n: int, hidden: torch.Tensor) -> None:
        """The target's last hidden state (C,) after reading ids[:n]: every head's logits."""
        self.states[n] = self.heads(hidden)

    def next_logits(self, ids: list[int]) -> torch.Tensor | None:
        # the latest state before the last id: head i proposes ids[n + i]
        n = self.latest(len(ids))
        i = None if n is None else len(ids) - n
        if i is None or not 1 <= i <= self.heads.n_heads:
            return None
        return self.states[n][i - 1]


class EagleDraft(_ReadsTarget):
    """An EAGLE-style feature head (Li et al. 2024) as the draft: from the target's last
    hidden state and the characters after it, a chain of predicted features, each read out
    with the target's unembedding.

    ``observe`` gets the target's state after the accepted text (the one that predicted the
    character the verifier drew); the first proposal is read from the head's feature after
    that character, the second from its feature after the first proposal, and so on, so
    unlike Medusa's heads each guess sees the ones before it. A step is the head's layer
    with the embedding's half of its first matrix product looked up from a table (V rows),
    about 30 us on one CPU thread. Any q keeps speculative sampling exact.
    """

    can_sample = True

    def __init__(self, head: FeatureHead, name: str = "EAGLE head"):
        if not isinstance(head, FeatureHead):
            raise TypeError("head must be a FeatureHead "
                            "(shakespeare_lm.speculative.eagle.load_feature_head(model)), "
                            f"got {type(head).__name__}")
        super().__init__()  # states: n -> the target's state (C,) after ids[:n]
        self.head, self.name = head, name
        C = head.fc2.out_features
        with torch.no_grad():  # fc1 [h; e(y)] = fc1_h h + (fc1_e e(y) + b1): a row per id
            self._w1 = head.fc1.weight[:, :C].contiguous()
            self._rows = (head.embed @ head.fc1.weight[:, C:].t() + head.fc1.bias).contiguous()
        self.chain: list[tuple[int, torch.Tensor, list[float]]] = []  # (id fed, feature, q)
        self.base = -1                                   # the state the chain starts from

    def start(self, ids: list[int], max_len: int) -> None:
        super().start(ids, max_len)
        self.chain, self.base = [], -1

    def observe(self, n: int, hidden: torch.Tensor) -> None:
        """The target's last hidden state (C,) after reading ids[:n]."""
        self.states[n] = hidden
        if n == self.base:  # a chain drawn from an earlier state at n is stale
            self.chain = []

    @torch.no_grad()
    def _step(self, h: torch.Tensor, y: int) -> tuple[torch.Tensor, list[float]]:
        """The head's feature after h and the id y, and q (V,) read from it."""
        hd = self.head
        z = torch.addmv(self._rows[y], self._w1, h)
        h = F.layer_norm(h + torch.addmv(hd.fc2.bias, hd.fc2.weight, F.silu(z)),
                         hd.ln.normalized_shape, hd.ln.weight, hd.ln.bias, hd.ln.eps)
        return h, torch.softmax(torch.mv(hd.embed, h).double(), -1).tolist()

    def _q(self, ids: list[int]) -> list[float] | None:
        """q (V,) after ``ids``: the chain from the latest state observed before them."""
        n = self.latest(len(ids))
        if n is None:
            return None
        if n != self.base:
            self.chain, self.base = [], n
        fed = ids[n:]
        same = next((j for j, link in enumerate(self.chain[: len(fed)]) if link[0] != fed[j]),
                    min(len(self.chain), len(fed)))
        del self.chain[same:]           # the chain past a changed id is stale
        for y in fed[len(self.chain):]:
            h = self.chain[-1][1] if self.chain else self.states[n]
            self.chain.append((y, *self._step(h, y)))
        return self.chain[-1][2]

    def next_logits(self, ids: list[int]) -> torch.Tensor | None:
        q = self._q(ids)
        return None if q is None else torch.tensor(q).log().float()

    def probs(self, ids: list[int]) -> np.ndarray:
        """q (V,) after ``ids`` in float64, as ``sample_chain`` draws from it."""
        return np.array(self._q(ids))

    def sample_chain(self, ids: list[int], us: list[float]) -> tuple[list[int], list[float]]:
        """``len(us)`` ids drawn one after another after ``ids``, each from q with its
        uniform, and each one's probability under q."""
        out, drawn = [], []
        for u in us:
            q = self._q(list(ids) + out)
            if q is None:
                break
            out.append(draw(q, u))
            drawn.append(q[out[-1]])
        return out, drawn


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
    if isinstance(draft, FeatureHead):
        return EagleDraft(draft)
    raise TypeError(f"draft must be a Transformer, DraftHeads, FeatureHead or a Draft "
                    "(NGramDraft, ModelDraft, PromptLookupDraft, HeadsDraft, EagleDraft), "
                    f"got {type(draft).__name__}")
