"""Kernel-free interactive figures: sliders that still work on the static site.

The book's static pages have no Python kernel, so an ipywidgets slider there is dead. A
``SliderFigure`` instead renders to one self-contained HTML fragment: ``<input type=range>``
sliders, an SVG chart, the figure's data as embedded JSON, and a small JavaScript runtime
(``static/kernelfree.js``, about 8 KB, defined once per page however many figures use it)
that redraws the chart when a slider moves. Nothing is fetched from the network.

There are two ways to say what the chart shows for a slider setting:

* ``frames``: precomputed in Python for every combination of slider values (a dict from a
  tuple of value *indices* to a chart spec). The page only looks the frame up, so the
  numbers on the page are exactly the package's numbers. Use it when the grid is small.
* ``render_js``: the body of a JavaScript function ``(values, data, KernelFree) -> spec``
  computing the chart from the slider values (``values[name]``) and embedded ``data``. Use
  it when the grid is too large; test the JS against the Python it mirrors (run it in node).

A chart spec is a plain dict (JSON):

    {"title": str, "xlabel": str, "ylabel": str, "xlog": bool, "ylog": bool,
     "xlim": [lo, hi], "ylim": [lo, hi],                       # optional
     "categories": [str, ...],                                 # bar chart on these labels
     "category_colors": [css color, ...],                      # optional label colours
     "bars":   [{"y": [...], "name": str, "color": css, "fill": bool, "colors": [...]}],
     "lines":  [{"x": [...], "y": [...], "name": str, "color": css, "dash": bool}],
     "points": [{"x": num, "y": num, "label": str, "color": css}],
     "vlines": [{"x": num, "label": str}], "hlines": [{"y": num, "label": str}],
     "caption": str}                                           # text under the chart

In JupyterLab the same HTML works in a trusted notebook; the chapters also offer live
ipywidgets bound to the real model beside it. The browser tests move a slider of every
``.kernel-free-figure`` and check that its SVG changes.
"""

from __future__ import annotations

import html
import itertools
import json
import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .rounding import rounded

STATIC_DIR = Path(__file__).resolve().parent / "static"


def static_js(name: str) -> str:
    """Text of a JavaScript file shipped in ``shakespeare_lm/static/``."""
    return (STATIC_DIR / name).read_text("utf-8")


@dataclass
class Slider:
    """A slider over a fixed list of values; ``value`` is the initial one."""

    name: str
    values: Sequence
    value: object = None
    label: str | None = None
    fmt: Callable[[object], str] = field(default=str, repr=False)

    def __post_init__(self):
        self.values = list(self.values)
        if not self.values:
            raise ValueError(f"slider {self.name!r} has no values")
        if self.value is None:
            self.value = self.values[0]
        if self.value not in self.values:
            raise ValueError(f"slider {self.name!r}: initial value {self.value!r} is not one "
                             f"of its values {self.values!r}")

    @property
    def index(self) -> int:
        return self.values.index(self.value)


def _clean(obj):
    """JSON-safe: NaN and infinities become None (drawn as gaps)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "tolist"):
        return _clean(obj.tolist())
    return obj


class SliderFigure:
    """A chart with sliders that redraws in the browser, no kernel needed (see module doc)."""

    def __init__(self, sliders: Sequence[Slider], *, frames: dict | None = None,
                 frame_fn: Callable[..., dict] | None = None, render_js: str | None = None,
                 data=None, width: int = 680, height: int = 360, title: str = ""):
        self.sliders = list(sliders)
        names = [s.name for s in self.sliders]
        if len(set(names)) != len(names):
            raise ValueError(f"slider names must be unique, got {names}")
        if sum(x is not None for x in (frames, frame_fn, render_js)) != 1:
            raise ValueError("give exactly one of frames, frame_fn or render_js")
        if frame_fn is not None:  # precompute every combination in Python
            frames = {}
            for idx in itertools.product(*(range(len(s.values)) for s in self.sliders)):
                values = {s.name: s.values[i] for s, i in zip(self.sliders, idx)}
                frames[idx] = frame_fn(**values)
        if frames is not None:
            missing = [idx for idx in itertools.product(*(range(len(s.values)) for s in self.sliders))
                       if tuple(idx) not in frames]
            if missing:
                raise ValueError(f"frames lack slider combinations such as {missing[0]}")
            frames = {",".join(map(str, k)): v for k, v in frames.items()}
        self.frames, self.render_js, self.data = frames, render_js, data
        self.width, self.height, self.title = width, height, title

    def spec_at(self, **values) -> dict:
        """The precomputed chart spec for the given slider values (frames only)."""
        if self.frames is None:
            raise ValueError("spec_at needs precomputed frames; this figure renders in JS")
        idx = [s.values.index(values.get(s.name, s.value)) for s in self.sliders]
        return self.frames[",".join(map(str, idx))]

    def config(self) -> dict:
        """The embedded JSON: every float rounded to 4 significant digits, plenty for a picture."""
        return rounded(_clean({
            "sliders": [{"name": s.name, "values": s.values, "labels": [s.fmt(v) for v in s.values]}
                        for s in self.sliders],
            "frames": self.frames, "render_js": self.render_js, "data": self.data,
            "width": self.width, "height": self.height,
        }), 4)

    def to_html(self) -> str:
        fid = "kf-" + uuid.uuid4().hex[:10]
        rows = []
        for i, s in enumerate(self.sliders):
            label = html.escape(s.label or s.name)
            rows.append(
                f'<label style="display:flex;gap:.6em;align-items:center;margin:.15em 0">'
                f'<span style="min-width:11em">{label}</span>'
                f'<input type="range" min="0" max="{len(s.values) - 1}" step="1" value="{s.index}" '
                f'aria-label="{label}" data-name="{html.escape(s.name)}" style="flex:1;max-width:22em">'
                f'<output class="kf-value-{i}" style="font-family:monospace;min-width:6em"></output></label>')
        payload = json.dumps(self.config(), separators=(",", ":")).replace("</", "<\\/")
        title = f"<div style='font-weight:bold'>{html.escape(self.title)}</div>" if self.title else ""
        return (
            f'<div class="kernel-free-figure" id="{fid}" style="max-width:{self.width}px;'
            f'font-family:sans-serif;font-size:13px;margin:.5em 0">{title}{"".join(rows)}'
            f'<svg width="100%" viewBox="0 0 {self.width} {self.height}" role="img"></svg>'
            f'<div class="kf-caption" style="font-family:monospace;white-space:pre-wrap"></div>'
            f'<script type="application/json">{payload}</script>'
            f"<script>{static_js('kernelfree.js')}</script></div>"
        )

    def _repr_html_(self) -> str:
        return self.to_html()
