"""A character-level tokenizer: one token per character of a fixed alphabet."""

from __future__ import annotations

from collections.abc import Iterable


class CharTokenizer:
    """Map characters to integer ids and back.

    ``encode`` refuses characters outside the vocabulary (``ValueError`` naming the character
    and its position) rather than dropping them, so a prompt is never silently changed.
    """

    def __init__(self, chars: str | Iterable[str]):
        chars = "".join(chars)
        if len(set(chars)) != len(chars):
            raise ValueError(f"vocabulary has repeated characters: {chars!r}")
        if not chars:
            raise ValueError("vocabulary is empty")
        self.chars = chars
        self.stoi = {ch: i for i, ch in enumerate(chars)}

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def __len__(self) -> int:
        return len(self.chars)

    def __repr__(self) -> str:
        return f"CharTokenizer({self.vocab_size} characters: {self.chars!r})"

    def encode(self, text: str) -> list[int]:
        """Text -> list of ids. Unknown character -> ValueError with character and position."""
        if not isinstance(text, str):
            raise TypeError(f"encode expects a str, got {type(text).__name__}")
        try:
            return [self.stoi[ch] for ch in text]
        except KeyError:
            pos = next(i for i, ch in enumerate(text) if ch not in self.stoi)
            raise ValueError(
                f"character {text[pos]!r} at position {pos} is not in the vocabulary; "
                f"the model knows only these {self.vocab_size} characters: {self.chars!r}"
            ) from None

    def decode(self, ids: Iterable[int]) -> str:
        """List (or 1-D tensor) of ids -> text."""
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < self.vocab_size:
                raise ValueError(f"token id {i} is outside the vocabulary range "
                                 f"0..{self.vocab_size - 1}")
            out.append(self.chars[i])
        return "".join(out)
