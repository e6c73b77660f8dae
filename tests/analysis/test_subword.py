"""The byte-level BPE, tokenization counting, the token bigram model and the masks of
``shakespeare_lm.analysis.subword``, on small texts (each BPE here trains in milliseconds)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from shakespeare_lm.analysis import subword as sw

TEXT = ("ROMEO:\nBut soft, what light through yonder window breaks?\n\n"
        "JULIET:\nAy me! O Romeo, Romeo, wherefore art thou Romeo?\n\n") * 20
HELDOUT = "ROMEO:\nShall I hear more, or shall I speak at this?\n\n"


@pytest.fixture(scope="module")
def bpe():
    return sw.train_bpe(320, text=TEXT, cache_dir=None)


def test_every_token_is_its_bytes_and_they_spell_the_text(bpe):
    vocab = sw.token_bytes(bpe)
    assert len(vocab) == bpe.get_vocab_size() == 320
    assert sorted(vocab[:sw.MIN_VOCAB]) == [bytes([b]) for b in range(256)]
    for text in ["Romeo, Romeo!", "Roméo — 🌹", HELDOUT]:
        ids = bpe.encode(text).ids
        assert b"".join(vocab[i] for i in ids) == text.encode()
        assert bpe.decode(ids) == text


@pytest.mark.parametrize("small", [256, 270, 300])
def test_truncating_merges_gives_the_bpe_trained_to_that_size(bpe, small):
    direct = sw.train_bpe(small, text=TEXT, cache_dir=None)
    direct = json.loads(direct.to_str())["model"]
    cut = json.loads(sw.truncate_bpe(bpe, small).to_str())["model"]
    assert cut["vocab"] == direct["vocab"] and cut["merges"] == direct["merges"]


def test_bpe_is_cached_by_text_and_size(tmp_path, bpe):
    first = sw.train_bpe(320, text=TEXT, cache_dir=tmp_path)
    assert first.to_str() == bpe.to_str()  # training is deterministic
    (path,) = tmp_path.glob("bpe-*.json")
    again = sw.train_bpe(320, text=TEXT, cache_dir=tmp_path)
    assert again.to_str() == first.to_str()
    assert list(tmp_path.glob("bpe-*.json")) == [path]
    sw.train_bpe(300, text=TEXT, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("bpe-*.json"))) == 2


def test_sizes_outside_the_vocabulary_are_refused(bpe):
    with pytest.raises(ValueError, match="vocab_size=100 is invalid.*256 bytes"):
        sw.train_bpe(100, text=TEXT, cache_dir=None)
    with pytest.raises(ValueError, match="vocab_size=400 is invalid.*smaller vocab"):
        sw.truncate_bpe(bpe, 400)


def test_speeches_are_encoded_one_by_one_and_cached(tmp_path, bpe):
    ids = sw.encode_speeches(bpe, TEXT, cache_dir=tmp_path)
    expected = [i for s in sw.speeches(TEXT) for i in bpe.encode(s).ids]
    assert ids.tolist() == expected
    assert "".join(sw.speeches(TEXT)) == TEXT
    assert sw.encode_speeches(bpe, TEXT, cache_dir=tmp_path).tolist() == expected
    assert len(list(tmp_path.glob("bpe-ids-*.npy"))) == 1


def brute_force_tokenizations(data: bytes, vocab: list[bytes]) -> list[list[int]]:
    """Every token sequence that spells ``data``, by trying every way to cut it."""
    out = []
    for cuts in itertools.product([False, True], repeat=len(data) - 1):
        bounds = [0] + [i + 1 for i, c in enumerate(cuts) if c] + [len(data)]
        pieces = [data[a:b] for a, b in zip(bounds, bounds[1:])]
        if all(p in vocab for p in pieces):
            out.append([vocab.index(p) for p in pieces])
    return out


@pytest.mark.parametrize("text, expected",
                         [("abab", 4), ("a", 1), ("ba", 1), ("abc", 0)])
def test_counting_tokenizations_by_hand(text, expected):
    assert sw.count_tokenizations(text, [b"a", b"b", b"ab"]) == expected


def test_a_character_vocabulary_has_one_tokenization_per_string():
    from shakespeare_lm.corpus import ALPHABET

    chars = [c.encode() for c in ALPHABET]
    assert sw.count_tokenizations("KATHARINA:\nMoved! in good time: ", chars) == 1


@pytest.mark.parametrize("seed", range(5))
def test_count_and_marginal_agree_with_enumeration(seed):
    rng = np.random.default_rng(seed)
    vocab = [b"a", b"b", b"c", b"ab", b"bc", b"abc", b"ca"]
    data = bytes(rng.choice(list(b"abc"), size=7).tolist())
    paths = brute_force_tokenizations(data, vocab)
    assert sw.count_tokenizations(data, vocab) == len(paths)
    assert sorted(sw.tokenizations(data, vocab)) == sorted(map(tuple, paths))
    ids = rng.integers(0, len(vocab), size=200)
    model = sw.BigramModel.fit(ids, ids[:50], len(vocab))
    assert paths  # every single byte is a token
    total = sum(math.exp(model.path_logprob(0, p)) for p in paths)
    marginal = model.string_logprob(0, data, vocab)
    assert marginal == pytest.approx(math.log(total), rel=1e-12)


def test_bigram_distributions_sum_to_one_and_the_weight_is_the_heldout_best(bpe):
    train = sw.encode_speeches(bpe, TEXT, cache_dir=None)
    heldout = sw.encode_speeches(bpe, HELDOUT, cache_dir=None)
    model = sw.BigramModel.fit(train, heldout, bpe.get_vocab_size())
    unseen = next(i for i in range(model.vocab_size) if model.totals[i] == 0)
    for prev in (int(train[0]), int(train[5]), unseen):
        p = model.next_probs(prev)
        assert p.min() > 0 and p.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(model.next_probs(unseen), model.unigram)
    scores = {w: sw.BigramModel(model.counts, model.unigram, w).nats_per_token(heldout)
              for w in sw.WEIGHT_GRID}
    assert model.weight in sw.WEIGHT_GRID
    assert scores[model.weight] == min(scores.values())
    assert model.nats_per_token(train) < model.nats_per_token(heldout)


def test_fitting_rejects_ids_outside_the_vocabulary():
    message = r"train_ids must hold .* in \[0, 3\); got 3 ids in \[0, 5\]"
    with pytest.raises(ValueError, match=message):
        sw.BigramModel.fit(np.array([0, 5, 1]), np.array([0, 1]), 3)


def test_masks_allow_prefixes_of_targets_and_extensions_of_a_prefix():
    vocab = [b"", b"H", b"HA", b"HAM", b"HAMLET", b"AM", b"LET", b"I", b"IAGO", b"HI"]
    first = sw.prefix_mask(vocab, ["HAMLET", "IAGO"])
    allowed = [vocab[i] for i in np.flatnonzero(first)]
    assert allowed == [b"H", b"HA", b"HAM", b"HAMLET", b"I", b"IAGO"]
    after = sw.prefix_mask(vocab, ["HAMLET", "IAGO"], emitted=b"HAM")
    assert [vocab[i] for i in np.flatnonzero(after)] == [b"LET"]
    healed = sw.healing_mask(vocab, "HA")
    assert [vocab[i] for i in np.flatnonzero(healed)] == [b"HA", b"HAM", b"HAMLET"]


@pytest.mark.parametrize("seed", range(3))
def test_masked_paths_are_every_tokenization_with_the_masked_sampling_probability(seed):
    rng = np.random.default_rng(seed)
    vocab = [b"H", b"A", b"M", b"L", b"E", b"T", b":", b"I", b"G", b"O", b"HAM", b"LET",
             b"HAMLET", b"IA", b"GO", b"IAGO", b"ET:"]
    targets = ["HAMLET:", "IAGO:"]
    ids = rng.integers(0, len(vocab), size=300)
    model = sw.BigramModel.fit(ids, ids[:60], len(vocab))
    paths = sw.masked_paths(model, 0, targets, vocab)
    assert sum(p for _, _, p in paths) == pytest.approx(1.0, abs=1e-12)
    for t in targets:
        found = sorted(p for g, p, _ in paths if g == t.encode())
        assert found == sorted(map(tuple, brute_force_tokenizations(t.encode(), vocab)))
    # one path by hand: mask, renormalise, multiply, step by step
    path, prob, emitted, last = paths[0][1], 1.0, b"", 0
    for i in path:
        allowed = sw.prefix_mask(vocab, targets, emitted)
        p = model.next_probs(last) * allowed
        prob, emitted, last = prob * p[i] / p.sum(), emitted + vocab[i], i
    assert paths[0][2] == pytest.approx(prob, rel=1e-12)
    greedy, emitted, last = [], b"", 0
    while emitted not in (b"HAMLET:", b"IAGO:"):
        p = model.next_probs(last) * sw.prefix_mask(vocab, targets, emitted)
        last = int(np.argmax(p))
        greedy.append(last)
        emitted += vocab[last]
    assert sw.masked_greedy(model, 0, targets, vocab) == tuple(greedy)


def test_targets_that_start_one_another_are_refused():
    model = sw.BigramModel.fit(np.array([0, 1, 0, 1]), np.array([1, 0]), 2)
    with pytest.raises(ValueError, match="prefix-free, but b'A' starts another"):
        sw.masked_paths(model, 0, ["A", "AB"], [b"A", b"B"])
