"""Kernel-free figures (shakespeare_lm.site.figures) and the book's figure style
(shakespeare_lm.site.style): the sliders' inputs, the frames as data rows, what the Vega-Lite
spec draws for each slider setting (run in node with vega), and reproducible output."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys

import altair as alt
import pandas as pd
import pytest

from shakespeare_lm.site import style
from shakespeare_lm.site.figures import (
    FRAME_FIELD,
    MIMETYPE,
    Slider,
    SliderFigure,
    merge_frames,
    read_dataset,
)

from .vega_helpers import ROOT, drawn, param_setting

BOUNDARIES = ["BAPTISTA", "KATHARINA", "PETRUCHIO", "GRUMIO"]


def bars_frame(boundary: int, scale: float):
    """Two bar series over four categories, side by side, one filled and one outlined;
    and a caption that names the setting."""
    model = [scale * (i + 1) / 10 for i in range(4)]
    exact = [round(0.25 + 0.01 * boundary * i, 4) for i in range(4)]
    rows = [{"speaker": c, "series": name, "p": p}
            for name, ps in (("model p(y)", model), ("exact", exact))
            for c, p in zip(BOUNDARIES, ps)]
    series = ["model p(y)", "exact"]
    bars = alt.Chart().encode(
        x=alt.X("speaker:N", sort=None, title=None, axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("series:N", sort=series), y=alt.Y("p:Q", title="probability"),
        color=alt.Color("series:N", title=None, scale=alt.Scale(
            domain=series, range=["#bbbbbb", style.PALETTE[1]])))
    chart = alt.layer(bars.mark_bar().transform_filter(alt.datum.series == "model p(y)"),
                      bars.mark_bar(filled=False).transform_filter(
                          alt.datum.series == "exact"),
                      data=alt.Data(values=rows), title=f"boundary {boundary}")
    return chart, f"boundary {boundary}, scale {scale}"


@pytest.fixture(scope="module")
def bars_figure():
    return SliderFigure([Slider("boundary", range(5), 2, "speech boundary"),
                         Slider("scale", [0.5, 1.0, 2.0], 1.0, fmt="x{}".format)],
                        frame_fn=bars_frame, title="Two series")


def test_a_slider_shows_its_formatted_values_never_an_index():
    even = Slider("alpha", [round(0.05 * i, 2) for i in range(1, 20)], 0.7)
    assert even.binding() == {"input": "range", "min": 0.05, "max": 0.95, "step": 0.05,
                              "name": "alpha\u00a0"}
    tokens = Slider("tokens", [256, 1024, 4096, 32768], 4096, fmt="{:,}".format)
    bind = tokens.binding()
    assert bind["input"] == "radio"
    assert bind["labels"] == ["256", "1,024", "4,096", "32,768"]
    assert bind["options"] == [0, 1, 2, 3] and tokens.initial() == 2
    models = Slider("model", [f"a model with a long name {i}" for i in range(4)])
    assert models.binding()["input"] == "select"  # too long for radio buttons
    step = Slider("step", range(9), 0, fmt=lambda s: f"decode {s}" if s else "prefill")
    assert step.step() is None
    assert step.binding()["labels"][:2] == ["prefill", "decode 1"]
    assert Slider("k", [1, 2, 3, 5]).step() is None  # uneven: no range input
    assert even.value_expr("alpha") == "alpha"
    assert tokens.value_expr("t") == "[256,1024,4096,32768][t]"
    assert even.index_expr("a") == "round((a - 0.05) / 0.05)"


def line_frame(v: float, ylim=(0, 4)):
    """A line that changes with ``v``, points and a reference line that do not."""
    line = pd.DataFrame({"x": [0, 1, 2], "y": [1.0, v, 2.0]})
    points = pd.DataFrame({"x": [1], "y": [0.5], "label": ["fixed"]})
    xy = {"x": "x:Q", "y": alt.Y("y:Q", scale=alt.Scale(domain=list(ylim)))}
    dots = alt.Chart(points).encode(**xy)
    return alt.layer(alt.Chart(line).mark_line().encode(**xy),
                     dots.mark_circle(), dots.mark_text(dx=8).encode(text="label:N"),
                     alt.Chart(pd.DataFrame({"y": [0.5]})).mark_rule().encode(y="y:Q"),
                     title=f"v = {v}")


def test_frames_merge_into_one_chart_whose_data_holds_every_frames_rows():
    """The data that changes from frame to frame is tagged with its frame and filtered
    to the frame the sliders select; data every frame has alike is kept once, untagged
    and unfiltered (the same data in two layers: once); the titles are picked."""
    view, datasets, titles = merge_frames([line_frame(v) for v in (2, 3)])
    assert titles == ["v = 2", "v = 3"] and "title" not in view
    line, dots, labels, rule = view["layer"]
    assert datasets[line["data"]["name"]] == [
        {"x": 0, "y": 1.0, FRAME_FIELD: 0}, {"x": 1, "y": 2.0, FRAME_FIELD: 0},
        {"x": 2, "y": 2.0, FRAME_FIELD: 0}, {"x": 0, "y": 1.0, FRAME_FIELD: 1},
        {"x": 1, "y": 3.0, FRAME_FIELD: 1}, {"x": 2, "y": 2.0, FRAME_FIELD: 1}]
    assert line["transform"] == [{"filter": f"datum.{FRAME_FIELD} == frame"}]
    assert dots["data"] == labels["data"]  # stored once
    assert datasets[dots["data"]["name"]] == [{"x": 1, "y": 0.5, "label": "fixed"}]
    assert datasets[rule["data"]["name"]] == [{"y": 0.5}]
    assert "transform" not in dots and "transform" not in rule
    assert len(datasets) == 3


def test_frames_that_differ_in_more_than_data_and_title_are_refused():
    """A scale domain that changes with the sliders would not redraw: put it in the data."""
    with pytest.raises(ValueError, match=r"frame 1 differs from frame 0 in "
                                         r"layer\[0\]\.encoding\.y\.scale\.domain"):
        merge_frames([line_frame(2, ylim=(0, 4)), line_frame(2, ylim=(0, 5))])
    facet = alt.Chart(pd.DataFrame({"a": [1]})).mark_point().encode(x="a:Q").facet("a:N")
    with pytest.raises(ValueError, match="a frame is a chart or a layer of charts"):
        merge_frames([facet])


def test_figure_arguments_are_checked():
    with pytest.raises(ValueError, match="exactly one of frames, frame_fn or vega"):
        SliderFigure([Slider("a", [1, 2])])
    with pytest.raises(ValueError, match="lack slider combinations such as"):
        SliderFigure([Slider("a", [1, 2])], frames={(0,): {"lines": []}})
    with pytest.raises(ValueError, match="initial value 3 is not one of its values"):
        Slider("a", [1, 2], 3)


def test_every_slider_setting_draws_its_own_frame(bars_figure):
    """Each combination of the two sliders (a radio and a list) draws exactly the
    numbers of its frame, rounded to 4 significant digits, and its caption."""
    combos = [(b, s) for b in range(5) for s in (0.5, 1.0, 2.0)]
    settings = [param_setting(bars_figure, boundary=b, scale=s) for b, s in combos]
    pages = drawn(bars_figure.to_dict(), settings, fields=["speaker", "series", "p"])
    for (b, s), items in zip(combos, pages):
        marks = [i for i in items if i["role"] == "mark"]
        rects = [i["datum"] for i in marks if i["mark"] == "rect"]
        got = {(d["series"], d["speaker"]): d["p"] for d in rects}
        frame = bars_figure.spec_at(boundary=b, scale=s)
        want = {(r["series"], r["speaker"]): pytest.approx(r["p"], rel=5e-4)
                for r in frame.chart.data.values}
        assert len(rects) == len(got) == 8 and got == want, (b, s)
        texts = [i["text"] for i in marks if i["mark"] == "text"]
        assert [f"boundary {b}, scale {s}"] in texts, texts
        assert frame.caption == f"boundary {b}, scale {s}"


def test_the_output_is_a_vega_lite_mimebundle_in_the_books_style(bars_figure):
    data, meta = bars_figure._repr_mimebundle_()
    assert set(data) == {MIMETYPE, "text/plain"}  # no HTML, no script: JupyterLab draws
    spec = data[MIMETYPE]
    assert spec["$schema"].endswith("/vega-lite/v5.20.1.json")
    assert meta[MIMETYPE]["embed_options"]["actions"]["editor"] is False
    assert spec["config"] == json.loads(json.dumps(style.vega_config()))
    config = spec["config"]
    assert min(config["axis"]["labelFontSize"], config["legend"]["labelFontSize"],
               config["text"]["fontSize"]) >= 11
    [name] = [n for n in spec["datasets"] if n != "one"]
    values = [r["p"] for r in read_dataset(spec, name)]
    assert len(values) == 15 * 8  # every frame's rows
    assert values and all(float(f"{v:.4g}") == v for v in values)  # rounded
    assert "speech boundary" in data["text/plain"]


SCRIPT = """
import hashlib, sys
from shakespeare_lm import cost as rf
from shakespeare_lm.site import roofline_charts as charts
from tests.site.test_figures import bars_frame
from shakespeare_lm.site.figures import Slider, SliderFigure
figs = [charts.roofline_explorer(), charts.prefill_decode_figure(),
        SliderFigure([Slider("b", range(3))], frame_fn=lambda b: bars_frame(b, 1.0))]
print(hashlib.sha256("".join(f.to_json() for f in figs).encode()).hexdigest())
"""


def test_output_is_the_same_in_every_fresh_interpreter():
    runs = [subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True,
                           text=True, cwd=ROOT, timeout=300) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr[-2000:]
    assert runs[0].stdout == runs[1].stdout and len(runs[0].stdout.strip()) == 64


def test_output_has_no_random_names(bars_figure):
    text = bars_figure.to_json()
    assert not re.search(r"[0-9a-f]{16,}", text), "a hash or uuid in the output"
    assert not re.search(r"(view|param|data)_\d+", text), "an auto-numbered name"
    assert hashlib.sha256(text.encode()).hexdigest() == hashlib.sha256(
        bars_figure.to_json().encode()).hexdigest()


def test_style_use_sets_matplotlib_and_the_altair_theme():
    import altair as alt
    import matplotlib as mpl

    with mpl.rc_context():
        style.use()
        width_px = mpl.rcParams["figure.figsize"][0] * mpl.rcParams["figure.dpi"]
        assert 640 <= width_px <= 688  # a notebook output on the site (1280 px): 688
        points_to_px = mpl.rcParams["figure.dpi"] / 72
        assert mpl.rcParams["xtick.labelsize"] * points_to_px >= 11
        assert mpl.rcParams["legend.loc"] == "best"
        assert mpl.rcParams["legend.framealpha"] < 1
        assert mpl.rcParams["figure.constrained_layout.use"]
        assert mpl.rcParams["axes.prop_cycle"].by_key()["color"] == list(style.PALETTE)
        assert alt.theme.active == style.THEME
        assert alt.Chart().mark_point().to_dict()["config"] == style.vega_config()
    alt.theme.enable("default")
    assert len(set(style.PALETTE)) == len(style.PALETTE) == 8


LAZY_THEME_PROBE = """
import sys
from shakespeare_lm.site import style
style.use()
style.use()  # twice, as a chapter run twice in one kernel would
assert "altair" not in sys.modules, "use() imported Altair"
import altair as alt
assert alt.theme.active == style.THEME, alt.theme.active
assert alt.Chart().mark_point().to_dict()["config"] == style.vega_config()
assert not [f for f in sys.meta_path if type(f).__name__ == "_ThemeOnImport"]
"""


def test_style_use_leaves_altair_to_the_first_chart_and_themes_it_then():
    """A chapter that draws only with matplotlib never pays for importing Altair; one that
    imports it later still gets the theme, enabled, as if use() had come after."""
    run = subprocess.run([sys.executable, "-c", LAZY_THEME_PROBE], capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]


def test_the_site_extension_turns_vega_lite_outputs_into_inert_html(bars_figure):
    """book/_ext/vega_figures.py: the spec goes into a data block (no code from the
    notebook runs) that the page script draws; other outputs are left alone."""
    import importlib.util

    path = ROOT / "book" / "_ext" / "vega_figures.py"
    module_spec = importlib.util.spec_from_file_location("vega_figures", path)
    ext = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(ext)
    spec = bars_figure.to_dict()
    spec["title"] = "a </script> in a title"
    notebook = {"cells": [{"cell_type": "code", "outputs": [
        {"output_type": "display_data", "data": {MIMETYPE: spec, "text/plain": "fig"},
         "metadata": {MIMETYPE: {"embed_options": {}}}},
        {"output_type": "stream", "name": "stdout", "text": "hello"}]}]}
    source = [json.dumps(notebook)]

    class App:  # what rewrite_vega_outputs reads of Sphinx's app
        class env:
            doc2path = staticmethod(lambda name: f"{name}.ipynb")

    ext.rewrite_vega_outputs(App, "notebooks/07", source)
    out = json.loads(source[0])["cells"][0]["outputs"]
    html = out[0]["data"]["text/html"]
    assert MIMETYPE not in out[0]["data"] and out[0]["metadata"] == {}
    assert html.startswith('<div class="slm-vega-figure"><script type="' + MIMETYPE)
    assert "</script> in" not in html and html.count("</script>") == 1
    data = html.split(MIMETYPE + '">', 1)[1].rsplit("</script>", 1)[0]
    assert json.loads(data) == spec
    assert out[1] == notebook["cells"][0]["outputs"][1]
