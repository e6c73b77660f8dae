"""The decoding rules outside Python agree with shakespeare_lm.decoding.rules on the same logits:

* the JavaScript rules (shakespeare_lm/site/static/rules_explorer.js), which the live model
  on the site samples with, run in node;
* the Vega-Lite rules (shakespeare_lm/site/rules_vega.py) of chapter 3's kernel-free
  explorer, run in node with vega and vega-lite, as the page and JupyterLab run them.

Kept sets are compared exactly and probabilities to float64 precision."""

import json
import os
import random
import shutil
import subprocess

import pytest
import torch

from shakespeare_lm.decoding import rules
from shakespeare_lm.site import explorer
from shakespeare_lm.site.figures import STATIC_DIR, Slider, SliderFigure, read_dataset

from ..conftest import make_tiny
from .vega_helpers import drawn, param_setting

NODE = shutil.which("node")
if NODE is None:
    if os.environ.get("CI"):
        raise RuntimeError("node is needed to test the explorer's JavaScript (apt-get install nodejs)")
    pytest.skip("node is not installed: the JavaScript rules cannot be checked", allow_module_level=True)

HARNESS = r"""
const fs = require("fs");
const input = JSON.parse(fs.readFileSync(0, "utf8"));
const R = require(input.module);
function attempt(f) { try { return f(); } catch (e) { return { error: e.message }; } }
const out = {
  raw: input.raw.map(c => attempt(() => R.surviving(c.logits, c.settings))),
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


def logit_rows_with_ties() -> list[list[float]]:
    gen = torch.Generator().manual_seed(0)
    rows = [torch.randn(63, generator=gen).mul(s).tolist()
            for s in (0.3, 1.0, 2.0, 3.0, 5.0, 8.0)]
    rows += [torch.randn(12, generator=gen).mul(2).tolist() for _ in range(4)]
    rows += [torch.randint(-3, 4, (63,), generator=gen).double().tolist(),  # many ties
             torch.randint(-2, 2, (7,), generator=gen).double().tolist(),
             [0.0] * 5, [2.0], [6.2, 4.9, 2.1, 1.0]]
    return rows


def fine_grid(figure) -> dict:
    grid = slider_grid(figure)
    grid["top_k"] = [1, 2, 3, 5, 10, 40, 63]
    for name in ("top_p", "typical_p"):  # the rules that sort and add up: a fine grid
        grid[name] = [i / 40 for i in range(1, 41)]
    return grid


def test_js_rules_match_python_on_random_logits_with_ties(figure):
    rng = random.Random(0)
    grid = fine_grid(figure)
    settings = one_rule_at_a_time(grid) + random_settings(grid, rng, 60)
    cases = [{"logits": row, "settings": s}
             for row in logit_rows_with_ties() for s in settings]
    got = run_node({"raw": cases, "errors": []})["raw"]
    assert len(got) == len(cases)
    for case, js in zip(cases, got):
        assert "error" not in js, (case, js)
        expected = python_surviving(case["logits"], case["settings"])
        js = torch.tensor(js, dtype=torch.float64)
        assert torch.equal(js > 0, expected > 0), case                # the same kept set
        assert torch.allclose(js, expected, rtol=1e-9, atol=1e-12), case


# --- the kernel-free explorer: the rules in Vega-Lite ----------------------------------
def vega_figure(logit_rows: list[list[float]], grid: dict) -> SliderFigure:
    """The static explorer's chart on these logits (a context each), sliders on grid."""
    v = max(map(len, logit_rows))
    data = {"chars": [f"c{i}" for i in range(v)], "labels": [f"c{i}" for i in range(v)],
            "contexts": [{"name": str(c), "text": "x", "logits": row}
                         for c, row in enumerate(logit_rows)]}
    sliders = [Slider("context", list(range(len(logit_rows))))]
    off = {**explorer.OFF, "top_k": grid["top_k"][-1]}  # a rule a setting leaves out
    sliders += [Slider(name, grid[name], off[name]) for name in explorer.SETTINGS]
    return SliderFigure(sliders, vega=explorer.StaticChart(["t"] * len(logit_rows)),
                        datasets={"logits": explorer.explorer_rows(data)})


def vega_pages(figure: SliderFigure, settings: list[dict]) -> tuple[dict, list[dict]]:
    """Run the figure in vega for each setting (slider name -> value): the embedded
    logits per context, and per setting the bars drawn ({(series, id): datum}) and the
    caption."""
    spec = figure.to_dict()
    logits = {}
    for row in read_dataset(spec, "logits"):
        logits.setdefault(int(row["ctx"]), []).append(row["logit"])
    params = [param_setting(figure, **s) for s in settings]
    pages = []
    for start in range(0, len(params), 400):  # a node process per 400: bounded memory
        for items in drawn(spec, params[start:start + 400],
                           fields=["id", "series", "pf", "raw_p", "r0", "caption"]):
            bars = {(i["datum"]["series"], i["datum"]["id"]): i["datum"] for i in items
                    if i["mark"] == "rect" and i["role"] == "mark"}
            caption = [i["text"] for i in items if "caption" in i["datum"]]
            pages.append({"bars": bars, "caption": caption})
    return logits, pages


def check_page(page: dict, logits: list[float], settings: dict, what) -> None:
    expected = python_surviving(logits, settings)
    got = torch.tensor([page["bars"][("pf", i)]["pf"] for i in range(len(logits))],
                       dtype=torch.float64)
    assert torch.equal(got > 0, expected > 0), what                  # the same kept set
    assert torch.allclose(got, expected, rtol=1e-9, atol=1e-12), what
    raw = torch.tensor([page["bars"][("raw_p", i)]["raw_p"]
                        for i in range(len(logits))], dtype=torch.float64)
    l = torch.tensor(logits, dtype=torch.float64)
    assert torch.allclose(raw, torch.softmax(l, -1), rtol=1e-9, atol=1e-12), what
    order = torch.sort(l, descending=True, stable=True).indices.tolist()
    ranks = [page["bars"][("pf", i)]["r0"] for i in order]
    assert ranks == list(range(1, len(l) + 1)), what


def test_vega_rules_match_python_on_random_logits_with_ties(figure):
    rng = random.Random(2)
    grid = fine_grid(figure)
    grid["top_k"] = grid["top_k"] + [10**9]  # off for every row length
    rows = logit_rows_with_ties()
    settings = [{"context": c, **s} for c in range(len(rows))
                for s in one_rule_at_a_time(grid) + random_settings(grid, rng, 20)]
    logits, pages = vega_pages(vega_figure(rows, grid), settings)
    assert len(pages) == len(settings) > 2000
    for s, page in zip(settings, pages):
        rules_only = {k: v for k, v in s.items() if k != "context"}
        check_page(page, logits[s["context"]], rules_only, s)


def test_vega_explorer_draws_what_python_computes_at_every_context(figure, tok):
    grid = slider_grid(figure)
    rng = random.Random(1)
    settings = [{**{sl.name: sl.value for sl in figure.sliders}, **s, "context": c}
                for c in grid["context"]
                for s in one_rule_at_a_time(grid) + random_settings(grid, rng, 25)]
    logits, pages = vega_pages(figure, settings)
    for values, page in zip(settings, pages):
        rules_only = {k: values[k] for k in explorer.SETTINGS}
        check_page(page, logits[values["context"]], rules_only, values)
        row = torch.tensor(logits[values["context"]], dtype=torch.float64)
        summary = explorer.summarize(row, tok, **rules_only)
        [caption] = page["caption"]
        kept = f"kept {summary['kept']} of 63 characters"
        assert caption[0].startswith(kept), caption
        assert f"entropy {summary['entropy_bits']:.2f} bits" in caption[1], caption


def test_js_rules_reject_bad_values_like_python():
    bad = [("top_p", 1.5), ("top_p", 0), ("top_k", 0), ("top_k", 2.5), ("min_p", -0.1),
           ("typical_p", 0), ("epsilon", 1.5), ("eta", -1), ("temperature", -1)]
    errors = [{"rule": r, "value": v} for r, v in bad]
    got = run_node({"raw": [], "errors": errors})["errors"]
    for (rule, value), js in zip(bad, got):
        assert js["error"].startswith(f"{rule}={value} is invalid: {rule} must be"), js
        with pytest.raises(ValueError, match=f"{rule}={value} is invalid"):
            fn = {"typical_p": rules.typical}.get(rule) or getattr(rules, rule)
            fn(torch.zeros(3), value)


def test_static_explorer_is_a_vega_lite_chart_of_the_embedded_logits(figure, tok):
    spec = figure.to_dict()
    assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/v5")
    inputs = [p["bind"]["input"] for p in spec["params"] if "bind" in p]
    assert len(inputs) == len(figure.sliders) == 8
    assert set(inputs) <= {"range", "radio", "select"}
    labels = {p["name"]: p["bind"].get("labels") for p in spec["params"]}
    assert labels["top_p"][-1] == "off (1)" and labels["temperature"][0] == "0 (greedy)"
    rows = read_dataset(spec, "logits")
    assert len(rows) == 63 * len(explorer.CONTEXTS)
    assert {r["ch"] for r in rows} == {explorer.char_label(c) for c in tok.chars}
    assert "http" not in json.dumps(spec).replace(spec["$schema"], "")  # no fetching
    assert [c["text"] for c in figure.data["contexts"]] == list(explorer.CONTEXTS.values())
