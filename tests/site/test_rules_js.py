"""The decoding outside Python agrees with shakespeare_lm.decoding on the same inputs:

* the JavaScript copy (shakespeare_lm/site/static/decoding.js), which the live model on the
  site decides every character with, run in node: the rules and the penalties on many
  random logits and histories, DecodingConfig's checks (the same messages), and generate's
  loop (stop sequences, penalties, the context window) step by step against Python's
  ``generate`` on a tiny model;
* chapter 3's kernel-free explorer, a Vega-Lite chart that only looks up distributions
  computed in Python, run in node with vega and vega-lite as the page and JupyterLab run it.

Kept sets are compared exactly and probabilities to float64 precision."""

import json
import math
import random
import subprocess
import tempfile
from pathlib import Path

import pytest
import torch

from shakespeare_lm.decoding import rules
from shakespeare_lm.decoding.generate import generate
from shakespeare_lm.decoding.sampler import DecodingConfig, Sampler
from shakespeare_lm.site import browser_rules, explorer
from shakespeare_lm.site.figures import STATIC_DIR, read_dataset

from ..conftest import make_tiny
from .node_harness import NODE, json_safe, require_node
from .vega_helpers import drawn, param_setting

require_node()

# Runs cases against decoding.js: {"program": ..., ...} -> the result, or {error, name}.
# JSON has no NaN or infinities: they travel as {"float": "nan" | "inf" | "-inf"}.
HARNESS = r"""
const fs = require("fs");
const special = { nan: NaN, inf: Infinity, "-inf": -Infinity };
const input = JSON.parse(fs.readFileSync(0, "utf8"),
  (k, v) => v && typeof v === "object" && "float" in v ? special[v.float] : v);
globalThis.SlmRules = require(input.rules);  // what make book writes, before decoding.js
const D = require(input.module);
function attempt(f) { try { return f(); } catch (e) { return { error: e.message, name: e.name }; } }
function same(a, b) { return a.length === b.length && a.every((x, i) => x === b[i]); }
const programs = {
  call: c => D[c.fn](...c.args),
  probs: c => D.probs(c.logits, c.history, D.config(c.settings)),
  config: c => D.config(c.settings),
  setup: c => {
    new D.Generation(c.chars, c.block, c.prompt, c.n, c.settings, c.overflow);
    return "accepted";
  },
  // generate's loop with the logits Python's model gave at each step, as long as the
  // contexts agree with those Python's model saw
  generation: c => {
    const g = new D.Generation(c.chars, c.block, c.prompt, c.n, c.settings, c.overflow);
    for (let k = 0; ; k++) {
      const context = g.context();
      if (context === null) return Object.assign(g.result(), { steps: k });
      if (k >= c.steps.length || !same(context, c.steps[k].context))
        return { diverged: k, context: context };
      g.push(c.steps[k].logits);
    }
  },
};
const out = input.cases.map(c => attempt(() => programs[c.program](c)));
process.stdout.write(JSON.stringify(out,
  (k, v) => typeof v === "number" && !isFinite(v) ? String(v) : v));
"""


def run_node(cases: list[dict]) -> list:
    with tempfile.TemporaryDirectory() as folder:  # rules.js, as make book writes it
        payload = {"module": str(STATIC_DIR / "decoding.js"), "cases": json_safe(cases),
                   "rules": str(browser_rules.write(Path(folder)))}
        done = subprocess.run([NODE, "-e", HARNESS], input=json.dumps(payload),
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert len(out) == len(cases)
    return out


def python_probs(logits, history, settings: dict) -> torch.Tensor:
    """What Python's sampler draws from (DecodingConfig + Sampler.probs), in float64."""
    sampler = Sampler(DecodingConfig(**settings))
    hist = (torch.tensor([history], dtype=torch.long) if history
            else torch.zeros(1, 0, dtype=torch.long))
    return sampler.probs(torch.tensor([logits], dtype=torch.float64), hist)[0]


def python_error(fn, *args, **kwargs) -> dict:
    """What ``fn(*args, **kwargs)`` raises, as the harness reports a JavaScript error."""
    try:
        fn(*args, **kwargs)
    except (TypeError, ValueError) as e:
        return {"error": str(e), "name": type(e).__name__}
    return {"accepted": True}


# --- the rules and the penalties on random logits -------------------------------------
GRID = {"temperature": [0.0, 0.3, 0.7, 1.0, 1.5, 3.0], "top_k": [1, 2, 3, 5, 10, 40, 63],
        "top_p": [i / 40 for i in range(1, 41)], "min_p": [0.0, 0.01, 0.05, 0.1, 0.3, 0.5, 1.0],
        "typical_p": [i / 40 for i in range(1, 41)], "epsilon": [0.0, 1e-4, 1e-3, 0.01, 0.1],
        "eta": [0.0, 1e-4, 1e-3, 0.01, 0.1, 0.3]}
PENALTY_GRID = {"repetition_penalty": [0.5, 0.8, 1.0, 1.3, 2.0],
                "frequency_penalty": [-0.5, 0.0, 0.3, 1.0], "presence_penalty": [-1.0, 0.4, 1.5]}


def logit_rows_with_ties() -> list[list[float]]:
    gen = torch.Generator().manual_seed(0)
    rows = [torch.randn(63, generator=gen).mul(s).tolist() for s in (0.3, 1.0, 2.0, 3.0, 5.0, 8.0)]
    rows += [torch.randn(12, generator=gen).mul(2).tolist() for _ in range(4)]
    rows += [torch.randint(-3, 4, (63,), generator=gen).double().tolist(),  # many ties
             torch.randint(-2, 2, (7,), generator=gen).double().tolist(),
             [0.0] * 5, [2.0], [6.2, 4.9, 2.1, 1.0]]
    return rows


def random_history(rng: random.Random, vocab: int) -> list[int]:
    """Ids with repeats (a few distinct ids, some often), possibly empty."""
    pool = rng.sample(range(vocab), min(vocab, rng.randint(1, 8)))
    return [rng.choice(pool) for _ in range(rng.choice([0, 1, 5, 30]))]


def random_settings(rng: random.Random, grid: dict, n: int) -> list[dict]:
    """n settings with each rule drawn from its grid about half the time."""
    return [{name: rng.choice(values) for name, values in grid.items() if rng.random() < 0.5}
            for _ in range(n)]


def assert_same_distribution(js, expected: torch.Tensor, what) -> None:
    assert "error" not in js, (what, js)
    js = torch.tensor(js, dtype=torch.float64)
    assert torch.equal(js > 0, expected > 0), what                  # the same kept set
    assert torch.allclose(js, expected, rtol=1e-9, atol=1e-12), what


def test_js_rules_match_python_on_random_logits_with_ties():
    rng = random.Random(0)
    one_at_a_time = [{name: v} for name, values in GRID.items() for v in values]
    settings = one_at_a_time + random_settings(rng, GRID, 60)
    cases = [{"program": "probs", "logits": row, "history": [], "settings": s}
             for row in logit_rows_with_ties() for s in settings]
    for case, js in zip(cases, run_node(cases)):
        expected = python_probs(case["logits"], [], case["settings"])
        assert_same_distribution(js, expected, case["settings"])


def test_js_penalties_alone_match_python_on_random_logits_and_histories():
    rng = random.Random(1)
    fns = {"repetition_penalty": rules.repetition_penalty,
           "frequency_penalty": rules.frequency_penalty, "presence_penalty": rules.presence_penalty}
    cases = []
    for row in logit_rows_with_ties():
        for name, values in PENALTY_GRID.items():
            for value in values:
                history = random_history(rng, len(row))
                cases.append({"program": "call", "fn": name, "args": [row, history, value]})
    for case, js in zip(cases, run_node(cases)):
        row, history, value = case["args"]
        expected = fns[case["fn"]](torch.tensor(row, dtype=torch.float64),
                                   torch.tensor(history, dtype=torch.long), value)
        assert "error" not in js, (case, js)
        assert torch.allclose(torch.tensor(js, dtype=torch.float64), expected,
                              rtol=1e-12, atol=1e-12), case


def test_js_sampler_with_penalties_and_rules_matches_python():
    """Penalties (counting the history), then temperature and truncation, then softmax or
    the argmax: the distribution a token is drawn from, as Sampler.probs computes it."""
    rng = random.Random(2)
    grid = {**GRID, **PENALTY_GRID}
    cases = []
    for row in logit_rows_with_ties():
        greedy = {"temperature": 0, "repetition_penalty": 2.0}
        for settings in random_settings(rng, grid, 40) + [greedy]:
            cases.append({"program": "probs", "logits": row, "settings": settings,
                          "history": random_history(rng, len(row))})
    assert sum(any(k in c["settings"] for k in PENALTY_GRID) for c in cases) > 300
    for case, js in zip(cases, run_node(cases)):
        expected = python_probs(case["logits"], case["history"], case["settings"])
        assert_same_distribution(js, expected, case)


def test_js_top_n_sigma_and_xtc_match_python():
    """top-nσ on its own, and XTC as the exact mixture over its draw that Sampler.probs
    gives when no generator is passed, with and without other rules."""
    settings = ([{"top_n_sigma": n} for n in (0.25, 0.5, 1.0, 1.5, 2.0, 3.0)]
                + [{"xtc_probability": pr, "xtc_threshold": th}
                   for pr in (0.0, 0.3, 0.5, 1.0) for th in (0.02, 0.05, 0.1, 0.3, 0.6)]
                + [{"xtc_probability": 0.5}, {"temperature": 1.5, "top_n_sigma": 1.0, "top_k": 10},
                   {"temperature": 0.7, "xtc_probability": 0.8, "xtc_threshold": 0.05,
                    "min_p": 0.02}])
    cases = [{"program": "probs", "logits": row, "history": [], "settings": s}
             for row in logit_rows_with_ties() for s in settings]
    for case, js in zip(cases, run_node(cases)):
        expected = python_probs(case["logits"], [], case["settings"])
        assert_same_distribution(js, expected, case["settings"])


# --- DecodingConfig's checks: the same messages -----------------------------------------
NAN, INF = float("nan"), float("inf")
BAD_SETTINGS = [
    {"top_q": 0.9}, {"top_q": 1, "temprature": 0.5}, {"temperature": -1}, {"temperature": "hot"},
    {"temperature": NAN}, {"temperature": INF}, {"temperature": True}, {"top_k": 0},
    {"top_k": 2.5}, {"top_k": -3}, {"top_k": "5"}, {"top_p": 1.5}, {"top_p": 0},
    {"min_p": -0.1}, {"min_p": 1.01}, {"min_p": -1e-05}, {"typical_p": 0}, {"epsilon": 1},
    {"epsilon": 1.5}, {"eta": -1}, {"eta": 1}, {"eta": 2e16}, {"repetition_penalty": 0},
    {"repetition_penalty": -1.5}, {"repetition_penalty": INF}, {"repetition_penalty": -1e-07},
    {"frequency_penalty": NAN}, {"frequency_penalty": "a"}, {"presence_penalty": -INF},
    {"presence_penalty": [1]}, {"seed": 1.5}, {"seed": "7"}, {"seed": True}, {"stop": ""},
    {"stop": ["\n", ""]}, {"stop": ["\n", 3]}, {"stop": [None]}, {"stop": ["it's \"x\"", ""]},
    {"stop": ["tab\there", "", "\\"]}, {"top_p": 2, "repetition_penalty": 0, "seed": 0.5},
    {"top_n_sigma": 0}, {"top_n_sigma": -1.5}, {"xtc_probability": 1.5},
    {"xtc_probability": 0.5, "xtc_threshold": -0.1}, {"xtc_threshold": 0.2},
]
GOOD_SETTINGS = [{}, {"temperature": 0}, {"temperature": None, "top_k": None},
                 {"stop": "ab'c"}, {"stop": ["\n", "xyzzy"]}, {"stop": None},
                 {"presence_penalty": -2, "frequency_penalty": 0.5, "repetition_penalty": 1.2,
                  "seed": 7, "eta": 0.0, "epsilon": 0.0, "min_p": 1.0, "top_p": 1.0}]


def test_js_config_refuses_bad_settings_with_pythons_messages():
    cases = [{"program": "config", "settings": s} for s in BAD_SETTINGS + GOOD_SETTINGS]
    got = run_node(cases)
    for settings, js in zip(BAD_SETTINGS, got):
        python = python_error(DecodingConfig.from_settings, **settings)
        assert js == python, settings                       # the message and its kind
    for settings, js in zip(GOOD_SETTINGS, got[len(BAD_SETTINGS):]):
        cfg = DecodingConfig.from_settings(**settings)
        assert "error" not in js, (settings, js)
        assert js["stop"] == list(cfg.stop), settings      # a str is one stop sequence
        assert js["temperature"] == cfg.temperature and js["seed"] == cfg.seed


def test_each_rule_refuses_bad_values_like_python():
    bad = [("top_p", 1.5), ("top_p", 0), ("top_k", 0), ("top_k", 2.5), ("min_p", -0.1),
           ("typical_p", 0), ("epsilon", 1.5), ("eta", -1), ("temperature", -1), ("temperature", 0)]
    fns = {"typical_p": rules.typical}
    cases = [{"program": "call", "fn": rule, "args": [[0, 1, 2], value]} for rule, value in bad]
    for (rule, value), js in zip(bad, run_node(cases)):
        fn = fns.get(rule) or getattr(rules, rule)
        assert js == python_error(fn, torch.zeros(3), value), (rule, value)


# --- generate's loop, step by step against Python's generate on a tiny model ---------------
@pytest.fixture(scope="module")
def tiny_model():
    return make_tiny(seed=5)  # context 128


def python_steps(model, tok, prompt: str, n: int, **kw):
    """Python's generate, and per step the context its model saw and the logits it gave."""
    steps = []

    def record(module, args, out):
        idx, pos = args[0][0].tolist(), args[1]
        context = idx if int(pos[0]) == 0 else steps[-1]["context"] + idx  # prefill, or one more
        steps.append({"context": context, "logits": out[0, -1].double().tolist()})

    hook = model.register_forward_hook(record)
    try:
        g = generate(model, tok, prompt, n, **kw)
    finally:
        hook.remove()
    return g, steps


def generation_case(model, tok, prompt, n, settings, overflow="stop"):
    g, steps = python_steps(model, tok, prompt, n, context_overflow=overflow, **settings)
    case = {"program": "generation", "chars": tok.chars, "block": model.config.block_size,
            "prompt": prompt, "n": n, "settings": settings, "overflow": overflow, "steps": steps}
    return case, g


def check_generations(cases_and_expected) -> None:
    cases = [c for c, _ in cases_and_expected]
    for (case, g), js in zip(cases_and_expected, run_node(cases)):
        what = {k: case[k] for k in ("prompt", "n", "settings", "overflow")}
        assert "diverged" not in js and "error" not in js, (what, js)
        assert js["steps"] == len(case["steps"]), what      # asked the model as often
        assert (js["text"], js["ids"], js["stopReason"]) == (g.text, g.ids, g.stop_reason), what
        assert js["logprobs"] == pytest.approx(g.logprobs, abs=1e-5), what


def test_js_generation_ends_at_any_stop_sequence_as_python_does(tiny_model, tok):
    prompt = "KATHARINA:\nMoved! in good time: "
    free = generate(tiny_model, tok, prompt, 60, temperature=0).text
    cases = []
    for start, length in [(5, 1), (17, 2), (30, 3), (44, 1)]:
        real = free[start:start + length]
        for stop in (real, ["xyzzy", real], [real, free[start:start + length + 3]], ["QQ", "ZZ"]):
            cases.append(generation_case(tiny_model, tok, prompt, 60,
                                         {"temperature": 0, "stop": stop}))
        last = free.find(real) + len(real)  # the stop ends on the last token allowed
        cases.append(generation_case(tiny_model, tok, prompt, last,
                                     {"temperature": 0, "stop": real}))
        assert cases[-1][1].stop_reason == "stop_sequence" and len(cases[-1][1].text) == last
    ended = [g for _, g in cases if g.stop_reason == "stop_sequence"]
    assert len(ended) >= 10 and all(len(g.text) < 60 for g in ended)
    check_generations(cases)


def test_js_generation_penalties_count_prompt_and_text_as_python_does(tiny_model, tok):
    rng = random.Random(3)
    prompts = ["KATHARINA:\n", "the the the the ", "O"]
    cases = []
    for prompt in prompts:
        for name, values in PENALTY_GRID.items():
            for value in values:
                cases.append(generation_case(tiny_model, tok, prompt, 40,
                                             {"temperature": 0, name: value}))
        for settings in random_settings(rng, PENALTY_GRID, 4):
            cases.append(generation_case(tiny_model, tok, prompt, 40,
                                         {"temperature": 0, "stop": "e", **settings}))
    texts = {c["prompt"]: set() for c, _ in cases}
    for c, g in cases:
        texts[c["prompt"]].add(g.text)
    assert all(len(t) >= 4 for t in texts.values())  # the penalties change the text
    check_generations(cases)


def test_js_generation_context_window_stop_and_slide_as_python_does(tiny_model, tok):
    block = tiny_model.config.block_size
    prompt = "KATHARINA:\n" * 10  # 110 characters of a window of 128
    cases = [generation_case(tiny_model, tok, prompt, 300, {"temperature": 0,
                                                            "repetition_penalty": 1.3}, overflow)
             for overflow in ("stop", "slide")]
    cases.append(generation_case(tiny_model, tok, "A" * block, 5, {"temperature": 0}))
    cases.append(generation_case(tiny_model, tok, prompt, 0, {"temperature": 0}))
    stops = [g.stop_reason for _, g in cases]
    assert stops == ["context_window", "max_tokens", "context_window", "max_tokens"]
    assert len(cases[1][1].text) == 300 and len(cases[0][1].text) == block - len(prompt)
    check_generations(cases)


def test_js_generate_refuses_bad_arguments_with_pythons_messages(tiny_model, tok):
    block = tiny_model.config.block_size
    bad = [("", 5, {}, "stop"), ("KATHARINA{", 5, {}, "stop"), ("a" * (block + 1), 5, {}, "stop"),
           ("KATE:", -1, {}, "stop"), ("KATE:", 2.5, {}, "stop"), ("KATE:", True, {}, "stop"),
           ("KATE:", 5, {"stop": ["\n", "{x"]}, "stop"), ("KATE:", 5, {}, "wrap"),
           ("KATE:", 5, {"top_p": 0}, "stop"), ("KATE:", 5, {"stop": ["\n", ""]}, "stop"),
           ("KATE:", 5, {"min_p": 2, "top_kk": 3}, "stop")]
    cases = [{"program": "setup", "chars": tok.chars, "block": block, "prompt": p, "n": n,
              "settings": s, "overflow": o} for p, n, s, o in bad]
    for (p, n, s, o), js in zip(bad, run_node(cases)):
        python = python_error(generate, tiny_model, tok, p, n, context_overflow=o, **s)
        assert js == python, (p[:12], n, s, o)


# --- the kernel-free explorer: distributions looked up, in Vega-Lite ----------------------
@pytest.fixture(scope="module")
def figure(tok):
    return explorer.static_explorer(make_tiny(seed=3), tok)


def vega_pages(figure, states: list[dict]) -> list[dict]:
    """Draw the figure in vega for each state ({context, temperature, rule}: indices): per
    state the bars ({(series, id): datum}) and the caption."""
    spec = figure.to_dict()
    params = [param_setting(figure, **s) for s in states]
    pages = []
    for start in range(0, len(params), 400):  # a node process per 400: bounded memory
        for items in drawn(spec, params[start:start + 400],
                           fields=["id", "series", "pf", "raw_p", "r0", "kept", "caption"]):
            bars = {(i["datum"]["series"], i["datum"]["id"]): i["datum"] for i in items
                    if i["mark"] == "rect" and i["role"] == "mark"}
            caption = [i["text"] for i in items if "caption" in i["datum"]]
            pages.append({"bars": bars, "caption": caption})
    return pages


def check_page(page: dict, logits: torch.Tensor, settings: dict, what) -> None:
    """The page draws the sampler's distribution (to the stored precision), the raw one, in
    the raw order, and a caption that agrees with ``summarize``."""
    expected = explorer.surviving(logits, **settings)
    V = len(logits)
    kept = torch.tensor([page["bars"][("pf", i)]["kept"] for i in range(V)])
    assert torch.equal(kept, expected > 0), what                       # the same kept set
    got = torch.tensor([page["bars"][("pf", i)]["pf"] for i in range(V)], dtype=torch.float64)
    assert torch.allclose(got, expected, rtol=0, atol=0.5 / explorer.UNITS + 1e-12), what
    raw = torch.tensor([page["bars"][("raw_p", i)]["raw_p"] for i in range(V)], dtype=torch.float64)
    assert torch.allclose(raw, torch.softmax(logits, -1), rtol=1e-3, atol=1e-12), what
    order = torch.sort(logits, descending=True, stable=True).indices.tolist()
    assert [page["bars"][("pf", i)]["r0"] for i in order] == list(range(1, V + 1)), what
    return expected


def test_the_kernel_free_explorer_draws_pythons_distribution_in_every_state(figure, tok):
    n_rules = len(figure.data["choices"])
    states = [{"context": c, "temperature": t, "rule": r}
              for c in range(len(figure.data["contexts"]))
              for t in range(len(explorer.STATIC_TEMPERATURES)) for r in range(n_rules)]
    pages = vega_pages(figure, states)
    owns: dict[int, set] = {}
    assert len(pages) == len(states) == len(read_dataset(figure.to_dict(), "states")) > 1000
    for state, page in zip(states, pages):
        logits = figure.data["contexts"][state["context"]]["logits"]
        settings = {"temperature": explorer.STATIC_TEMPERATURES[state["temperature"]],
                    **figure.data["choices"][state["rule"]][1]}
        expected = check_page(page, logits, settings, state)
        summary = explorer.summarize(logits, tok, **settings)
        [caption] = page["caption"]
        assert caption[0].startswith(f"kept {summary['kept']} of 63 characters"), caption
        mass = 100 * torch.softmax(logits, -1)[expected > 0].sum().item()
        shown = float(caption[0].split("holding ")[1].split("%")[0])
        assert abs(shown - mass) <= 0.05 + 0.01, caption  # the sum of 4-digit probabilities
        assert caption[1].startswith(
            f"entropy after the rules {summary['entropy_bits']:.2f} bits; "), caption
        # the model's own entropy: p's, whatever the temperature and the rule
        own = float(caption[1].split("the model's own ")[1].split(" bits")[0])
        exact = -(torch.softmax(logits, -1) * torch.log_softmax(logits, -1)).sum().item()
        assert abs(own - exact / math.log(2)) <= 0.005 + 1e-9, caption
        owns.setdefault(state["context"], set()).add(own)
        best = expected.max().item()
        assert caption[2].startswith("most probable after the rules: "), caption
        shown = float(caption[2].rsplit(" at ", 1)[1])
        assert abs(shown - best) <= 0.0005 + 0.5 / explorer.UNITS, caption
    assert all(len(v) == 1 for v in owns.values()), owns  # it never moves


def test_the_kernel_free_explorer_is_plain_vega_lite_with_no_rule_code(figure, tok):
    spec = figure.to_dict()
    assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/v5")
    inputs = {p["name"]: p["bind"] for p in spec["params"] if "bind" in p}
    assert list(inputs) == ["context", "temperature", "rule"]
    assert inputs["temperature"]["input"] == "radio" and inputs["rule"]["input"] == "select"
    assert inputs["temperature"]["labels"][0] == "0 (greedy)"
    assert inputs["rule"]["labels"][:3] == ["none", "top-k 1", "top-k 2"]
    assert "top-k 63" not in inputs["rule"]["labels"]     # top-k only below the vocabulary
    # the only transforms: filter the context, look the state up (its p read as a string),
    # read its cells
    states = spec["transform"][2]["from"]["data"]
    assert states.pop("format") == {"type": "csv", "parse": {"s": "number", "bits": "number"}}
    assert spec["transform"] == explorer.lookup_transforms(
        {name: f"[{','.join(map(str, range(len(inputs[name]['options']))))}][{name}]"
         for name in inputs}, len(figure.data["choices"]))
    assert "exp(" not in json.dumps(spec)                 # no softmax, no rule in the page
    chars = read_dataset(spec, "chars")
    assert len(chars) == 63 * len(explorer.CONTEXTS)
    assert {r["ch"] for r in chars} == {explorer.char_label(c) for c in tok.chars}
    assert "http" not in json.dumps(spec).replace(spec["$schema"], "")  # no fetching
    assert [c["text"] for c in figure.data["contexts"]] == list(explorer.CONTEXTS.values())
