import itertools
import math
import re
from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import shakespeare_lm as slm
from shakespeare_lm.decoding.constrained import (BracketListConstraint, ChoiceConstraint,
                                                 ConstraintError, RegexConstraint,
                                                 completion_logprobs, completions,
                                                 exact_distributions, first_completion,
                                                 rejection_sample, total_variation)
from shakespeare_lm.decoding.generate import STOP_REASONS

from ..conftest import make_tiny

PROMPT = "KATHARINA:\nMoved! in good time: "
SPEAKER = r"[A-Z][A-Z ]+:\n"
BOUNDED = [r"[A-Z]{2,6}:\n", r"(the )?(first|second|third|ninth) (of )?(May|June|July)\n",
           r"(to be|not to be), that is the question\.", r"[a-z]{1,5}( [a-z]{1,5}){0,2}\n"]
LIST_TOK = slm.CharTokenizer("[],0123456789 ")


# --- regular expressions ---------------------------------------------------------------
@pytest.mark.parametrize("pattern", BOUNDED)
@pytest.mark.parametrize("batch", [1, 4])
def test_every_constrained_sample_matches_its_regex(tiny, tok, pattern, batch):
    c = RegexConstraint(pattern, tok)
    for seed in range(8):
        for g in slm.generate(tiny, tok, [PROMPT] * batch, 60, seed=seed, constraint=c):
            assert g.stop_reason == "constraint"
            assert re.fullmatch(pattern, g.text), (pattern, g.text)


@pytest.mark.parametrize("rule", [dict(temperature=0), dict(temperature=0.7, top_k=3),
                                  dict(top_p=0.8), dict(min_p=0.2), dict(typical_p=0.9),
                                  dict(epsilon=0.02), dict(eta=0.01),
                                  dict(repetition_penalty=1.5, temperature=1.3),
                                  dict(frequency_penalty=0.5, presence_penalty=0.5)])
def test_constraint_composes_with_every_rule(tiny, tok, rule):
    c = RegexConstraint(BOUNDED[1], tok)
    for seed in range(3):
        g = slm.generate(tiny, tok, [PROMPT, "O"], 60, seed=seed, constraint=c, **rule)
        assert all(x.stop_reason == "constraint" and c.matches(x.text) for x in g)
        assert all(math.isfinite(lp) for x in g for lp in x.logprobs)


def test_unbounded_regex_stops_at_max_tokens_on_a_valid_prefix(tiny, tok):
    c = RegexConstraint(SPEAKER, tok)
    for g in slm.generate(tiny, tok, [PROMPT] * 8, 12, seed=0, constraint=c):
        if g.stop_reason == "constraint":
            assert re.fullmatch(SPEAKER, g.text)
        else:
            assert g.stop_reason == "max_tokens" and len(g.text) == 12
            c.walk(g.text)  # every character was allowed: raises otherwise


def test_constrained_greedy_is_the_argmax_over_allowed_characters(tiny, tok):
    c = RegexConstraint(BOUNDED[0], tok)
    g = slm.generate(tiny, tok, PROMPT, 20, temperature=0, constraint=c)
    ids = torch.tensor([tok.encode(PROMPT) + g.ids])
    logits = tiny(ids)[0, len(PROMPT) - 1 : -1]
    state = c.start()
    for step, t in enumerate(g.ids):
        masked = logits[step].masked_fill(~c.allowed(state), float("-inf"))
        assert t == int(masked.argmax())
        state = c.advance(state, t)


def test_mask_comes_before_truncation(tiny, tok):
    # top_k=1 applied after the mask keeps the best *allowed* character; applied before it,
    # the one survivor would usually be forbidden and nothing would be left to sample.
    c = RegexConstraint(BOUNDED[0], tok)
    a = slm.generate(tiny, tok, PROMPT, 20, top_k=1, seed=5, constraint=c)
    b = slm.generate(tiny, tok, PROMPT, 20, temperature=0, constraint=c)
    assert a.ids == b.ids


def test_batch_rows_keep_their_own_automaton_state(tiny, tok):
    c = RegexConstraint(BOUNDED[3], tok)
    prompts = [PROMPT, "O", "PETRUCHIO:\nCome, come, you wasp"]
    together = slm.generate(tiny, tok, prompts, 40, temperature=0, constraint=c)
    alone = [slm.generate(tiny, tok, p, 40, temperature=0, constraint=c) for p in prompts]
    assert [g.ids for g in together] == [g.ids for g in alone]
    assert [g.stop_reason for g in together] == [g.stop_reason for g in alone]


def test_stop_sequence_still_wins_inside_a_constraint(tiny, tok):
    c = RegexConstraint(r"[a-z]{8}\n", tok)
    free = slm.generate(tiny, tok, PROMPT, 20, temperature=0, constraint=c)
    g = slm.generate(tiny, tok, PROMPT, 20, temperature=0, constraint=c, stop=free.text[2:4])
    assert g.stop_reason == "stop_sequence" and free.text.startswith(g.text)
    assert "constraint" in STOP_REASONS


def test_regex_masks_are_precomputed_per_state(tok):
    c = RegexConstraint(SPEAKER, tok)
    assert c.mask.shape == (c.num_states, tok.vocab_size) and c.mask.dtype == torch.bool
    upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    assert c.allowed_chars(c.start()) == upper
    assert c.allowed_chars(c.walk("K")) == " " + upper
    assert c.allowed_chars(c.walk("KATE")) == " :" + upper
    assert c.allowed_chars(c.walk("KATE:")) == "\n"
    end = c.walk("KATE:\n")
    assert c.is_accepting(end) and not c.can_continue(end)


def test_regex_never_allows_a_dead_end(tok):
    # 'a' then a digit is a match the vocabulary cannot spell: after 'a' only 'b' is allowed
    c = RegexConstraint(r"a[0-9]|ab", tok)
    assert c.allowed_chars(c.walk("a")) == "b"
    assert c.allowed_chars(c.start()) == "a"


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet="ab :\nK", max_size=7),
       pattern=st.sampled_from([r"a+b?", r"(ab|ba)*", r"K[a ]+:\n", r"a{2,3}|b", r"[^a]*b"]))
def test_regex_constraint_agrees_with_re_fullmatch(tok, text, pattern):
    assert RegexConstraint(pattern, tok).matches(text) == bool(re.fullmatch(pattern, text))


@pytest.mark.parametrize("pattern", ["", "a(", r"^KATE$", r"(a)\1"])
def test_bad_regex_is_a_clear_error(tok, pattern):
    with pytest.raises(ValueError, match="pattern="):
        RegexConstraint(pattern, tok)


# --- impossible constraints: a clear error, never NaN -----------------------------------
def test_digits_are_impossible_for_the_shakespeare_vocabulary(tiny, tok):
    c = RegexConstraint(r"[0-9]+", tok)
    assert c.allowed_chars(c.start()) == ""
    no_next = r"no next character in state 0 after the generated prefix ''"
    with pytest.raises(ConstraintError, match=no_next):
        slm.generate(tiny, tok, PROMPT, 5, constraint=c)
    with pytest.raises(ConstraintError, match=r"state ListState\(depth=0, expect='open'\)"):
        slm.generate(tiny, tok, PROMPT, 5, constraint=BracketListConstraint(tok))


class DeadEnd:
    """A broken automaton: 'ab' then nothing, never accepting."""

    def __init__(self, tok):
        self.tok = tok

    def start(self):
        return ""

    def allowed(self, state):
        mask = torch.zeros(self.tok.vocab_size, dtype=torch.bool)
        if len(state) < 2:
            mask[self.tok.stoi["ab"[len(state)]]] = True
        return mask

    def advance(self, state, token_id):
        return state + self.tok.chars[token_id]

    def is_accepting(self, state):
        return False

    def can_continue(self, state):
        return len(state) < 2


@pytest.mark.parametrize("rule", [dict(temperature=0), dict(seed=0), dict(top_p=0.5, seed=1)])
def test_a_dead_end_names_the_state_the_prefix_and_the_row(tiny, tok, rule):
    full = "O" * (tiny.config.block_size - 1)   # row 0 ends (context window) after 1 token
    dead_end = r"state 'ab' after the generated prefix 'ab' \(prompt 1 of the batch\)"
    with pytest.raises(ConstraintError, match=dead_end):
        slm.generate(tiny, tok, [full, PROMPT], 10, constraint=DeadEnd(tok), **rule)
    assert slm.generate(tiny, tok, PROMPT, 3, temperature=0).stop_reason == "max_tokens"


def test_not_a_constraint_is_a_type_error(tiny, tok):
    with pytest.raises(TypeError, match="Constraint protocol"):
        slm.generate(tiny, tok, PROMPT, 5, constraint="[A-Z]+")
    with pytest.raises(TypeError, match=r"shape \(63,\)"):
        slm.generate(tiny, tok, PROMPT, 5, constraint=ChoiceConstraint(["1"], LIST_TOK))


def test_advance_refuses_a_forbidden_character(tok):
    c = RegexConstraint(SPEAKER, tok)
    with pytest.raises(ConstraintError, match=r"'k' is not allowed in state 0"):
        c.advance(c.start(), tok.stoi["k"])
    with pytest.raises(ValueError, match="token_id=99"):
        c.advance(c.start(), 99)


# --- the bracketed list grammar ------------------------------------------------------------
@pytest.mark.parametrize("prefix,allowed", [("", "["), ("[", "0123456789"), ("[3", ",]"),
                                            ("[3,", "0123456789"), ("[3,4", ",]"), ("[3,4]", "")])
def test_list_grammar_allowed_sets(prefix, allowed):
    c = BracketListConstraint(LIST_TOK)
    assert sorted(c.allowed_chars(c.walk(prefix))) == sorted(allowed)


def test_list_grammar_accepts_only_complete_lists():
    c = BracketListConstraint(LIST_TOK)
    assert c.matches("[3]") and c.matches("[3,1,4]")
    assert not any(c.matches(s) for s in ["[", "[3", "[3,", "3", "[3]]"])
    with pytest.raises(ConstraintError, match=r"'\]' at position 1 of '\[\]'"):
        c.walk("[]")
    end = c.walk("[3,4]")
    assert c.is_accepting(end) and not c.can_continue(end)


def test_flat_list_grammar_equals_its_regex_on_every_short_string():
    push, regex = BracketListConstraint(LIST_TOK), RegexConstraint(r"\[[0-9](,[0-9])*\]", LIST_TOK)
    for n in range(7):
        for chars in itertools.product("[],37", repeat=n):
            s = "".join(chars)
            assert push.matches(s) == regex.matches(s) == bool(re.fullmatch(r"\[\d(,\d)*\]", s))


def test_nested_lists_need_the_stack():
    c = BracketListConstraint(LIST_TOK, nested=True)
    assert c.matches("[[3],[4,[5]],6]")
    assert not c.matches("[[3],[4,[5]],6") and not c.matches("[[3]]]")
    assert c.allowed_chars(c.walk("[[3]")) == "],"      # inner list closed, outer still open
    assert c.walk("[[[3").depth == 3
    assert "[" in c.allowed_chars(c.walk("[3,"))
    assert "[" not in BracketListConstraint(LIST_TOK).allowed_chars(c.walk("[3,"))


def test_generation_under_the_list_grammar(tok):
    # a tiny model over the grammar's own characters always produces a complete list
    model = make_tiny(seed=1, vocab_size=LIST_TOK.vocab_size)
    c = BracketListConstraint(LIST_TOK)
    for g in slm.generate(model, LIST_TOK, ["[1] [2,3] "] * 8, 40, seed=2, constraint=c):
        assert g.stop_reason == "constraint" and re.fullmatch(r"\[\d(,\d)*\]", g.text)


# --- labels ---------------------------------------------------------------------------------
def test_label_constraint_generates_exactly_one_label(tiny, tok):
    labels = ["KATHARINA:\n", "PETRUCHIO:\n", "BAPTISTA:\n", "BIANCA:\n"]
    c = ChoiceConstraint(labels, tok)
    assert c.allowed_chars(c.start()) == "BKP"
    assert c.allowed_chars(c.walk("B")) == "AI"
    for g in slm.generate(tiny, tok, [PROMPT] * 6, 30, seed=4, constraint=c):
        assert g.text in labels and g.stop_reason == "constraint"


def test_a_label_that_prefixes_another_does_not_end_generation(tok):
    c = ChoiceConstraint(["KATE", "KATE:"], tok)
    assert c.is_accepting(c.walk("KATE")) and c.can_continue(c.walk("KATE"))
    assert completions(c, tok) == ["KATE:"]


@pytest.mark.parametrize("labels,match", [([], "non-empty list"), ("KATE", "non-empty list"),
                                          (["KATE", ""], "non-empty str"),
                                          (["KATE", "KATE"], "more than once"),
                                          (["KATE", "K8"], r"label 'K8'.*'8' at position 1")])
def test_bad_labels_are_clear_errors(tok, labels, match):
    with pytest.raises(ValueError, match=match):
        ChoiceConstraint(labels, tok)


# --- how masking changes the distribution ----------------------------------------------------
class Unigram(torch.nn.Module):
    """A toy model whose next-character distribution never depends on the context."""

    def __init__(self, probs):
        super().__init__()
        self.logits = torch.nn.Parameter(torch.tensor(probs, dtype=torch.float64).log())

    def forward(self, idx):
        return self.logits.expand(*idx.shape, -1)


def test_exact_distributions_on_a_toy_model_with_a_known_answer():
    # p(a)=1/2, p(b)=3/10, p(c)=1/5; labels aa, ab, b.
    # exact: p(aa)=1/4, p(ab)=3/20, p(b)=3/10 over a total of 7/10.
    # masked: first step {a,b}: a 5/8, b 3/8; after a, {a,b}: a 5/8, b 3/8.
    toy_tok = slm.CharTokenizer("abc")
    d = exact_distributions(Unigram([0.5, 0.3, 0.2]), toy_tok, "c",
                            ChoiceConstraint(["aa", "ab", "b"], toy_tok))
    F = Fraction
    model_p = [F(1, 4), F(3, 20), F(3, 10)]
    conditional = [x / sum(model_p) for x in model_p]
    masked = [F(5, 8) * F(5, 8), F(5, 8) * F(3, 8), F(3, 8)]
    assert d.completions == ["aa", "ab", "b"]
    assert d.model_p.tolist() == pytest.approx([float(x) for x in model_p], abs=1e-12)
    assert d.mass == pytest.approx(0.7, abs=1e-12)
    assert d.conditional.tolist() == pytest.approx([float(x) for x in conditional], abs=1e-12)
    assert d.masked.tolist() == pytest.approx([float(x) for x in masked], abs=1e-12)
    tv = sum(abs(a - b) for a, b in zip(conditional, masked)) / 2
    assert tv == F(3, 56)
    assert d.tv == pytest.approx(float(tv), abs=1e-12)
    # masking over-represents 'aa' and 'ab' (the 'a' branch keeps the mass of 'ac')
    assert [r[0] for r in d.as_rows()] == ["b", "aa", "ab"]


def test_masking_is_exact_when_the_constraint_only_cuts_the_first_step():
    toy_tok = slm.CharTokenizer("abc")
    d = exact_distributions(Unigram([0.5, 0.3, 0.2]), toy_tok, "c",
                            ChoiceConstraint(["a", "b"], toy_tok))
    assert d.tv == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("prompt_len", [1, 20])
def test_masked_probabilities_sum_to_one_and_match_generate(tok, prompt_len):
    model = make_tiny(seed=2)
    c = ChoiceConstraint(["KATE:\n", "KATHARINA:\n", "BIANCA:\n", "BAPTISTA:\n"], tok)
    prompt = PROMPT[-prompt_len:]
    d = exact_distributions(model, tok, prompt, c)
    assert float(d.masked.sum()) == pytest.approx(1.0, abs=1e-9)
    assert float(d.conditional.sum()) == pytest.approx(1.0, abs=1e-9)
    # log q from exact_distributions agrees with the masked decoder's per-step choices
    gens = slm.generate(model, tok, [prompt] * 400, 12, seed=0, constraint=c)
    freq = {k: v / 400 for k, v in __import__("collections").Counter(g.text for g in gens).items()}
    assert total_variation(freq, dict(zip(d.completions, d.masked.tolist()))) < 0.08


@pytest.mark.parametrize("prompt_len", [1, 30])
def test_shared_prompt_cache_gives_the_same_logprobs_as_full_passes(tiny, tok, prompt_len):
    c = ChoiceConstraint(["KATE:\n", "KATHARINA:\n", "BIANCA:\n", "O"], tok)
    texts = completions(c, tok)
    cached = completion_logprobs(tiny, tok, PROMPT[-prompt_len:], c, texts, batch_size=3)
    full = completion_logprobs(tiny, tok, PROMPT[-prompt_len:], c, texts, use_cache=False)
    for a, b in zip(cached, full):
        assert a.tolist() == pytest.approx(b.tolist(), abs=1e-5)
    with torch.no_grad():
        kate_ids = torch.tensor([tok.encode(PROMPT[-prompt_len:] + "KATE:\n")])
        by_hand = torch.log_softmax(tiny(kate_ids), -1)
    ids = tok.encode("KATE:\n")
    expected = sum(float(by_hand[0, prompt_len - 1 + i, t]) for i, t in enumerate(ids))
    assert cached[0][texts.index("KATE:\n")].item() == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("batch_size", [2, 64])
def test_a_batch_of_prompts_equals_one_prompt_at_a_time(tiny, tok, batch_size):
    c = ChoiceConstraint(["KATE:\n", "KATHARINA:\n", "BIANCA:\n", "O"], tok)
    prompts = [PROMPT, "O", PROMPT[:7],
               "PETRUCHIO:\nCome, come, you wasp; i' faith, you are too angry."]
    together = exact_distributions(tiny, tok, prompts, c)
    logp, _ = completion_logprobs(tiny, tok, prompts, c, completions(c, tok),
                                  batch_size=batch_size, use_cache=False)
    for i, (p, d) in enumerate(zip(prompts, together)):
        alone = exact_distributions(tiny, tok, p, c)
        assert d.completions == alone.completions
        for name in ("model_p", "conditional", "masked"):
            expected = getattr(alone, name).tolist()
            assert getattr(d, name).tolist() == pytest.approx(expected, rel=1e-4)
        assert logp[i].exp().tolist() == pytest.approx(alone.model_p.tolist(), rel=1e-4)


def test_context_window_is_checked_when_scoring(tiny, tok):
    c = ChoiceConstraint(["KATE:\n"], tok)
    with pytest.raises(ValueError, match="exceeds the context window of 128"):
        completion_logprobs(tiny, tok, "a" * 125, c, ["KATE:\n"])


def test_rejection_sampling_estimates_the_exact_conditional():
    toy_tok = slm.CharTokenizer("abc")
    model = make_tiny(seed=4, vocab_size=3)
    c = ChoiceConstraint(["aa", "ab", "b"], toy_tok)
    d = exact_distributions(model, toy_tok, "cab", c)
    r = rejection_sample(model, toy_tok, "cab", c, n=3000, max_new_tokens=2, seed=0)
    assert r.acceptance_rate == pytest.approx(d.mass, abs=0.03)
    assert sum(r.rejected.values()) == r.n - r.accepted
    assert all(first_completion(c, toy_tok, text) is None for text in r.rejected)
    exact = dict(zip(d.completions, d.conditional.tolist()))
    assert total_variation(r.distribution(), exact) < 0.04


def test_first_completion():
    c = ChoiceConstraint(["aa", "ab", "b"], slm.CharTokenizer("abc"))
    tok3 = c.tok
    assert first_completion(c, tok3, "abca") == "ab"
    assert first_completion(c, tok3, "b") == "b"
    assert first_completion(c, tok3, "a") is None and first_completion(c, tok3, "ca") is None


def test_completions_of_an_infinite_language_is_an_error(tok):
    with pytest.raises(ValueError, match="longer than max_len=10"):
        completions(RegexConstraint(r"a+\n", tok), tok, max_len=10)
    with pytest.raises(ValueError, match="more than limit=5"):
        completions(RegexConstraint(r"[a-z]{2}", tok), tok, limit=5)
    assert completions(RegexConstraint(r"(to|be)\n", tok), tok) == ["be\n", "to\n"]


def test_total_variation():
    assert total_variation({"a": 1.0}, {"a": 1.0}) == 0.0
    assert total_variation({"a": 1.0}, {"b": 1.0}) == 1.0
    assert total_variation([0.5, 0.5], [0.25, 0.75]) == pytest.approx(0.25)
    assert total_variation({"a": 0.5, "b": 0.5}, {"a": 0.9, "c": 0.1}) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="q is not a probability distribution"):
        total_variation([0.5, 0.5], [0.5, 0.6])
    with pytest.raises(ValueError, match="outcomes"):
        total_variation([1.0], [0.5, 0.5])


def test_regex_state_numbers_do_not_depend_on_the_hash_seed():
    """interegular numbers states in set order; ours must be the same in every process."""
    import subprocess
    import sys

    code = ("import shakespeare_lm as slm; from shakespeare_lm.corpus import ALPHABET; "
            "c = slm.RegexConstraint(r'[A-Z][A-Z ]+:\\n', slm.CharTokenizer(ALPHABET)); "
            "print([c.allowed_chars(s) for s in range(c.num_states)])")

    def states_printed_with_hash_seed(seed):
        env = {**__import__('os').environ, "PYTHONHASHSEED": seed}
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, check=True).stdout

    outs = {states_printed_with_hash_seed(seed) for seed in ("1", "2", "3", "4")}
    assert len(outs) == 1
