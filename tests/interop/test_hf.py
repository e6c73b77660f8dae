"""The same model in Hugging Face transformers: conversion and decoding parity.

Skipped when transformers (the ``book`` extra) is not installed. Nothing is downloaded:
``to_transformers`` builds a ``GPT2LMHeadModel`` from our config and copies the weights.
"""

import math

import pytest
import torch
import torch.nn as nn

transformers = pytest.importorskip("transformers")

from transformers.generation import (  # noqa: E402
    EpsilonLogitsWarper,
    EtaLogitsWarper,
    GenerationConfig,
    LogitsProcessorList,
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    TypicalLogitsWarper,
)

import shakespeare_lm as slm  # noqa: E402
from shakespeare_lm.corpus import load_heldout  # noqa: E402
from shakespeare_lm.decoding import rules  # noqa: E402
from shakespeare_lm.interop.hf import NotConvertibleError, hf_inputs, to_transformers  # noqa: E402

PROMPT = "KATHARINA:\nMoved! in good time: let him that moved you "


@pytest.fixture(scope="module", params=["shakespeare", "draft"])
def pair(request):
    model, tok = slm.load_pretrained(request.param)
    return request.param, model, tok, to_transformers(model)


@pytest.fixture(scope="module")
def main_pair():
    model, tok = slm.load_pretrained()
    return model, tok, to_transformers(model)


@pytest.fixture(scope="module")
def heldout():
    return load_heldout()


def _windows(tok, text, batch, length, offset=0):
    return torch.tensor([tok.encode(text[offset + 997 * b: offset + 997 * b + length])
                         for b in range(batch)])


def _hf_text(tok, out, prompt_len):
    return tok.decode(out[prompt_len:].tolist())


# --- the conversion -----------------------------------------------------------------------
def test_config_matches(pair):
    _, model, _, hf = pair
    c, cfg = hf.config, model.config
    assert (c.vocab_size, c.n_positions, c.n_embd, c.n_layer, c.n_head, c.n_inner) == \
        (cfg.vocab_size, cfg.block_size, cfg.d_model, cfg.n_layer, cfg.n_head, 4 * cfg.d_model)
    assert c.activation_function == "gelu"          # F.gelu's default is the exact erf GELU
    assert c.layer_norm_epsilon == model.ln_f.eps
    assert c.resid_pdrop == c.embd_pdrop == c.attn_pdrop == 0.0
    assert c.eos_token_id is None and c.pad_token_id is None and c.bos_token_id is None
    assert not hf.training
    assert hf.lm_head.weight is hf.transformer.wte.weight            # tied, as ours
    assert hf.num_parameters() == model.num_params()


def test_weights_are_copies(pair):
    _, model, _, hf = pair
    assert hf.transformer.wte.weight.data_ptr() != model.tok_emb.weight.data_ptr()
    w = hf.transformer.h[0].attn.c_attn.weight
    assert torch.equal(w, model.blocks[0].attn.qkv.weight.t())      # Conv1D = Linear transposed


@pytest.mark.parametrize("batch,length", [(1, 256), (1, 1), (3, 1), (4, 100), (8, 17), (2, 64)])
def test_logits_bit_identical(pair, heldout, batch, length):
    name, model, tok, hf = pair
    idx = _windows(tok, heldout, batch, length, offset=31 * length)
    with torch.no_grad():
        ours = model(idx)
        theirs = hf(**hf_inputs(idx)).logits
    assert theirs.dtype == ours.dtype and theirs.shape == ours.shape
    assert torch.equal(ours, theirs), f"{name}: max |diff| {(ours - theirs).abs().max():.3g}"


def test_eager_attention_is_close_not_equal(main_pair, heldout):
    """The "eager" attention (matmul + softmax) is another kernel than our SDPA: the logits
    agree to about 1e-5, not bit for bit. The default "sdpa" is bit-identical."""
    model, tok, _ = main_pair
    hf = to_transformers(model, attn_implementation="eager")
    idx = _windows(tok, heldout, 2, 128)
    with torch.no_grad():
        diff = (model(idx) - hf(**hf_inputs(idx)).logits).abs().max().item()
    assert diff < 1e-4


def test_random_tiny_model_bit_identical():
    model = slm.make_model("tiny", seed=1)
    hf = to_transformers(model)
    idx = torch.randint(0, model.config.vocab_size, (3, 40),
                        generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(model(idx), hf(**hf_inputs(idx)).logits)


def test_not_convertible_models_raise():
    with pytest.raises(NotConvertibleError, match="Transformer"):
        to_transformers(nn.Linear(2, 2))
    untied = slm.make_model("tiny")
    untied.lm_head.weight = nn.Parameter(untied.tok_emb.weight.detach().clone())
    with pytest.raises(NotConvertibleError, match="tied"):
        to_transformers(untied)

    class Sub(slm.Transformer):
        pass

    with pytest.raises(NotConvertibleError, match="subclass"):
        to_transformers(Sub(slm.PRESETS["tiny"]))
    odd_eps = slm.make_model("tiny")
    odd_eps.ln_f.eps = 1e-6
    with pytest.raises(NotConvertibleError, match="eps"):
        to_transformers(odd_eps)


# --- generation -----------------------------------------------------------------------------
def test_greedy_text_identical(pair):
    """200 characters of greedy text; every step's log-probability bit for bit but the first.

    For the first token transformers runs lm_head on the prompt's last position only
    (``logits_to_keep=1``, a one-row matmul) where we run it on every position and take the
    last row: another BLAS path, so that one step agrees to float32 rounding: within 8 units
    of the last place (1.2e-6 apart at log p = -2.05 under native kernels; 0 or a few units
    under the pinned ones). Every later step is one row on both sides and bit-identical."""
    name, model, tok, hf = pair
    ours = slm.generate(model, tok, PROMPT, 200, temperature=0)
    out = hf.generate(**hf_inputs([tok.encode(PROMPT)]), do_sample=False, max_new_tokens=200,
                      output_logits=True, return_dict_in_generate=True)
    assert _hf_text(tok, out.sequences[0], len(PROMPT)) == ours.text
    logits = torch.stack(out.logits, dim=1)[0]                          # (200, V)
    lp = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(ours.ids)[:, None])
    lp = lp.squeeze(-1).tolist()
    assert lp[1:] == ours.logprobs[1:]
    assert abs(lp[0] - ours.logprobs[0]) <= 8 * torch.finfo(torch.float32).eps * abs(lp[0])
    with torch.no_grad():  # the whole-sequence pass is bit-identical at the first step too
        idx = torch.tensor([tok.encode(PROMPT)])
        assert torch.equal(hf(**hf_inputs(idx)).logits[0, -1], model(idx)[0, -1])


def test_left_padded_batch_greedy_identical(main_pair):
    """Prompts of different lengths, left-padded: transformers needs the attention_mask (our
    newline is token 0, so padding cannot be recognised by value) and derives positions from
    it, as ours counts positions from each row's first real character."""
    model, tok, hf = main_pair
    prompts = [PROMPT, "ROMEO:\n", "PETRUCHIO:\nI pray you, sir"]
    ours = [g.text for g in slm.generate(model, tok, prompts, 80, temperature=0)]
    enc = [tok.encode(p) for p in prompts]
    L = max(map(len, enc))
    pad = [L - len(e) for e in enc]
    out = hf.generate(**hf_inputs([[0] * p + e for p, e in zip(pad, enc)], pad),
                      do_sample=False, max_new_tokens=80)
    assert [tok.decode(r[L:].tolist()) for r in out] == ours


@pytest.mark.parametrize("ours_kw,hf_kw", [
    ({}, {}),
    ({"temperature": 0.8, "top_p": 0.9}, {"temperature": 0.8, "top_p": 0.9}),
    ({"min_p": 0.1, "repetition_penalty": 1.2}, {"min_p": 0.1, "repetition_penalty": 1.2}),
    ({"typical_p": 0.9, "eta": 0.001}, {"typical_p": 0.9, "eta_cutoff": 0.001}),
])
def test_sampled_text_identical_with_the_same_seed(main_pair, ours_kw, hf_kw):
    """Both sample with torch.multinomial on the same float32 probabilities, so the same
    seed gives the same text. transformers' default top_k is 50 (of our 63 characters):
    top_k=0 switches it off."""
    model, tok, hf = main_pair
    ours = slm.generate(model, tok, PROMPT, 150, seed=3, **ours_kw).text
    torch.manual_seed(3)
    out = hf.generate(**hf_inputs([tok.encode(PROMPT)]), do_sample=True, top_k=0,
                      max_new_tokens=150, **hf_kw)
    assert _hf_text(tok, out[0], len(PROMPT)) == ours


def test_transformers_default_sampling_is_top_k_50(main_pair):
    """transformers' do_sample=True with no settings is top-k 50, not plain sampling."""
    model, tok, hf = main_pair
    ours = slm.generate(model, tok, PROMPT, 60, seed=5, top_k=50).text
    torch.manual_seed(5)
    out = hf.generate(**hf_inputs([tok.encode(PROMPT)]), do_sample=True, max_new_tokens=60)
    assert _hf_text(tok, out[0], len(PROMPT)) == ours


# --- the decoding rules, one at a time and composed ------------------------------------------
@pytest.fixture(scope="module")
def contexts(main_pair, heldout):
    """Ten held-out contexts: (last-position logits (10, V) float32, histories (10, 48))."""
    model, tok, _ = main_pair
    idx = _windows(tok, heldout, 10, 48, offset=12345)
    with torch.no_grad():
        return model(idx)[:, -1], idx


HF_RULES = {
    "temperature": (TemperatureLogitsWarper, "temperature", [0.5, 0.8, 1.3]),
    "top_k": (TopKLogitsWarper, "top_k", [1, 5, 20]),
    "top_p": (TopPLogitsWarper, "top_p", [0.3, 0.7, 0.95]),
    "min_p": (MinPLogitsWarper, "min_p", [0.02, 0.1, 0.3]),
    "typical_p": (TypicalLogitsWarper, "mass", [0.3, 0.7, 0.95]),
    "epsilon": (EpsilonLogitsWarper, "epsilon", [1e-3, 0.01, 0.05]),
    "eta": (EtaLogitsWarper, "epsilon", [1e-3, 0.01, 0.05]),
    "repetition_penalty": (RepetitionPenaltyLogitsProcessor, "penalty", [0.8, 1.2, 2.0]),
}


def _assert_same_distribution(ours: torch.Tensor, theirs: torch.Tensor, what: str):
    assert torch.equal(torch.isinf(ours), torch.isinf(theirs)), f"{what}: different tokens kept"
    p, q = torch.softmax(ours.double(), -1), torch.softmax(theirs.double(), -1)
    assert (p - q).abs().max().item() <= 1e-6, what


@pytest.mark.parametrize("rule", list(HF_RULES))
def test_each_rule_matches_its_logits_processor(contexts, rule):
    logits, history = contexts
    cls, arg, values = HF_RULES[rule]
    for value in values:
        theirs = cls(**{arg: value})(history, logits.clone())
        ours = rules.compose(logits, history, **{rule: value})
        _assert_same_distribution(ours, theirs, f"{rule}={value}")
        if rule != "temperature" and rule != "repetition_penalty":
            assert torch.isinf(ours).any(), f"{rule}={value} filtered nothing: a weak test"


@pytest.mark.parametrize("settings", [
    {"repetition_penalty": 1.3, "temperature": 0.7, "top_k": 20, "top_p": 0.9},
    {"temperature": 1.2, "min_p": 0.05, "typical_p": 0.9, "epsilon": 0.001, "eta": 0.001},
    {"repetition_penalty": 1.1, "temperature": 0.9, "top_k": 30, "top_p": 0.95, "min_p": 0.02,
     "typical_p": 0.95, "epsilon": 0.0005, "eta": 0.0005},
])
def test_composed_rules_match_generate_processor_order(main_pair, contexts, settings):
    """The processor list that ``generate`` itself builds from a GenerationConfig applies the
    rules in our documented order."""
    _, _, hf = main_pair
    logits, history = contexts
    names = {"epsilon": "epsilon_cutoff", "eta": "eta_cutoff"}
    config = GenerationConfig(**{"do_sample": True, "top_k": 0,
                                 **{names.get(k, k): v for k, v in settings.items()}})
    processors = hf._get_logits_processor(config, input_ids_seq_length=history.shape[1],
                                          logits_processor=LogitsProcessorList(),
                                          device=logits.device, model_kwargs={})
    assert len(processors) == len(settings)
    theirs = processors(history, logits.clone())
    _assert_same_distribution(rules.compose(logits, history, **settings), theirs, str(settings))


# --- beam search ---------------------------------------------------------------------------
def _hf_beam(hf, tok, prompt, n, k, alpha, **kw):
    out = hf.generate(**hf_inputs([tok.encode(prompt)]), do_sample=False, num_beams=k,
                      max_new_tokens=n, length_penalty=alpha, **kw)
    return _hf_text(tok, out[0], len(prompt))


@pytest.mark.parametrize("k", [2, 4])
def test_beam_search_without_a_stop_identical_for_any_length_penalty(main_pair, k):
    """Without an end token every beam has the same length when the search ends, so both
    length penalties (ours GNMT ((5+|y|)/6)**alpha, transformers' |y|**alpha) divide every
    score by the same number: the ranking, and the text, do not depend on alpha."""
    model, tok, hf = main_pair
    texts = set()
    for alpha in (0.0, 0.6, 1.0, 2.0):
        ours = slm.beam_search(model, tok, PROMPT, 60, k, length_penalty=alpha).text
        assert _hf_beam(hf, tok, PROMPT, 60, k, alpha) == ours, alpha
        texts.add(ours)
    assert len(texts) == 1


@pytest.mark.parametrize("prompt", [PROMPT, "ROMEO:\n", "PETRUCHIO:\nI pray you"])
@pytest.mark.parametrize("k", [2, 4])
def test_beam_search_with_a_stop_and_no_length_penalty_agrees_here(main_pair, prompt, k):
    """stop="\\n" against eos_token_id=0 at alpha=0 (both rank by log-probability alone):
    the same text on these prompts. Not guaranteed in general: see the next test."""
    model, tok, hf = main_pair
    ours = slm.beam_search(model, tok, prompt, 60, k, stop="\n").text
    assert _hf_beam(hf, tok, prompt, 60, k, 0.0, eos_token_id=0) == ours


def test_beam_search_bookkeeping_differs(main_pair, heldout):
    """Even at alpha=0 the searches are not the same algorithm once hypotheses finish: ours
    keeps a finished hypothesis in its beam slot (fewer live beams), transformers keeps
    num_beams live beams, drawn from the 2 * num_beams best candidates, plus a separate pool
    of finished ones. Here that lets transformers find a more probable line."""
    model, tok, hf = main_pair
    prompt = heldout[5000:5040]
    ours = slm.beam_search(model, tok, prompt, 60, 2, stop="\n")
    theirs = _hf_beam(hf, tok, prompt, 60, 2, 0.0, eos_token_id=0)
    assert theirs != ours.text

    def logprob(text):
        ids = torch.tensor([tok.encode(prompt + text)])
        with torch.no_grad():
            lp = torch.log_softmax(model(ids).double(), -1)[0]
        n = len(prompt)
        return math.fsum(lp[n - 1 + i, ids[0, n + i]].item() for i in range(len(text)))

    assert logprob(theirs) > logprob(ours.text)


def test_beam_length_penalties_differ_with_a_stop(main_pair):
    """With alpha != 0 the two penalties are different functions of the length, so they can
    rank finished lines differently (here on ROMEO:\\n with k=2, alpha=1)."""
    model, tok, hf = main_pair
    ours = slm.beam_search(model, tok, "ROMEO:\n", 60, 2, length_penalty=1.0, stop="\n").text
    theirs = _hf_beam(hf, tok, "ROMEO:\n", 60, 2, 1.0, eos_token_id=0)
    assert ours != theirs


# --- the peer benchmark runs (its speed is measured by running it, never in tests) ----------
def test_bench_peers_smoke(capsys):
    from shakespeare_lm.interop import bench_peers

    res = bench_peers.main(["--repeats", "1", "--chars", "6", "--gammas", "2",
                            "--batches", "1,2", "--temperatures", "0,1"])
    assert res["new_tokens"] == 6
    assert all(res["checks"]["greedy_identical"].values())
    assert res["checks"]["plain_b1_T=1_same_sample"]
    assert {"plain b1 T=0", "plain b2 T=1", "draft model g2 T=0", "prompt lookup best T=1"} \
        <= set(res["ratios"])
    out = capsys.readouterr().out
    assert "torch.set_num_threads(1) for both sides" in out and "median of 1" in out
