"""Kernel-free interactive figures: sliders that still work where no Python kernel runs.

A ``SliderFigure`` is a Vega-Lite chart (built with Altair) whose sliders are
Vega-Lite parameters bound to inputs, so the chart redraws in the browser with no
kernel: in JupyterLab, which renders its ``application/vnd.vegalite.v5+json`` output
natively (also in a notebook that is not trusted), and on the book's site, where
``book/_ext/vega_figures.py`` draws it with the vendored vega-embed. Nothing is fetched
from the network.

There are two ways to say what the chart shows for a slider setting:

* ``frames`` (or ``frame_fn``): an Altair chart, drawn in Python for every combination of
  slider values (with, if given, the text under it: ``(chart, caption)``). The frames'
  charts must be alike but for their data and their title: the figure is the first
  frame's chart, whose data holds every frame's rows, tagged with their frame, and the
  sliders pick a frame, so the numbers on the page are exactly the package's numbers.
  A frame is an ordinary chart: show ``frame_fn(...)`` on its own to look at one. Use it
  when the grid is small.
* ``vega``: a function that builds the chart from Vega expressions of the slider values
  (``values[name]``, e.g. ``"[0.5, 1, 2][bytes_per_weight]"``), for a grid too large to
  precompute; test the chart against the Python it mirrors (run it in node with vega).

A figure may also have a ``Player``: a play button and a step button drawn above the
chart, that move one of its range sliders on by itself (see ``Player``).

Each slider is shown with its formatted values (``Slider.fmt``): a range input when
those are its plain numbers in even steps, radio buttons when there are a few short
ones, a drop-down list otherwise. Every number in the data is rounded to 4 significant
digits, and the output has no random names, so re-executing a notebook reproduces it
(nbval).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from . import style
from .rounding import rounded

STATIC_DIR = Path(__file__).resolve().parent / "static"
MIMETYPE = "application/vnd.vegalite.v5+json"
# vega-embed's menu: saving the picture, but no link to the online editor (no network)
EMBED_OPTIONS = {"actions": {"export": True, "source": False, "compiled": False,
                             "editor": False}}
_RESERVED = {"datum", "event", "item", "parent", "frame",
             "slm_playing", "slm_player"}  # the last two: a Player's
CAPTION_LINE_PX = 16


def _js_number(v) -> str | None:
    """How a browser writes the number ``v`` (String(v)); None where Python differs."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    if float(v).is_integer() and abs(v) < 1e21:
        return str(int(v))
    text = repr(float(v))
    return None if "e" in text else text


# Vega's built-in signals: a Vega-Lite param may not take these names
VEGA_SIGNALS = frozenset({"width", "height", "padding", "autosize", "background",
                          "cursor", "datum", "item", "event", "parent"})


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
        if self.name in VEGA_SIGNALS:
            raise ValueError(f"slider name {self.name!r} is one of Vega's own signals "
                             f"{sorted(VEGA_SIGNALS)}: a param of that name would resize or "
                             "restyle the chart. Rename it, e.g. 'beam_width'")
        if self.value is None:
            self.value = self.values[0]
        if self.value not in self.values:
            raise ValueError(f"slider {self.name!r}: initial value {self.value!r} is "
                             f"not one of its values {self.values!r}")

    @property
    def index(self) -> int:
        return self.values.index(self.value)

    def labels(self) -> list[str]:
        return [str(self.fmt(v)) for v in self.values]

    def step(self) -> float | None:
        """The step of a range input: the values are plain numbers in even steps (at
        least three of them) and their labels are those numbers as a browser writes
        them."""
        shown = [_js_number(v) for v in self.values]
        if len(self.values) < 3 or None in shown or shown != self.labels():
            return None
        step = self.values[1] - self.values[0]
        even = all(abs(b - a - step) <= 1e-9 * abs(step)
                   for a, b in itertools.pairwise(self.values))
        return step if step > 0 and even else None

    def binding(self) -> dict:
        """The Vega-Lite input of the slider (its parameter holds the value for a range,
        the value's index for radio buttons and lists)."""
        name = (self.label or self.name) + "\u00a0"
        step = self.step()
        if step is not None:
            return {"input": "range", "min": self.values[0], "max": self.values[-1],
                    "step": step, "name": name}
        labels = self.labels()
        few = len(labels) <= 6 and sum(map(len, labels)) <= 48
        return {"input": "radio" if few else "select",
                "options": list(range(len(labels))), "labels": labels, "name": name}

    def initial(self):
        return self.value if self.step() is not None else self.index

    def index_expr(self, param: str) -> str:
        """A Vega expression of the index of the slider's value, from its parameter."""
        step = self.step()
        if step is None:
            return param
        return f"round(({param} - {self.values[0]!r}) / {step!r})"

    def value_expr(self, param: str) -> str:
        """A Vega expression of the slider's value, from its parameter."""
        if self.step() is not None:
            return param
        return f"{json.dumps(self.values, separators=(',', ':'))}[{param}]"


def param_names(sliders: Sequence[Slider]) -> list[str]:
    """Valid, distinct Vega parameter names ("beam width" -> beam_width)."""
    out: list[str] = []
    for s in sliders:
        name = re.sub(r"\W", "_", s.name)
        if not name or name[0].isdigit() or name in _RESERVED:
            name = "slider_" + name
        while name in out:
            name += "_"
        out.append(name)
    return out


def caption_view(text, lines: int, width: int):
    """A view of monospace text under a chart; ``text`` is a string, a list of lines, or
    ``{"expr": ...}`` (a Vega expression of either)."""
    import altair as alt

    return (alt.Chart(alt.NamedData(name="one"))
            .mark_text(align="left", baseline="top", font=style.MONOSPACE,
                       fontSize=style.FONT_SIZES["caption"], lineHeight=CAPTION_LINE_PX,
                       text=text)
            .encode(x=alt.value(0), y=alt.value(2))
            .properties(width=width, height=max(1, lines) * CAPTION_LINE_PX + 4))


def frame_title(text) -> dict:
    """The title of the chart under a figure's own (bold) title: plain weight."""
    return {"text": text, "fontWeight": "normal",
            "fontSize": style.FONT_SIZES["label"] + 1}


def wrap_lines(text: str, width_px: int) -> list[str]:
    """``text`` split at its newlines, wrapped to ``width_px`` of the caption's font."""
    import textwrap

    chars = max(20, int(width_px / (0.6 * style.FONT_SIZES["caption"])))
    out = []
    for line in str(text).split("\n"):
        out += textwrap.wrap(line, chars, replace_whitespace=False,
                             drop_whitespace=False) or [""]
    return out


def pick(items: list, index: str):
    """A constant when every frame agrees, else a Vega expression picking by index."""
    if all(item == items[0] for item in items):
        return items[0]
    listed = json.dumps(items, separators=(",", ":"), ensure_ascii=False)
    return {"expr": f"{listed}[{index}]"}


# --- frames: one Altair chart per slider setting, merged into one view ---------------
FRAME_FIELD = "_frame"  # the frame a row of data belongs to


class Frame(NamedTuple):
    """What a ``SliderFigure`` shows for one setting of its sliders: an Altair chart (one
    view or a layer of views) and the text under it."""

    chart: Any
    caption: str = ""


def as_frame(frame) -> Frame:
    """A frame from what a ``frame_fn`` returns: a chart, or ``(chart, caption)``."""
    return Frame(*frame) if isinstance(frame, tuple) else Frame(frame)


def _slotted(spec, datasets: dict, slots: list):
    """``spec`` with each data of a view replaced by a reference to the slot
    ``{"name": "rows_<i>"}``, its rows appended to ``slots`` (in the order the spec names
    them, which is the same in every frame of one chart)."""
    if isinstance(spec, list):
        return [_slotted(v, datasets, slots) for v in spec]
    if not isinstance(spec, dict):
        return spec
    out = {k: _slotted(v, datasets, slots) for k, v in spec.items() if k != "data"}
    data = spec.get("data")
    if isinstance(data, dict) and ("values" in data or data.get("name") in datasets):
        slots.append(data["values"] if "values" in data else datasets[data["name"]])
        rest = {k: v for k, v in data.items() if k not in ("name", "values")}
        out["data"] = {"name": f"rows_{len(slots) - 1}", **rest}
    elif "data" in spec:
        out["data"] = data
    return out


def _renamed(spec, names: dict, varying: set):
    """``spec`` with its datasets renamed (``names``), and a view whose data is one of
    the ``varying`` ones filtered to the rows of the frame the sliders select."""
    if isinstance(spec, list):
        return [_renamed(v, names, varying) for v in spec]
    if not isinstance(spec, dict):
        return spec
    out = {k: _renamed(v, names, varying) for k, v in spec.items()}
    data = spec.get("data")
    name = data.get("name") if isinstance(data, dict) else None
    if name in names:
        out["data"] = {**out["data"], "name": names[name]}
    if name in varying:
        if "mark" not in spec and "layer" not in spec:
            raise ValueError(f"frames differ in the data of an object with keys "
                             f"{sorted(spec)}: only the data of a chart or a layer may "
                             "change from frame to frame")
        out["transform"] = [{"filter": f"datum.{FRAME_FIELD} == frame"},
                            *spec.get("transform", [])]
    return out


def _difference(a, b, path: str = "") -> str:
    """Where two specs first differ, e.g. ``encoding.y.scale.domain``."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if a.get(k) != b.get(k):
                return _difference(a.get(k), b.get(k), f"{path}.{k}" if path else k)
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _difference(x, y, f"{path}[{i}]")
    return f"{path or 'the chart'}: {json.dumps(a)[:80]} against {json.dumps(b)[:80]}"


def _frame_spec(chart, validate: bool) -> tuple[dict, list, object]:
    """A frame's chart as a Vega-Lite view (its data in numbered slots, no title), the
    slots' rows and the title's text."""
    spec = chart.to_dict(validate=validate)
    if "mark" not in spec and "layer" not in spec:
        raise ValueError("a frame is a chart or a layer of charts (alt.layer), got one "
                         f"with keys {sorted(spec)}")
    rows: list = []
    top_level = ("$schema", "config", "datasets")  # the figure's, not the frame's
    view = _slotted({k: v for k, v in spec.items() if k not in top_level},
                    spec.get("datasets", {}), rows)
    # a layer's title: its own, or (as Vega-Lite draws it) its first layer's
    titles = [view.pop("title", None)] + [v.pop("title", None) for v in view.get("layer", [])]
    title = next((t for t in titles if t is not None), None)
    if isinstance(title, dict):  # its other properties stay with the view
        title = dict(title)
        text = title.pop("text", None)
        if title:
            view["title"] = title
        title = text
    return view, rows, title


def merge_frames(charts: list) -> tuple[dict, dict, list]:
    """One Vega-Lite view that draws the chart of the frame the parameter ``frame``
    selects: the first frame's view, whose data holds every frame's rows (a dataset that
    every frame has alike is kept once, untagged); its datasets; the frames' titles."""
    # the first frame is validated, and the others are like it (checked below)
    specs = [_frame_spec(chart, validate=i == 0) for i, chart in enumerate(charts)]
    if not specs:
        raise ValueError("no frames: a figure needs at least one chart")
    view = specs[0][0]
    for i, (other, _, _) in enumerate(specs[1:], 1):
        if other != view:
            raise ValueError(f"frame {i} differs from frame 0 in {_difference(view, other)}"
                             ". Frames may differ only in their data and title: put what "
                             "changes with the sliders in the data")
    datasets, names, varying, seen = {}, {}, set(), {}
    for i in range(len(specs[0][1])):
        slot, per_frame = f"rows_{i}", [rows[i] for _, rows, _ in specs]
        rows = per_frame[0]
        if any(other != rows for other in per_frame[1:]):
            varying.add(slot)
            rows = [{**r, FRAME_FIELD: f} for f, frame in enumerate(per_frame) for r in frame]
        key = json.dumps(rows, sort_keys=True, default=str)  # the same rows: one dataset
        names[slot] = seen.setdefault(key, f"rows_{len(seen)}")
        datasets[names[slot]] = rows
    return _renamed(view, names, varying), datasets, [title for _, _, title in specs]


def _as_chart(view: dict):
    """A Vega-Lite view (a unit or a layer) as an Altair chart, unvalidated (the whole
    figure is validated in ``SliderFigure.to_dict``)."""
    import altair as alt

    if "layer" in view:
        return alt.LayerChart(**{**view, "layer": [_as_chart(v) for v in view["layer"]]})
    return alt.Chart.from_dict(view, validate=False)


# --- a play button: a range slider that moves on by itself ------------------------------
PLAYING, LIVE, BUTTON = "slm_playing", "slm_player", "slm_button"  # reserved names


@dataclass(frozen=True)
class Player:
    """A play button for one range slider of a ``SliderFigure``: "▶ play" moves the slider
    one step on every ``interval_ms`` (after its last value, back to its first), "❚❚ pause"
    stops it, "step ▸" moves it one step and pauses. The slider stays: drag it to any
    step, played or paused, and the chart follows it as always.

    Vega-Lite has no timer, Vega has: the buttons are Vega-Lite marks, and what they do
    is a JSON patch (RFC 6902) of the compiled Vega spec, in the spec's
    ``usermeta.embedOptions.patch``, which vega-embed applies wherever it draws the
    figure: on the book's site and in JupyterLab alike. The patch only appends a group
    mark whose signals are pushed to the outer scope (the slider's and the player's own),
    so it needs no index into the compiled spec and holds across Vega-Lite versions. A
    renderer that ignores it draws the figure with its sliders and without the buttons,
    which the patch also reveals (they stay transparent until its timer first fires): no
    button is shown that would not work."""

    slider: str
    interval_ms: int = 900

    def __post_init__(self):
        if not (isinstance(self.interval_ms, int) and self.interval_ms >= 100):
            raise ValueError(f"interval_ms={self.interval_ms!r} is invalid: a player "
                             "steps at most every 100 ms")

    def params(self) -> list:
        """The Vega-Lite params of the player: whether it plays, whether it is live."""
        import altair as alt

        return [alt.param(name=PLAYING, value=False), alt.param(name=LIVE, value=False)]

    @staticmethod
    def view(width: int):
        """The buttons, above the chart: a Vega-Lite view of ``width`` pixels."""
        import altair as alt

        rows = [{BUTTON: "play", "x": 0, "x2": 92}, {BUTTON: "step", "x": 102, "x2": 184}]
        label = (f"datum.{BUTTON} == 'play' ? ({PLAYING} ? '\u275a\u275a pause' : "
                 f"'\u25b6 play') : 'step \u25b8'")
        shown = alt.condition(LIVE, alt.value(1), alt.value(0))
        base = alt.Chart(alt.NamedData(name="slm_buttons")).transform_calculate(
            label=label, middle="(datum.x + datum.x2) / 2")
        box = base.mark_rect(cursor="pointer", cornerRadius=4, fill=style.PALE,
                             stroke=style.GREY, strokeWidth=1).encode(
            x=alt.X("x:Q", scale=None, axis=None), x2="x2:Q",
            y=alt.value(1), y2=alt.value(27), opacity=shown)
        text = base.mark_text(cursor="pointer", fontSize=style.FONT_SIZES["label"],
                              fontWeight="bold", color=style.INK).encode(
            x=alt.X("middle:Q", scale=None, axis=None), y=alt.value(14),
            text="label:N", opacity=shown)
        return alt.layer(box, text).properties(width=width, height=28), rows

    def patch(self, slider: Slider, param: str) -> list[dict]:
        """The JSON patch that makes the buttons work: a group mark whose signals, pushed
        to the outer scope, step ``param`` on a timer while playing, and on a click on
        "step", toggle playing on a click on "play", and show the buttons."""
        first, last, step = slider.values[0], slider.values[-1], slider.step()
        on_timer = {"type": "timer", "throttle": self.interval_ms}

        def click(button: str) -> dict:
            return {"type": "click", "filter": f"event.item && event.item.datum && "
                                               f"event.item.datum.{BUTTON} === '{button}'"}

        following = f"{param} + {step!r} > {last!r} ? {first!r} : {param} + {step!r}"
        signals = [
            {"name": LIVE, "push": "outer", "on": [{"events": on_timer, "update": "true"}]},
            {"name": PLAYING, "push": "outer",
             "on": [{"events": click("play"), "update": f"!{PLAYING}"},
                    {"events": click("step"), "update": "false"}]},
            {"name": param, "push": "outer",
             "on": [{"events": on_timer, "update": f"{PLAYING} ? ({following}) : {param}"},
                    {"events": click("step"), "update": following}]},
        ]
        return [{"op": "add", "path": "/marks/-",
                 "value": {"type": "group", "name": "slm_player", "signals": signals}}]


class SliderFigure:
    """A chart with sliders that redraws in the browser, no kernel needed (module doc).

    ``frames`` maps each combination of the sliders' value indices to a frame (an
    Altair chart, or ``(chart, caption)``); ``frame_fn(**slider_values)`` returns one.
    ``width`` and ``height`` are the whole figure's size in pixels (the chart is at most
    ``style.FIGURE_WIDTH_PX`` wide, the page column). A ``vega`` chart reads the named
    datasets ``datasets`` (``{name: [row, ...]}``; by default ``data``); ``data`` is kept
    as given, for the caller (the data the datasets were made from). A ``player``
    (``Player``) puts a play button above the chart for one of the range sliders.
    """

    def __init__(self, sliders: Sequence[Slider], *, frames: dict | None = None,
                 frame_fn: Callable[..., object] | None = None,
                 vega: Callable[[dict, int, int], object] | None = None,
                 data=None, datasets: dict | None = None,
                 width: int = style.FIGURE_WIDTH_PX,
                 height: int = style.FIGURE_HEIGHT_PX, title: str = "",
                 player: Player | None = None):
        self.sliders = list(sliders)
        names = [s.name for s in self.sliders]
        if len(set(names)) != len(names):
            raise ValueError(f"slider names must be unique, got {names}")
        if sum(x is not None for x in (frames, frame_fn, vega)) != 1:
            raise ValueError("give exactly one of frames, frame_fn or vega")
        if frame_fn is not None:  # precompute every combination in Python
            frames = {idx: frame_fn(**{s.name: s.values[i]
                                       for s, i in zip(self.sliders, idx)})
                      for idx in self.grid()}
        if frames is not None:
            missing = [idx for idx in self.grid() if tuple(idx) not in frames]
            if missing:
                raise ValueError(f"frames lack slider combinations such as "
                                 f"{missing[0]}")
            frames = [as_frame(frames[idx]) for idx in self.grid()]  # row-major order
        self.frames, self.vega, self.data = frames, vega, data
        self.datasets = dict(datasets if datasets is not None else data or {})
        self.width, self.height, self.title = width, height, title
        self.params = param_names(self.sliders)
        self.player = player
        if player is not None:
            played = [s for s in self.sliders if s.name == player.slider]
            if not played or played[0].step() is None:
                raise ValueError(f"player: {player.slider!r} is not a range slider of "
                                 f"this figure (its sliders: {names}); a player moves a "
                                 "slider of plain numbers in even steps")

    def grid(self) -> list[tuple[int, ...]]:
        """Every combination of the sliders' value indices, in row-major order."""
        return list(itertools.product(*(range(len(s.values)) for s in self.sliders)))

    def spec_at(self, **values) -> Frame:
        """The precomputed frame (chart and caption) for the given slider values (frames
        only; a slider not named stays where it starts)."""
        if self.frames is None:
            raise ValueError("spec_at needs precomputed frames; "
                             "this figure is a vega chart")
        flat = 0
        for s in self.sliders:
            flat = flat * len(s.values) + s.values.index(values.get(s.name, s.value))
        return self.frames[flat]

    @property
    def plot_size(self) -> tuple[int, int]:
        """The plotting area: the figure's size less room for axes, title and legend."""
        width = min(self.width, style.FIGURE_WIDTH_PX) - style.PLOT_MARGIN_PX
        return width, max(160, self.height - 110)

    def frame_expr(self) -> str:
        """A Vega expression of the frame index the sliders select (row-major)."""
        expr = "0"
        for s, p in zip(self.sliders, self.params):
            expr = f"({expr}) * {len(s.values)} + {s.index_expr(p)}"
        return expr

    def _frames_chart(self, width: int, height: int):
        view, data, titles = merge_frames([f.chart for f in self.frames])
        view = {"width": width, "height": height, **view}
        if any(titles):
            view["title"] = {**frame_title(pick(titles, "frame")), **view.get("title", {})}
        main = _as_chart(view)
        captions = [wrap_lines(f.caption, width) if f.caption else []
                    for f in self.frames]
        views = [main]
        if any(captions):
            lines = max(map(len, captions))  # a fixed height: the sliders do not jump
            views.append(caption_view(pick(captions, "frame"), lines, width))
        return views, {**data, "one": [{}]}

    def _chart(self, digits: int | None):
        """The figure as an Altair chart: its views stacked, the sliders' parameters
        bound to inputs, the data as named datasets (rounded to ``digits`` significant
        digits; None keeps them; long ones as CSV), the book's style as its config; and
        the ``format`` of each CSV dataset."""
        import altair as alt

        width, height = self.plot_size
        if self.frames is not None:
            views, data = self._frames_chart(width, height)
        else:
            values = {s.name: s.value_expr(p)
                      for s, p in zip(self.sliders, self.params)}
            views, data = self.vega(values, width, height), dict(self.datasets)
        params = [alt.param(name=p, value=s.initial(), bind=s.binding())
                  for s, p in zip(self.sliders, self.params)]
        if self.frames is not None:
            params.append(alt.param(name="frame", expr=self.frame_expr()))
        if self.player is not None:
            buttons, data["slm_buttons"] = self.player.view(width)
            views = [buttons, *(views if isinstance(views, list) else [views])]
            params += self.player.params()
        data = _clean(data) if digits is None else rounded(_clean(data), digits)
        datasets, formats = {}, {}
        for name, rows in data.items():
            if len(rows) < CSV_ROWS:
                datasets[name] = rows
            else:
                datasets[name], parse = csv_dataset(rows)
                formats[name] = {"type": "csv", "parse": parse}
        # each view keeps its own legend, under its own title (not above the figure's)
        chart = alt.vconcat(*views, spacing=6) if isinstance(views, list) else views
        chart = chart.add_params(*params).resolve_legend(color="independent")
        chart = chart.properties(datasets=datasets, config=style.vega_config(),
                                 usermeta={"embedOptions": self.embed_options()})
        return (chart.properties(title=self.title) if self.title else chart), formats

    def embed_options(self) -> dict:
        """vega-embed's options, in the spec's ``usermeta``: ``EMBED_OPTIONS`` and, with
        a player, the patch that runs it."""
        if self.player is None:
            return EMBED_OPTIONS
        i = next(i for i, s in enumerate(self.sliders) if s.name == self.player.slider)
        return {**EMBED_OPTIONS,
                "patch": self.player.patch(self.sliders[i], self.params[i])}

    def to_dict(self, digits: int | None = 4) -> dict:
        """The Vega-Lite spec (JSON), validated against Vega-Lite's schema; its data
        rounded to ``digits`` significant digits (None: as given)."""
        import altair as alt
        from altair.utils.schemapi import debug_mode

        style.register_altair_theme(enable=False)
        with debug_mode(False):  # the parts unchecked: the whole is validated below
            chart, formats = self._chart(digits)
        with alt.theme.enable(style.THEME):
            return with_formats(chart.to_dict(), formats)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)

    def _repr_mimebundle_(self, include=None, exclude=None):
        names = ", ".join(s.label or s.name for s in self.sliders)
        text = (f"SliderFigure with sliders: {names} (a Vega-Lite chart: it draws in "
                "JupyterLab and on the book's site)")
        return ({MIMETYPE: self.to_dict(), "text/plain": text},
                {MIMETYPE: {"embed_options": EMBED_OPTIONS}})


CSV_ROWS = 10  # a dataset this long is stored as CSV: a third of the bytes, one line


def csv_dataset(rows: list[dict]) -> tuple[str, dict]:
    """Rows as CSV text (a header of every key, in order of appearance; None is empty)
    and Vega's ``parse`` for its columns (number or boolean; the rest stay strings)."""
    import csv
    import io

    columns = list(dict.fromkeys(k for r in rows for k in r))
    parse = {}
    for c in columns:
        kinds = {type(r[c]) for r in rows if r.get(c) is not None}
        if kinds and kinds <= {int, float}:
            parse[c] = "number"
        elif kinds == {bool}:
            parse[c] = "boolean"
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        cells = [r.get(c) for c in columns]
        writer.writerow([_csv_cell(v) for v in cells])
    return out.getvalue(), parse


def _csv_cell(v):
    if v is None:
        return ""
    return str(v).lower() if isinstance(v, bool) else v


def with_formats(spec: dict, formats: dict) -> dict:
    """``spec`` with ``format`` added to every reference to a named dataset in
    ``formats`` (the CSV ones)."""
    if isinstance(spec, list):
        return [with_formats(v, formats) for v in spec]
    if not isinstance(spec, dict):
        return spec
    out = {k: with_formats(v, formats) for k, v in spec.items()}
    data = out.get("data")
    if isinstance(data, dict) and data.get("name") in formats and "values" not in data:
        out["data"] = {**data, "format": formats[data["name"]]}
    return out


def _format_of(spec, name: str) -> dict | None:
    """The ``format`` of the first reference to the named dataset in ``spec``."""
    if isinstance(spec, list):
        return next((f for f in (_format_of(v, name) for v in spec) if f), None)
    if not isinstance(spec, dict):
        return None
    data = spec.get("data")
    if isinstance(data, dict) and data.get("name") == name and "format" in data:
        return data["format"]
    return next((f for f in (_format_of(v, name) for v in spec.values()) if f), None)


def _typed(text: str, kind: str | None):
    if kind is None:
        return text
    if text == "":
        return None
    return float(text) if kind == "number" else text == "true"


def read_dataset(spec: dict, name: str) -> list[dict]:
    """The rows of a named dataset of a spec from ``SliderFigure.to_dict``, a CSV one
    read back with its types (for tests, and for a look at the data)."""
    import csv
    import io

    data = spec["datasets"][name]
    if not isinstance(data, str):
        return data
    parse = _format_of(spec, name)["parse"]
    return [{k: _typed(v, parse.get(k)) for k, v in row.items()}
            for row in csv.DictReader(io.StringIO(data))]


def _clean(obj):
    """JSON-safe: NaN and infinities become None (drawn as gaps), tuples lists."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "tolist"):
        return _clean(obj.tolist())
    return obj
