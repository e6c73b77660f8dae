import itertools
import math

import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm.decoding.beam import (beam_core, bench_beam_vs_naive, cat_dog_example,
                                          exact_core, exact_search, length_penalty,
                                          naive_beam_search, prefix_step, table_logprobs)

from ..conftest import make_tiny

PROMPT = "KATHARINA:\nMoved! in good time: "
PROMPTS = ["O", "KATHARINA:\n", PROMPT]


@pytest.fixture(scope="module")
def peaked():
    """The tiny model with its output logits scaled up 5x: peaked enough for exact search
    to finish, and not so peaked that every search finds the same text."""
    m = make_tiny()
    with torch.no_grad():
        m.lm_head.weight.mul_(5.0)  # tied: the input embedding is scaled too
    return m


@torch.no_grad()
def model_logprobs(model, tok, prompt, ids):
    """log p(ids[i] | prompt, ids[:i]) by one full forward pass, no cache."""
    idx = torch.tensor([tok.encode(prompt) + list(ids)])
    logp = torch.log_softmax(model(idx)[0, len(prompt) - 1 : -1], -1)
    return logp.gather(-1, torch.tensor(ids)[:, None]).squeeze(-1)


# --- beam search on the model ------------------------------------------------------------
@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("which", ["tiny", "peaked"])
def test_beam_width_one_equals_greedy(request, tok, prompt, which):
    model = request.getfixturevalue(which)
    greedy = slm.generate(model, tok, prompt, 40, temperature=0)
    beam = slm.beam_search(model, tok, prompt, 40, beam_width=1)
    assert beam.ids == greedy.ids
    assert beam.logprobs == pytest.approx(greedy.logprobs, abs=1e-5)
    assert beam.stop_reason == greedy.stop_reason == "max_tokens"


def test_beam_width_one_equals_greedy_with_a_stop_sequence(peaked, tok):
    free = slm.generate(peaked, tok, PROMPT, 40, temperature=0)
    stop = free.text[5:7]
    greedy = slm.generate(peaked, tok, PROMPT, 40, temperature=0, stop=stop)
    beam = slm.beam_search(peaked, tok, PROMPT, 40, 1, stop=stop)
    assert greedy.stop_reason == beam.stop_reason == "stop_sequence"
    assert beam.text == greedy.text and beam.text.endswith(stop)


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("beam_width", [2, 3, 5, 10])
@pytest.mark.parametrize("which", ["tiny", "peaked"])
def test_beam_scores_at_least_greedy(request, tok, prompt, beam_width, which):
    # Not a theorem (beam search can drop greedy's path), but what the chapter relies on:
    # pinned here on fixed seeded models.
    model = request.getfixturevalue(which)
    greedy = slm.generate(model, tok, prompt, 30, temperature=0)
    beam = slm.beam_search(model, tok, prompt, 30, beam_width)
    assert beam.logprob >= sum(greedy.logprobs) - 1e-5


@pytest.mark.parametrize("beam_width", [2, 5])
@pytest.mark.parametrize("prompt", PROMPTS)
def test_beam_logprobs_are_the_models_after_cache_reordering(peaked, tok, beam_width, prompt):
    beams = slm.beam_search(peaked, tok, prompt, 25, beam_width, return_all=True)
    assert len(beams) == beam_width
    for b in beams:
        expected = model_logprobs(peaked, tok, prompt, b.ids)
        assert b.logprobs == pytest.approx(expected.tolist(), abs=1e-4)
        assert b.score == pytest.approx(sum(b.logprobs), abs=1e-6)  # alpha = 0: no penalty


def test_return_all_is_sorted_best_first_and_distinct(peaked, tok):
    beams = slm.beam_search(peaked, tok, PROMPT, 20, 5, return_all=True)
    scores = [b.score for b in beams]
    assert scores == sorted(scores, reverse=True)
    assert len({tuple(b.ids) for b in beams}) == 5
    assert slm.beam_search(peaked, tok, PROMPT, 20, 5).ids == beams[0].ids


@pytest.mark.parametrize("beam_width", [1, 3])
def test_cached_beam_equals_naive_beam(peaked, tok, beam_width):
    cached = slm.beam_search(peaked, tok, PROMPT, 20, beam_width, return_all=True)
    naive = naive_beam_search(peaked, tok, PROMPT, 20, beam_width, return_all=True)
    assert [b.ids for b in cached] == [b.ids for b in naive]
    assert [b.score for b in cached] == pytest.approx([b.score for b in naive], abs=1e-4)


def test_stop_sequence_ends_a_beam_and_is_kept(peaked, tok):
    beams = slm.beam_search(peaked, tok, PROMPT, 40, 4, return_all=True)
    stop = beams[0].text[3:5]
    stopped = slm.beam_search(peaked, tok, PROMPT, 40, 4, stop=[stop, "QQQ"], return_all=True)
    best = stopped[0]
    assert best.stop_reason == "stop_sequence" and best.text.endswith(stop)
    assert stop not in best.text[:-1]          # it ended at the first occurrence
    for b in stopped:
        assert (b.stop_reason == "stop_sequence") == b.text.endswith(stop)


def test_length_penalty_divides_the_log_probability(peaked, tok):
    alpha = 0.7
    beams = slm.beam_search(peaked, tok, PROMPT, 20, 3, length_penalty=alpha, return_all=True)
    for b in beams:
        assert b.score == pytest.approx(b.logprob / ((5 + len(b.ids)) / 6) ** alpha, rel=1e-9)
    assert length_penalty(20, 0.0) == 1.0 and length_penalty(1, 5.0) == 1.0


def test_length_penalty_lets_a_longer_ending_win():
    # "<EOS>" now (p 0.6) vs "A A A A A <EOS>" (p 0.4 * 0.98**4): alpha = 0 ends at once,
    # a GNMT penalty with alpha = 1.5 prefers the longer one (-0.997 / 2.48 > -0.511 / 1).
    A, EOS = 0, 1
    table = {(A,) * n: [0.98, 0.02] for n in range(1, 5)}
    table.update({(): [0.4, 0.6], (A,) * 5: [0.0, 1.0]})
    found = {}
    for alpha in (0.0, 1.5):
        best = beam_core(prefix_step(table_logprobs(table, 2)), 2, 10, 2, alpha,
                         is_stop=lambda ids: ids[-1] == EOS)[0]
        found[alpha] = best.ids
    assert found[0.0] == (EOS,)
    assert found[1.5] == (A,) * 5 + (EOS,)


def test_context_window_limits_the_beam(tok):
    model = make_tiny(block_size=16)
    beams = slm.beam_search(model, tok, "KATHARINA:\n", 20, 3, return_all=True)
    assert all(len(b.ids) == 16 - len("KATHARINA:\n") for b in beams)
    assert all(b.stop_reason == "context_window" for b in beams)


def test_zero_new_tokens_gives_the_empty_continuation(tiny, tok):
    b = slm.beam_search(tiny, tok, PROMPT, 0, 3)
    assert b.ids == [] and b.text == "" and b.stop_reason == "max_tokens"


def test_beam_search_frees_the_cache_even_after_an_error(tiny, tok):
    class Broken:
        def start(self):
            return 0

        def allowed(self, state):
            return torch.zeros(tok.vocab_size, dtype=torch.bool)  # allows nothing

        def advance(self, state, token_id):
            return state

        def is_accepting(self, state):
            return False

        def can_continue(self, state):
            return False

    with pytest.raises(slm.ConstraintError, match="allows no next character"):
        slm.beam_search(tiny, tok, PROMPT, 5, 2, constraint=Broken())
    assert tiny.active_cache is None


# --- constraints: a tiny mask-only automaton -----------------------------------------------
class VowelsThenDone:
    """Exactly ``n`` characters, each a lower-case vowel or a space."""

    def __init__(self, tok, n=6):
        self.n = n
        self.mask = torch.zeros(tok.vocab_size, dtype=torch.bool)
        self.mask[tok.encode("aeiou ")] = True

    def start(self):
        return 0

    def allowed(self, state):
        return self.mask if state < self.n else torch.zeros_like(self.mask)

    def advance(self, state, token_id):
        assert bool(self.mask[token_id]), "the decoder fed a masked token"
        return state + 1

    def is_accepting(self, state):
        return state == self.n

    def can_continue(self, state):
        return state < self.n


@pytest.mark.parametrize("beam_width", [1, 3, 6])
def test_constraint_masks_every_beam_and_ends_it(peaked, tok, beam_width):
    beams = slm.beam_search(peaked, tok, PROMPT, 30, beam_width, return_all=True,
                            constraint=VowelsThenDone(tok))
    assert len(beams) == beam_width
    for b in beams:
        assert set(b.text) <= set("aeiou ") and len(b.text) == 6
        assert b.stop_reason == "constraint"
        # scores are the model's own log-probabilities of the allowed text (no renormalising)
        expected = model_logprobs(peaked, tok, PROMPT, b.ids).tolist()
        assert b.logprobs == pytest.approx(expected, abs=1e-4)


def test_constrained_beam_finds_the_most_probable_allowed_text(peaked, tok):
    c = VowelsThenDone(tok, n=2)
    best = slm.beam_search(peaked, tok, PROMPT, 10, len("aeiou "), constraint=c)
    ids = tok.encode("aeiou ")
    brute = max(itertools.product(ids, repeat=2),
                key=lambda y: float(model_logprobs(peaked, tok, PROMPT, y).sum()))
    assert tuple(best.ids) == brute  # beam as wide as the allowed set is exact for 2 steps


# --- the worked example ------------------------------------------------------------------
def test_cat_dog_worked_example():
    words, table = cat_dog_example()
    EOS = words.index("<EOS>")
    step = lambda: prefix_step(table_logprobs(table, len(words)))
    stop = lambda ids: ids[-1] == EOS
    beams = beam_core(step(), len(words), 2, 2, is_stop=stop)
    greedy = beam_core(step(), len(words), 2, 1, is_stop=stop)
    name = lambda h: " ".join(words[i] for i in h.ids)
    assert [name(h) for h in beams] == ["DOG <EOS>", "CAT <EOS>"]
    assert name(greedy[0]) == "CAT <EOS>"
    assert round(math.exp(beams[0].logprob), 3) == 0.200
    assert round(math.exp(greedy[0].logprob), 3) == 0.154
    assert round(beams[0].logprob, 3) == -1.607 and round(greedy[0].logprob, 3) == -1.868
    assert all(h.reason == "stop_sequence" for h in beams)


# --- exact search ------------------------------------------------------------------------
def brute_force_best(next_logprobs, vocab_size, horizon):
    every = torch.tensor(list(itertools.product(range(vocab_size), repeat=horizon)))
    total = torch.zeros(len(every), dtype=torch.float64)
    for t in range(horizon):
        total += next_logprobs(every[:, :t]).double().gather(-1, every[:, t : t + 1]).squeeze(-1)
    return tuple(every[int(total.argmax())].tolist()), float(total.max())


def random_table_logprobs(seed, vocab_size, concentration):
    """A random next-token distribution for every prefix (Dirichlet, seeded by the prefix)."""
    def next_logprobs(prefixes):
        rows = []
        for p in prefixes.tolist():
            g = torch.Generator().manual_seed(hash((seed, *p)) % 2**31)
            alpha = torch.full((vocab_size,), concentration, dtype=torch.float64)
            rows.append(torch._standard_gamma(alpha, generator=g).log().log_softmax(-1))
        return torch.stack(rows)
    return next_logprobs


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("horizon", [1, 2, 3])
def test_exact_core_equals_brute_force_on_random_tables(seed, horizon):
    V = 5
    fn = random_table_logprobs(seed, V, concentration=0.3)
    best, sizes = exact_core(fn, horizon)
    ids, score = brute_force_best(fn, V, horizon)
    assert best.ids == ids and best.score == pytest.approx(score, abs=1e-9)
    beam = beam_core(prefix_step(fn), V, horizon, 2)[0]
    assert best.score >= beam.score - 1e-12
    assert sizes[0] == 1 and len(sizes) == horizon


@torch.no_grad()
def test_exact_search_equals_enumeration_on_the_model(peaked, tok):
    res = exact_search(peaked, tok, PROMPT, 2, beam_width=1)
    prompt = torch.tensor(tok.encode(PROMPT))

    def next_logprobs(prefixes):
        idx = torch.cat([prompt.expand(len(prefixes), -1), prefixes], dim=1)
        return torch.log_softmax(peaked(idx)[:, -1], -1)

    ids, score = brute_force_best(next_logprobs, tok.vocab_size, 2)
    assert tuple(res.best.ids) == ids and res.best.logprob == pytest.approx(score, abs=1e-4)


@pytest.mark.parametrize("horizon", [1, 3, 5])
@pytest.mark.parametrize("beam_width", [1, 2, 5])
def test_exact_search_scores_at_least_beam_on_short_horizons(peaked, tok, horizon, beam_width):
    beam = slm.beam_search(peaked, tok, PROMPT, horizon, beam_width)
    res = exact_search(peaked, tok, PROMPT, horizon, lower_bound=beam.logprob)
    assert len(res.best.ids) == horizon
    assert res.best.logprob >= beam.logprob - 1e-5
    assert res.best.logprobs == pytest.approx(
        model_logprobs(peaked, tok, PROMPT, res.best.ids).tolist(), abs=1e-4)


def test_exact_search_refuses_a_frontier_it_cannot_afford(tiny, tok):
    with pytest.raises(RuntimeError, match="max_frontier=100"):
        exact_search(tiny, tok, PROMPT, 3, max_frontier=100)


# --- bad input ---------------------------------------------------------------------------
@pytest.mark.parametrize("beam_width", [0, -1, 64, 1.5, True, "2"])
def test_bad_beam_width_is_named(tiny, tok, beam_width):
    with pytest.raises(ValueError, match=r"beam_width=.* must be an integer in \[1, 63\]"):
        slm.beam_search(tiny, tok, PROMPT, 5, beam_width)


@pytest.mark.parametrize("n", [-1, 2.0, None])
def test_bad_max_new_tokens_is_named(tiny, tok, n):
    with pytest.raises(ValueError, match="max_new_tokens=.* must be an integer >= 0"):
        slm.beam_search(tiny, tok, PROMPT, n, 2)


def test_unknown_character_in_prompt_is_named(tiny, tok):
    with pytest.raises(ValueError, match="'é' at position 2 is not in the vocabulary"):
        slm.beam_search(tiny, tok, "Caé", 5, 2)


@pytest.mark.parametrize("prompt", ["", ["a", ""], [], 3])
def test_empty_or_malformed_prompt_is_refused(tiny, tok, prompt):
    with pytest.raises((ValueError, TypeError), match="prompt"):
        slm.beam_search(tiny, tok, prompt, 5, 2)


def test_a_list_of_prompts_gives_one_search_per_prompt(tiny, tok):
    prompts = ["KATHARINA:\n", "O"]
    together = slm.beam_search(tiny, tok, prompts, 8, 3)
    assert [g.ids for g in together] == [slm.beam_search(tiny, tok, p, 8, 3).ids for p in prompts]


@pytest.mark.parametrize("alpha", [float("nan"), float("inf"), "0.6", None])
def test_bad_length_penalty_is_named(tiny, tok, alpha):
    with pytest.raises(ValueError, match="length_penalty=.* must be a finite number"):
        slm.beam_search(tiny, tok, PROMPT, 5, 2, length_penalty=alpha)


@pytest.mark.parametrize("horizon", [0, -2, 1000])
def test_bad_horizon_is_named(tiny, tok, horizon):
    with pytest.raises(ValueError, match=r"horizon=.* must be an integer in \[1, "):
        exact_search(tiny, tok, PROMPT, horizon)


def test_bad_stop_is_named(tiny, tok):
    with pytest.raises(ValueError, match="stop="):
        slm.beam_search(tiny, tok, PROMPT, 5, 2, stop="")


def test_bench_reports_both_timings_and_agreement(tiny, tok):
    r = bench_beam_vs_naive(tiny, tok, max_new_tokens=8, beam_width=3, repeats=1)
    assert r["same_text"] is True
    assert r["cached_s"] > 0 and r["naive_s"] > 0
    assert r["speedup"] == pytest.approx(r["naive_s"] / r["cached_s"])


@pytest.mark.parametrize("penalty", [{"repetition_penalty": 1.8},
                                     {"frequency_penalty": 0.9, "presence_penalty": 0.4}])
@pytest.mark.parametrize("prompt_len", [1, 12])
def test_width_one_with_a_penalty_is_greedy_generate_with_that_penalty(tiny, tok, penalty,
                                                                        prompt_len):
    prompt = PROMPT[:prompt_len]
    beam = slm.beam_search(tiny, tok, prompt, 40, 1, **penalty)
    greedy = slm.generate(tiny, tok, prompt, 40, temperature=0, **penalty)
    assert beam.ids == greedy.ids and beam.logprobs == greedy.logprobs  # the model's log-probs
    assert beam.ids != slm.beam_search(tiny, tok, prompt, 40, 1).ids   # the penalty acts


def test_a_penalty_reshapes_the_beam_scores_like_the_sampler(tiny, tok):
    plain = slm.beam_search(tiny, tok, PROMPT, 20, 3)
    cfg = slm.DecodingConfig(presence_penalty=50.0)   # no character may come twice
    penalised = slm.beam_search(tiny, tok, PROMPT, 20, 3, config=cfg)
    assert len(set(penalised.ids)) == len(penalised.ids) != len(set(plain.ids))


@pytest.mark.parametrize("setting", [{"top_p": 0.9}, {"temperature": 0.7}, {"seed": 3}])
def test_settings_a_search_cannot_use_are_refused_by_name(tiny, tok, setting):
    (name, value), = setting.items()
    with pytest.raises(ValueError, match=f"beam search does not use {name}={value!r}"):
        slm.beam_search(tiny, tok, PROMPT, 5, 2, **setting)
    with pytest.raises(TypeError, match="unknown decoding setting"):
        slm.beam_search(tiny, tok, PROMPT, 5, 2, top_q=0.5)
