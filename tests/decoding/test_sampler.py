"""The one sampler: every decoder shapes the next-token distribution the same way, and the
bugs that separate copies of it used to hide stay fixed."""

import dataclasses

import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm import speculative as sp
from shakespeare_lm.decoding.sampler import FREE
from shakespeare_lm.site import explorer

from ..conftest import make_tiny

PROMPT = "KATHARINA:\nMoved! in good time: "
SETTINGS = [dict(temperature=0.7, top_k=20, top_p=0.9), dict(temperature=1.3, min_p=0.05),
            dict(temperature=0.9, typical_p=0.6, eta=0.01), dict(temperature=0)]


def test_config_is_frozen_and_validated_once_with_named_errors():
    cfg = slm.DecodingConfig(temperature=0.8, top_p=0.95, stop="\n", seed=0)
    assert cfg.stop == ("\n",) and cfg.truncation == {"temperature": 0.8, "top_p": 0.95}
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.temperature = 1.0
    for bad, match in [(dict(top_p=1.5), "top_p=1.5"), (dict(temperature=-1), "temperature=-1"),
                       (dict(stop=[""]), "stop="), (dict(seed=1.5), "seed=1.5")]:
        with pytest.raises(ValueError, match=match):
            slm.DecodingConfig(**bad)
    with pytest.raises(TypeError, match="unknown decoding setting"):
        slm.DecodingConfig.from_settings(top_q=0.5)


def test_config_and_keywords_give_the_same_text(tiny, tok):
    cfg = slm.DecodingConfig(temperature=0.8, top_p=0.95, seed=0)
    assert (slm.generate(tiny, tok, PROMPT, 30, config=cfg).text
            == slm.generate(tiny, tok, PROMPT, 30, temperature=0.8, top_p=0.95, seed=0).text)


@pytest.mark.parametrize("settings", SETTINGS)
def test_generate_speculative_target_and_explorer_share_one_distribution(tiny, tok, settings):
    ids = tok.encode(PROMPT)
    logits = tiny(torch.tensor([ids]))[0, -1]
    expected = slm.Sampler(slm.DecodingConfig(**settings)).probs(logits[None])[0]
    # the explorer's bars
    shown = explorer.surviving(logits.double(), **settings)
    torch.testing.assert_close(shown.float(), expected, rtol=1e-5, atol=1e-6)
    # speculative decoding's target p: one verify pass with no proposal
    sampler = slm.Sampler(slm.DecodingConfig(**settings))
    with tiny.cache(1, len(ids)) as _:
        slm.prefill(tiny, torch.tensor([ids[:-1]]), torch.arange(len(ids) - 1))
        target_logits = sp.verify_pass(tiny, ids, [])
        p = sp.target_distributions(sampler, target_logits, ids, [], [FREE])[0]
    torch.testing.assert_close(p, expected, rtol=1e-5, atol=1e-6)
    # generate draws its first token from the same distribution
    for seed in range(5):
        first = slm.generate(tiny, tok, PROMPT, 1, seed=seed, **settings).ids[0]
        draw = (int(expected.argmax()) if settings.get("temperature") == 0 else
                int(torch.multinomial(expected, 1, generator=torch.Generator().manual_seed(seed))))
        assert first == draw


# --- bug A: speculative decoding with prompt lookup and a constraint ----------------------
@pytest.mark.parametrize("temperature", [0, 0.8])
def test_prompt_lookup_proposing_a_forbidden_character_is_no_proposal(tiny, tok, temperature):
    # prompt lookup proposes what followed the last match ("B" after "A"), which the
    # constraint forbids: the draft must propose nothing rather than a NaN distribution
    constraint = slm.RegexConstraint(r"[a-z ]{10}", tok)
    lookup = sp.PromptLookupDraft(tok.vocab_size, min_ngram=1)
    g = slm.speculative_decode(tiny, lookup, tok, "AB AB A", 10, 3, temperature=temperature,
                               seed=0, constraint=constraint)
    plain = slm.generate(tiny, tok, "AB AB A", 10, temperature=temperature, seed=0,
                         constraint=constraint)
    assert constraint.matches(g.text) and g.stop_reason == plain.stop_reason == "constraint"
    if temperature == 0:
        assert g.text == plain.text


# --- bug B: greedy ignores truncation rules -----------------------------------------------
@pytest.mark.parametrize("rule", [dict(typical_p=0.2), dict(top_k=3, top_p=0.1, min_p=0.3),
                                  dict(epsilon=0.1, eta=0.05)])
def test_greedy_is_the_argmax_whatever_the_truncation_rules(tiny, tok, rule):
    plain = slm.generate(tiny, tok, PROMPT, 40, temperature=0)
    assert slm.generate(tiny, tok, PROMPT, 40, temperature=0, **rule).ids == plain.ids
    fast = slm.speculative_decode(tiny, make_tiny(1), tok, PROMPT, 40, 3, temperature=0, **rule)
    assert fast.ids == plain.ids


def test_greedy_still_applies_penalties_and_the_constraint_mask(tiny, tok):
    plain = slm.generate(tiny, tok, PROMPT, 40, temperature=0)
    penalised = slm.generate(tiny, tok, PROMPT, 40, temperature=0, repetition_penalty=3.0)
    assert penalised.ids != plain.ids
    c = slm.ChoiceConstraint(["PETRUCHIO", "BIANCA"], tok)
    constrained = slm.generate(tiny, tok, PROMPT, 40, temperature=0, constraint=c)
    assert constrained.text in ("PETRUCHIO", "BIANCA")


# --- bug C: a forward call that conflicts with the cache, and overflow --------------------
def test_plain_forward_while_a_cache_is_set_is_a_clear_error(tiny):
    idx = torch.zeros(2, 8, dtype=torch.long)
    with tiny.cache(2, 10):
        with pytest.raises(RuntimeError, match="without input_pos while a KV cache is set up"):
            tiny(idx)
    assert tiny(idx).shape == (2, 8, tiny.config.vocab_size)  # after the block: a plain pass


def test_overflowing_the_cache_is_a_clear_error(tiny):
    with tiny.cache(1, 4):
        tiny(torch.zeros(1, 4, dtype=torch.long), torch.arange(4))
        with pytest.raises(ValueError, match=r"slot 4 but the KV cache holds 4 slots"):
            tiny(torch.zeros(1, 1, dtype=torch.long), torch.tensor([4]))


def test_a_batch_that_does_not_match_the_cache_is_a_clear_error(tiny):
    with tiny.cache(2, 8):
        with pytest.raises(ValueError, match="3 rows but the KV cache was set up for batch 2"):
            tiny(torch.zeros(3, 1, dtype=torch.long), torch.tensor([0]))


def test_one_cache_at_a_time_and_it_is_freed_on_errors(tiny):
    with pytest.raises(ZeroDivisionError):
        with tiny.cache(1, 4):
            with pytest.raises(RuntimeError, match="already set up"):
                tiny.cache(1, 4)
            raise ZeroDivisionError("an error inside the cache block")
    assert tiny.active_cache is None
