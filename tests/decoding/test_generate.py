import math

import pytest
import torch

import shakespeare_lm as slm

PROMPT = "KATHARINA:\nMoved! in good time: "


def test_greedy_is_deterministic(tiny, tok):
    a = slm.generate(tiny, tok, PROMPT, 50, temperature=0)
    b = slm.generate(tiny, tok, PROMPT, 50, temperature=0, seed=123)
    assert a.ids == b.ids and len(a.ids) == 50


def test_greedy_picks_the_argmax_at_every_step(tiny, tok):
    g = slm.generate(tiny, tok, PROMPT, 20, temperature=0)
    ids = torch.tensor([tok.encode(PROMPT) + g.ids])
    logits = tiny(ids)[0, len(PROMPT) - 1 : -1]
    assert logits.argmax(-1).tolist() == g.ids


@pytest.mark.parametrize("batch", [1, 4])
def test_same_seed_same_text_other_seed_other_text(tiny, tok, batch):
    prompts = [PROMPT] * batch
    a = slm.generate(tiny, tok, prompts, 60, seed=7)
    b = slm.generate(tiny, tok, prompts, 60, seed=7)
    c = slm.generate(tiny, tok, prompts, 60, seed=8)
    assert [g.text for g in a] == [g.text for g in b]
    assert [g.text for g in a] != [g.text for g in c]


def test_logprobs_are_under_the_untruncated_model(tiny, tok):
    g = slm.generate(tiny, tok, PROMPT, 15, temperature=0.7, top_k=5, seed=1)
    ids = torch.tensor([tok.encode(PROMPT) + g.ids])
    logp = torch.log_softmax(tiny(ids)[0, len(PROMPT) - 1 : -1], -1)
    expected = logp.gather(-1, torch.tensor(g.ids)[:, None]).squeeze(-1)
    assert g.logprobs == pytest.approx(expected.tolist(), abs=1e-5)
    assert g.nats_per_char == pytest.approx(-expected.mean().item(), abs=1e-5)


def test_top_k_one_sampling_equals_greedy(tiny, tok):
    assert (slm.generate(tiny, tok, PROMPT, 30, top_k=1, seed=3).ids
            == slm.generate(tiny, tok, PROMPT, 30, temperature=0).ids)


def test_stop_sequence_ends_generation_and_is_kept(tiny, tok):
    free = slm.generate(tiny, tok, PROMPT, 60, temperature=0)
    stop = free.text[10:12]  # a string greedy is known to produce
    first = free.text.find(stop)
    g = slm.generate(tiny, tok, PROMPT, 60, temperature=0, stop=[stop, "QQQ"])
    assert g.stop_reason == "stop_sequence"
    assert g.text == free.text[: first + len(stop)]
    assert g.text.endswith(stop)
    assert len(g.ids) == len(g.logprobs) == len(g.text)


def test_stop_reasons_per_row_in_a_batch(tiny, tok):
    free = slm.generate(tiny, tok, [PROMPT, "O"], 40, temperature=0)
    stop = free[0].text[5:8]
    g = slm.generate(tiny, tok, [PROMPT, "O"], 40, temperature=0, stop=stop)
    assert g[0].stop_reason == "stop_sequence"
    expected_1 = "stop_sequence" if stop in free[1].text else "max_tokens"
    assert g[1].stop_reason == expected_1
    assert g[1].text == (free[1].text[: free[1].text.find(stop) + len(stop)]
                         if expected_1 == "stop_sequence" else free[1].text)


def test_max_tokens_stop_reason_and_zero_tokens(tiny, tok):
    assert slm.generate(tiny, tok, PROMPT, 5, seed=0).stop_reason == "max_tokens"
    g = slm.generate(tiny, tok, PROMPT, 0)
    assert (g.text, g.ids, g.stop_reason) == ("", [], "max_tokens")


def test_context_window_stops_generation(tiny, tok):
    block = tiny.config.block_size
    prompt = ("To be, or not to be. " * 10)[: block - 5]
    g = slm.generate(tiny, tok, prompt, 100, temperature=0)
    assert g.stop_reason == "context_window"
    assert len(prompt) + len(g.text) == block
    exact = slm.generate(tiny, tok, prompt[:1] * block, 3, temperature=0)
    assert exact.stop_reason == "context_window" and exact.text == ""


def test_context_window_in_a_ragged_batch(tiny, tok):
    block = tiny.config.block_size
    g = slm.generate(tiny, tok, ["A" * (block - 3), "B"], 10, temperature=0)
    assert [len(x.ids) for x in g] == [3, 10]
    assert [x.stop_reason for x in g] == ["context_window", "max_tokens"]


def test_timings_are_recorded(tiny, tok):
    g = slm.generate(tiny, tok, PROMPT, 10, temperature=0, warmup=True)
    t = g.timings
    assert t.new_tokens == 10 and t.batch_size == 1 and t.device == "cpu"
    assert 0 < t.prefill_s <= t.time_to_first_token_s
    assert t.decode_s > 0 and t.time_per_output_token_s == pytest.approx(t.decode_s / 9)
    assert t.tokens_per_s > 0


def test_penalties_change_greedy_and_see_only_real_history(tiny, tok):
    plain = slm.generate(tiny, tok, [PROMPT, "O"], 40, temperature=0)
    pen = slm.generate(tiny, tok, [PROMPT, "O"], 40, temperature=0, repetition_penalty=3.0)
    alone = slm.generate(tiny, tok, "O", 40, temperature=0, repetition_penalty=3.0)
    assert pen[1].ids == alone.ids  # padding of the short row is not history
    assert [g.ids for g in plain] != [g.ids for g in pen]


# --- bad input: a clear error that names the value -------------------------------------
@pytest.mark.parametrize("kwargs,match", [
    (dict(prompt="Hello{"), r"'\{' at position 5"),
    (dict(prompt=""), "empty prompt"),
    (dict(prompt=["ok", ""]), r"empty prompt \(prompt 1 of the batch\)"),
    (dict(prompt=["ok", "b@d"]), r"'@' at position 1.*prompt 1 of the batch"),
    (dict(max_new_tokens=-1), "max_new_tokens=-1"),
    (dict(max_new_tokens=2.5), "max_new_tokens=2.5"),
    (dict(temperature=-0.5), "temperature=-0.5"),
    (dict(temperature=math.nan), "temperature=nan"),
    (dict(top_p=1.5), r"top_p=1.5.*\(0, 1\]"),
    (dict(top_p=0), r"top_p=0"),
    (dict(top_k=0), "top_k=0"),
    (dict(min_p=-0.1), "min_p=-0.1"),
    (dict(typical_p=2), "typical_p=2"),
    (dict(eta=1.0), "eta=1.0"),
    (dict(epsilon=-1), "epsilon=-1"),
    (dict(repetition_penalty=0), "repetition_penalty=0"),
    (dict(stop=""), "stop sequence"),
    (dict(stop="{"), r"'\{'"),
])
def test_bad_input_gives_a_clear_error(tiny, tok, kwargs, match):
    args = dict(prompt=PROMPT, max_new_tokens=5)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        slm.generate(tiny, tok, args.pop("prompt"), args.pop("max_new_tokens"), **args)


def test_prompt_longer_than_context_is_an_error(tiny, tok):
    block = tiny.config.block_size
    too_long = f"{block + 1} characters but the model's context window is {block}"
    with pytest.raises(ValueError, match=too_long):
        slm.generate(tiny, tok, "a" * (block + 1), 5)


def test_prompt_of_wrong_type(tiny, tok):
    with pytest.raises(TypeError, match="prompt must be a str"):
        slm.generate(tiny, tok, 42, 5)


def test_bad_input_leaves_the_model_usable(tiny, tok):
    before = slm.generate(tiny, tok, PROMPT, 10, temperature=0).ids
    with pytest.raises(ValueError):
        slm.generate(tiny, tok, PROMPT, 5, top_p=1.5)
    assert tiny.active_cache is None
    assert slm.generate(tiny, tok, PROMPT, 10, temperature=0).ids == before


# --- context_overflow="slide": generate past the context window --------------------------
@pytest.mark.parametrize("use_cache", [True, False])
def test_slide_generates_past_the_window_and_matches_restarting_by_hand(tiny, tok, use_cache):
    block, keep = tiny.config.block_size, tiny.config.block_size // 2
    g = slm.generate(tiny, tok, PROMPT, 300, temperature=0, context_overflow="slide",
                     use_cache=use_cache)
    assert len(g.ids) == 300 and g.stop_reason == "max_tokens"
    first = block - len(PROMPT)          # characters generated before the first slide
    window = (PROMPT + g.text[:first])[-keep:]
    by_hand = slm.generate(tiny, tok, window, 300 - first, temperature=0, context_overflow="slide")
    assert g.text[first:] == by_hand.text


def test_slide_in_a_ragged_batch_matches_each_row_alone(tiny, tok):
    prompts = [PROMPT, "O", "A" * (tiny.config.block_size - 2)]
    batch = slm.generate(tiny, tok, prompts, 200, temperature=0, context_overflow="slide")
    for p, g in zip(prompts, batch):
        alone = slm.generate(tiny, tok, p, 200, temperature=0, context_overflow="slide")
        assert g.ids == alone.ids and g.stop_reason == "max_tokens"


def test_bad_context_overflow(tiny, tok):
    with pytest.raises(ValueError, match="context_overflow='wrap'"):
        slm.generate(tiny, tok, PROMPT, 5, context_overflow="wrap")
