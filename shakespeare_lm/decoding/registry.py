"""Every decoding rule, described once: its settings (name, valid range and the message that
refuses a bad value, the value that turns it off, label, slider), whether it reads the
history, whether the browser has it, and its place in the chain.

Whatever lists the rules reads this table: ``DecodingConfig``'s checks (:func:`validate`),
the rule functions' own checks (:func:`check`), ``rules.compose``'s order and the settings
it passes to each rule, the order line of ``sampler.py`` and CONTRIBUTING.md
(:func:`pipeline_text`, held by a test), chapter 3's explorers (``shakespeare_lm.site.explorer``:
their settings, off values, labels, sliders) and the browser's copy of the decoding
(``shakespeare_lm.site.browser_rules`` writes what ``decoding.js`` and ``slm_explorers.js``
need as ``rules.js``). The rules themselves, pure functions, are in ``rules.py``.

``RULES`` is in the chain's default order (transformers'), ``ORDERS`` adds llama.cpp's. To add
a rule, see CONTRIBUTING.md, "Adding a rule".
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

VOCAB = "V"  # a slider bound or off value that stands for the vocabulary's size
KINDS = ("classic", "modern", "penalty")  # chapter 3's rules, today's tools', the penalties


@dataclass(frozen=True)
class Range:
    """The valid values of a setting: a finite number (an integer with ``integer``; never a
    bool) from ``low`` to ``high`` (None: unbounded), an end excluded where it is ``*_open``.
    ``note`` ends the message that refuses a bad value."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    note: str = ""

    def holds(self, value) -> bool:
        kind = numbers.Integral if self.integer else numbers.Real
        if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value):
            return False
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    @property
    def text(self) -> str:
        """What a valid value is, as a message says it: "in (0, 1]", "an integer >= 1", ..."""
        if self.low is not None and self.high is not None:
            where = (f"in {'(' if self.low_open else '['}{self.low:g}, "
                     f"{self.high:g}{')' if self.high_open else ']'}")
        elif self.low is not None:
            where = (f"{'an integer' if self.integer else 'a number'} "
                     f"{'>' if self.low_open else '>='} {self.low:g}")
        else:
            where = "a finite number"
        return where + self.note


@dataclass(frozen=True)
class Texts:
    """The valid values of a setting made of text: a non-empty str or a list of them."""

    text: str = "a list of non-empty strings, such as ['\\n', ':']"

    def holds(self, value) -> bool:
        items = (value,) if isinstance(value, str) else value
        return isinstance(items, (list, tuple)) and all(isinstance(s, str) and s for s in items)


@dataclass(frozen=True)
class Slider:
    """An explorer's control of a setting: its label, range (``VOCAB`` for the vocabulary's
    size) and step."""

    label: str
    low: float | str
    high: float | str
    step: float


@dataclass(frozen=True)
class Setting:
    """One setting of a rule. ``arg``: the rule function's parameter. ``valid``: what the
    function accepts; ``config_valid``: what ``DecodingConfig`` accepts, where that differs
    (temperature 0 is greedy). ``off``: the value at which the rule changes nothing (None:
    only leaving it out turns the rule off). ``default``: ``DecodingConfig``'s.
    ``fallback``: what the rule takes when the setting is left out (a parameter's)."""

    name: str
    arg: str
    valid: Range | Texts
    off: object = None
    default: object = None
    fallback: object = None
    slider: Slider | None = None
    config_valid: Range | None = None

    @property
    def rest(self):
        """Where the explorers' slider stands when the setting is left out: its off value,
        else the value the rule then takes, else the slider's low end (not a valid value)."""
        for value in (self.off, self.fallback):
            if value is not None:
                return value
        return self.slider.low if self.slider else None


@dataclass(frozen=True)
class Rule:
    """A decoding rule: ``label`` (as the book writes it), ``function`` (its name in
    ``rules.py``), ``main`` (the setting that turns it on) and its ``settings``, in the order
    of the function's parameters (and of the checks). ``kind``: one of ``KINDS``.
    ``history``: it reads the token ids so far; ``draws``: it needs a uniform draw per row;
    ``browser``: ``decoding.js`` has it; ``step``: a step of ``rules.compose``'s chain
    (mirostat is not: it cuts and draws last, and keeps a state, ``Sampler``)."""

    label: str
    function: str
    main: str
    settings: tuple[Setting, ...]
    kind: str
    history: bool = False
    draws: bool = False
    browser: bool = False
    step: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        """Its settings' names, the main one first."""
        return (self.main,) + tuple(s.name for s in self.settings if s.name != self.main)


UNIT, UNIT_OPEN = Range(0, 1), Range(0, 1, low_open=True)          # [0, 1], (0, 1]
UNIT_HALF_OPEN = Range(0, 1, high_open=True)                           # [0, 1)


def _one(label, function, name, arg, valid, kind, **options) -> Rule:
    """A rule with a single setting; ``options`` split between the Rule and the Setting."""
    rule_keys = {"history", "draws", "browser"}
    setting = Setting(name, arg, valid, **{k: v for k, v in options.items() if k not in rule_keys})
    return Rule(label, function, name, (setting,), kind,
                **{k: v for k, v in options.items() if k in rule_keys})


def _penalty(label, name, arg, valid, off, low) -> Rule:
    """A penalty of the browser's: it counts the history, its slider from ``low`` to 2."""
    return _one(label, name, name, arg, valid, "penalty", history=True, browser=True, off=off,
                slider=Slider(label, low, 2, 0.05))


_DRY = Rule("DRY", "dry", "dry_multiplier", (
    Setting("dry_multiplier", "multiplier", Range(0), off=0.0),
    Setting("dry_base", "base", Range(1), fallback=1.75),
    Setting("dry_allowed_length", "allowed_length",
            Range(0, integer=True, note=" tokens, such as 2"), fallback=2),
    Setting("dry_sequence_breakers", "breakers", Texts(), fallback=()),
    Setting("dry_penalty_last_n", "last_n",
            Range(-1, integer=True, note=" (-1: the whole history)"), fallback=-1)),
    "modern", history=True)
_TEMPERATURE = _one(
    "temperature", "temperature", "temperature", "t",
    Range(0, low_open=True, note=" (for greedy decoding use argmax: temperature=0 in generate)"),
    "classic", browser=True, off=1.0, default=1.0, config_valid=Range(0, note=" (0 means greedy)"),
    slider=Slider("temperature (0 = greedy)", 0, 2, 0.05))
_XTC = Rule("XTC", "xtc", "xtc_probability", (
    Setting("xtc_threshold", "threshold", UNIT, fallback=0.1,
            slider=Slider("XTC threshold (\u03be)", 0, 0.5, 0.01)),
    Setting("xtc_probability", "probability", UNIT, off=0.0,
            slider=Slider("XTC probability", 0, 1, 0.05))),
    "modern", draws=True, browser=True)
# (its settings are those of its feedback, mirostat_update; its cut, mirostat_truncate, reads
# the state the feedback moves)
_MIROSTAT = Rule("mirostat", "mirostat_update", "mirostat_tau", (
    Setting("mirostat_tau", "tau", Range(0, low_open=True, note=" (the target surprise, in bits)")),
    Setting("mirostat_eta", "eta", Range(0, 1, low_open=True, note=" (the learning rate)"),
            default=0.1)),
    "modern", step=False)

RULES: tuple[Rule, ...] = (
    _penalty("repetition penalty", "repetition_penalty", "penalty", Range(0, low_open=True),
             1.0, 0.5),
    _penalty("frequency penalty", "frequency_penalty", "alpha", Range(), 0.0, 0),
    _penalty("presence penalty", "presence_penalty", "alpha", Range(), 0.0, 0),
    _one("no-repeat n-gram", "no_repeat_ngram", "no_repeat_ngram_size", "n",
         Range(1, integer=True, note=" tokens, such as 3"), "penalty", history=True),
    _DRY,
    _TEMPERATURE,
    _one("top-H", "top_h", "top_h", "h", UNIT_OPEN, "modern"),
    _one("top-n\u03c3", "top_n_sigma", "top_n_sigma", "n",
         Range(0, low_open=True, note=" (standard deviations)"), "modern", browser=True,
         slider=Slider("top-n\u03c3 (\u03bd)", 0, 3, 0.05)),
    _one("top-k", "top_k", "top_k", "k", Range(1, integer=True), "classic", browser=True,
         off=VOCAB, slider=Slider("top-k", 1, VOCAB, 1)),
    _one("top-p", "top_p", "top_p", "p", UNIT_OPEN, "classic", browser=True, off=1.0,
         slider=Slider("top-p", 0.01, 1, 0.01)),
    _one("min-p", "min_p", "min_p", "ratio", UNIT, "classic", browser=True, off=0.0,
         slider=Slider("min-p", 0, 1, 0.01)),
    _one("typical", "typical", "typical_p", "mass", UNIT_OPEN, "classic", browser=True, off=1.0,
         slider=Slider("typical mass", 0.01, 1, 0.01)),
    _one("epsilon", "epsilon", "epsilon", "eps", UNIT_HALF_OPEN, "classic", browser=True,
         off=0.0, slider=Slider("epsilon", 0, 0.1, 0.001)),
    _one("eta", "eta", "eta", "eps", UNIT_HALF_OPEN, "classic", browser=True, off=0.0,
         slider=Slider("eta", 0, 0.1, 0.001)),
    _XTC,
    _MIROSTAT,
)
RULE = {r.main: r for r in RULES}                                   # by main setting
SETTINGS = {s.name: s for r in RULES for s in r.settings}           # every rule's settings
RULE_OF = {s.name: r for r in RULES for s in r.settings}            # a setting's rule
# The chain's orders. transformers: penalties, temperature, then top-H and the truncations
# (top-nσ and XTC, which it lacks, where llama.cpp puts them among the truncations).
# llama.cpp's default chain (common/common.h): penalties, DRY, top-nσ, top-k, typical, top-p,
# min-p, XTC, and temperature last (top-H, epsilon and eta, which it lacks, beside min-p).
ORDERS = {
    "transformers": tuple(r.main for r in RULES if r.step),
    "llama.cpp": ("repetition_penalty", "frequency_penalty", "presence_penalty",
                  "no_repeat_ngram_size", "dry_multiplier", "top_n_sigma", "top_k",
                  "typical_p", "top_p", "min_p", "top_h", "epsilon", "eta", "xtc_probability",
                  "temperature"),
}


def check(name: str, value, config: bool = False) -> None:
    """A ValueError naming the setting ``name``, the bad ``value`` and what would be right,
    unless ``value`` is valid for the rule function (with ``config``: for DecodingConfig)."""
    setting = SETTINGS[name]
    valid = setting.config_valid if config and setting.config_valid else setting.valid
    if not valid.holds(value):
        raise ValueError(f"{name}={value!r} is invalid: {name} must be {valid.text}")


def is_set(name: str, value) -> bool:
    """A setting is set when given (not None) and, for one with a default, not at it."""
    return value is not None and not (SETTINGS[name].default is not None
                                      and value == SETTINGS[name].default)


def validate(settings: dict) -> None:
    """DecodingConfig's checks of ``settings`` (setting name -> value, None: left out), rule
    by rule in ``RULES``' order: a rule that is on has its settings checked in the order of
    its function's parameters; a rule that is off may not have another setting set."""
    for rule in RULES:
        if settings.get(rule.main) is not None:
            for s in rule.settings:
                if settings.get(s.name) is not None:
                    check(s.name, settings[s.name], config=True)
            continue
        extra = [n for n in rule.names[1:] if is_set(n, settings.get(n))]
        if extra:
            raise ValueError(f"{extra[0]}={settings[extra[0]]!r} is set but {rule.main} is "
                             f"not: set {rule.main} to turn the rule on")


def chain_text(order: str = "transformers") -> str:
    """The chain ``order`` as the docs write it: "penalties (repetition, ...) -> temperature
    -> top-H -> ..." (the rules that read the history come first in every order)."""
    rules = [RULE[name] for name in ORDERS[order]]
    penalties = ", ".join(r.label.removesuffix(" penalty") for r in rules if r.history)
    return " -> ".join([f"penalties ({penalties})"] + [r.label for r in rules if not r.history])


def pipeline_text() -> str:
    """The sampler's whole pipeline as the docs write it: the chain, with the constraint
    mask after the penalties, then the rules that are no step of it, then the choice."""
    penalties, *rest = chain_text().split(" -> ")
    last = [r.label for r in RULES if not r.step]
    return " -> ".join([penalties, "constraint mask", *rest, *last,
                        "softmax and a draw, or argmax"])
