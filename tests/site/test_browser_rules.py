"""rules.js (``shakespeare_lm.site.browser_rules``), what the browser takes of the registry
of the rules: it loads in node; its browser flags are what decoding.js implements (a rule
the registry gives the browser is taken, computes Python's distribution and refuses every
bad value with Python's message; any other is refused as Python-only); its sliders rest
where the explorers leave a setting out; the page loads it before the scripts that read it."""

import importlib.util
import json
import subprocess
import tempfile
from dataclasses import fields
from pathlib import Path

import torch

from shakespeare_lm.decoding import registry, rules
from shakespeare_lm.decoding.sampler import DecodingConfig
from shakespeare_lm.site import browser_rules

from ..decoding.test_registry import EXAMPLES, bad_values
from .test_rules_js import NODE, assert_same_distribution, python_error, python_probs, run_node

ROOT = Path(__file__).resolve().parents[2]


def test_rules_js_loads_in_node_as_the_registry_says():
    with tempfile.TemporaryDirectory() as folder:
        path = browser_rules.write(Path(folder))
        done = subprocess.run([NODE, "-e", f"process.stdout.write(JSON.stringify("
                               f"require({json.dumps(str(path))})))"],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert loaded == json.loads(json.dumps(browser_rules.browser_rules()))
    assert loaded["fields"] == [f.name for f in fields(DecodingConfig)]
    assert loaded["order"] == [n for n in registry.ORDERS["transformers"]
                               if registry.RULE[n].browser]


def _on(rule) -> dict:
    """The rule turned on with the examples (DRY's breakers left to their default)."""
    return {n: EXAMPLES[n] for n in rule.names if n != "dry_sequence_breakers"}


def test_the_browser_flags_are_what_decoding_js_implements():
    logits = torch.randn(63, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    rows = logits.mul(2).tolist()
    history = [3, 5, 5, 9, 3, 3]
    cases = [{"program": "probs", "logits": rows, "history": history, "settings": _on(rule)}
             for rule in registry.RULES]
    # decoding.js exports a rule's function under its main setting's name or Python's name
    has = [{"program": "call", "fn": "hasOwnProperty", "args": [name]}
           for rule in registry.RULES for name in (rule.main, rule.function)]
    exported = run_node(has)
    for i, rule in enumerate(registry.RULES):
        assert (exported[2 * i] or exported[2 * i + 1]) == rule.browser, rule.label
    for rule, case, js in zip(registry.RULES, cases, run_node(cases)):
        if rule.browser:
            assert_same_distribution(js, python_probs(rows, history, case["settings"]), rule.label)
        else:
            first = next(f.name for f in fields(DecodingConfig) if f.name in case["settings"])
            value = case["settings"][first]
            assert js == {"name": "ValueError", "error": f"{first}={value!r} is not available "
                          "in the browser's sampler: it runs in Python (shakespeare_lm.generate)"}


def test_the_browser_refuses_every_bad_value_of_its_rules_with_pythons_message():
    cases, expected = [], []
    for rule in registry.RULES:
        for name in rule.names if rule.browser else ():
            for value in bad_values(name):
                settings = {**_on(rule), name: value}
                cases.append({"program": "config", "settings": settings})
                expected.append(python_error(DecodingConfig.from_settings, **settings))
    assert len(cases) > 60
    for case, js, python in zip(cases, run_node(cases), expected):
        assert js == python, case["settings"]


def test_the_sliders_rest_where_the_explorers_leave_a_setting_out():
    controls = browser_rules.controls()
    assert controls[0]["name"] == "temperature"  # the other explorers take the first one
    names = [c["name"] for c in controls]
    assert sorted(names) == sorted(n for r in registry.RULES if r.browser for n in r.names
                                   if registry.SETTINGS[n].slider)
    logits, history = torch.randn(2, 9, dtype=torch.float64), torch.tensor([[1, 1, 2]] * 2)
    for c in controls:
        setting, rest = registry.SETTINGS[c["name"]], c["off"]
        assert c["min"] <= (9 if rest == registry.VOCAB else rest), c
        if rest == setting.off or rest == setting.fallback:  # the rule does nothing, or
            continue                                         # takes the same value left out
        assert not setting.valid.holds(rest), c              # else no value it could mean
    off = {c["name"]: 9 if c["off"] == registry.VOCAB else c["off"] for c in controls
           if c["off"] == registry.SETTINGS[c["name"]].off}
    assert torch.equal(rules.compose(logits, history, xtc_u=torch.zeros(2), **off), logits)


def test_pages_load_rules_js_before_the_scripts_that_read_it():
    spec = importlib.util.spec_from_file_location(
        "live_explorers", ROOT / "book" / "_ext" / "live_explorers.py")
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    where = "live/" + browser_rules.NAME  # vendor_live writes it into _static/live/
    readers = [s for s in ext.SCRIPTS if s.endswith("decoding.js")] + ["slm_runtime.js",
                                                                        "slm_explorers.js"]
    assert all(ext.SCRIPTS.index(where) < ext.SCRIPTS.index(s) for s in readers), ext.SCRIPTS
    book = (ROOT / "shakespeare_lm" / "site" / "book.py").read_text("utf-8")
    assert "browser_rules.write(dest)" in book
