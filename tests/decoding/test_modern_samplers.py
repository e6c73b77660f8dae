"""The samplers of today's tools (``shakespeare_lm.decoding.rules``): top-nσ, top-H, XTC, DRY,
no-repeat n-grams, mirostat 2.0, and the order of the chain.

Each rule is checked four ways: its documented semantics on small hand-computed tables;
parity with transformers' warpers where transformers has the rule (top-H, no-repeat n-gram);
parity with llama.cpp's samplers where llama.cpp has it (``test_llama_cpp_parity.py``, on
recorded outputs); its argument checks; and, for the random and stateful rules, that a seed
reproduces a text.
"""

from __future__ import annotations

import math

import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm.decoding import rules
from shakespeare_lm.decoding.sampler import DecodingConfig, Sampler, breaker_ids

NEG = float("-inf")


def kept(logits: torch.Tensor) -> list[int]:
    return torch.isfinite(logits).nonzero().flatten().tolist()


# --- top-nσ ------------------------------------------------------------------------------
def test_top_n_sigma_keeps_logits_within_n_standard_deviations_of_the_top():
    logits = torch.tensor([3.0, 2.0, 1.0, 0.0, -1.0])  # mean 1, σ = sqrt(2)
    assert kept(rules.top_n_sigma(logits, 1.0)) == [0, 1]        # >= 3 - 1.414
    assert kept(rules.top_n_sigma(logits, 1.5)) == [0, 1, 2]     # >= 3 - 2.121
    assert kept(rules.top_n_sigma(logits, 0.01)) == [0]


def test_top_n_sigma_ignores_masked_tokens_in_its_statistics():
    logits = torch.tensor([3.0, 2.0, 1.0, NEG, NEG])  # over the finite three: σ = 0.8165
    assert kept(rules.top_n_sigma(logits, 1.0)) == [0]        # >= 2.18
    assert kept(rules.top_n_sigma(logits, 1.3)) == [0, 1]     # >= 1.94
    assert kept(rules.top_n_sigma(logits, 2.5)) == [0, 1, 2]  # >= 0.96


@pytest.mark.parametrize("t", [0.3, 0.7, 1.0, 1.5, 3.0])
def test_top_n_sigma_keeps_the_same_set_at_every_temperature(t):
    torch.manual_seed(0)
    logits = torch.randn(8, 63) * 3
    base = rules.top_n_sigma(logits, 1.0)
    tempered = rules.top_n_sigma(rules.temperature(logits, t), 1.0)
    assert torch.equal(torch.isfinite(base), torch.isfinite(tempered))
    p = rules.top_p(rules.temperature(logits, t), 0.9)
    q = rules.top_p(logits, 0.9)
    if t != 1.0:  # top-p's set does move with temperature on these rows
        assert not torch.equal(torch.isfinite(p), torch.isfinite(q))


# --- top-H ---------------------------------------------------------------------------------
def test_top_h_keeps_tokens_while_their_entropy_share_stays_within_h():
    logits = torch.tensor([3.0, 2.0, 1.0, 0.0, -1.0])
    p = torch.softmax(logits.double(), -1)
    terms = -(p * p.log())
    shares = torch.cumsum(terms, 0) / terms.sum()  # 0.287, 0.627, 0.838, 0.948, 1
    for h, n in ((0.2, 1), (0.5, 1), (0.7, 2), (0.9, 3), (1.0, 5)):
        assert kept(rules.top_h(logits, h)) == list(range(n)), (h, shares)


def test_top_h_matches_transformers_warper():
    from transformers.generation.logits_process import TopHLogitsWarper

    torch.manual_seed(1)
    for scale in (0.5, 2.0, 5.0):
        logits = torch.randn(40, 63) * scale
        # (at h = 1 both keep the whole distribution up to float32 rounding: transformers
        # compares a float32 running sum with the entropy computed another way, and drops
        # the last tokens of some rows when the two round apart)
        for h in (0.1, 0.3, 0.5, 0.8, 0.95):
            ours = rules.top_h(logits, h)
            theirs = TopHLogitsWarper(h)(None, logits.clone())
            assert torch.equal(torch.isfinite(ours), torch.isfinite(theirs)), (scale, h)
            assert torch.allclose(torch.softmax(ours, -1), torch.softmax(theirs, -1), atol=1e-6)


# --- XTC -----------------------------------------------------------------------------------
def test_xtc_removes_every_token_above_the_threshold_but_the_least_probable():
    logits = torch.tensor([[1.0, 1.0, 0.5, -3.0]])  # p = 0.381, 0.381, 0.231, 0.007
    assert kept(rules.xtc(logits, 0.1, 1.0, torch.zeros(1))[0]) == [2, 3]
    assert kept(rules.xtc(logits, 0.3, 1.0, torch.zeros(1))[0]) == [1, 2, 3]  # ties: lower id first
    assert kept(rules.xtc(logits, 0.4, 1.0, torch.zeros(1))[0]) == [0, 1, 2, 3]  # none above
    assert kept(rules.xtc(logits, 0.1, 0.5, torch.full((1,), 0.7))[0]) == [0, 1, 2, 3]  # no draw
    assert kept(rules.xtc(logits, 0.6, 1.0, torch.zeros(1))[0]) == [0, 1, 2, 3]  # > 0.5: off
    # min_tokens_to_keep: removing two would leave 2 < 3 tokens, so nothing is removed
    kept3 = rules.xtc(logits, 0.1, 1.0, torch.zeros(1), min_tokens_to_keep=3)
    assert kept(kept3[0]) == [0, 1, 2, 3]


def test_xtc_in_the_sampler_is_the_exact_mixture_without_a_generator():
    torch.manual_seed(2)
    logits = torch.randn(3, 63) * 3
    cfg = DecodingConfig(xtc_probability=0.4, xtc_threshold=0.05)
    mixed = Sampler(cfg).probs(logits)
    cut = torch.softmax(rules.xtc(logits, 0.05, 0.4, torch.zeros(3)).double(), -1)
    whole = torch.softmax(logits.double(), -1)
    assert torch.allclose(mixed.double(), 0.4 * cut + 0.6 * whole, atol=1e-6)


# --- no-repeat n-gram ---------------------------------------------------------------------
def test_no_repeat_ngram_forbids_what_would_complete_a_seen_ngram():
    logits = torch.zeros(1, 6)
    history = torch.tensor([[1, 2, 3, 1, 2]])
    assert kept(rules.no_repeat_ngram(logits, history, 3)[0]) == [0, 1, 2, 4, 5]
    assert kept(rules.no_repeat_ngram(logits, history, 2)[0]) == [0, 1, 2, 4, 5]  # 2 -> 3
    assert kept(rules.no_repeat_ngram(logits, history, 1)[0]) == [0, 4, 5]
    assert kept(rules.no_repeat_ngram(logits, history, 6)[0]) == list(range(6))  # too short


def test_no_repeat_ngram_matches_transformers_processor():
    from transformers.generation.logits_process import NoRepeatNGramLogitsProcessor

    gen = torch.Generator().manual_seed(3)
    for n in (1, 2, 3, 4):
        history = torch.randint(0, 5, (16, 30), generator=gen)
        logits = torch.randn(16, 8, generator=gen)
        ours = rules.no_repeat_ngram(logits, history, n)
        theirs = NoRepeatNGramLogitsProcessor(n)(history, logits.clone())
        assert torch.equal(ours, theirs), n


# --- DRY ---------------------------------------------------------------------------------
def test_dry_penalises_the_token_that_would_extend_a_repeat():
    # the worked example of llama.cpp's implementation: a b c c b c y a b c
    a, b, c, y = 0, 1, 2, 3
    history = torch.tensor([[a, b, c, c, b, c, y, a, b, c]])
    logits = torch.zeros(1, 5)
    out = rules.dry(logits, history, multiplier=1.0, base=2.0, allowed_length=2)[0]
    # "a b c" repeats; after the first a b c came c (length 3): c loses 1 * 2 ** (3 - 2) = 2;
    # "b c" repeats; after it came y (length 2): y loses 1 * 2 ** 0 = 1; b (after "c", length
    # 1) is below the allowed length
    assert out.tolist() == [0.0, 0.0, -2.0, -1.0, 0.0]
    penal = rules.dry(logits, history, multiplier=0.8, base=1.75, allowed_length=1)[0]
    assert penal[c] == pytest.approx(-0.8 * 1.75 ** 2) and penal[b] == pytest.approx(-0.8)


def test_dry_breakers_cut_the_repeat_and_are_never_penalised():
    a, b, c, nl = 0, 1, 2, 4
    history = torch.tensor([[a, b, c, nl, a, b]])
    logits = torch.zeros(1, 5)
    out = rules.dry(logits, history, 1.0, 2.0, 2)[0]
    assert out[c] == -1.0                     # "a b" repeats: c would extend it
    broken = rules.dry(logits, history, 1.0, 2.0, 2, breakers=[(nl,)])[0]
    assert broken[c] == -1.0                  # the breaker is before the repeat: no change
    history = torch.tensor([[a, b, nl, a, b, nl, a, b]])
    out = rules.dry(logits, history, 1.0, 2.0, 2, breakers=[(nl,)])[0]
    assert out[nl] == 0.0                     # "a b" is followed by a breaker: spared
    out = rules.dry(torch.zeros(1, 5), torch.tensor([[a, b, nl, a, b, nl, a]]), 1.0, 2.0, 1,
                    breakers=[(nl,)])[0]
    assert out[b] == -1.0                     # only "a" counts: the repeat stops at nl


def test_dry_takes_breakers_as_text(tok):
    cfg = DecodingConfig(dry_multiplier=0.8, dry_sequence_breakers=["\n", ":"])
    assert cfg.dry_sequence_breakers == ("\n", ":")
    sampler = Sampler(cfg, tok=tok)
    history = torch.tensor([tok.encode("ab:ab")])
    out = sampler.penalise(torch.zeros(1, len(tok.chars)), history)
    assert out[0, tok.encode(":")[0]] == 0.0 and out[0, tok.encode("a")[0]] == 0.0


def test_dry_last_n_limits_the_window():
    history = torch.tensor([[0, 1, 2, 3, 3, 3, 0, 1]])
    logits = torch.zeros(1, 4)
    assert rules.dry(logits, history, 1.0, 2.0, 2)[0, 2] == -1.0
    assert rules.dry(logits, history, 1.0, 2.0, 2, last_n=5)[0, 2] == 0.0


def test_dry_breaks_exact_copying_of_a_line():
    """The known cost of DRY (llama.cpp #22007): where the model starts to copy a line that
    the prompt repeats, DRY pushes it off the copy at once."""
    model, tok = slm.load_pretrained()
    line = "O Romeo, Romeo! wherefore art thou Romeo?\n"
    prompt = line + line + line[:12]

    def copied(text):
        return next((i for i, (a, b) in enumerate(zip(text, line[12:])) if a != b), len(text))

    plain = slm.generate(model, tok, prompt, max_new_tokens=20, temperature=0)
    dry = slm.generate(model, tok, prompt, max_new_tokens=20, temperature=0,
                       dry_multiplier=0.8, dry_sequence_breakers=[])
    assert copied(plain.text) >= 4 and copied(dry.text) == 0


# --- mirostat 2.0 ------------------------------------------------------------------------
def test_mirostat_cuts_at_the_target_surprise_and_moves_it_by_the_draw():
    probs = torch.tensor([[0.5, 0.25, 0.125, 0.125]], dtype=torch.float64)
    logits = probs.log()  # surprises 1, 2, 3 and 3 bits
    assert kept(rules.mirostat_truncate(logits, torch.tensor([2.0]))[0]) == [0, 1]
    assert kept(rules.mirostat_truncate(logits, torch.tensor([0.5]))[0]) == [0]  # top stays
    assert kept(rules.mirostat_truncate(logits, torch.tensor([9.0]))[0]) == [0, 1, 2, 3]
    mu = rules.mirostat_update(torch.tensor([2.0]), torch.tensor([0.25]), tau=1.5, eta=0.1)
    assert mu.item() == pytest.approx(2.0 - 0.1 * (2.0 - 1.5))


def test_mirostat_steers_the_average_surprise_toward_its_target():
    model, tok = slm.load_pretrained()
    surprise = {}
    for tau in (1.0, 3.0):
        out = slm.generate(model, tok, "ROMEO:\n", max_new_tokens=200, mirostat_tau=tau, seed=0)
        surprise[tau] = -sum(out.logprobs) / len(out.logprobs) / math.log(2)
    assert surprise[1.0] < surprise[3.0]


# --- the chain's order -------------------------------------------------------------------
def test_the_two_orders_keep_different_sets_for_the_same_settings():
    torch.manual_seed(4)
    logits = torch.randn(1, 63) * 2
    settings = dict(temperature=2.0, top_p=0.5, min_p=0.1)
    hf = rules.compose(logits, order="transformers", **settings)
    llama = rules.compose(logits, order="llama.cpp", **settings)
    assert len(kept(hf[0])) > len(kept(llama[0]))  # flattened first, top-p keeps more
    # llama.cpp's: truncate the untempered distribution, then divide the survivors by T
    untempered = rules.min_p(rules.top_p(logits, 0.5), 0.1)
    assert torch.equal(llama, rules.temperature(untempered, 2.0))


def test_order_is_a_decoding_setting():
    model, tok = slm.load_pretrained()
    runs = [slm.generate(model, tok, "ROMEO:\n", max_new_tokens=60, temperature=1.5,
                         top_p=0.6, seed=5, order=order).text
            for order in ("transformers", "llama.cpp", "transformers")]
    assert runs[0] == runs[2] and runs[0] != runs[1]


# --- reproducibility, speculative decoding, and bad input ---------------------------------
@pytest.mark.parametrize("settings", [dict(xtc_probability=0.5, xtc_threshold=0.1),
                                      dict(mirostat_tau=2.5),
                                      dict(dry_multiplier=0.8, top_n_sigma=1.5, top_h=0.6,
                                           no_repeat_ngram_size=4)])
def test_a_seed_reproduces_a_text(settings):
    model, tok = slm.load_pretrained()
    texts = [slm.generate(model, tok, "KATHARINA:\n", max_new_tokens=80, seed=seed,
                          **settings).text for seed in (7, 7, 8)]
    assert texts[0] == texts[1] != texts[2]


def test_speculative_decoding_refuses_mirostat_and_takes_the_stateless_rules():
    model, tok = slm.load_pretrained()
    draft, _ = slm.load_pretrained("draft")
    with pytest.raises(ValueError, match="cannot use mirostat_tau=3.0: mirostat's target moves"):
        slm.speculative_decode(model, draft, tok, "ROMEO:\n", max_new_tokens=10, gamma=4,
                               mirostat_tau=3.0)
    plain = slm.generate(model, tok, "ROMEO:\n", max_new_tokens=40, temperature=0,
                         no_repeat_ngram_size=3, dry_multiplier=0.8)
    spec = slm.speculative_decode(model, draft, tok, "ROMEO:\n", max_new_tokens=40, gamma=4,
                                  temperature=0, no_repeat_ngram_size=3, dry_multiplier=0.8)
    assert spec.text == plain.text
    out = slm.speculative_decode(model, draft, tok, "ROMEO:\n", max_new_tokens=20, gamma=4,
                                 top_n_sigma=1.0, xtc_probability=0.5, seed=1)
    assert len(out.text) == 20


def test_beam_search_takes_no_repeat_ngram_size():
    model, tok = slm.load_pretrained()
    best = slm.beam_search(model, tok, "ROMEO:\n", max_new_tokens=40, beam_width=3,
                           no_repeat_ngram_size=4)
    grams = [best.text[i:i + 4] for i in range(len(best.text) - 3)]
    assert len(grams) == len(set(grams))


@pytest.mark.parametrize("settings, message", [
    (dict(top_n_sigma=0), "top_n_sigma=0 is invalid: top_n_sigma must be a number > 0"),
    (dict(top_h=1.5), "top_h=1.5 is invalid: top_h must be in (0, 1]"),
    (dict(xtc_probability=2), "xtc_probability=2 is invalid: xtc_probability must be in [0, 1]"),
    (dict(xtc_probability=0.5, xtc_threshold=-0.1),
     "xtc_threshold=-0.1 is invalid: xtc_threshold must be in [0, 1]"),
    (dict(xtc_threshold=0.1), "xtc_threshold=0.1 is set but xtc_probability is not"),
    (dict(dry_multiplier=-1),
     "dry_multiplier=-1 is invalid: dry_multiplier must be a number >= 0"),
    (dict(dry_multiplier=1, dry_base=0.5),
     "dry_base=0.5 is invalid: dry_base must be a number >= 1"),
    (dict(dry_multiplier=1, dry_penalty_last_n=-2), "dry_penalty_last_n=-2 is invalid"),
    (dict(dry_multiplier=1, dry_sequence_breakers=[""]), "dry_sequence_breakers=[''] is invalid"),
    (dict(no_repeat_ngram_size=0), "no_repeat_ngram_size"),
    (dict(mirostat_tau=-1), "mirostat_tau=-1 is invalid: mirostat_tau must be a number > 0"),
    (dict(mirostat_tau=3, mirostat_eta=2), "mirostat_eta=2 is invalid"),
    (dict(order="vllm"),
     "order='vllm' is invalid: order must be one of ['transformers', 'llama.cpp']"),
])
def test_bad_settings_say_what_was_wrong(settings, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        DecodingConfig(**settings)


def test_breakers_the_vocabulary_cannot_write_are_dropped(tok):
    ids = breaker_ids(None, tok)  # llama.cpp's defaults: newline, colon, double quote, star
    assert (tok.encode("\n")[0],) in ids and (tok.encode(":")[0],) in ids
    assert len(ids) == sum(all(ch in tok.stoi for ch in b) for b in ("\n", ":", '"', "*"))
