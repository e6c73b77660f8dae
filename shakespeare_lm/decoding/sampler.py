"""One decoding configuration and one sampler, shared by every decoder.

``DecodingConfig`` is a frozen, validated record of how to choose tokens: the rules of
``shakespeare_lm.decoding.rules`` (temperature, truncations, penalties), the seed and the stop
sequences. It is checked once, when it is made, with the rules' own messages.

``Sampler`` turns (logits, history, constraint states) into the distribution a token is
drawn from, or into the token, always in this order (Hugging Face transformers' order, with
the constraint mask where CONTRIBUTING.md puts it):

    penalties (they see the history) -> constraint mask -> temperature -> top-k -> top-p
    -> min-p -> typical -> epsilon -> eta -> softmax and a draw, or argmax

Greedy semantics, decided once: ``temperature=0`` is greedy. Greedy is the argmax after the
penalties and the constraint mask; the truncation rules are ignored (they could only remove
the argmax, as typical sampling can), as in transformers, where greedy search applies no
warpers. ``generate``, ``speculative_decode`` (for both its target p and its draft q),
``beam_search`` (mask and penalties), ``contrastive_search`` and chapter 3's explorer all
use this sampler.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F

from . import rules
from .automata import allowed_or_raise, check_constraint, mask_logits

# A row whose state is FREE is not masked (a finished row, whose token is discarded).
FREE = object()


def _stops(stop) -> tuple[str, ...]:
    """``stop`` (None, a str, or a list or tuple of str) as a tuple of stop sequences."""
    if stop is None:
        return ()
    stops = (stop,) if isinstance(stop, str) else tuple(stop) if isinstance(
        stop, (list, tuple)) else (stop,)
    for s in stops:
        if not isinstance(s, str) or not s:
            raise ValueError(f"stop={stop!r} is invalid: every stop sequence must be a "
                             "non-empty str")
    return stops


@dataclass(frozen=True)
class DecodingConfig:
    """How to choose each token: rules (``shakespeare_lm.decoding.rules``), seed, stop sequences.

    ``temperature=0`` is greedy (see the module docstring). ``stop``: a str or a list of str;
    a row ends once its text ends with one of them. ``seed`` makes sampling reproducible.
    """

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    typical_p: float | None = None
    epsilon: float | None = None
    eta: float | None = None
    repetition_penalty: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def __post_init__(self):
        rules.validate(**{name: getattr(self, name) for name in rules.ORDER})
        if self.seed is not None and (isinstance(self.seed, bool)
                                      or not isinstance(self.seed, numbers.Integral)):
            raise ValueError(f"seed={self.seed!r} is invalid: seed must be an integer or None")
        object.__setattr__(self, "stop", _stops(self.stop))

    @classmethod
    def from_settings(cls, config: DecodingConfig | None = None, **settings) -> DecodingConfig:
        """``config``, or one made from keyword settings (not both); unknown names are a
        TypeError that lists the known ones."""
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(settings) - set(known))
        if unknown:
            raise TypeError(f"unknown decoding setting(s) {unknown}; known: {known}")
        if config is None:
            return cls(**settings)
        if settings:
            raise TypeError(f"give either config= or keyword settings, not both "
                            f"(got config and {sorted(settings)})")
        if not isinstance(config, cls):
            raise TypeError(f"config must be a DecodingConfig, got {type(config).__name__}")
        return config

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @property
    def penalties(self) -> dict:
        """The penalties that are on, by name (they need the history)."""
        return {n: getattr(self, n) for n in rules.PENALTIES if getattr(self, n) is not None}

    @property
    def truncation(self) -> dict:
        """Temperature and the truncation rules that are on; empty when greedy."""
        if self.greedy:
            return {}
        out = {n: getattr(self, n) for n in rules.TRUNCATIONS if getattr(self, n) is not None}
        if out.get("temperature") == 1:  # dividing by 1 changes nothing
            del out["temperature"]
        return out

    def refuse_all_but(self, used: Sequence[str], decoder: str, why: str) -> None:
        """A ValueError if a setting not in ``used`` differs from its default: ``decoder``
        would silently ignore it; ``why`` says why it has no use for it."""
        unused = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)
                  if f.name not in used and getattr(self, f.name) != f.default]
        if unused:
            takes = ", ".join(used) if used else "no decoding settings"
            raise ValueError(f"{decoder} does not use {', '.join(unused)}: {why}; it takes {takes}")

    def check_stop_characters(self, tok) -> None:
        """A stop sequence with a character the model cannot produce could never match."""
        for s in self.stop:
            tok.encode(s)

    def generator(self, device) -> torch.Generator:
        """A fresh generator on ``device``, seeded with ``seed`` (or randomly if None)."""
        gen = torch.Generator(device=device)
        if self.seed is None:
            gen.seed()
        else:
            gen.manual_seed(int(self.seed))
        return gen


def history_tensor(histories: Sequence[Sequence[int]], device) -> torch.Tensor:
    """Rows of token ids of different lengths -> (R, H) right-padded with -1 (ignored)."""
    width = max(len(h) for h in histories)
    out = torch.full((len(histories), width), -1, dtype=torch.long, device=device)
    for r, h in enumerate(histories):
        out[r, : len(h)] = torch.tensor(list(h), dtype=torch.long, device=device)
    return out


class Sampler:
    """(logits (R, V), history (R, H), constraint states) -> distribution (R, V) or tokens (R,).

    ``constraint`` (see ``shakespeare_lm.decoding.automata``) is checked against
    ``vocab_size`` once.
    ``states``: one automaton state per row, or ``FREE`` for a row that is not masked.
    """

    def __init__(self, config: DecodingConfig, constraint=None, vocab_size: int | None = None):
        if constraint is not None:
            check_constraint(constraint, vocab_size)
        self.config, self.constraint = config, constraint
        self.greedy = config.greedy
        self._penalties, self._truncation = config.penalties, config.truncation

    @property
    def needs_history(self) -> bool:
        return bool(self._penalties)

    def allowed(self, states: Sequence, prefixes: Sequence[str] | None = None,
                wheres: Sequence[str] | None = None, strict: bool = True) -> torch.Tensor:
        """The (R, V) mask of the constraint in each row's state; with ``strict`` a state with
        no allowed character raises ConstraintError naming the row's generated ``prefixes``."""
        rows = []
        for r, state in enumerate(states):
            if state is FREE:
                rows.append(None)
                continue
            if not strict:
                rows.append(self.constraint.allowed(state))
                continue
            rows.append(allowed_or_raise(self.constraint, state,
                                         "" if prefixes is None else prefixes[r],
                                         "" if wheres is None else wheres[r]))
        V = next((m.shape[-1] for m in rows if m is not None), None)
        if V is None:
            return None
        return torch.stack([torch.ones(V, dtype=torch.bool) if m is None else m for m in rows])

    def shape(self, logits: torch.Tensor, history: torch.Tensor | None = None,
              allowed: torch.Tensor | None = None) -> torch.Tensor:
        """Penalties, then the mask ``allowed`` (R, V), then (unless greedy) temperature and
        truncation: the logits (R, V) a token is chosen from."""
        out = self.mask(self.penalise(logits, history), allowed)
        if self._truncation:
            out = rules.compose(out, None, **self._truncation)
        return out

    def penalise(self, logits: torch.Tensor, history: torch.Tensor | None) -> torch.Tensor:
        """The penalties alone: logits (R, V) and the history (R, H) they count -> (R, V)."""
        return rules.compose(logits, history, **self._penalties) if self._penalties else logits

    @staticmethod
    def mask(logits: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
        """The constraint mask alone: ``-inf`` where ``allowed`` (R, V) is False."""
        return logits if allowed is None else mask_logits(logits, allowed)

    def distribution(self, shaped: torch.Tensor) -> torch.Tensor:
        """Shaped logits (R, V) -> the probabilities (R, V) drawn from (one-hot when greedy),
        in float32 (float64 for float64 logits)."""
        dtype = torch.float64 if shaped.dtype == torch.float64 else torch.float32
        if self.greedy:
            return F.one_hot(rules.greedy(shaped), shaped.shape[-1]).to(dtype)
        return torch.softmax(shaped.to(dtype), dim=-1)

    def choose(self, shaped: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        """Shaped logits (R, V) -> one token per row (R,): argmax when greedy, else a draw."""
        return rules.greedy(shaped) if self.greedy else rules.sample(shaped, generator)

    def probs(self, logits: torch.Tensor, history: torch.Tensor | None = None,
              allowed: torch.Tensor | None = None) -> torch.Tensor:
        """``distribution(shape(...))``: raw logits (R, V) -> probabilities (R, V)."""
        return self.distribution(self.shape(logits, history, allowed))
