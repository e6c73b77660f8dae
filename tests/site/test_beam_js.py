"""The browser's beam search and exact search (shakespeare_lm/site/static/beam.js), run in
node, agree with shakespeare_lm.decoding.beam on the tiny seeded model and on the real
weights: Python runs the model and answers node's requests for logits (node_harness), so
both read the same numbers.

* beam search: the hypotheses kept at every step (in beam order) and the final beams (ids,
  the model's log-probabilities, scores, why each ended) equal beam_core's on the same
  logits, over widths, GNMT length penalties, stop sequences and penalties; the final beams
  equal ``slm.beam_search``'s (the model-facing search, its beams batched on the KV cache);
  bad arguments are refused with Python's messages;
* exact search: the best continuation, its score and the prefixes scored at each depth equal
  exact_core's (branch and bound, breadth first) for the same bound, and the search with
  the beam's bound finds ``beam.exact_search``'s best."""

from __future__ import annotations

import math

import pytest
import torch

import shakespeare_lm as slm
from shakespeare_lm.decoding import beam
from shakespeare_lm.decoding.beam import beam_core, exact_core, prefix_step

from ..conftest import make_tiny
from .node_harness import ModelLogits, converse, module_path, require_node

require_node()

SCORE_TOL = 1e-9   # float64 on both sides, from the same logits
MODEL_TOL = 1e-4   # against the KV-cached search, whose logits differ in the last bits

BODY = r"""
const B = require(input.beam);
function model(contexts) { return ask({ contexts: contexts }); }
const programs = {
  // Beam step by step: each step's live hypotheses, the columns, the final beams
  beam: c => {
    const b = new B.Beam(c.prompt, c.chars.length, c.steps, c.width, c.alpha,
                         { settings: c.settings, chars: c.chars, runnersUp: 2 });
    const kept = [], columns = [];
    while (!b.done) { columns.push(b.step(model)); kept.push(b.live.map(h => h.ids)); }
    return { kept: kept, columns: columns, beams: b.result() };
  },
  beamSearch: c => B.beamSearch(model, c.chars, c.block, c.text, c.n, c.width, c.alpha, c.settings),
  exactCore: c => B.exactCore(model, c.prompt, c.horizon, c.bound, { maxFrontier: c.maxFrontier }),
  exactSearch: c => B.exactSearch(model, c.chars, c.block, c.text, c.horizon),
};
function main(input) { return input.cases.map(c => attempt(() => programs[c.program](c))); }
"""


def run_js(logits: ModelLogits, cases: list[dict]) -> list:
    out = converse(BODY, {"beam": module_path("beam"), "cases": cases},
                   lambda ask: logits.rows(ask["contexts"]))
    assert len(out) == len(cases)
    return out


@pytest.fixture(scope="module")
def tiny_model():
    return make_tiny(seed=7)  # context 128


@pytest.fixture(scope="module")
def real():
    return slm.load_pretrained()


# --- beam search -------------------------------------------------------------------------
def python_beam(logits: ModelLogits, tok, prompt: list[int], steps, width, alpha, settings):
    """beam_core on the logits node read (float64): the live hypotheses after each step but
    the last (what the step function is asked about next) and the final beams."""
    kept = []

    def next_logits(prefixes: torch.Tensor) -> torch.Tensor:
        if prefixes.shape[1]:
            kept.append(prefixes.tolist())
        return logits.tensor([prompt + p for p in prefixes.tolist()])

    stops = settings.get("stop")
    stops = (stops,) if isinstance(stops, str) else tuple(stops or ())
    is_stop = (lambda ids: tok.decode(ids).endswith(stops)) if stops else None
    hyps = beam_core(prefix_step(next_logits), tok.vocab_size, steps, width, alpha,
                     is_stop=is_stop, config=beam.beam_config(**settings), history=prompt)
    return kept, hyps


def check_beam(js: dict, kept: list, hyps: list, what) -> None:
    assert "error" not in js, (what, js)
    assert js["kept"][:len(kept)] == kept, what             # every step's beam, in order
    assert len(js["kept"]) in (len(kept), len(kept) + 1), what
    assert [b["ids"] for b in js["beams"]] == [list(h.ids) for h in hyps], what
    for b, h in zip(js["beams"], hyps):
        assert b["reason"] == h.reason, what
        assert b["score"] == pytest.approx(h.score, abs=SCORE_TOL), what
        assert b["logprobs"] == pytest.approx(list(h.logprobs), abs=SCORE_TOL), what
        assert b["logprob"] == pytest.approx(h.logprob, abs=SCORE_TOL), what
    for column in js["columns"]:                            # what the explorer draws
        assert [e["kept"] for e in column][:1] == [True], what
        scores = [e["score"] for e in column]
        assert scores == sorted(scores, reverse=True), what


BEAM_CASES = [  # (prompt, steps, width, alpha, settings)
    ("KATHARINA:\nMoved! in good time: ", 8, 1, 0.0, {}),
    ("KATHARINA:\nMoved! in good time: ", 8, 3, 0.0, {}),
    ("ROMEO:\n", 10, 5, 0.6, {}),
    ("PETRUCHIO:\n", 12, 8, 1.0, {}),
    ("the ", 12, 4, 2.0, {"stop": ["e", "TTT"]}),   # the tiny model's text is mostly T, D, x
    ("O", 14, 4, 1.0, {"stop": ["\n", " ", "D"]}),
    ("JULIET:\n", 10, 6, 0.0, {"stop": [" t", "a", "xT"]}),
    ("the the the ", 10, 3, 0.6, {"repetition_penalty": 1.5}),
    ("KATE: ", 10, 5, 0.0, {"presence_penalty": 0.8, "frequency_penalty": 0.3, "stop": [" ", "T"]}),
]


def beam_cases(logits, tok, cases):
    js_cases, expected = [], []
    for prompt, steps, width, alpha, settings in cases:
        ids = tok.encode(prompt)
        js_cases.append({"program": "beam", "prompt": ids, "chars": tok.chars, "steps": steps,
                         "width": width, "alpha": alpha, "settings": settings})
        expected.append(python_beam(logits, tok, ids, steps, width, alpha, settings))
    return js_cases, expected


@pytest.mark.parametrize("which", ["tiny", "real"])
def test_js_beam_keeps_and_returns_what_python_beam_core_does(which, tiny_model, real, tok):
    model = tiny_model if which == "tiny" else real[0]
    logits = ModelLogits(model)
    cases, expected = beam_cases(logits, tok, BEAM_CASES)
    got = run_js(logits, cases)
    reasons = set()
    for case, js, (kept, hyps) in zip(BEAM_CASES, got, expected):
        check_beam(js, kept, hyps, (which, case))
        reasons |= {h.reason for h in hyps}
    assert reasons == {"max_tokens", "stop_sequence"}            # both kinds of ending ran
    ended_early = [h for _, hyps in expected for h in hyps if h.reason == "stop_sequence"]
    assert any(len(h.ids) < 5 for h in ended_early)              # finished beams held slots


def tie_table(V: int = 4, depth: int = 3) -> dict[tuple[int, ...], list[float]]:
    """Next-token probabilities after every prefix shorter than ``depth``: rows with exact
    ties and with impossible (probability 0) tokens, a different row per prefix."""
    rows = [[0.4, 0.2, 0.2, 0.2], [0.5, 0.25, 0.25, 0.0], [0.25, 0.25, 0.25, 0.25],
            [0.0, 0.5, 0.0, 0.5], [0.2, 0.2, 0.4, 0.2]]
    prefixes = [()]
    for _ in range(depth - 1):
        prefixes += [p + (v,) for p in prefixes if len(p) == len(prefixes[-1]) for v in range(V)]
    return {p: rows[(sum(p) * 3 + len(p) + 3) % len(rows)] for p in prefixes}  # (): 2 of 4


def test_js_beam_and_exact_search_break_ties_and_skip_impossible_tokens_as_python_does():
    """On a table of probabilities with ties and zeros, as the source text's worked example:
    the lower candidate index wins a tie, a -inf candidate is never kept (a beam may keep
    fewer than its width), and exact search takes the first maximum."""
    V, table = 4, tie_table()
    logp = beam.table_logprobs(table, V)

    class Table:  # node's model: the table's log-probabilities (log-probs are logits too)
        def rows(self, contexts):
            return [[math.log(x) if x > 0 else -math.inf for x in table[tuple(c)]]
                    for c in contexts]

    cases, expected = [], []
    for width in (1, 2, 3, 4):
        for alpha in (0.0, 1.0):
            hyps = beam_core(prefix_step(logp), V, 3, width, alpha)
            expected.append([(list(h.ids), h.score) for h in hyps])
            cases.append({"program": "beam", "prompt": [], "chars": "abcd", "steps": 3,
                          "width": width, "alpha": alpha, "settings": {}})
    best, sizes = exact_core(logp, 3)
    cases.append({"program": "exactCore", "prompt": [], "horizon": 3, "bound": None,
                  "maxFrontier": 100})
    got = run_js(Table(), cases)
    for case, js, want in zip(cases, got, expected):
        assert [(b["ids"], pytest.approx(b["score"], abs=SCORE_TOL)) for b in js["beams"]] == \
            want, (case["width"], case["alpha"])
    # the first row has two possible tokens of four: a wider beam keeps just those two
    assert [len(js["kept"][0]) for js in got[:-1]] == [1, 1, 2, 2, 2, 2, 2, 2]
    assert (got[-1]["ids"], got[-1]["frontierSizes"]) == (list(best.ids), sizes)


def test_js_beam_search_equals_slm_beam_search_on_the_real_weights(real):
    model, tok = real
    cases = [("KATHARINA:\nMoved! in good time: let him that moved you ", 6, 3, 0.0, None),
             ("ROMEO:\n", 6, 5, 0.6, None), ("PETRUCHIO:\n", 9, 8, 0.0, None),
             ("KATHARINA:\nMoved! in good time: let him that moved you ", 12, 4, 1.0, "\n"),
             ("JULIET:\n", 20, 4, 2.0, "\n\n"), ("A" * 250, 10, 2, 0.0, None)]  # the window ends it
    logits = ModelLogits(model)
    js = run_js(logits, [{"program": "beamSearch", "chars": tok.chars,
                          "block": model.config.block_size, "text": p, "n": n, "width": w,
                          "alpha": a, "settings": {"stop": s} if s else {}}
                         for p, n, w, a, s in cases])
    for (p, n, w, a, s), got in zip(cases, js):
        py = slm.beam_search(model, tok, p, n, w, a, return_all=True, **({"stop": s} if s else {}))
        assert [b["ids"] for b in got] == [g.ids for g in py], (p[-10:], n, w, a, s)
        for b, g in zip(got, py):
            assert b["reason"] == g.stop_reason
            assert b["score"] == pytest.approx(g.score, abs=MODEL_TOL)
            assert b["logprob"] == pytest.approx(g.logprob, abs=MODEL_TOL)
    assert {b["reason"] for got in js for b in got} == {"max_tokens", "stop_sequence",
                                                        "context_window"}


def test_js_beam_search_refuses_bad_arguments_with_pythons_messages(tiny_model, tok):
    block = tiny_model.config.block_size
    bad = [("KATE:", 5, 0, 0.0, {}), ("KATE:", 5, 64, 0.0, {}), ("KATE:", 5, 2.5, 0.0, {}),
           ("KATE:", 5, 3, float("nan"), {}), ("KATE:", 5, 3, float("inf"), {}),
           ("KATE:", -1, 3, 0.0, {}), ("", 5, 3, 0.0, {}), ("KATE{", 5, 3, 0.0, {}),
           ("a" * (block + 1), 5, 3, 0.0, {}), ("KATE:", 5, 3, 0.0, {"temperature": 0.7}),
           ("KATE:", 5, 3, 0.0, {"top_k": 5, "seed": 3}), ("KATE:", 5, 3, 0.0, {"stop": "{"}),
           ("KATE:", 5, 3, 0.0, {"stop": ""}), ("KATE:", 5, 3, 0.0, {"top_kk": 1})]
    cases = [{"program": "beamSearch", "chars": tok.chars, "block": block, "text": p, "n": n,
              "width": w, "alpha": a, "settings": s} for p, n, w, a, s in bad]
    for (p, n, w, a, s), js in zip(bad, run_js(ModelLogits(tiny_model), cases)):
        with pytest.raises((TypeError, ValueError)) as python:
            slm.beam_search(tiny_model, tok, p, n, w, a, **s)
        assert js == {"error": str(python.value), "name": type(python.value).__name__}, \
            (p[:10], n, w, a, s)


# --- exact search ------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["tiny", "real"])
def test_js_exact_search_scores_the_same_prefixes_as_python_exact_core(which, tiny_model, real,
                                                                      tok):
    model = tiny_model if which == "tiny" else real[0]
    logits = ModelLogits(model)
    cases, expected = [], []
    # the tiny model's distributions are nearly flat: a weak bound, so shorter horizons and
    # a given bound (below the best) that prunes less
    horizons, given = ((3, 2, 3), -13.0) if which == "tiny" else ((4, 5, 3), -9.0)
    # and a bound half the tolerance (1e-4) above the most probable first character's
    # log-probability: that prefix is kept only because the tolerance lowers the bound
    top = float(torch.log_softmax(logits.tensor([tok.encode("O")]), -1).max()) + 5e-5
    for prompt, horizon, bound in [("KATHARINA:\nMoved! in good time: ", horizons[0], None),
                                   ("ROMEO:\n", horizons[1], None), ("the ", horizons[2], given),
                                   ("O", 2, None), ("O", 2, top), ("PETRUCHIO:\n", 1, None)]:
        ids = tok.encode(prompt)

        def next_logprobs(prefixes, ids=ids):
            return torch.log_softmax(logits.tensor([ids + p for p in prefixes.tolist()]), -1)

        best, sizes = exact_core(next_logprobs, horizon, bound)
        expected.append((best, sizes))
        cases.append({"program": "exactCore", "prompt": ids, "horizon": horizon, "bound": bound,
                      "maxFrontier": 50_000})
    for (best, sizes), js in zip(expected, run_js(logits, cases)):
        assert "error" not in js, js
        assert js["ids"] == list(best.ids) and js["frontierSizes"] == sizes
        assert js["prefixes"] == sum(sizes)
        assert js["score"] == pytest.approx(best.score, abs=SCORE_TOL)
        assert js["logprobs"] == pytest.approx(list(best.logprobs), abs=SCORE_TOL)
    assert max(sum(sizes) for _, sizes in expected) > 10     # the bound left work to do


def test_js_exact_search_refuses_a_frontier_past_its_cap_as_python_does(tiny_model, tok):
    ids = tok.encode("ROMEO:\n")
    logits = ModelLogits(tiny_model)
    [js] = run_js(logits, [{"program": "exactCore", "prompt": ids, "horizon": 4, "bound": -30.0,
                            "maxFrontier": 100}])

    def next_logprobs(prefixes):
        return torch.log_softmax(logits.tensor([ids + p for p in prefixes.tolist()]), -1)

    with pytest.raises(RuntimeError) as python:
        exact_core(next_logprobs, 4, -30.0, max_frontier=100)
    assert js == {"error": str(python.value), "name": "RuntimeError"}


def test_js_exact_search_finds_pythons_exact_best_on_the_real_weights(real):
    model, tok = real
    prompts = [("KATHARINA:\nMoved! in good time: let him that moved you ", 6), ("ROMEO:\n", 6),
               ("KATHARINA:\nMoved! in good time: ", 5)]
    js = run_js(ModelLogits(model), [{"program": "exactSearch", "chars": tok.chars,
                                      "block": model.config.block_size, "text": p, "horizon": h}
                                     for p, h in prompts])
    for (p, h), got in zip(prompts, js):
        py = beam.exact_search(model, tok, p, h)
        assert "error" not in got, got
        assert got["ids"] == py.best.ids, p
        assert got["score"] == pytest.approx(py.best.logprob, abs=MODEL_TOL)
        # the bound is the width-5 beam's, so the same prefixes score above it
        assert got["frontierSizes"] == py.frontier_sizes, p
