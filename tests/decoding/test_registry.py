"""The registry of the rules (``shakespeare_lm.decoding.registry``) agrees with the rule
functions: every rule of each order has an entry whose function takes its settings, the
call ``compose`` makes from it is the plain call, each off value leaves the logits
unchanged, every value out of range is refused (by the function and by DecodingConfig)
with the entry's message, and the order lines of the docs are the registry's."""

import inspect
import math
import re
from dataclasses import fields
from pathlib import Path

import pytest
import torch

from shakespeare_lm.decoding import registry, rules, sampler
from shakespeare_lm.decoding.sampler import DecodingConfig

ROOT = Path(__file__).resolve().parents[2]
# a valid value of every setting (DecodingConfig's form: DRY's breakers are text), none a
# whole float (JavaScript writes 3.0 as 3)
EXAMPLES = {"repetition_penalty": 1.3, "frequency_penalty": 0.4, "presence_penalty": 0.6,
            "no_repeat_ngram_size": 2, "dry_multiplier": 0.8, "dry_base": 1.5,
            "dry_allowed_length": 1, "dry_sequence_breakers": ["\n"], "dry_penalty_last_n": 5,
            "temperature": 0.7, "top_h": 0.6, "top_n_sigma": 1.5, "top_k": 5, "top_p": 0.9,
            "min_p": 0.05, "typical_p": 0.8, "epsilon": 0.01, "eta": 0.01,
            "xtc_threshold": 0.05, "xtc_probability": 0.5, "mirostat_tau": 2.5,
            "mirostat_eta": 0.2}
# each step of the chain called by hand with EXAMPLES (breakers as token ids)
CALLS = {
    "repetition_penalty": lambda lg, h, u: rules.repetition_penalty(lg, h, 1.3),
    "frequency_penalty": lambda lg, h, u: rules.frequency_penalty(lg, h, 0.4),
    "presence_penalty": lambda lg, h, u: rules.presence_penalty(lg, h, 0.6),
    "no_repeat_ngram_size": lambda lg, h, u: rules.no_repeat_ngram(lg, h, 2),
    "dry_multiplier": lambda lg, h, u: rules.dry(lg, h, 0.8, 1.5, 1, ((0,),), 5),
    "temperature": lambda lg, h, u: rules.temperature(lg, 0.7),
    "top_h": lambda lg, h, u: rules.top_h(lg, 0.6),
    "top_n_sigma": lambda lg, h, u: rules.top_n_sigma(lg, 1.5),
    "top_k": lambda lg, h, u: rules.top_k(lg, 5),
    "top_p": lambda lg, h, u: rules.top_p(lg, 0.9),
    "min_p": lambda lg, h, u: rules.min_p(lg, 0.05),
    "typical_p": lambda lg, h, u: rules.typical(lg, 0.8),
    "epsilon": lambda lg, h, u: rules.epsilon(lg, 0.01),
    "eta": lambda lg, h, u: rules.eta(lg, 0.01),
    "xtc_probability": lambda lg, h, u: rules.xtc(lg, 0.05, 0.5, u),
}
STEPS = [r for r in registry.RULES if r.step]


def bad_values(name: str) -> list:
    """Values just out of the setting's range, and the kinds it never accepts."""
    valid = registry.SETTINGS[name].config_valid or registry.SETTINGS[name].valid
    if isinstance(valid, registry.Texts):
        return ["", [""], ["\n", 3], 5]
    out = [True, "1", math.nan, math.inf, -math.inf]
    below = 1 if valid.integer else 0.5
    if valid.low is not None:
        out.append(valid.low if valid.low_open else valid.low - below)
    if valid.high is not None:
        out.append(valid.high if valid.high_open else valid.high + 0.5)
    if valid.integer:
        out.append(valid.low + 1.5)
    return out


def message(name: str, value, config: bool = False) -> str:
    setting = registry.SETTINGS[name]
    valid = setting.config_valid if config and setting.config_valid else setting.valid
    return f"{name}={value!r} is invalid: {name} must be {valid.text}"


def inputs(rows: int = 3, vocab: int = 20, seed: int = 0):
    """Logits with ties, a history with repeats, XTC's draws (below any probability)."""
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randint(-3, 4, (rows, vocab), generator=gen).double()
    logits[0] = torch.randn(vocab, generator=gen, dtype=torch.float64) * 2
    history = torch.randint(0, 4, (rows, 12), generator=gen)
    return logits, history, torch.zeros(rows, dtype=torch.float64)


def test_every_setting_has_an_example_and_every_step_a_call():
    assert set(EXAMPLES) == set(registry.SETTINGS)
    assert set(CALLS) == {r.main for r in STEPS}
    for name, value in EXAMPLES.items():
        registry.check(name, value, config=True)  # the examples are valid


def test_each_order_names_every_step_of_the_chain_once():
    steps = {r.main for r in STEPS}
    for order, names in registry.ORDERS.items():
        assert sorted(names) == sorted(steps), order
        history = [registry.RULE[n].history for n in names]
        assert history == sorted(history, reverse=True), order  # the penalties come first
    assert rules.ORDERS is registry.ORDERS
    assert rules.ORDER == registry.ORDERS["transformers"] == tuple(CALLS)  # CALLS in order


def test_each_entry_names_its_function_and_the_function_takes_its_settings():
    for rule in registry.RULES:
        params = list(inspect.signature(getattr(rules, rule.function)).parameters)
        assert rule.main in rule.names and rule.kind in registry.KINDS, rule.label
        assert [p for p in params if p in {s.arg for s in rule.settings}] == [
            s.arg for s in rule.settings], rule.label      # in the function's own order
        if rule.step:
            assert ("history" in params) == rule.history, rule.label
            assert ("u" in params) == rule.draws, rule.label


@pytest.mark.parametrize("name", list(CALLS))
def test_compose_calls_each_rule_as_a_plain_call_would(name):
    logits, history, u = inputs()
    rule = registry.RULE[name]
    settings = {n: EXAMPLES[n] for n in rule.names if n != "dry_sequence_breakers"}
    if name == "dry_multiplier":
        settings["dry_sequence_breakers"] = ((0,),)
    got = rules.compose(logits, history, xtc_u=u, **settings)
    assert torch.equal(got, CALLS[name](logits, history, u))


@pytest.mark.parametrize("name", [n for n, s in registry.SETTINGS.items() if s.off is not None])
def test_the_off_value_leaves_the_logits_unchanged(name):
    logits, history, u = inputs()
    assert name == registry.RULE_OF[name].main  # only a rule's main setting turns it off
    off = registry.SETTINGS[name].off
    value = logits.shape[-1] if off == registry.VOCAB else off
    assert torch.equal(rules.compose(logits, history, xtc_u=u, **{name: value}), logits)
    assert not torch.equal(CALLS[name](logits, history, u), logits)  # where the example acts


def _rule_call(name: str, value):
    """The setting's rule function called with ``value`` for it, the examples elsewhere."""
    rule = registry.RULE_OF[name]
    logits, history, u = inputs(rows=1, vocab=5)
    kwargs = {s.arg: value if s.name == name else EXAMPLES[s.name] for s in rule.settings}
    kwargs.update({"history": history} if rule.history else {}, **{"u": u} if rule.draws else {})
    if rule.function == "dry":
        kwargs["breakers"] = ()
    return getattr(rules, rule.function)(logits, **kwargs)


@pytest.mark.parametrize("name", [n for n in registry.SETTINGS if registry.RULE_OF[n].step
                                  and n != "dry_sequence_breakers"])
def test_the_rule_function_refuses_every_bad_value_with_the_entrys_message(name):
    _rule_call(name, EXAMPLES[name])
    for value in bad_values(name) + ([0] if name == "temperature" else []):
        with pytest.raises(ValueError) as e:
            _rule_call(name, value)
        assert str(e.value) == message(name, value), value


@pytest.mark.parametrize("name", list(registry.SETTINGS))
def test_decoding_config_refuses_every_bad_value_with_the_entrys_message(name):
    rule = registry.RULE_OF[name]
    for value in bad_values(name):
        with pytest.raises(ValueError) as e:
            DecodingConfig(**{rule.main: EXAMPLES[rule.main], name: value})
        assert str(e.value) == message(name, value, config=True), value


def test_a_setting_of_a_rule_that_is_off_is_refused():
    for rule in registry.RULES:
        for name in rule.names[1:]:
            value = EXAMPLES[name]
            with pytest.raises(ValueError) as e:
                DecodingConfig(**{name: value})
            assert str(e.value) == (f"{name}={value!r} is set but {rule.main} is not: set "
                                    f"{rule.main} to turn the rule on")
    DecodingConfig(mirostat_eta=0.1)  # its default is no setting


def test_decoding_config_has_a_field_per_setting_with_the_registrys_default():
    config = {f.name: f.default for f in fields(DecodingConfig)}
    assert set(config) == set(registry.SETTINGS) | {"seed", "stop", "order"}
    for name, setting in registry.SETTINGS.items():
        assert config[name] == setting.default, name
    assert DecodingConfig(temperature=0).greedy  # 0, refused by the function, is greedy here


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_the_docs_write_the_registrys_order():
    assert _flat(registry.chain_text()) in _flat(rules.__doc__)
    assert _flat(registry.chain_text("llama.cpp")) in _flat(rules.__doc__)
    assert _flat(registry.pipeline_text()) in _flat(sampler.__doc__)
    contributing = _flat((ROOT / "CONTRIBUTING.md").read_text("utf-8"))
    assert _flat(registry.pipeline_text()) in contributing
    for rule in registry.RULES:  # and every label is in it
        assert rule.label.removesuffix(" penalty") in registry.pipeline_text(), rule.label


def test_range_text_says_what_holds():
    assert registry.Range(0, 1, low_open=True).text == "in (0, 1]"
    assert registry.Range(1, integer=True, note=" tokens").text == "an integer >= 1 tokens"
    assert registry.Range(0, low_open=True).text == "a number > 0"
    assert registry.Range().text == "a finite number"
    r = registry.Range(0, 1, high_open=True)
    assert [r.holds(x) for x in (0, 0.5, 1, -0.1, True, "0.5", math.nan)] == [
        True, True, False, False, False, False, False]
    assert not registry.Range(1, integer=True).holds(2.0)
