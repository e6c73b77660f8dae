"""One decoding configuration and one sampler, shared by every decoder.

``DecodingConfig`` is a frozen, validated record of how to choose tokens: the rules of
``shakespeare_lm.decoding.rules`` (temperature, truncations, penalties), the seed and the stop
sequences. It is checked once, when it is made, by the registry of the rules
(``registry.validate``: each setting's range and message are described there once).

``Sampler`` turns (logits, history, constraint states) into the distribution a token is
drawn from, or into the token, in this order (by default Hugging Face transformers', with
the constraint mask where CONTRIBUTING.md puts it; ``order="llama.cpp"`` reorders the rules
after the mask as ``rules.ORDERS`` says):

    penalties (repetition, frequency, presence, no-repeat n-gram, DRY) -> constraint mask
    -> temperature -> top-H -> top-nσ -> top-k -> top-p -> min-p -> typical -> epsilon -> eta
    -> XTC -> mirostat -> softmax and a draw, or argmax

(``registry.pipeline_text()`` writes this line from the registry of the rules; a test
holds the two, and CONTRIBUTING.md's, together.)

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

from . import registry, rules
from .automata import allowed_or_raise, check_constraint, mask_logits

# A row whose state is FREE is not masked (a finished row, whose token is discarded).
FREE = object()


# llama.cpp's default DRY sequence breakers (common/common.h); characters our vocabulary lacks
# can never occur, so they are dropped when the breakers are turned into token ids
DRY_BREAKERS = ("\n", ":", '"', "*")


def _breakers(breakers) -> tuple[str, ...]:
    """``dry_sequence_breakers`` (a str or a list of str, checked by ``registry.validate``)
    as a tuple of strings."""
    return (breakers,) if isinstance(breakers, str) else tuple(breakers)


def breaker_ids(breakers, tok) -> tuple[tuple[int, ...], ...]:
    """DRY's breakers as token-id tuples, dropping any the tokenizer cannot write."""
    out = []
    for text in DRY_BREAKERS if breakers is None else breakers:
        try:
            out.append(tuple(tok.encode(text)))
        except (KeyError, ValueError):
            continue
    return tuple(out)


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
    # the samplers of today's tools (shakespeare_lm.decoding.rules)
    top_n_sigma: float | None = None
    top_h: float | None = None
    xtc_probability: float | None = None
    xtc_threshold: float | None = None
    dry_multiplier: float | None = None
    dry_base: float | None = None
    dry_allowed_length: int | None = None
    dry_sequence_breakers: tuple[str, ...] | None = None
    dry_penalty_last_n: int | None = None
    no_repeat_ngram_size: int | None = None
    mirostat_tau: float | None = None
    mirostat_eta: float = 0.1
    order: str = "transformers"

    def __post_init__(self):
        registry.validate({name: getattr(self, name) for name in registry.SETTINGS})
        if self.dry_sequence_breakers is not None:
            object.__setattr__(self, "dry_sequence_breakers",
                               _breakers(self.dry_sequence_breakers))
        rules.check_order(self.order)
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

    def _on(self, history: bool) -> dict:
        """The settings of the chain's rules that are on and read the history (or do not),
        with their parameters."""
        out = {}
        for rule in registry.RULES:
            if rule.step and rule.history == history and getattr(self, rule.main) is not None:
                out.update({k: getattr(self, k) for k in rule.names
                            if getattr(self, k) is not None})
        return out

    @property
    def penalties(self) -> dict:
        """The rules that read the history and are on (penalties, no-repeat n-gram, DRY)."""
        return self._on(history=True)

    @property
    def truncation(self) -> dict:
        """Temperature and the truncation rules that are on; empty when greedy."""
        if self.greedy:
            return {}
        out = self._on(history=False)
        if out.get("temperature") == 1:  # dividing by 1 changes nothing
            del out["temperature"]
        return out

    @property
    def mirostat(self) -> bool:
        """Mirostat 2.0 is on (it cuts and draws last, and keeps a state between steps)."""
        return self.mirostat_tau is not None and not self.greedy

    @property
    def random_rules(self) -> list[str]:
        """Settings whose rule draws random numbers or keeps a state between steps."""
        out = ["xtc_probability"] if self.xtc_probability and not self.greedy else []
        return out + (["mirostat_tau"] if self.mirostat else [])

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

    def __init__(self, config: DecodingConfig, constraint=None, vocab_size: int | None = None,
                 tok=None):
        if constraint is not None:
            check_constraint(constraint, vocab_size)
        self.config, self.constraint = config, constraint
        self.greedy = config.greedy
        self._penalties, self._truncation = dict(config.penalties), config.truncation
        if "dry_multiplier" in self._penalties:
            if tok is None and config.dry_sequence_breakers != ():
                raise ValueError("DRY's sequence breakers are strings: the sampler needs the "
                                 "tokenizer (tok=) to turn them into token ids")
            self._penalties["dry_sequence_breakers"] = (
                () if tok is None else breaker_ids(config.dry_sequence_breakers, tok))
        self._xtc = self._truncation.get("xtc_probability")
        self.mu = None  # mirostat's target surprise per row, in bits (2 tau at the start)

    @property
    def needs_history(self) -> bool:
        return bool(self._penalties)

    @property
    def is_softmax(self) -> bool:
        """Whether, a constraint's mask aside, a row's distribution is the plain softmax of
        its logits: temperature 1, no truncation, no penalty, no mirostat."""
        return not (self.greedy or self._truncation or self._penalties
                    or self.config.mirostat)

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
              allowed: torch.Tensor | None = None,
              generator: torch.Generator | None = None) -> torch.Tensor:
        """Penalties, then the mask ``allowed`` (R, V), then (unless greedy) temperature and
        truncation in the config's ``order``, then mirostat's cut: the logits (R, V) a token
        is chosen from.

        XTC draws one uniform number per row. Given the ``generator`` (as ``generate`` does),
        the draw decides whether the row's head is cut. Without it, the result is the exact
        distribution over both outcomes, the log of ``π p_cut + (1 - π) p_uncut`` with π the
        XTC probability, so speculative decoding and any other caller that needs the
        distribution of the next token, not one draw, get it exactly."""
        out = self.mask(self.penalise(logits, history), allowed)
        if self._truncation:
            order = self.config.order
            if self._xtc is None:
                out = rules.compose(out, None, order=order, **self._truncation)
            elif generator is not None:
                u = torch.rand(out.shape[:-1], generator=generator, device=generator.device,
                               dtype=torch.float64)
                out = rules.compose(out, None, order=order, xtc_u=u.to(out.device),
                                    **self._truncation)
            else:
                rows = out.shape[:-1]
                cut = rules.compose(out, None, order=order, xtc_u=torch.zeros(rows),
                                    **self._truncation)
                uncut = rules.compose(out, None, order=order, xtc_u=torch.full(rows, 2.0),
                                      **self._truncation)
                mix = (self._xtc * torch.softmax(cut.double(), -1)
                       + (1 - self._xtc) * torch.softmax(uncut.double(), -1))
                out = mix.log()
        if self.config.mirostat:
            if self.mu is None or self.mu.shape != out.shape[:-1]:
                self.mu = torch.full(out.shape[:-1], 2.0 * self.config.mirostat_tau,
                                     dtype=torch.float64)
            out = rules.mirostat_truncate(out, self.mu)
        return out

    def penalise(self, logits: torch.Tensor, history: torch.Tensor | None) -> torch.Tensor:
        """The history's rules alone (penalties, no-repeat n-gram, DRY): logits (R, V) and
        the history (R, H) they count -> (R, V)."""
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
        """Shaped logits (R, V) -> one token per row (R,): argmax when greedy, else a draw.
        With mirostat, each row's target then moves by the surprise of its draw."""
        if self.greedy:
            return rules.greedy(shaped)
        tokens = rules.sample(shaped, generator)
        if self.config.mirostat:
            p = torch.softmax(shaped.double(), -1).gather(-1, tokens[:, None]).squeeze(-1)
            self.mu = rules.mirostat_update(self.mu, p.cpu(), self.config.mirostat_tau,
                                            self.config.mirostat_eta)
        return tokens

    def probs(self, logits: torch.Tensor, history: torch.Tensor | None = None,
              allowed: torch.Tensor | None = None) -> torch.Tensor:
        """``distribution(shape(...))``: raw logits (R, V) -> probabilities (R, V)."""
        return self.distribution(self.shape(logits, history, allowed))
