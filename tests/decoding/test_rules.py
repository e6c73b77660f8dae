"""Decoding rules: each rule's defining property on random logits (hypothesis), their errors,
their order in ``compose``, and the worked CAT/DOG numbers of chapter 3."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import shakespeare_lm as slm
from shakespeare_lm.decoding import rules

RULES = settings(max_examples=60, deadline=None)  # each property on 60 random draws

SLACK = 1e-9  # float64 sums of <= 40 terms are far more accurate than this


# --- strategies ----------------------------------------------------------------------
@st.composite
def logit_batches(draw, max_v=40):
    """(B, V) float32 logits; half of the draws are small integers, so ties are common."""
    batch = draw(st.integers(1, 3))
    vocab = draw(st.integers(1, max_v))
    if draw(st.booleans()):
        element = st.floats(-25, 25, allow_nan=False, width=32)
    else:
        element = st.integers(-4, 4).map(float)
    rows = draw(st.lists(st.lists(element, min_size=vocab, max_size=vocab),
                         min_size=batch, max_size=batch))
    return torch.tensor(rows, dtype=torch.float32)


unit_open = st.floats(0.001, 1.0, exclude_max=True)


def probs64(logits: torch.Tensor) -> np.ndarray:
    return torch.softmax(logits.double(), -1).numpy()


def kept(out: torch.Tensor) -> np.ndarray:
    return torch.isfinite(out).numpy()


def check_is_a_mask_of(out: torch.Tensor, logits: torch.Tensor) -> None:
    """A truncation only sets entries to -inf, keeps at least one, and renormalises to 1."""
    assert out.shape == logits.shape and out.dtype == logits.dtype
    keep = torch.isfinite(out)
    assert keep.any(-1).all()
    assert torch.equal(out[keep], logits[keep])
    assert torch.all(out[~keep] == float("-inf"))
    assert torch.allclose(torch.softmax(out, -1).sum(-1), torch.ones(out.shape[0]), atol=1e-5)


TRUNCATIONS = [
    (rules.top_k, st.integers(1, 45)),
    (rules.top_p, st.floats(0.001, 1.0)),
    (rules.min_p, st.floats(0.0, 1.0)),
    (rules.typical, st.floats(0.001, 1.0)),
    (rules.epsilon, st.floats(0.0, 0.999)),
    (rules.eta, st.floats(0.0, 0.999)),
]


@pytest.mark.parametrize("rule,values", TRUNCATIONS, ids=lambda x: getattr(x, "__name__", ""))
@RULES
@given(data=st.data())
def test_truncation_masks_never_modify_input_and_keep_one(rule, values, data):
    logits = data.draw(logit_batches())
    value = data.draw(values)
    before = logits.clone()
    out = rule(logits, value)
    assert torch.equal(logits, before)
    check_is_a_mask_of(out, logits)
    # rows are independent: a batch is the rows done one by one
    rows = torch.cat([rule(row[None], value) for row in logits])
    assert torch.equal(out, rows)


# --- temperature ----------------------------------------------------------------------
@RULES
@given(logits=logit_batches(), t=st.floats(0.05, 20))
def test_temperature_preserves_order(logits, t):
    out = rules.temperature(logits, t)
    assert torch.isfinite(out).all()
    order = torch.sort(logits, dim=-1, stable=True).indices
    assert torch.all(out.gather(-1, order).diff(dim=-1) >= 0)  # rounding may tie, never swap
    assert torch.allclose(torch.softmax(out, -1).sum(-1), torch.ones(len(logits)), atol=1e-5)


@RULES
@given(logits=logit_batches(), t1=st.floats(0.1, 10), t2=st.floats(0.1, 10))
def test_temperature_entropy_grows_with_t(logits, t1, t2):
    lo, hi = sorted((t1, t2))
    h_lo = rules.entropy_bits(rules.temperature(logits, lo))
    h_hi = rules.entropy_bits(rules.temperature(logits, hi))
    assert torch.all(h_lo <= h_hi + 1e-6)


# --- top-k ----------------------------------------------------------------------------
@RULES
@given(logits=logit_batches(), k=st.integers(1, 45))
def test_top_k_keeps_exactly_k_best_ties_to_lower_id(logits, k):
    out = rules.top_k(logits, k)
    for row, keep in zip(logits.numpy(), kept(out)):
        assert keep.sum() == min(k, len(row))
        if not keep.all():
            assert row[keep].min() >= row[~keep].max()
            boundary = row[keep].min()  # among tokens tied at the boundary, lower ids win
            tied = np.flatnonzero(row == boundary)
            assert keep[tied].tolist() == sorted(keep[tied].tolist(), reverse=True)


@RULES
@given(logits=logit_batches())
def test_top_k_one_and_tiny_top_p_are_greedy(logits):
    greedy = rules.greedy(logits)
    for out in (rules.top_k(logits, 1), rules.top_p(logits, 1e-9)):
        assert kept(out).sum(-1).tolist() == [1] * len(logits)
        assert torch.equal(out.argmax(-1), greedy)


# --- top-p ----------------------------------------------------------------------------
@RULES
@given(logits=logit_batches(), p=st.floats(0.001, 1.0))
def test_top_p_keeps_smallest_set_reaching_mass(logits, p):
    out = rules.top_p(logits, p)
    for row, prob, keep in zip(logits.numpy(), probs64(logits), kept(out)):
        if not keep.all():
            assert row[keep].min() >= row[~keep].max()          # the most probable tokens
        mass = prob[keep].sum()
        assert mass >= p - SLACK                                 # they reach p ...
        assert mass - prob[keep].min() < p + SLACK or keep.sum() == 1  # ... and no fewer do


def test_top_p_keeps_the_token_that_crosses_p_and_p_one_keeps_all():
    logits = torch.tensor([0.5, 0.3, 0.2]).log()
    assert kept(rules.top_p(logits, 0.6)).tolist() == [True, True, False]  # 0.5 < 0.6 <= 0.8
    assert kept(rules.top_p(logits, 0.5)).tolist() == [True, False, False]  # 0.5 reaches 0.5
    assert kept(rules.top_p(logits, 1.0)).all()


# --- min-p ----------------------------------------------------------------------------
@RULES
@given(logits=logit_batches(), ratio=st.floats(0.0, 1.0))
def test_min_p_threshold_scales_with_top_probability(logits, ratio):
    out = rules.min_p(logits, ratio)
    for prob, keep in zip(probs64(logits), kept(out)):
        threshold = ratio * prob.max()
        assert np.all(keep[prob >= threshold * (1 + SLACK)])
        assert not np.any(keep[prob < threshold * (1 - SLACK)])


@RULES
@given(logits=logit_batches(), r1=st.floats(0, 1), r2=st.floats(0, 1))
def test_min_p_higher_ratio_keeps_a_subset(logits, r1, r2):
    lo, hi = sorted((r1, r2))
    assert np.all(kept(rules.min_p(logits, hi)) <= kept(rules.min_p(logits, lo)))


# --- typical --------------------------------------------------------------------------
@RULES
@given(logits=logit_batches(), mass=st.floats(0.001, 1.0))
def test_typical_keeps_smallest_set_closest_to_entropy(logits, mass):
    out = rules.typical(logits, mass)
    for prob, keep in zip(probs64(logits), kept(out)):
        logp = np.log(prob)
        distance = np.abs(-logp - (-(prob * logp).sum()))
        if not keep.all():
            assert distance[keep].max() <= distance[~keep].min() + SLACK
        total = prob[keep].sum()
        assert total >= mass - SLACK
        least_typical = np.flatnonzero(keep)[np.argmax(distance[keep])]
        assert total - prob[least_typical] < mass + SLACK or keep.sum() == 1


def test_typical_can_drop_the_most_probable_token():
    # one token at 0.4 and thirty at 0.02: entropy is 2.71 nats, the top token's surprisal
    # 0.92 and each small one's 3.91, so the small ones are the typical ones
    probs = torch.tensor([0.4] + [0.02] * 30)
    out = rules.typical(probs.log(), 0.45)
    assert not kept(out)[0] and kept(out).sum() == 23  # 23 x 0.02 is the first to reach 0.45


# --- epsilon and eta ------------------------------------------------------------------
@RULES
@given(logits=logit_batches(), eps=st.floats(0.0, 0.999))
def test_epsilon_drops_tokens_below_eps_but_never_the_top(logits, eps):
    out = rules.epsilon(logits, eps)
    for prob, keep in zip(probs64(logits), kept(out)):
        assert keep[prob.argmax()]
        assert np.all(keep[prob >= eps * (1 + SLACK)])
        assert not np.any(keep[(prob < eps * (1 - SLACK)) & (prob < prob.max())])


@RULES
@given(logits=logit_batches(), eps=st.floats(0.0, 0.999))
def test_eta_threshold_is_min_of_eps_and_entropy_term(logits, eps):
    out = rules.eta(logits, eps)
    for prob, keep, threshold in zip(probs64(logits), kept(out), rules.eta_threshold(logits, eps)):
        h = -(prob[prob > 0] * np.log(prob[prob > 0])).sum()
        expected = min(eps, math.sqrt(eps) * math.exp(-h))
        assert float(threshold) == pytest.approx(expected, rel=1e-9, abs=1e-300)
        assert keep[prob.argmax()]
        assert np.all(keep[prob >= expected * (1 + SLACK)])
        assert not np.any(keep[(prob < expected * (1 - SLACK)) & (prob < prob.max())])


def test_eta_lowers_its_threshold_when_the_distribution_is_flat():
    peaked = torch.tensor([[5.0, 0.0, 0.0, 0.0]])
    flat = torch.zeros(1, 4)
    assert rules.eta_threshold(flat, 0.1) < rules.eta_threshold(peaked, 0.1) <= 0.1


# --- penalties ------------------------------------------------------------------------
@RULES
@given(logits=logit_batches(max_v=12), penalty=st.floats(1.0, 5.0), data=st.data())
def test_repetition_penalty_divides_positive_multiplies_negative(logits, penalty, data):
    V = logits.shape[-1]
    row_history = st.lists(st.integers(-1, V - 1), min_size=4, max_size=4)
    history = torch.tensor(data.draw(st.lists(row_history,
                                              min_size=len(logits), max_size=len(logits))))
    out = rules.repetition_penalty(logits, history, penalty)
    for row, new, hist in zip(logits, out, history.tolist()):
        for i in range(V):
            if i in hist:
                expected = row[i] / penalty if row[i] > 0 else row[i] * penalty
                assert new[i] == pytest.approx(float(expected)) and new[i] <= row[i]
            else:
                assert new[i] == row[i]  # unseen tokens and -1 padding are untouched


def test_frequency_and_presence_penalties_count_occurrences():
    logits = torch.zeros(1, 4)
    history = torch.tensor([[2, 2, 2, 0, -1]])  # -1 is padding
    assert rules.frequency_penalty(logits, history, 0.5).tolist() == [[-0.5, 0.0, -1.5, 0.0]]
    assert rules.presence_penalty(logits, history, 0.5).tolist() == [[-0.5, 0.0, -0.5, 0.0]]
    assert torch.equal(rules.repetition_penalty(logits + 1, history, 1.0), logits + 1)


# --- composition ----------------------------------------------------------------------
SETTINGS = st.fixed_dictionaries({}, optional={
    "repetition_penalty": st.floats(0.5, 2.0), "frequency_penalty": st.floats(-1, 1),
    "presence_penalty": st.floats(-1, 1), "temperature": st.floats(0.1, 3.0),
    "top_k": st.integers(1, 45), "top_p": st.floats(0.01, 1.0), "min_p": st.floats(0, 1),
    "typical_p": st.floats(0.01, 1.0), "epsilon": st.floats(0, 0.5), "eta": st.floats(0, 0.5)})


@RULES
@given(logits=logit_batches(max_v=20), config=SETTINGS)
def test_compose_applies_rules_in_documented_order(logits, config):
    gen = torch.Generator().manual_seed(0)
    history = torch.randint(0, logits.shape[-1], (len(logits), 6), generator=gen)
    expected = logits
    for name in rules.ORDER:
        if name in config:
            if name in ("repetition_penalty", "frequency_penalty", "presence_penalty"):
                expected = getattr(rules, name)(expected, history, config[name])
            else:
                renamed = {"temperature": rules.temperature, "typical_p": rules.typical}
                fn = renamed.get(name) or getattr(rules, name)
                expected = fn(expected, config[name])
    out = rules.compose(logits, history, **config)
    assert torch.equal(out, expected)
    assert torch.isfinite(out).any(-1).all()


def test_order_matters_temperature_before_top_p():
    logits = torch.tensor([6.2, 4.9, 2.1, 1.0])
    # T = 2 first flattens (0.580, 0.303, 0.075, 0.043): the nucleus at 0.9 needs IS as well
    temperature_first = rules.compose(logits, temperature=2.0, top_p=0.9)
    assert kept(temperature_first).tolist() == [True, True, True, False]
    # the other way round, the nucleus is chosen at T = 1 (0.772, 0.211, ...): CAT and DOG
    top_p_first = rules.temperature(rules.top_p(logits, 0.9), 2.0)
    assert kept(top_p_first).tolist() == [True, True, False, False]


def test_compose_skips_none_and_temperature_zero():
    logits = torch.tensor([[1.0, 2.0, 3.0]])
    assert torch.equal(rules.compose(logits, temperature=0, top_k=None), logits)


def test_sample_never_draws_a_filtered_token():
    logits = rules.top_k(torch.randn(500, 30, generator=torch.Generator().manual_seed(1)), 3)
    drawn = rules.sample(logits, torch.Generator().manual_seed(2))
    assert torch.isfinite(logits.gather(-1, drawn[:, None])).all()


def test_generate_samples_only_what_compose_keeps(tiny, tok):
    prompt = "KATHARINA:\nMoved! in good time: "
    config = dict(temperature=1.3, top_p=0.6, min_p=0.05)
    g = slm.generate(tiny, tok, prompt, 40, seed=5, **config)
    ids = torch.tensor([tok.encode(prompt) + g.ids])
    logits = tiny(ids)[0, len(prompt) - 1 : -1]
    survivors = torch.isfinite(rules.compose(logits, **config))
    assert survivors.gather(-1, torch.tensor(g.ids)[:, None]).all()
    assert (survivors.sum(-1) < logits.shape[-1]).all()  # the rules did cut something


# --- errors ---------------------------------------------------------------------------
BAD = [
    (rules.temperature, "temperature", [0, -1.0, float("nan"), float("inf"), True, "1"]),
    (rules.top_k, "top_k", [0, -3, 2.5, True]),
    (rules.top_p, "top_p", [0, -0.1, 1.5, float("nan")]),
    (rules.min_p, "min_p", [-0.1, 1.01]),
    (rules.typical, "typical_p", [0, 1.2]),
    (rules.epsilon, "epsilon", [-0.1, 1.0]),
    (rules.eta, "eta", [-0.1, 1.0]),
]


@pytest.mark.parametrize("rule,name,values", BAD, ids=[b[1] for b in BAD])
def test_bad_parameter_error_names_it_and_the_valid_range(rule, name, values):
    for value in values:
        with pytest.raises(ValueError, match=f"{name}={value!r} is invalid: {name} must be") as e:
            rule(torch.zeros(1, 3), value)
        assert any(word in str(e.value) for word in ("(0, 1]", "[0, 1]", "[0, 1)", ">= 1", "> 0"))


@pytest.mark.parametrize("name,value", [("repetition_penalty", 0),
                                        ("frequency_penalty", float("nan")),
                                        ("presence_penalty", "a lot"), ("temperature", -0.5)])
def test_validate_names_bad_penalties_and_negative_temperature(name, value):
    with pytest.raises(ValueError, match=f"{name}={value!r} is invalid"):
        rules.validate(**{name: value})


def test_unknown_rule_and_missing_history_are_errors():
    with pytest.raises(TypeError, match="top_q"):
        rules.compose(torch.zeros(3), top_q=0.9)
    with pytest.raises(ValueError, match="repetition_penalty needs the history"):
        rules.compose(torch.zeros(3), repetition_penalty=1.2)


# --- the worked example of chapter 3 --------------------------------------------------
CAT_DOG = torch.tensor([6.2, 4.9, 2.1, 1.0])  # CAT, DOG, IS, LOVELY after "YOUR CAT IS A LOVELY"


def final_probs(**config) -> list[float]:
    return torch.softmax(rules.compose(CAT_DOG.double(), **config), -1).tolist()


# The source text divides probabilities already rounded to three digits; applied to those
# rounded numbers the rules reproduce its tables digit for digit, and applied to the exact
# logits they agree to within 0.001.
CAT_DOG_ROUNDED = torch.tensor([0.772, 0.211, 0.013, 0.004], dtype=torch.float64).log()


def rounded(values, digits=3) -> list[float]:
    return [round(v, digits) for v in values]


@pytest.mark.parametrize("t,expected,digits", [(0.5, [0.931, 0.069, 0.0003, 0.00003], [3, 3, 4, 5]),
                                               (1.0, [0.772, 0.211, 0.013, 0.004], [3] * 4),
                                               (2.0, [0.580, 0.303, 0.075, 0.043], [3] * 4)])
def test_worked_temperature_table(t, expected, digits):
    got = final_probs(temperature=t)
    assert [round(g, d) for g, d in zip(got, digits)] == expected


@pytest.mark.parametrize("config,expected", [
    ({"top_k": 1}, [1, 0, 0, 0]), ({"top_k": 2}, [0.785, 0.215, 0, 0]),
    ({"top_k": 3}, [0.775, 0.212, 0.013, 0]), ({"top_p": 0.7}, [1, 0, 0, 0]),
    ({"top_p": 0.9}, [0.785, 0.215, 0, 0]), ({"top_p": 0.99}, [0.775, 0.212, 0.013, 0]),
    ({"temperature": 1.0, "top_k": 3, "top_p": 0.9}, [0.785, 0.215, 0, 0])])
def test_worked_top_k_and_top_p_tables(config, expected):
    from_rounded = torch.softmax(rules.compose(CAT_DOG_ROUNDED, **config), -1).tolist()
    assert rounded(from_rounded) == expected
    assert final_probs(**config) == pytest.approx(expected, abs=1.5e-3)


def test_worked_pipeline_t2_k3_p09_gives_0657_0343():
    expected = [0.605, 0.316, 0.078, 0]
    assert final_probs(temperature=2.0, top_k=3) == pytest.approx(expected, abs=1e-3)
    assert rounded(final_probs(temperature=2.0, top_k=3, top_p=0.9)) == [0.657, 0.343, 0, 0]


def test_worked_capital_of_france_and_favourite_colour():
    france = torch.tensor([0.97] + [0.03 / 3000] * 3000).log()
    colour = torch.tensor([0.20, 0.18, 0.17, 0.15, 0.12, 0.10] + [0.01] * 8).log()
    assert kept(rules.top_k(france, 2)).sum() == 2 and kept(rules.top_k(france, 50)).sum() == 50
    assert kept(rules.top_p(france, 0.9)).sum() == 1
    assert rounded(torch.softmax(rules.top_k(colour, 2), -1)[:2].tolist()) == [0.526, 0.474]
    nucleus = torch.softmax(rules.top_p(colour, 0.9), -1)
    assert rounded(nucleus[:6].tolist()) == [0.217, 0.196, 0.185, 0.163, 0.130, 0.109]
    assert kept(rules.top_p(colour, 0.9)).sum() == 6


def test_filter_exercise_050_025_015_010():
    probs = torch.tensor([0.50, 0.25, 0.15, 0.10], dtype=torch.float64)
    assert kept(rules.top_k(probs.log(), 2)).tolist() == [True, True, False, False]
    assert kept(rules.top_p(probs.log(), 0.70)).tolist() == [True, True, False, False]
    # min_p keeps 0.15, the threshold being 0.3 * 0.5 = 0.15
    assert kept(rules.min_p(probs.log(), 0.30)).tolist() == [True, True, True, False]
