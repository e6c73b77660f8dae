"""Constrained decoding: an automaton over characters masks the next-token distribution.

A constraint follows the protocol below (shared by ``generate``, ``beam_search`` and
speculative decoding). Decoders set the logits of disallowed characters to ``-inf`` after
the penalties and before temperature and truncation, so masking is renormalisation of the
model's distribution over the allowed set (Willard and Louf 2023), and they stop with
``stop_reason == "constraint"`` once the automaton accepts and cannot continue.

Three constraints, all over the characters of a ``CharTokenizer``:

* ``RegexConstraint``: a regular expression compiled by ``interegular`` to a deterministic
  automaton, with the allowed-character mask of every state precomputed over the vocabulary;
* ``BracketListConstraint``: the grammar ``[ d (, d)* ]`` as a small pushdown automaton
  (optionally with nested lists, which no finite automaton can check);
* ``ChoiceConstraint``: exactly one of a list of labels, as a trie.

Masking step by step does not sample from the model conditioned on the constraint
(Park et al. 2024): ``exact_distributions`` computes both distributions by enumeration,
``rejection_sample`` estimates the conditional one, ``total_variation`` compares them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

import torch

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
                        f"protocol of shakespeare_lm.constrained, but lacks {missing}")
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
        return "".join(self.tok.chars[i] for i in torch.nonzero(self.allowed(state)).flatten().tolist())

    def _check_token(self, state: State, token_id: int) -> None:
        if not (isinstance(token_id, int) and 0 <= token_id < self.tok.vocab_size):
            raise ValueError(f"token_id={token_id!r} is invalid: it must be an int in "
                             f"0..{self.tok.vocab_size - 1}")
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
            raise ValueError(f"labels={labels!r:.80} is invalid: it must be a non-empty list of str")
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
                mask = self._masks.setdefault(label[:i], torch.zeros(tok.vocab_size, dtype=torch.bool))
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


# --- how masking changes the distribution ---------------------------------------------
def completions(constraint, tok, max_len: int = 64, limit: int = 10_000) -> list[str]:
    """Every text at which constrained generation stops with reason "constraint" (the
    automaton accepts and cannot continue), found by depth-first search over the automaton.

    No completion is a prefix of another, so under the model they are disjoint events.
    Raises ValueError if some path is longer than ``max_len`` or there are more than
    ``limit`` completions (an infinite or very large language).
    """
    out: list[str] = []

    def visit(state, text: str) -> None:
        if constraint.is_accepting(state) and not constraint.can_continue(state):
            out.append(text)
            if len(out) > limit:
                raise ValueError(f"the constraint has more than limit={limit} completions; "
                                 "enumeration needs a small finite language")
            return
        if len(text) >= max_len:
            raise ValueError(f"the constraint allows texts longer than max_len={max_len} "
                             f"(e.g. {text!r}...); enumeration needs a finite language")
        for t in torch.nonzero(constraint.allowed(state)).flatten().tolist():
            visit(constraint.advance(state, t), text + tok.chars[t])

    visit(constraint.start(), "")
    return out


def _chunks(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


@torch.no_grad()
def next_logprobs(model, pairs: Sequence[tuple[list[int], list[int]]],
                  use_cache: bool = True) -> torch.Tensor:
    """Teacher forcing: for each (prompt ids, text ids) pair, the model's distribution of
    every character of the text given what precedes it, (N, W, V) float64 log-probabilities
    (W: the longest text; steps past a shorter text are padding).

    With ``use_cache`` (a model with a KV cache) each distinct prompt runs once, left-padded,
    and its cache is copied to every row that continues it; otherwise every row runs its
    prompt and text again. Texts are right-padded: the causal mask keeps padding out of
    every real position.
    """
    device = next(model.parameters()).device
    W = max(len(t) for _, t in pairs)
    rest = torch.tensor([t[:-1] + [0] * (W - len(t)) for _, t in pairs], device=device)  # (N, W-1)
    if use_cache and hasattr(model, "setup_cache"):
        prompts = list(dict.fromkeys(tuple(c) for c, _ in pairs))      # distinct, in order
        owner = torch.tensor([prompts.index(tuple(c)) for c, _ in pairs], device=device)
        L = max(len(c) for c in prompts)
        pad = torch.tensor([L - len(c) for c in prompts], device=device)
        idx = torch.tensor([[0] * (L - len(c)) + list(c) for c in prompts], device=device)
        model.setup_cache(len(prompts), L + W - 1, pad)
        try:
            logits = model(idx, torch.arange(L, device=device))[:, -1][owner][:, None]  # (N, 1, V)
            if W > 1:
                model.reorder_cache(owner)                         # row n continues its prompt
                later = model(rest, torch.arange(L, L + W - 1, device=device))  # (N, W-1, V)
                logits = torch.cat([logits, later], dim=1)
        finally:
            model.clear_cache()
    else:
        L = max(len(c) for c, _ in pairs)
        idx = torch.tensor([c + r + [0] * (L - len(c)) for (c, _), r in zip(pairs, rest.tolist())],
                           device=device)                          # (N, L + W - 1)
        out = model(idx)
        logits = torch.stack([out[n, len(c) - 1 : len(c) - 1 + W] for n, (c, _) in enumerate(pairs)])
    return torch.log_softmax(logits.double(), dim=-1)


def _path(constraint, tok, text: str, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ids (W,) of ``text`` padded with 0, and the allowed mask (W, V) before each of its
    characters (all True on padding steps, so that they add nothing)."""
    ids = torch.zeros(width, dtype=torch.long)
    masks = torch.ones(width, tok.vocab_size, dtype=torch.bool)
    state = constraint.start()
    for i, ch in enumerate(text):
        masks[i] = allowed_or_raise(constraint, state, text[:i])
        ids[i] = tok.stoi[ch]
        state = constraint.advance(state, tok.stoi[ch])
    return ids, masks


def completion_logprobs(model, tok, prompt: str | Sequence[str], constraint, texts: Sequence[str],
                        batch_size: int = 256, use_cache: bool = True
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """For each text y after ``prompt``: its log-probability under the model, log p(y), and
    under per-step masking, log q(y) = sum_t log [p(y_t | y_<t) / p(allowed_t | y_<t)].

    Returns two float64 tensors: (N,) for one prompt, (P, N) for a list of P prompts (one
    batched computation; see ``next_logprobs`` for how the model is run).
    """
    prompts = [prompt] if isinstance(prompt, str) else list(prompt)
    ctxs = [tok.encode(p) for p in prompts]
    if not all(ctxs):
        raise ValueError("an empty prompt: the first character needs a context to be scored in")
    texts = list(texts)
    if not texts or not all(isinstance(t, str) and t for t in texts):
        raise ValueError(f"texts={texts!r:.80} is invalid: it must be a non-empty list of non-empty str")
    block = getattr(getattr(model, "config", None), "block_size", math.inf)
    longest, L = max(len(t) for t in texts), max(len(c) for c in ctxs)
    if L + longest > block:
        raise ValueError(f"prompt ({L} characters) plus the longest completion ({longest}) "
                         f"exceeds the context window of {block}; keep only the prompt's last "
                         f"{block - longest} characters")
    ids, masks = zip(*(_path(constraint, tok, t, longest) for t in texts))
    ids, masks = torch.stack(ids), torch.stack(masks)                   # (N, W), (N, W, V)
    pairs = [(p, n) for p in range(len(ctxs)) for n in range(len(texts))]
    logp = torch.empty(len(pairs), dtype=torch.float64)
    logq = torch.empty(len(pairs), dtype=torch.float64)
    for chunk in _chunks(list(range(len(pairs))), batch_size):
        rows = [pairs[i] for i in chunk]
        n = torch.tensor([j for _, j in rows])
        logsm = next_logprobs(model, [(ctxs[p], tok.encode(texts[j])) for p, j in rows],
                              use_cache).cpu()                              # (B, W', V)
        W = logsm.shape[1]
        step = logsm.gather(-1, ids[n, :W, None]).squeeze(-1)              # log p(y_t | y_<t)
        kept = logsm.masked_fill(~masks[n, :W], NEG_INF).logsumexp(-1)     # log p(allowed_t)
        real = torch.arange(W)[None, :] < torch.tensor([len(texts[j]) for _, j in rows])[:, None]
        logp[chunk] = torch.where(real, step, 0.0).sum(-1)
        logq[chunk] = torch.where(real, step - kept, 0.0).sum(-1)
    shape = (len(texts),) if isinstance(prompt, str) else (len(prompts), len(texts))
    return logp.view(shape), logq.view(shape)


@dataclass
class ExactDistributions:
    """The distributions over a constraint's completions after a prompt (all (N,) float64)."""

    completions: list[str]
    model_p: torch.Tensor        # p(y): the unconstrained model's probability of text y
    conditional: torch.Tensor    # p(y | y satisfies the constraint) = p(y) / sum p
    masked: torch.Tensor         # what per-step masking samples: prod_t renormalised p

    @property
    def mass(self) -> float:
        """p(the constraint is satisfied): the model's total probability of all completions."""
        return float(self.model_p.sum())

    @property
    def tv(self) -> float:
        """Total variation distance between the masked and the exact conditional distribution."""
        return total_variation(self.conditional, self.masked)

    def as_rows(self) -> list[tuple[str, float, float, float]]:
        """(completion, p, conditional, masked) per completion, most probable (conditional) first."""
        rows = zip(self.completions, self.model_p.tolist(), self.conditional.tolist(),
                   self.masked.tolist())
        return sorted(rows, key=lambda r: -r[2])


def exact_distributions(model, tok, prompt: str | Sequence[str], constraint, max_len: int = 64,
                        limit: int = 10_000) -> ExactDistributions | list[ExactDistributions]:
    """Enumerate the constraint's completions (``completions``) and compute, exactly, the
    model's probability of each, the conditional distribution given the constraint and the
    distribution that per-step masking samples from (at temperature 1, no truncation).
    A list of prompts is computed in one batch and gives a list."""
    texts = completions(constraint, tok, max_len, limit)
    logp, logq = completion_logprobs(model, tok, prompt, constraint, texts)
    conditional = torch.softmax(logp, dim=-1)         # p(y) / sum_y' p(y'), computed stably
    out = [ExactDistributions(texts, a.exp(), b, c.exp())
           for a, b, c in zip(logp.view(-1, len(texts)), conditional.view(-1, len(texts)),
                              logq.view(-1, len(texts)))]
    return out[0] if isinstance(prompt, str) else out


@dataclass
class RejectionSample:
    """Unconstrained samples, kept when they begin with a completion of the constraint."""

    counts: Counter              # completion -> number of accepted samples
    n: int                       # samples drawn
    rejected: Counter            # text of each rejected sample -> how often it was drawn

    @property
    def accepted(self) -> int:
        return sum(self.counts.values())

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.n

    def distribution(self) -> dict[str, float]:
        """The accepted samples' empirical distribution (an estimate of the conditional)."""
        if not self.accepted:
            raise ValueError(f"none of the {self.n} samples satisfied the constraint; draw more")
        return {k: v / self.accepted for k, v in self.counts.items()}


def first_completion(constraint, tok, text: str) -> str | None:
    """The prefix of ``text`` at which the automaton accepts and cannot continue, or None if
    ``text`` leaves the constraint (or ends) before that."""
    state = constraint.start()
    for i, ch in enumerate(text):
        if constraint.is_accepting(state) and not constraint.can_continue(state):
            return text[:i]
        t = tok.stoi[ch]
        if not bool(constraint.allowed(state)[t]):
            return None
        state = constraint.advance(state, t)
    return text if constraint.is_accepting(state) and not constraint.can_continue(state) else None


def rejection_sample(model, tok, prompt: str, constraint, n: int, max_new_tokens: int, *,
                     seed: int = 0, batch_size: int = 256) -> RejectionSample:
    """Draw ``n`` unconstrained samples of ``max_new_tokens`` characters (temperature 1) and
    keep those that begin with a completion: accepted samples follow the exact conditional
    distribution, at the cost of discarding the rest."""
    from .generate import generate  # generate imports this module

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n={n!r} is invalid: it must be an integer >= 1")
    counts: Counter = Counter()
    rejected: Counter = Counter()
    for i, chunk in enumerate(_chunks(list(range(n)), batch_size)):
        gens = generate(model, tok, [prompt] * len(chunk), max_new_tokens, seed=seed + i)
        for g in gens:
            done = first_completion(constraint, tok, g.text)
            if done is None:
                rejected[g.text] += 1
            else:
                counts[done] += 1
    return RejectionSample(counts, n, rejected)


def total_variation(p, q) -> float:
    """Total variation distance 1/2 sum_y |p(y) - q(y)| between two distributions, given as
    dicts (outcome -> probability; a missing outcome has probability 0) or as equal-length
    sequences / tensors over the same outcomes."""
    if isinstance(p, dict) or isinstance(q, dict):
        if not (isinstance(p, dict) and isinstance(q, dict)):
            raise TypeError("total_variation needs two dicts or two sequences, not a mix")
        keys = sorted(set(p) | set(q))
        p, q = [p.get(k, 0.0) for k in keys], [q.get(k, 0.0) for k in keys]
    p = torch.as_tensor(p, dtype=torch.float64).flatten()
    q = torch.as_tensor(q, dtype=torch.float64).flatten()
    if p.shape != q.shape:
        raise ValueError(f"p has {p.numel()} outcomes but q has {q.numel()}: they must match")
    for name, d in (("p", p), ("q", q)):
        if bool((d < 0).any()) or not math.isclose(float(d.sum()), 1.0, abs_tol=1e-6):
            raise ValueError(f"{name} is not a probability distribution (sum {float(d.sum()):.6g}, "
                             f"min {float(d.min()):.3g}): entries must be >= 0 and sum to 1")
    return 0.5 * float((p - q).abs().sum())
