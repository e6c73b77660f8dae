"""The live explorers' scripts: which a page loads (book/_ext/live_explorers.py), the colours
they draw with (all from shakespeare_lm.site.style, through the live/style.js that make book
writes: none typed in the JavaScript) and the modules' shape (no module is a thenable)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess

import pytest

from shakespeare_lm.paths import ROOT
from shakespeare_lm.site import book, live, style, svg
from shakespeare_lm.site.figures import STATIC_DIR

from .node_harness import NODE, module_path, rules_script

JS = ROOT / "book" / "_js"
HEX_COLOUR = re.compile(r"#[0-9a-fA-F]{3,6}\b")


def extension():
    spec = importlib.util.spec_from_file_location(
        "live_explorers", ROOT / "book" / "_ext" / "live_explorers.py")
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    return ext


def test_a_page_loads_the_shared_scripts_and_only_its_kinds_own():
    ext = extension()
    assert ext.scripts_for(set()) == []
    assert ext.scripts_for({"truncation"}) == list(ext.SCRIPTS)
    assert ext.scripts_for({"step", "speculative"}) == list(ext.SCRIPTS)
    assert ext.scripts_for({"race", "beam", "truncation"}) == \
        list(ext.SCRIPTS) + ["slm_beam.js", "slm_race.js"]
    every = ext.scripts_for(set(live.KINDS))
    assert every[-3:] == ["slm_beam.js", "slm_builder.js", "slm_race.js"]
    # what each script reads is loaded before it
    for first, then in [("live/rules.js", "live/decoding.js"), ("live/decoding.js", "live/beam.js"),
                        ("live/decoding.js", "live/speculative.js"),
                        ("slm_vega.js", "slm_runtime.js"), ("live/style.js", "slm_explorers.js"),
                        ("slm_runtime.js", "slm_explorers.js"),
                        ("slm_explorers.js", "slm_beam.js")]:
        assert every.index(first) < every.index(then), (first, then, every)


@pytest.mark.parametrize("kind", sorted(live.KINDS))
def test_each_kind_is_found_in_its_html_and_drawn_by_a_script(kind):
    ext = extension()
    html = live.explorer_html(kind, seed=2)
    assert ext.kinds_in(html) == {kind}
    assert ext.kinds_in(html + live.explorer_html("truncation")) == {kind, "truncation"}
    if kind in ext.OWN_SCRIPT:
        source = (JS / ext.OWN_SCRIPT[kind]).read_text("utf-8")
        assert f'register("{kind}", ' in source, ext.OWN_SCRIPT[kind]
    else:  # one of slm_explorers.js's own
        source = (JS / "slm_explorers.js").read_text("utf-8")
        kinds = re.search(r"var KINDS = \{([^}]*)\}", source).group(1)
        assert re.search(rf"\b{kind}: ", kinds), kinds


def scripts_with_colours():
    return sorted(JS.glob("slm_*.js")) + sorted(STATIC_DIR.glob("*.js"))


@pytest.mark.parametrize("path", scripts_with_colours(), ids=lambda p: p.name)
def test_no_colour_is_typed_in_the_javascript(path):
    """Colours come from style.py (live/style.js): a hex colour in the code is a second copy."""
    found = [(n, m.group()) for n, line in enumerate(path.read_text("utf-8").splitlines(), 1)
             for m in HEX_COLOUR.finditer(line)]
    assert found == [], f"{path.name}: hex colours at (line, colour) {found}: use window.SlmStyle"


def test_the_grep_for_colours_finds_one():
    assert HEX_COLOUR.findall('el("span", { style: "color:#777" })') == ["#777"]
    assert HEX_COLOUR.findall('fill: "#c4e5f7", x: 3') == ["#c4e5f7"]


def luminance(colour: str) -> float:
    """WCAG 2's relative luminance of "#rrggbb"."""
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(int(colour[i:i + 2], 16) / 255) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("ink, background", [
    (style.FAINT_INK, style.TEXT_BOX),   # an explorer's context
    (style.INK, style.TEXT_BOX), (style.INK, style.NEW_TEXT), (style.INK, style.CHOSEN),
    (style.INK, style.KEPT), (style.ERROR_INK, style.PAPER), (style.FAINT_INK, style.PAPER),
    *[(style.FAINT_INK, c) for c in style.ROUND_COLOURS.values()]])
def test_the_explorers_text_reaches_wcag_aa_contrast(ink, background):
    assert contrast(ink, background) >= 4.5, (ink, background, contrast(ink, background))


def test_contrast_is_computed_as_wcag_does():
    assert contrast("#000000", "#ffffff") == pytest.approx(21)
    # below AA: the builder's context before style.FAINT_INK
    assert contrast("#777777", "#f7f7f7") == pytest.approx(4.18, abs=0.01)


def test_tinted_is_the_diagrams_mix_in_hex():
    assert style.tinted(style.COLOURS["sky"], 0.35) == style.KEPT == "#c4e5f7"
    for colour in style.PALETTE:
        for alpha in (0.07, 0.35, 0.6, 1.0):
            rgb = svg.tint(colour, alpha)
            assert style.tinted(colour, alpha) == "#" + "".join(f"{round(255 * c):02x}"
                                                                for c in rgb)
    assert style.tinted("#0072B2", 1.0) == "#0072b2"
    with pytest.raises(ValueError, match="colour='blue' is invalid"):
        style.tinted("blue", 0.5)


def run_node(script: str) -> str:
    if NODE is None:
        pytest.skip("node is not installed")
    done = subprocess.run([NODE, "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_style_js_holds_what_style_py_says(tmp_path):
    path = tmp_path / "style.js"
    path.write_text(book.style_script(), "utf-8")
    got = json.loads(run_node(f"console.log(JSON.stringify(require({json.dumps(str(path))})))"))
    assert got == json.loads(json.dumps(style.browser_style()))
    assert got["visible"] == {" ": "\u2423", "\n": "\u21b5"} and got["newline"] == "\u21b5"
    assert got["faint_ink"] == style.FAINT_INK and got["text_box"] == style.TEXT_BOX
    assert HEX_COLOUR.fullmatch(got["kept"]) and set(got["round_colours"]) == \
        {"accepted", "rejected", "unchecked", "replacement", "bonus"}


def test_no_module_is_a_thenable():
    """A module object with a then method would be called by a Promise resolved with it."""
    rules = rules_script()
    names = ["decoding", "beam", "speculative"]
    out = run_node(f"globalThis.SlmRules = require({json.dumps(rules)});\n"
                   + "".join(f"console.log(typeof require({json.dumps(module_path(n))}).then);\n"
                             for n in names))
    assert out.split() == ["undefined"] * len(names)
    decoding = (STATIC_DIR / "decoding.js").read_text("utf-8")
    assert "andThen: andThen" in decoding and re.search(r"\bthen: ", decoding) is None
