import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm.decoding.scoring import ContinuationScore

PROMPT = "KATHARINA:\nMoved! in good time: "


@pytest.mark.parametrize("prompt", ["O", "KATHARINA:\n", PROMPT])
def test_scoring_a_generation_gives_its_own_logprobs(tiny, tok, prompt):
    g = slm.generate(tiny, tok, prompt, 40, seed=3)
    s = slm.score_continuations(tiny, tok, prompt, g.text)
    assert isinstance(s, ContinuationScore)
    assert s.logprobs == pytest.approx(g.logprobs, abs=1e-5)
    assert s.nats_per_char == pytest.approx(g.nats_per_char, abs=1e-6)


@pytest.mark.parametrize("batch", [1, 3, 7])
def test_batched_scores_equal_one_at_a_time(tiny, tok, batch):
    prompts = [PROMPT, "PETRUCHIO:\n", "O"] * 3
    conts = ["let him that moved you hither", "Why, what's a moveable?", "a", "x y z",
             "Remove you hence", "I knew you at the first", "You were", "ab", "c"]
    together = slm.score_continuations(tiny, tok, prompts[:batch], conts[:batch], batch_size=2)
    for p, c, s in zip(prompts, conts, together):
        alone = slm.score_continuations(tiny, tok, p, c)
        assert s.logprobs == pytest.approx(alone.logprobs, abs=1e-5)
        assert (s.prompt, s.continuation) == (p, c)


@torch.no_grad()
def test_mean_logprob_is_the_mean_of_a_full_forward_pass(tiny, tok):
    cont = "Remove you hence: I knew you at the first"
    s = slm.score_continuations(tiny, tok, [PROMPT], [cont])[0]
    idx = torch.tensor([tok.encode(PROMPT + cont)])
    logp = torch.log_softmax(tiny(idx)[0, len(PROMPT) - 1 : -1], -1)
    expected = logp.gather(-1, torch.tensor(tok.encode(cont))[:, None]).squeeze(-1)
    assert s.mean_logprob == pytest.approx(expected.mean().item(), abs=1e-5)
    assert s.mean_logprob < 0 and s.nats_per_char == -s.mean_logprob
    assert len(s.logprobs) == len(cont)


def test_one_prompt_is_shared_by_every_continuation(tiny, tok):
    shared = slm.score_continuations(tiny, tok, PROMPT, ["a b", "c d"])
    listed = slm.score_continuations(tiny, tok, [PROMPT, PROMPT], ["a b", "c d"])
    assert [s.logprobs for s in shared] == [s.logprobs for s in listed]


@pytest.mark.parametrize("conts,match", [
    ([], "continuations is empty"),
    (["ok", ""], "continuation 1 is ''"),
    (["ok", 3], "continuation 1 is 3"),
])
def test_bad_continuations_are_named(tiny, tok, conts, match):
    with pytest.raises(ValueError, match=match):
        slm.score_continuations(tiny, tok, PROMPT, conts)


def test_mismatched_prompts_and_continuations_are_refused(tiny, tok):
    with pytest.raises(ValueError, match="got 2 prompts for 3 continuations"):
        slm.score_continuations(tiny, tok, ["a", "b"], ["c", "d", "e"])


def test_unknown_character_names_where_it_is(tiny, tok):
    with pytest.raises(ValueError, match="continuation 1: character 'é' at position 1"):
        slm.score_continuations(tiny, tok, PROMPT, ["ok", "dé"])
