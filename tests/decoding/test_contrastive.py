import pytest
import torch
import torch.nn.functional as F

import shakespeare_lm as slm
from shakespeare_lm.decoding.contrastive import contrastive_search

from ..conftest import make_tiny

PROMPT = "KATHARINA:\nMoved! in good time: "


def reference_contrastive(model, tok, prompt, n, k, alpha):
    """Su et al. 2022 written plainly: no cache, every candidate scored by a full pass."""
    ids = tok.encode(prompt)
    for _ in range(n):
        logits, hidden = model(torch.tensor([ids]), return_hidden=True)
        probs = torch.softmax(logits[0, -1], -1)
        context = F.normalize(hidden[0], dim=-1)                     # (T, C)
        p, cand = probs.topk(k)
        scores = []
        for pv, v in zip(p.tolist(), cand.tolist()):
            _, h = model(torch.tensor([ids + [v]]), return_hidden=True)
            sim = (F.normalize(h[0, -1], dim=-1) @ context.T).max().item()
            scores.append((1 - alpha) * pv - alpha * sim)
        ids.append(cand[max(range(k), key=lambda j: (scores[j], -j))].item())
    return ids[len(prompt):]


@pytest.mark.parametrize("k,alpha", [(3, 0.4), (5, 0.6), (2, 0.9)])
def test_matches_a_plain_implementation_without_cache(tiny, tok, k, alpha):
    g = contrastive_search(tiny, tok, PROMPT, 25, num_candidates=k, alpha=alpha)
    assert g.ids == reference_contrastive(tiny, tok, PROMPT, 25, k, alpha)


@pytest.mark.parametrize("k,alpha", [(1, 0.7), (6, 0.0)])
def test_one_candidate_or_alpha_zero_is_greedy(tiny, tok, k, alpha):
    greedy = slm.generate(tiny, tok, PROMPT, 40, temperature=0)
    g = contrastive_search(tiny, tok, PROMPT, 40, num_candidates=k, alpha=alpha)
    assert g.ids == greedy.ids


@pytest.mark.parametrize("batch", [2, 5])
def test_batched_rows_equal_single_runs_with_padding(tok, batch):
    model = make_tiny(seed=1)
    prompts = [PROMPT, "O", "PETRUCHIO:\nCome, come, you wasp; ", "A", "BIANCA:\n"][:batch]
    together = contrastive_search(model, tok, prompts, 30, num_candidates=4, alpha=0.5)
    alone = [contrastive_search(model, tok, p, 30, num_candidates=4, alpha=0.5) for p in prompts]
    assert [g.ids for g in together] == [g.ids for g in alone]
    for a, b in zip(together, alone):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def test_logprobs_are_under_the_untruncated_model(tiny, tok):
    g = contrastive_search(tiny, tok, PROMPT, 20, num_candidates=4, alpha=0.6)
    ids = torch.tensor([tok.encode(PROMPT) + g.ids])
    logp = torch.log_softmax(tiny(ids)[0, len(PROMPT) - 1 : -1], -1)
    expected = logp.gather(-1, torch.tensor(g.ids)[:, None]).squeeze(-1)
    assert g.logprobs == pytest.approx(expected.tolist(), abs=1e-5)
    assert g.text == tok.decode(g.ids) and g.stop_reason == "max_tokens"


def test_penalty_changes_the_text_of_a_repetitive_model(tiny, tok):
    greedy = contrastive_search(tiny, tok, PROMPT, 60, num_candidates=5, alpha=0.0)
    strong = contrastive_search(tiny, tok, PROMPT, 60, num_candidates=5, alpha=0.8)
    assert greedy.ids != strong.ids


def test_context_window_stops_a_row(tiny, tok):
    block = tiny.config.block_size
    long_prompt = ("To be, or not to be. " * 20)[: block - 4]
    g = contrastive_search(tiny, tok, [long_prompt, "O"], 10, num_candidates=3, alpha=0.5)
    assert g[0].stop_reason == "context_window" and len(g[0].ids) == 4
    assert g[1].stop_reason == "max_tokens" and len(g[1].ids) == 10
    assert g[1].ids == contrastive_search(tiny, tok, "O", 10, num_candidates=3, alpha=0.5).ids


def test_zero_new_tokens(tiny, tok):
    g = contrastive_search(tiny, tok, PROMPT, 0)
    assert (g.text, g.ids, g.stop_reason) == ("", [], "max_tokens")


@pytest.mark.parametrize("kwargs,needle", [
    ({"num_candidates": 0}, "num_candidates=0"), ({"num_candidates": 64}, "num_candidates=64"),
    ({"num_candidates": 2.0}, "num_candidates=2.0"),
    ({"alpha": -0.1}, "alpha=-0.1"), ({"alpha": 1.5}, "alpha=1.5"), ({"alpha": True}, "alpha=True"),
])
def test_bad_settings_name_the_parameter_and_range(tiny, tok, kwargs, needle):
    with pytest.raises(ValueError, match=needle.replace(".", r"\.")):
        contrastive_search(tiny, tok, PROMPT, 5, **kwargs)


def test_bad_prompt_is_refused(tiny, tok):
    with pytest.raises(ValueError, match="empty prompt"):
        contrastive_search(tiny, tok, "", 5)
    with pytest.raises(ValueError, match="not in the vocabulary"):
        contrastive_search(tiny, tok, "caf\u00e9", 5)


@pytest.mark.parametrize("setting", [{"top_p": 0.9}, {"temperature": 0.5},
                                     {"repetition_penalty": 1.2}, {"seed": 0}])
def test_decoding_settings_are_refused_with_the_reason(tiny, tok, setting):
    (name, value), = setting.items()
    with pytest.raises(ValueError, match=f"contrastive search does not use {name}={value!r}.*"
                                         "num_candidates most probable"):
        contrastive_search(tiny, tok, PROMPT, 5, **setting)
    with pytest.raises(ValueError, match=f"{name}="):
        contrastive_search(tiny, tok, PROMPT, 5, config=slm.DecodingConfig(**setting))
