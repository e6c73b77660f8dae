"""Subword tokens beside our characters: a byte-level BPE trained on the corpus, its
token boundaries, and a token bigram model to measure what a boundary costs.

Our model reads characters, so every string has one tokenization and every token is a
whole character. Production models read subword tokens from byte-pair encoding (BPE;
Sennrich et al. 2016) over UTF-8 bytes (GPT-2's byte-level BPE; Radford et al. 2019).
This module gives chapter 8 such a vocabulary, with the real ``tokenizers`` library:

* :func:`train_bpe` trains a byte-level BPE on the training plays (cached under
  ``cache/`` by the corpus's sha256); :func:`truncate_bpe` keeps its first merges, which
  is the BPE trained to a smaller vocabulary (the trainer adds merges greedily, in
  order).
* :func:`token_bytes` gives each token's bytes; :func:`count_tokenizations` counts the
  ways a string can be spelled with the vocabulary (dynamic programming over its bytes).
* :class:`BigramModel` is a token-level language model by counting, interpolated with
  the unigram (Jelinek and Mercer 1980; the weight is chosen on held-out text). It gives
  the probability of one token path, or of a string over all its tokenizations.
* :func:`prefix_mask` and :func:`healing_mask` are the vocabulary masks of a constrained
  decoder (Willard and Louf 2023) and of token healing (Lundberg and Ribeiro 2023).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..corpus import load_train, sha256_text
from ..checks import check_count, optional_import
from ..paths import CACHE_DIR

MIN_VOCAB = 256  # the byte alphabet: every byte is a token, so any string is spelled
WEIGHT_GRID = tuple(i / 20 for i in range(1, 20))  # bigram weights tried: 0.05 ... 0.95
FORMAT_VERSION = 1  # bump when training or encoding changes: old caches are ignored


def _byte_to_char() -> dict[int, str]:
    """GPT-2's byte-level alphabet: each byte as a printable character (space: 'Ġ')."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {b: chr(b) for b in printable}, 0
    for b in range(256):
        if b not in table:
            table[b], extra = chr(256 + extra), extra + 1
    return table


CHAR_TO_BYTE = {c: b for b, c in _byte_to_char().items()}


def new_bpe_trainer(vocab_size: int):
    """An untrained byte-level BPE tokenizer, and its trainer for ``vocab_size``."""
    tk = optional_import("tokenizers", "shakespeare_lm.analysis.subword")
    check_count("vocab_size", vocab_size, MIN_VOCAB,
                hint=f" (the {MIN_VOCAB} bytes come first, then one token per merge)")
    tokenizer = tk.Tokenizer(tk.models.BPE())
    tokenizer.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(
        vocab_size=vocab_size, show_progress=False,
        initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet())
    return tokenizer, trainer


def speeches(text: str) -> list[str]:
    """The corpus cut into speeches, each ending in its blank line: the unit the BPE is
    trained on and encodes (in parallel). No token spans two speeches."""
    return [s + "\n\n" for s in text.rstrip("\n").split("\n\n")]


def train_bpe(vocab_size: int = 4000, text: str | None = None,
              cache_dir: Path | str | None = CACHE_DIR):
    """A byte-level BPE of ``vocab_size`` tokens trained on the speeches of ``text``
    (the training plays by default).

    Training is deterministic; the result is cached as ``bpe-<key>.json`` in
    ``cache_dir`` (``None``: no cache), the key a hash of the text, the size and the
    library's version.
    """
    tk = optional_import("tokenizers", "shakespeare_lm.analysis.subword")
    text = load_train() if text is None else text
    key = _key("bpe", sha256_text(text), vocab_size, tk.__version__)
    path = None if cache_dir is None else Path(cache_dir) / f"bpe-{key}.json"
    if path is not None and path.exists():
        return tk.Tokenizer.from_file(str(path))
    tokenizer, trainer = new_bpe_trainer(vocab_size)
    tokenizer.train_from_iterator(speeches(text), trainer=trainer)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tokenizer.save(str(path))
    return tokenizer


def truncate_bpe(tokenizer, vocab_size: int):
    """The same BPE with only its first ``vocab_size - 256`` merges: the tokenizer that
    training to ``vocab_size`` would have produced."""
    tk = optional_import("tokenizers", "shakespeare_lm.analysis.subword")
    spec = json.loads(tokenizer.to_str())
    model = spec["model"]
    check_count("vocab_size", vocab_size, MIN_VOCAB, len(model["vocab"]),
                hint=" (a BPE can only be cut to a smaller vocabulary)")
    model["vocab"] = {s: i for s, i in model["vocab"].items() if i < vocab_size}
    model["merges"] = model["merges"][: vocab_size - MIN_VOCAB]
    return tk.Tokenizer.from_str(json.dumps(spec))


def tokenizer_sha256(tokenizer) -> str:
    """sha256 of the tokenizer's JSON: its identity, for caches."""
    return hashlib.sha256(tokenizer.to_str().encode()).hexdigest()


def token_bytes(tokenizer) -> list[bytes]:
    """Each token id's bytes (ids are 0..V-1)."""
    vocab = tokenizer.get_vocab()
    out = [b""] * len(vocab)
    for s, i in vocab.items():
        out[i] = bytes(CHAR_TO_BYTE[c] for c in s)
    return out


def encode_speeches(tokenizer, text: str,
                    cache_dir: Path | str | None = CACHE_DIR) -> np.ndarray:
    """Token ids of ``text``, encoded speech by speech (see :func:`speeches`); cached as
    ``bpe-ids-<key>.npy`` in ``cache_dir`` (``None``: no cache)."""
    key = _key("ids", tokenizer_sha256(tokenizer), sha256_text(text))
    path = None if cache_dir is None else Path(cache_dir) / f"bpe-ids-{key}.npy"
    if path is not None and path.exists():
        return np.load(path)
    encoded = tokenizer.encode_batch_fast(speeches(text))
    ids = np.fromiter((i for e in encoded for i in e.ids), np.int32)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, ids)
    return ids


def _key(*parts) -> str:
    spec = json.dumps([FORMAT_VERSION, *parts])
    return hashlib.sha256(spec.encode()).hexdigest()[:20]


# --- tokenizations -------------------------------------------------------------------
def spans(data: bytes, vocab: Sequence[bytes]) -> list[list[tuple[int, int]]]:
    """For each end position j of ``data`` (0..len): the (start i, token id) of every
    token that spells data[i:j]."""
    index = {b: i for i, b in enumerate(vocab) if b}
    longest = max(len(b) for b in index)
    return [[(i, index[data[i:j]]) for i in range(max(0, j - longest), j)
             if data[i:j] in index] for j in range(len(data) + 1)]


def count_tokenizations(data: bytes | str, vocab: Sequence[bytes]) -> int:
    """How many token sequences spell ``data`` (1 for a character vocabulary)."""
    data = data.encode() if isinstance(data, str) else data
    ways = [1] + [0] * len(data)  # ways[j]: tokenizations of data[:j]
    for j, ending in enumerate(spans(data, vocab)):
        ways[j] += sum(ways[i] for i, _ in ending)
    return ways[-1]


def tokenizations(data: bytes | str, vocab: Sequence[bytes]) -> list[tuple[int, ...]]:
    """Every token sequence that spells ``data`` (there are ``count_tokenizations`` of
    them, which grows exponentially with the length: keep ``data`` short)."""
    data = data.encode() if isinstance(data, str) else data
    found: list[list[tuple[int, ...]]] = [[()]]  # found[j]: the tokenizations of data[:j]
    for ending in spans(data, vocab)[1:]:
        found.append([p + (t,) for i, t in ending for p in found[i]])
    return found[-1]


def prefix_mask(vocab: Sequence[bytes], targets: Sequence[bytes | str],
                emitted: bytes = b"") -> np.ndarray:
    """(V,) bool: the tokens after which the output (``emitted`` + token) is still a
    prefix of one of ``targets``: what a constrained decoder must allow, whatever the
    tokenization."""
    goals = [t.encode() if isinstance(t, str) else t for t in targets]
    return np.array([bool(b) and any(g.startswith(emitted + b) for g in goals)
                     for b in vocab])


def healing_mask(vocab: Sequence[bytes], prefix: bytes | str) -> np.ndarray:
    """(V,) bool: the tokens that begin with ``prefix``. Token healing backs up the
    prompt's last token and lets the first new token be any token that extends it."""
    prefix = prefix.encode() if isinstance(prefix, str) else prefix
    return np.array([b.startswith(prefix) for b in vocab])


# --- a token bigram model ------------------------------------------------------------
@dataclass
class BigramModel:
    """p(b | a) = w * count(a, b) / count(a) + (1 - w) * unigram(b), by counting.

    ``counts`` (V, V) are bigram counts of the training tokens; ``unigram`` (V,) add-one
    smoothed token frequencies, so every token has some probability after every other;
    ``weight`` is w (a token never followed by anything gets the unigram alone).
    """

    counts: np.ndarray
    unigram: np.ndarray
    weight: float

    def __post_init__(self):
        self.totals = self.counts.sum(-1)  # (V,) how often each token had a successor

    @classmethod
    def fit(cls, train_ids: np.ndarray, heldout_ids: np.ndarray, vocab_size: int,
            grid: Sequence[float] = WEIGHT_GRID) -> BigramModel:
        """Count ``train_ids``; choose ``weight`` in ``grid`` by held-out likelihood."""
        check_count("vocab_size", vocab_size, 1)
        for name, ids in (("train_ids", train_ids), ("heldout_ids", heldout_ids)):
            ids = np.asarray(ids)
            if ids.size < 2 or ids.min() < 0 or ids.max() >= vocab_size:
                raise ValueError(f"{name} must hold at least 2 token ids in "
                                 f"[0, {vocab_size}); got {ids.size} ids in "
                                 f"[{ids.min()}, {ids.max()}]")
        train_ids = np.asarray(train_ids, np.int64)
        pairs = train_ids[:-1] * vocab_size + train_ids[1:]
        counts = np.bincount(pairs, minlength=vocab_size**2)
        unigram = np.bincount(train_ids, minlength=vocab_size) + 1.0
        model = cls(counts.reshape(vocab_size, vocab_size).astype(np.float64),
                    unigram / unigram.sum(), 0.5)
        scores = [cls(model.counts, model.unigram, g).nats_per_token(heldout_ids)
                  for g in grid]
        model.weight = float(grid[int(np.argmin(scores))])
        return model

    @property
    def vocab_size(self) -> int:
        return len(self.unigram)

    def prob(self, prev, nxt) -> np.ndarray:
        """p(nxt | prev), elementwise over token ids (ints or arrays)."""
        prev, nxt = np.asarray(prev), np.asarray(nxt)
        total = self.totals[prev]
        w = np.where(total > 0, self.weight, 0.0)
        seen = self.counts[prev, nxt] / np.maximum(total, 1)
        return w * seen + (1 - w) * self.unigram[nxt]

    def next_probs(self, prev: int) -> np.ndarray:
        """(V,) the distribution of the token after token ``prev``."""
        return self.prob(np.full(self.vocab_size, prev), np.arange(self.vocab_size))

    def nats_per_token(self, ids: np.ndarray) -> float:
        """Mean -log p(token | previous token) over ``ids``."""
        ids = np.asarray(ids)
        return float(-np.log(self.prob(ids[:-1], ids[1:])).mean())

    def path_logprob(self, prev: int, ids: Sequence[int]) -> float:
        """log p of the token path ``ids`` after token ``prev``."""
        path = np.array([prev, *ids])
        return float(np.log(self.prob(path[:-1], path[1:])).sum())

    def string_logprob(self, prev: int, data: bytes | str,
                       vocab: Sequence[bytes]) -> float:
        """log p of the string ``data`` after token ``prev``, summed over all its
        tokenizations (the forward algorithm: alpha[j][t] is the probability of spelling
        data[:j] with a path whose last token is t)."""
        data = data.encode() if isinstance(data, str) else data
        alpha: list[dict[int, float]] = [{prev: 1.0}]
        for ending in spans(data, vocab)[1:]:
            here: dict[int, float] = {}
            for i, t in ending:
                for last, a in alpha[i].items():
                    here[t] = here.get(t, 0.0) + a * float(self.prob(last, t))
            alpha.append(here)
        return float(np.log(sum(alpha[-1].values())))


# --- constrained decoding over tokens ------------------------------------------------
def masked_paths(model: BigramModel, prev: int, targets: Sequence[bytes | str],
                 vocab: Sequence[bytes]) -> list[tuple[bytes, tuple[int, ...], float]]:
    """Every token path by which a masked decoder can spell one of ``targets`` after
    token ``prev``, with the probability that sampling gives it when each step masks the
    tokens :func:`prefix_mask` forbids and renormalises the rest: (target, path, prob),
    in the order of ``targets``. The targets must be prefix-free (no target is the start
    of another), so a path ends where its target does."""
    goals = [t.encode() if isinstance(t, str) else t for t in targets]
    for a in goals:
        if any(b != a and b.startswith(a) for b in goals):
            raise ValueError(f"targets must be prefix-free, but {a!r} starts another "
                             "target; end each with a delimiter such as ':'")
    useful = [i for i, b in enumerate(vocab) if b and any(b in g for g in goals)]
    done, stack = [], [(b"", prev, 1.0, ())]
    while stack:
        emitted, last, prob, path = stack.pop()
        if emitted in goals:
            done.append((emitted, path, prob))
            continue
        allowed = np.array([i for i in useful
                            if any(g.startswith(emitted + vocab[i]) for g in goals)])
        p = model.prob(np.full(len(allowed), last), allowed)
        stack += [(emitted + vocab[i], int(i), prob * q, path + (int(i),))
                  for i, q in zip(allowed, p / p.sum())]
    return sorted(done, key=lambda d: (goals.index(d[0]), d[1]))


def masked_greedy(model: BigramModel, prev: int, targets: Sequence[bytes | str],
                  vocab: Sequence[bytes]) -> tuple[int, ...]:
    """The path a greedy masked decoder takes: the most probable allowed token, each
    step, until the output is one of ``targets``."""
    paths = masked_paths(model, prev, targets, vocab)
    path: tuple[int, ...] = ()
    while not any(p == path for _, p, _ in paths):
        steps = {p[len(path)]: 0.0 for _, p, _ in paths if p[: len(path)] == path}
        probs = model.prob(np.full(len(steps), path[-1] if path else prev), list(steps))
        path += (list(steps)[int(np.argmax(probs))],)
    return path
