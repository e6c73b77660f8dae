import math

import pytest
import torch

from shakespeare_lm.analysis import metrics as M

from ..conftest import make_tiny


# --- words ----------------------------------------------------------------------------
def test_words_are_lowercased_letter_runs_keeping_inner_apostrophes():
    text = "KATHARINA:\n'Tis o'er, well-a-day! Ne'er 3 times--no."
    assert M.words(text) == ["katharina", "tis", "o'er", "well", "a", "day", "ne'er",
                             "times", "no"]


def test_keep_case_returns_the_words_as_written():
    assert M.words("KATHARINA:\nO'er Padua", keep_case=True) == ["KATHARINA", "O'er", "Padua"]


def test_complete_drops_only_a_word_cut_by_the_end_of_the_text():
    assert M.words("good morrow, Kat", complete=True) == ["good", "morrow"]
    assert M.words("good morrow, Kate.", complete=True) == ["good", "morrow", "kate"]
    assert M.words("good morrow ", complete=True) == ["good", "morrow"]
    assert M.words("", complete=True) == []


def test_words_refuses_a_non_string():
    with pytest.raises(TypeError, match="text must be a str"):
        M.words(["a list"])


# --- real words -----------------------------------------------------------------------
VOCAB = M.vocabulary("I come to wive it wealthily in Padua; if wealthily, then happily.")


def test_real_word_share_counts_words_found_in_the_vocabulary():
    # words: i, come, to, wive, it, xqz, in, padua, (cut 'blorf' not counted)
    texts = ["I come to wive it xqz in Padua. blorf"]
    assert M.real_word_counts(texts, VOCAB) == (7, 8)
    assert M.real_word_share(texts, VOCAB) == pytest.approx(7 / 8)


def test_real_word_share_pools_words_over_samples():
    texts = ["wive wive wive.", "zzz yyy\n"]
    assert M.real_word_share(texts, VOCAB) == pytest.approx(3 / 5)


def test_real_word_share_is_nan_without_words_and_refuses_a_bare_string():
    assert math.isnan(M.real_word_share([",.;\n", ""], VOCAB))
    with pytest.raises(TypeError, match="list of str"):
        M.real_word_share("I come", VOCAB)


# --- repetition and diversity ---------------------------------------------------------
def test_repeated_trigrams_count_trigrams_seen_earlier_in_the_same_sample():
    # trigrams: (a b c) (b c a) (c a b) (a b c)* (b c d) -> one repeat of five
    assert M.repeated_ngram_counts("a b c a b c d.", 3) == (1, 5)
    # greedy-like loop: "to be to be to be." trigrams tbt btb tbt* btb* -> 2 of 4
    assert M.repeated_ngram_counts("to be to be to be.", 3) == (2, 4)


def test_repeated_trigram_share_does_not_count_repeats_across_samples():
    assert M.repeated_trigram_share(["a b c.", "a b c."]) == 0.0
    assert M.repeated_trigram_share(["a b c a b c d.", "x y z."]) == pytest.approx(1 / 6)
    assert math.isnan(M.repeated_trigram_share(["two words."]))


def test_distinct_n_is_distinct_over_all_ngrams_of_all_samples():
    texts = ["the cat the cat.", "the dog."]
    assert M.distinct_n(texts, 1) == pytest.approx(3 / 6)   # the, cat, dog of 6 words
    assert M.distinct_n(texts, 2) == pytest.approx(3 / 4)   # (the cat) x2, (cat the), (the dog)
    assert M.distinct_n(["a b c d."], 2) == 1.0
    with pytest.raises(ValueError, match="n=0 is invalid"):
        M.distinct_n(texts, 0)


# --- likelihood -----------------------------------------------------------------------
@pytest.mark.parametrize("block", [8, 9, 128])
def test_window_start_gives_every_character_a_context_inside_the_window(block):
    h = block // 2
    for i in range(1, 5 * block):
        start = M.window_start(i, block)
        assert 0 <= start < i and i - start <= block - 1
        if i >= h:
            assert i - start >= h                    # at least half a window of context
    assert M.window_start(2 * h, block) == h


@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_char_logprobs_inside_the_window_equal_one_full_pass(tok, batch_size):
    model = make_tiny()
    prompts = ["KATHARINA:\n", "O", "BIANCA:\nGood sister"]
    conts = ["Moved!", "h, no", ", wrong me not"]
    got = M.char_logprobs(model, tok, prompts, conts, batch_size=batch_size)
    for p, c, lp in zip(prompts, conts, got):
        ids = torch.tensor([tok.encode(p + c)])
        logp = torch.log_softmax(model(ids)[0], -1)[len(p) - 1 : -1]
        expected = logp.gather(-1, torch.tensor(tok.encode(c))[:, None]).squeeze(-1)
        assert lp.shape == (len(c),)
        assert torch.allclose(lp, expected, atol=1e-5)


def test_char_logprobs_past_the_window_use_the_restarting_windows(tok):
    model = make_tiny(block_size=16)                 # h = 8
    text = "KATHARINA:\nMoved! in good time: let him that moved you hither"
    p, c = text[:5], text[5:]
    (lp,) = M.char_logprobs(model, tok, [p], [c])
    ids = tok.encode(text)
    for i in range(len(p), len(text)):
        s = M.window_start(i, 16)
        logp = torch.log_softmax(model(torch.tensor([ids[s:i]]))[0, -1], -1)[ids[i]]
        assert lp[i - len(p)].item() == pytest.approx(logp.item(), abs=1e-5)


def test_char_logprobs_checks_its_inputs(tiny, tok):
    with pytest.raises(ValueError, match="2 prompts but 1 continuations"):
        M.char_logprobs(tiny, tok, ["a", "b"], ["c"])
    with pytest.raises(ValueError, match="prompt 1 is empty"):
        M.char_logprobs(tiny, tok, ["a", ""], ["c", "d"])
    assert M.char_logprobs(tiny, tok, ["a"], [""])[0].numel() == 0


def test_nats_per_char_and_probability_shares_on_known_probabilities():
    lps = [torch.tensor([0.05, 0.5, 0.95]).log(), torch.tensor([0.99]).log()]
    expected = -sum(math.log(p) for p in (0.05, 0.5, 0.95, 0.99)) / 4
    assert M.nats_per_char(lps) == pytest.approx(expected)
    assert M.probability_shares(lps) == pytest.approx((1 / 4, 2 / 4))
    assert M.probability_shares(lps, low=0.6, high=0.6) == pytest.approx((2 / 4, 2 / 4))
    with pytest.raises(ValueError, match="low=0.9, high=0.1"):
        M.probability_shares(lps, low=0.9, high=0.1)
    assert math.isnan(M.nats_per_char([torch.zeros(0)]))
