import pytest

from shakespeare_lm import CharTokenizer
from shakespeare_lm.corpus import ALPHABET, load_train


def test_roundtrip_on_corpus_sample(tok):
    text = load_train()[:5000]
    assert tok.decode(tok.encode(text)) == text


def test_vocabulary_is_the_documented_alphabet(tok):
    assert tok.vocab_size == len(ALPHABET) == 63
    assert set(load_train()) <= set(ALPHABET)


@pytest.mark.parametrize("text,char,pos", [("Hello{", "{", 5), ("é", "é", 0), ("ab3c", "3", 2)])
def test_unknown_character_names_character_and_position(tok, text, char, pos):
    with pytest.raises(ValueError) as e:
        tok.encode(text)
    msg = str(e.value)
    assert repr(char) in msg and f"position {pos}" in msg


def test_decode_out_of_range_id(tok):
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([0, 99])


def test_repeated_vocabulary_is_rejected():
    with pytest.raises(ValueError, match="repeated"):
        CharTokenizer("aab")
