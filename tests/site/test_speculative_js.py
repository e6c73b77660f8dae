"""The browser's speculative decoding (shakespeare_lm/site/static/speculative.js), run in node,
agrees with shakespeare_lm.speculative on the tiny seeded models and on the real weights:

* the n-gram draft: its probabilities after any context, and its draws (sample_chain, for
  given uniforms, with each draw's probability), equal NGramDraft's bit for bit;
* speculative decoding, round after round, with the n-gram draft and with a model draft: node
  is given the uniforms Python's seeded generator gives, in the chunks it asks for them
  (a round's proposals, then its tests and the token that ends it), and the logits Python's
  models gave for the contexts it asks about, so the same proposals must be kept, the same
  residual and bonus tokens drawn and the same text written as by ``speculative_decode``,
  with the same counts (passes, proposals drafted and tested, acceptances, tokens per
  round, each test's outcome), across settings, gammas, stop sequences and context windows;
* bad arguments are refused with Python's messages.

Python runs the models and answers node's requests (node_harness)."""

from __future__ import annotations

import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm.paths import TRAIN_FILE
from shakespeare_lm.site.book import LIVE_NGRAM_ORDER
from shakespeare_lm.speculative import NGramDraft, speculative_decode
from shakespeare_lm.speculative.algorithm import uniforms

from ..conftest import make_tiny
from .node_harness import converse, module_path, require_node

require_node()

BODY = r"""
const S = require(input.speculative);
const ngram = new S.NGram(input.ngram);
function model(name) { return cs => ask({ what: "logits", model: name, contexts: cs }); }
function uniforms(n) { return ask({ what: "uniforms", n: n }); }
const programs = {
  probs: c => c.contexts.map(ids => ngram.probs(ids)),
  chains: c => c.chains.map(([ids, us]) => ngram.sampleChain(ids, us)),
  decode: c => {
    ask({ what: "case", index: c.index });
    const draft = c.draft === "ngram" ? ngram : S.modelDraft(model("draft"));
    return S.speculativeDecode(model("target"), draft, c.chars, c.block, c.prompt, c.n, c.gamma,
                               c.settings, { uniforms: uniforms, overflow: c.overflow });
  },
};
function main(input) { return input.cases.map(c => attempt(() => programs[c.program](c))); }
"""


def ngram_payload(draft: NGramDraft) -> dict:
    """NGramDraft's counts as speculative.js's NGram takes them (the site's ngram.js)."""
    levels = [{"contexts": c.tolist(), "starts": s.tolist(), "nexts": n.tolist(),
               "counts": k.tolist()} for c, s, n, k in draft.counts_by_order()]
    return {"name": draft.name, "order": draft.order, "smoothing": draft.smoothing,
            "vocab_size": draft.vocab_size, "levels": levels}


class Recorded:
    """What a model computed during one Python run: each row of logits it returned, keyed by
    the context (from the start of its cache) it followed; later rows win, as the run read
    them. Contexts it never ran are counted in ``missed`` (and then run)."""

    def __init__(self, model):
        self.model, self.rows, self.tape, self.missed = model, {}, [], []

    def __call__(self, module, args, out):
        idx = args[0][0].tolist()
        start = int(args[1][0]) if len(args) > 1 and args[1] is not None else 0
        logits = out[0] if isinstance(out, tuple) else out            # (B, T, V)
        self.tape = self.tape[:start] + idx
        for j, row in enumerate(logits[0].double().tolist()):
            self.rows[tuple(self.tape[:start + j + 1])] = row

    @torch.no_grad()
    def answer(self, contexts) -> list[list[float]]:
        out = []
        for c in map(tuple, contexts):
            if c not in self.rows:
                self.missed.append(c)
                self.rows[c] = self.model(torch.tensor([c]))[0, -1].double().tolist()
            out.append(self.rows[c])
        return out


class Reference:
    """Python's speculative_decode of one case, with every logits row its models computed."""

    def __init__(self, target, draft, tok, case: dict):
        models = {"target": target, "draft": draft if case["draft"] == "model" else None}
        self.recorded = {k: Recorded(m) for k, m in models.items() if m is not None}
        hooks = [m.register_forward_hook(self.recorded[k]) for k, m in models.items() if m]
        try:
            self.g = speculative_decode(target, case["drafter"], tok, case["prompt"], case["n"],
                                        case["gamma"], seed=case["seed"],
                                        context_overflow=case["overflow"], **case["settings"])
        finally:
            for h in hooks:
                h.remove()
        self.gen = torch.Generator().manual_seed(case["seed"])      # the same draws again


def run_cases(target, draft, ngram: NGramDraft, tok, cases: list[dict]) -> list:
    """Each case in Python (Reference), then in node, answered from its Reference."""
    refs = [Reference(target, draft, tok, {**c, "drafter": ngram if c["draft"] == "ngram"
                                           else draft}) for c in cases]
    current = {}

    def answer(ask):
        if ask["what"] == "case":
            current["ref"] = refs[ask["index"]]
            return {}
        ref = current["ref"]
        if ask["what"] == "uniforms":
            return uniforms(ask["n"], ref.gen)
        return ref.recorded[ask["model"]].answer(ask["contexts"])

    js_cases = [{"program": "decode", "index": i, "chars": tok.chars,
                 "block": target.config.block_size, **{k: c[k] for k in
                 ("prompt", "n", "gamma", "settings", "overflow", "draft")}}
                for i, c in enumerate(cases)]
    got = converse(BODY, {"speculative": module_path("speculative"), "ngram": ngram_payload(ngram),
                          "cases": js_cases}, answer)
    return list(zip(cases, refs, got))


def check_same_decode(case, ref: Reference, js: dict) -> None:
    g, st = ref.g, ref.g.stats
    what = {k: case[k] for k in ("prompt", "n", "gamma", "settings", "overflow", "draft", "seed")}
    assert "error" not in js, (what, js)
    for rec in ref.recorded.values():                  # it asked only what Python computed
        assert not rec.missed, (what, rec.missed[:3])
    assert (js["text"], js["ids"], js["stopReason"]) == (g.text, g.ids, g.stop_reason), what
    assert js["logprobs"] == pytest.approx(g.logprobs, abs=1e-5), what
    s = js["stats"]
    assert (s["rounds"], s["drafted"], s["proposed"], s["accepted"]) == \
        (st.target_passes, st.drafted, st.proposed, st.accepted), what
    assert s["tokensPerRound"] == st.tokens_per_round and s["outcome"] == st.outcome, what


def cases_for(prompts, settings_list, gammas, seeds, n, overflow="stop", draft="ngram"):
    return [{"prompt": p, "settings": s, "gamma": g, "seed": seed, "n": n, "overflow": overflow,
             "draft": draft}
            for p in prompts for s in settings_list for g in gammas for seed in seeds]


SETTINGS = [{}, {"temperature": 0.8, "top_k": 20}, {"temperature": 0},
            {"temperature": 1.2, "repetition_penalty": 1.3, "min_p": 0.02},
            {"stop": ["e ", "\n"]}]


@pytest.fixture(scope="module")
def tiny_target():
    return make_tiny(seed=11)


@pytest.fixture(scope="module")
def tiny_ngram(tok):
    return NGramDraft(tok, 3, text=TRAIN_FILE.read_text(encoding="utf-8")[:200_000])


@pytest.fixture(scope="module")
def real():
    target, tok = slm.load_pretrained()
    draft, _ = slm.load_pretrained("draft")
    return target, draft, tok, NGramDraft(tok, LIVE_NGRAM_ORDER)


def check_all(results) -> None:
    rejected = bonus = 0
    for case, ref, js in results:
        check_same_decode(case, ref, js)
        st = ref.g.stats
        rejected += st.proposed - st.accepted
        bonus += sum(k == case["gamma"] + 1 for k in st.tokens_per_round)
    assert rejected > 20 and bonus > 5, (rejected, bonus)  # residual draws and bonus tokens ran


def test_js_ngram_probabilities_and_draws_equal_pythons_bit_for_bit(tok, tiny_ngram, real):
    text = TRAIN_FILE.read_text(encoding="utf-8")
    gen = torch.Generator().manual_seed(0)
    for ngram in (tiny_ngram, real[3]):
        contexts = [tok.encode(text[i:i + k]) for k, i in zip([0, 1, 2, 3, 5, 9, 30] * 10,
                                                               range(0, 700_000, 10_000))]
        contexts.append(tok.encode("Qzxq zzQ"))                # contexts the text never had
        chains = [(c, torch.rand(6, generator=gen).tolist()) for c in contexts]
        chains.append((tok.encode("ROMEO"), [0.0, 0.999999, 0.5, 1 - 1e-12]))
        got = converse(BODY, {"speculative": module_path("speculative"),
                              "ngram": ngram_payload(ngram),
                              "cases": [{"program": "probs", "contexts": contexts},
                                        {"program": "chains", "chains": chains}]},
                       lambda ask: pytest.fail(f"asked {ask}"))
        for ids, js in zip(contexts, got[0]):
            assert js == ngram.probs(ids).tolist(), tok.decode(ids)
        for (ids, us), js in zip(chains, got[1]):
            drawn_ids, drawn = ngram.sample_chain(ids, us)
            assert (js["ids"], js["drawn"]) == (drawn_ids, drawn), (tok.decode(ids), us)


def test_js_speculative_rounds_equal_pythons_with_the_ngram_on_the_tiny_model(tiny_target,
                                                                             tiny_ngram, tok):
    cases = cases_for(["KATHARINA:\n", "the "], SETTINGS, [1, 3, 5], [0, 1], 60)
    cases += cases_for(["ROMEO:\n" * 15], [{}, {"temperature": 0.7}], [4], [2], 300, "slide")
    cases += cases_for(["ROMEO:\n" * 15], [{}], [3], [3], 300, "stop")  # the window ends it
    results = run_cases(tiny_target, None, tiny_ngram, tok, cases)
    check_all(results)
    reasons = {ref.g.stop_reason for _, ref, _ in results}
    assert reasons == {"max_tokens", "stop_sequence", "context_window"}, reasons


def test_js_speculative_rounds_equal_pythons_with_a_model_draft_on_the_tiny_models(tiny_target,
                                                                                  tiny_ngram,
                                                                                  tok):
    draft = make_tiny(seed=12)
    cases = cases_for(["KATHARINA:\n"], SETTINGS, [2, 4], [0, 1], 50, draft="model")
    cases += cases_for(["ROMEO:\n" * 15], [{}], [3], [4], 200, "slide", draft="model")
    check_all(run_cases(tiny_target, draft, tiny_ngram, tok, cases))


def test_js_speculative_rounds_equal_pythons_on_the_real_weights(real):
    target, draft, tok, ngram = real
    prompt = "KATHARINA:\nMoved! in good time: let him that moved you "
    cases = cases_for([prompt], SETTINGS[:3], [3], [0, 1], 120)
    cases += cases_for([prompt], [{}, {"temperature": 0.8, "top_k": 20}], [4], [2], 80,
                       draft="model")
    cases += cases_for(["ROMEO:\n"], [{}], [3], [5], 400, "slide")   # two windows
    check_all(run_cases(target, draft, ngram, tok, cases))


def test_js_speculative_decoding_refuses_bad_arguments_with_pythons_messages(tiny_target,
                                                                            tiny_ngram, tok):
    block = tiny_target.config.block_size
    bad = [("KATE:", 5, 0, {}, "stop"), ("KATE:", 5, 1.5, {}, "stop"),
           ("KATE:", -1, 3, {}, "stop"), ("", 5, 3, {}, "stop"), ("KATE{", 5, 3, {}, "stop"),
           ("a" * (block + 1), 5, 3, {}, "stop"),
           ("KATE:", 5, 3, {}, "wrap"), ("KATE:", 5, 3, {"stop": "{"}, "stop"),
           ("KATE:", 5, 3, {"top_p": 0}, "stop"), ("KATE:", 5, 3, {"top_kk": 2}, "stop"),
           ("KATE:", 5, 0, {"top_p": 2}, "wrap")]
    js_cases = [{"program": "decode", "index": 0, "chars": tok.chars, "block": block,
                 "prompt": p, "n": n, "gamma": g, "settings": s, "overflow": o, "draft": "ngram"}
                for p, n, g, s, o in bad]
    got = converse(BODY, {"speculative": module_path("speculative"),
                          "ngram": ngram_payload(tiny_ngram), "cases": js_cases},
                   lambda ask: {} if ask["what"] == "case" else pytest.fail(f"asked {ask}"))
    for (p, n, g, s, o), js in zip(bad, got):
        with pytest.raises((TypeError, ValueError)) as python:
            speculative_decode(tiny_target, tiny_ngram, tok, p, n, g, context_overflow=o, **s)
        assert js == {"error": str(python.value), "name": type(python.value).__name__}, \
            (p[:10], n, g, s, o)
