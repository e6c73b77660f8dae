"""The kernel-free explorer's JavaScript rules (shakespeare_lm/static/rules_explorer.js) agree
with shakespeare_lm.rules: run them in node on the same logits and settings and compare the
kept sets exactly and the probabilities to float64 precision."""

import json
import os
import random
import shutil
import subprocess

import pytest
import torch

from shakespeare_lm import explorer, rules
from shakespeare_lm.figures import STATIC_DIR

from .conftest import make_tiny

NODE = shutil.which("node")
if NODE is None:
    if os.environ.get("CI"):
        raise RuntimeError("node is needed to test the explorer's JavaScript (apt-get install nodejs)")
    pytest.skip("node is not installed: the JavaScript rules cannot be checked", allow_module_level=True)

HARNESS = r"""
const fs = require("fs");
const input = JSON.parse(fs.readFileSync(0, "utf8"));
const R = require(input.module);
const render = new Function("values", "data", "KernelFree", input.render_js);  // as the page does
function attempt(f) { try { return f(); } catch (e) { return { error: e.message }; } }
const out = {
  raw: input.raw.map(c => attempt(() => R.surviving(c.logits, c.settings))),
  pages: input.pages.map(v => attempt(() => render(v, input.data, {}))),
  errors: input.errors.map(c => attempt(() => R[c.rule]([0, 1, 2], c.value))),
};
// JSON has no infinities: send them as strings
process.stdout.write(JSON.stringify(out, (k, v) => (v === Infinity || v === -Infinity) ? String(v) : v));
"""


def run_node(payload: dict) -> dict:
    payload = {"module": str(STATIC_DIR / "rules_explorer.js"), **payload}
    done = subprocess.run([NODE, "-e", HARNESS], input=json.dumps(payload), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def python_surviving(logits: list[float], settings: dict) -> torch.Tensor:
    return explorer.surviving(torch.tensor(logits, dtype=torch.float64), **settings)


@pytest.fixture(scope="module")
def figure(tok):
    return explorer.static_explorer(make_tiny(seed=3), tok)


def slider_grid(figure) -> dict:
    return {s.name: s.values for s in figure.sliders}


def random_settings(grid: dict, rng: random.Random, n: int) -> list[dict]:
    """n settings with each rule drawn from its slider grid (about half left off)."""
    out = []
    for _ in range(n):
        values = {}
        for name in explorer.SETTINGS:
            default = explorer.OFF[name] if name != "top_k" else grid["top_k"][-1]
            values[name] = rng.choice(grid[name]) if rng.random() < 0.5 else default
        out.append(values)
    return out


def one_rule_at_a_time(grid: dict) -> list[dict]:
    return [{name: value} for name in explorer.SETTINGS for value in grid[name]]


def test_js_rules_match_python_on_random_logits_with_ties(figure):
    rng = random.Random(0)
    gen = torch.Generator().manual_seed(0)
    logit_rows = [torch.randn(63, generator=gen).mul(s).tolist() for s in (0.3, 1.0, 2.0, 3.0, 5.0, 8.0)]
    logit_rows += [torch.randn(12, generator=gen).mul(2).tolist() for _ in range(4)]
    logit_rows += [torch.randint(-3, 4, (63,), generator=gen).double().tolist(),  # many ties
                   torch.randint(-2, 2, (7,), generator=gen).double().tolist(),
                   [0.0] * 5, [2.0], [6.2, 4.9, 2.1, 1.0]]
    grid = slider_grid(figure)
    grid["top_k"] = [1, 2, 3, 5, 10, 40, 63]
    for name in ("top_p", "typical_p"):  # the rules that sort and add up: a fine grid
        grid[name] = [i / 40 for i in range(1, 41)]
    settings = one_rule_at_a_time(grid) + random_settings(grid, rng, 60)
    cases = [{"logits": row, "settings": s} for row in logit_rows for s in settings]
    got = run_node({"raw": cases, "pages": [], "render_js": "", "data": None, "errors": []})["raw"]
    assert len(got) == len(cases)
    for case, js in zip(cases, got):
        assert "error" not in js, (case, js)
        expected = python_surviving(case["logits"], case["settings"])
        js = torch.tensor(js, dtype=torch.float64)
        assert torch.equal(js > 0, expected > 0), case                # the same kept set
        assert torch.allclose(js, expected, rtol=1e-9, atol=1e-12), case


def test_page_renders_what_python_computes_at_every_context(figure, tok):
    data = figure.data
    grid = slider_grid(figure)
    rng = random.Random(1)
    pages = []
    for context in grid["context"]:
        for s in one_rule_at_a_time(grid) + random_settings(grid, rng, 25):
            values = {sl.name: sl.value for sl in figure.sliders}
            values.update(s, context=context)
            pages.append(values)
    got = run_node({"raw": [], "pages": pages, "render_js": figure.render_js, "data": data,
                    "errors": []})["pages"]
    for values, spec in zip(pages, got):
        assert "error" not in spec, (values, spec)
        logits = torch.tensor(data["contexts"][values["context"]]["logits"], dtype=torch.float64)
        settings = {k: values[k] for k in explorer.SETTINGS}
        expected = explorer.surviving(logits, **settings)
        order = torch.sort(logits, descending=True, stable=True).indices.tolist()
        assert spec["categories"] == [data["labels"][i] for i in order]
        solid, outline = spec["bars"]
        assert torch.allclose(torch.tensor(solid["y"], dtype=torch.float64), expected[order],
                              rtol=1e-9, atol=1e-12)
        assert torch.allclose(torch.tensor(outline["y"], dtype=torch.float64),
                              torch.softmax(logits, -1)[order], rtol=1e-9, atol=1e-12)
        summary = explorer.summarize(logits, tok, **settings)
        assert spec["caption"].startswith(f"kept {summary['kept']} of 63 characters")
        assert f"entropy {summary['entropy_bits']:.2f} bits" in spec["caption"]


def test_js_rules_reject_bad_values_like_python():
    bad = [("top_p", 1.5), ("top_p", 0), ("top_k", 0), ("top_k", 2.5), ("min_p", -0.1),
           ("typical_p", 0), ("epsilon", 1.5), ("eta", -1), ("temperature", -1)]
    got = run_node({"raw": [], "pages": [], "render_js": "", "data": None,
                    "errors": [{"rule": r, "value": v} for r, v in bad]})["errors"]
    for (rule, value), js in zip(bad, got):
        assert js["error"].startswith(f"{rule}={value} is invalid: {rule} must be"), js
        with pytest.raises(ValueError, match=f"{rule}={value} is invalid"):
            fn = {"typical_p": rules.typical}.get(rule) or getattr(rules, rule)
            fn(torch.zeros(3), value)


def test_static_explorer_html_has_plain_range_sliders_and_the_rules(figure):
    page = figure.to_html()
    assert page.count('<input type="range"') == len(figure.sliders) == 8
    assert 'class="kernel-free-figure"' in page and "RulesExplorer.render" in page
    assert "http://" not in figure.render_js and "https://" not in figure.render_js
    assert len(figure.data["contexts"]) == len(explorer.CONTEXTS)
    assert all(len(c["logits"]) == 63 for c in figure.data["contexts"])
