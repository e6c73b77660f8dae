"""Constraints as automata over characters: what may come next, and how a text advances them.

A constraint follows the protocol below (shared by ``generate``, ``beam_search`` and
speculative decoding through ``shakespeare_lm.decoding.sampler``). Decoders set the logits of
disallowed characters to ``-inf`` after the penalties and before temperature and truncation,
so masking is renormalisation of the model's distribution over the allowed set (Willard and
Louf 2023), and they stop with ``stop_reason == "constraint"`` once the automaton accepts and
cannot continue.

Three constraints, all over the characters of a ``CharTokenizer``:

* ``RegexConstraint``: a regular expression compiled by ``interegular`` to a deterministic
  automaton, with the allowed-character mask of every state precomputed over the vocabulary;
* ``BracketListConstraint``: the grammar ``[ d (, d)* ]`` as a small pushdown automaton
  (optionally with nested lists, which no finite automaton can check);
* ``ChoiceConstraint``: exactly one of a list of labels, as a trie.

What masking does to the distribution is analysed in ``shakespeare_lm.decoding.constrained``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import NamedTuple, Protocol, runtime_checkable

import torch

from .checks import check_count

State = Hashable
NEG_INF = float("-inf")


@runtime_checkable
class Constraint(Protocol):
    """An automaton over characters; see the module docstring and CONTRIBUTING.md."""

    def start(self) -> State: ...
    def allowed(self, state: State) -> torch.Tensor: ...   # (V,) bool mask over the vocabulary
    def advance(self, state: State, token_id: int) -> State: ...
    def is_accepting(self, state: State) -> bool: ...
    def can_continue(self, state: State) -> bool: ...


class ConstraintError(ValueError):
    """The constraint has no allowed character in some state: nothing can be generated."""


# --- helpers every decoder uses ------------------------------------------------------
def check_constraint(constraint, vocab_size: int) -> None:
    """Raise TypeError unless ``constraint`` follows the protocol with a (vocab_size,) mask."""
    missing = [m for m in ("start", "allowed", "advance", "is_accepting", "can_continue")
               if not callable(getattr(constraint, m, None))]
    if missing:
        raise TypeError(f"constraint={constraint!r:.80} is invalid: it must follow the Constraint "
                        f"protocol of shakespeare_lm.decoding.constrained, but lacks {missing}")
    mask = constraint.allowed(constraint.start())
    if not (isinstance(mask, torch.Tensor) and mask.dtype == torch.bool
            and tuple(mask.shape) == (vocab_size,)):
        raise TypeError(f"constraint.allowed must return a bool tensor of shape ({vocab_size},) "
                        f"(the model's vocabulary), got {getattr(mask, 'dtype', type(mask))} "
                        f"{tuple(getattr(mask, 'shape', ()))}")


def allowed_or_raise(constraint, state: State, prefix: str, where: str = "") -> torch.Tensor:
    """``constraint.allowed(state)``, or ConstraintError naming the state and the prefix when
    no character is allowed (decoding would otherwise divide by zero and produce NaN)."""
    mask = constraint.allowed(state)
    if not bool(mask.any()):
        raise ConstraintError(
            f"the constraint allows no next character in state {state!r} after the generated "
            f"prefix {prefix!r}{where}: no continuation can satisfy it. Check that every character "
            f"the constraint needs is in the model's vocabulary, and that the prefix is valid")
    return mask


def mask_logits(logits: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Set disallowed logits to -inf: (..., V) logits, (..., V) bool mask -> (..., V)."""
    return logits.masked_fill(~allowed.to(logits.device), NEG_INF)


# --- a common base: walking a text, naming the allowed characters ---------------------
class CharConstraint:
    """Helpers shared by the constraints below; subclasses implement the protocol."""

    tok = None  # the CharTokenizer whose vocabulary the masks are over

    def walk(self, text: str, state: State | None = None) -> State:
        """The state after reading ``text`` from ``state`` (default: the start).
        A character the constraint forbids raises ConstraintError naming it."""
        state = self.start() if state is None else state
        for i, ch in enumerate(text):
            if ch not in self.tok.stoi or not bool(self.allowed(state)[self.tok.stoi[ch]]):
                raise ConstraintError(
                    f"character {ch!r} at position {i} of {text!r} is not allowed in state "
                    f"{state!r}; allowed there: {self.allowed_chars(state)!r}")
            state = self.advance(state, self.tok.stoi[ch])
        return state

    def matches(self, text: str) -> bool:
        """Whether ``text`` is a complete match (every character allowed, ending accepting)."""
        try:
            return self.is_accepting(self.walk(text))
        except ConstraintError:
            return False

    def allowed_chars(self, state: State) -> str:
        """The allowed next characters in ``state``, as a string in vocabulary order."""
        ids = torch.nonzero(self.allowed(state)).flatten().tolist()
        return "".join(self.tok.chars[i] for i in ids)

    def _check_token(self, state: State, token_id: int) -> None:
        check_count("token_id", token_id, 0, self.tok.vocab_size - 1)
        if not bool(self.allowed(state)[token_id]):
            raise ConstraintError(f"character {self.tok.chars[token_id]!r} is not allowed in "
                                  f"state {state!r}; allowed: {self.allowed_chars(state)!r}")


# --- a regular expression as a character automaton -----------------------------------
class RegexConstraint(CharConstraint):
    """The text must match ``pattern`` (Python ``re.fullmatch`` syntax, as far as
    ``interegular`` supports it). States are ints; ``allowed`` is a table lookup.

    The pattern is compiled to a deterministic automaton by ``interegular`` (a regex-to-FSM
    library also used by Outlines; Willard and Louf 2023). Its transitions are read once per
    vocabulary character into ``next_state`` (S, V), and only moves into states from which an
    accepting state can still be reached with the vocabulary are allowed, so a generation can
    never walk into a dead end.
    """

    def __init__(self, pattern: str, tok):
        import interegular  # imported here: only constrained decoding needs it

        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"pattern={pattern!r} is invalid: it must be a non-empty regex str")
        try:
            fsm = interegular.parse_pattern(pattern).to_fsm()
        except Exception as e:  # interegular raises its own InvalidSyntax / Unsupported
            raise ValueError(f"pattern={pattern!r} cannot be compiled to an automaton "
                             f"({type(e).__name__}: {e}); use plain regex syntax without "
                             "anchors, backreferences or lookaround") from None
        self.pattern, self.tok = pattern, tok
        # Number states canonically: breadth-first from the start, characters in vocabulary
        # order. interegular's own numbers depend on set iteration order, which changes with
        # Python's hash seed from run to run; states no vocabulary character reaches drop out.
        order, i = [fsm.initial], 0
        while i < len(order):
            row = fsm.map.get(order[i], {})
            for ch in tok.chars:
                dest = row.get(fsm.alphabet[ch])
                if dest is not None and dest not in order:
                    order.append(dest)
            i += 1
        index = {s: i for i, s in enumerate(order)}            # the start state is 0
        S, V = len(order), tok.vocab_size
        nxt = torch.full((S, V), -1, dtype=torch.long)
        for s in order:
            row = fsm.map.get(s, {})
            for v, ch in enumerate(tok.chars):
                dest = row.get(fsm.alphabet[ch])
                if dest is not None:
                    nxt[index[s], v] = index[dest]
        accepting = torch.tensor([s in fsm.finals for s in order])
        live = accepting.clone()                               # can still reach a final state
        while True:
            reach = (nxt >= 0) & live[nxt.clamp(min=0)]
            grown = live | reach.any(-1)
            if torch.equal(grown, live):
                break
            live = grown
        self.mask = (nxt >= 0) & live[nxt.clamp(min=0)]         # (S, V) allowed characters
        self.next_state = torch.where(self.mask, nxt, torch.full_like(nxt, -1))
        self.accepting, self.live = accepting, live

    def __repr__(self) -> str:
        return f"RegexConstraint({self.pattern!r}, {self.num_states} states)"

    @property
    def num_states(self) -> int:
        return self.mask.shape[0]

    def start(self) -> int:
        return 0

    def allowed(self, state: int) -> torch.Tensor:
        return self.mask[state]

    def advance(self, state: int, token_id: int) -> int:
        self._check_token(state, token_id)
        return int(self.next_state[state, token_id])

    def is_accepting(self, state: int) -> bool:
        return bool(self.accepting[state])

    def can_continue(self, state: int) -> bool:
        return bool(self.mask[state].any())


# --- a pushdown automaton for the bracketed list grammar -----------------------------
class ListState(NamedTuple):
    """Where the parser of ``[ d (, d)* ]`` is: open brackets (the stack) and what comes next."""

    depth: int     # brackets opened and not yet closed
    expect: str    # "open" (the first '['), "item", "comma_or_close", "done"


class BracketListConstraint(CharConstraint):
    """The grammar ``list := '[' item (',' item)* ']'`` with ``item := digit``, or with
    ``nested=True`` also ``item := list``.

    The flat grammar is regular (it equals the regex ``\\[\\d(,\\d)*\\]``); nesting needs the
    stack of a pushdown automaton. With a single kind of bracket the stack holds one symbol,
    so its height ``depth`` is all that must be stored.
    """

    DIGITS = "0123456789"

    def __init__(self, tok, nested: bool = False):
        self.tok, self.nested = tok, bool(nested)
        self._masks: dict[tuple[str, bool], torch.Tensor] = {}

    def __repr__(self) -> str:
        return f"BracketListConstraint(nested={self.nested})"

    def _chars(self, state: ListState) -> str:
        if state.expect == "open":
            return "["
        if state.expect == "item":
            return self.DIGITS + ("[" if self.nested else "")
        if state.expect == "comma_or_close":
            return ",]"
        return ""

    def start(self) -> ListState:
        return ListState(0, "open")

    def allowed(self, state: ListState) -> torch.Tensor:
        key = (state.expect, state.depth > 0)
        if key not in self._masks:
            mask = torch.zeros(self.tok.vocab_size, dtype=torch.bool)
            for ch in self._chars(state):
                if ch in self.tok.stoi:
                    mask[self.tok.stoi[ch]] = True
            self._masks[key] = mask
        return self._masks[key]

    def advance(self, state: ListState, token_id: int) -> ListState:
        self._check_token(state, token_id)
        ch = self.tok.chars[token_id]
        if ch == "[":                                    # push
            return ListState(state.depth + 1, "item")
        if ch == "]":                                    # pop
            depth = state.depth - 1
            return ListState(depth, "done" if depth == 0 else "comma_or_close")
        if ch == ",":
            return ListState(state.depth, "item")
        return ListState(state.depth, "comma_or_close")  # a digit

    def is_accepting(self, state: ListState) -> bool:
        return state.expect == "done"

    def can_continue(self, state: ListState) -> bool:
        return bool(self.allowed(state).any())


# --- one of a list of labels ---------------------------------------------------------
class ChoiceConstraint(CharConstraint):
    """The text must be exactly one of ``labels``. The state is the prefix typed so far (a
    node of the labels' trie). If a label is a prefix of another, generation does not stop
    after the shorter one, since it can continue; end each label with a terminator such as
    ``":\\n"`` to avoid that."""

    def __init__(self, labels: Sequence[str], tok):
        if isinstance(labels, str) or not isinstance(labels, Sequence) or not labels:
            raise ValueError(f"labels={labels!r:.80} is invalid: it must be a non-empty list "
                             "of str")
        for label in labels:
            if not isinstance(label, str) or not label:
                raise ValueError(f"labels contains {label!r}: every label must be a non-empty str")
            try:
                tok.encode(label)
            except ValueError as e:
                raise ValueError(f"label {label!r} cannot be generated: {e}") from None
        if len(set(labels)) != len(labels):
            dup = next(x for x in labels if list(labels).count(x) > 1)
            raise ValueError(f"labels contains {dup!r} more than once")
        self.labels, self.tok = list(labels), tok
        self._masks: dict[str, torch.Tensor] = {}
        for label in self.labels:
            for i in range(len(label)):
                mask = self._masks.setdefault(label[:i],
                                              torch.zeros(tok.vocab_size, dtype=torch.bool))
                mask[tok.stoi[label[i]]] = True
        self._nothing = torch.zeros(tok.vocab_size, dtype=torch.bool)
        self._labels = set(self.labels)

    def __repr__(self) -> str:
        return f"ChoiceConstraint({self.labels!r})"

    def start(self) -> str:
        return ""

    def allowed(self, state: str) -> torch.Tensor:
        return self._masks.get(state, self._nothing)

    def advance(self, state: str, token_id: int) -> str:
        self._check_token(state, token_id)
        return state + self.tok.chars[token_id]

    def is_accepting(self, state: str) -> bool:
        return state in self._labels

    def can_continue(self, state: str) -> bool:
        return state in self._masks
