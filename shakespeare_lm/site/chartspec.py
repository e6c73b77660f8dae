"""The book's chart specs, drawn with Vega-Lite: one spec becomes data rows, and a list
of specs (the frames of a ``figures.SliderFigure``) becomes layers that draw the rows of
the frame the sliders select.

A chart spec is a plain dict (JSON); every key is optional:

    {"title": str, "xlabel": str, "ylabel": str, "xlog": bool, "ylog": bool,
     "xlim": [lo, hi], "ylim": [lo, hi],
     "categories": [str, ...],                       # a bar chart on these labels
     "bars":   [{"y": [...], "name": str, "color": css, "fill": bool,
                 "colors": [css, ...]}],
     "lines":  [{"x": [...], "y": [...], "name": str, "color": css, "dash": bool}],
     "points": [{"x": num, "y": num, "label": str, "color": css}],
     "vlines": [{"x": num, "label": str, "color": css}], "hlines": [{"y": num, ...}],
     "caption": str}                                 # text under the chart

Bars of several series stand side by side in each category; ``fill: False`` draws a
series as outlines, ``colors`` colours its bars one by one. Named bar and line series
get a legend above the chart; points and reference lines carry their own labels. Axis
labels, log scales and limits are taken from the first frame that sets them.
"""

from __future__ import annotations

import json
import math

from . import style

ROW_KINDS = ("bar", "line", "point", "vline", "hline")


def colour_key(name: str, colour: str) -> str:
    """What a row's colour is encoded by: its series name and colour (``name|colour``),
    so that a series whose bars have several colours keeps one legend entry."""
    return f"{name}|{colour}"


def _number(v, log: bool):
    """A plotted number; NaN, infinities (non-positive values on a log axis) -> None."""
    if v is None:
        return None
    v = float(v)
    if not math.isfinite(v) or (log and v <= 0):
        return None
    return v


def _bar_rows(spec: dict) -> list[dict]:
    cats, rows = spec.get("categories") or [], []
    for j, bar in enumerate(spec.get("bars", [])):
        name = bar.get("name", "")
        colour = bar.get("color") or style.PALETTE[j % len(style.PALETTE)]
        for i, y in enumerate(bar["y"]):
            c = (bar.get("colors") or [colour] * len(bar["y"]))[i]
            row = {"m": "bar", "c": str(cats[i]), "o": i, "j": j, "s": name,
                   "k": colour_key(name, c), "y": _number(y, spec.get("ylog", False))}
            if bar.get("fill") is False:
                row["w"] = 1  # outline
            rows.append(row)
    return rows


def _line_rows(spec: dict) -> list[dict]:
    rows, xlog, ylog = [], spec.get("xlog", False), spec.get("ylog", False)
    for j, line in enumerate(spec.get("lines", [])):
        name = line.get("name", "")
        colour = line.get("color") or style.PALETTE[j % len(style.PALETTE)]
        for x, y in zip(line["x"], line["y"]):
            row = {"m": "line", "j": j, "s": name, "k": colour_key(name, colour),
                   "x": _number(x, xlog), "y": _number(y, ylog)}
            if line.get("dash"):
                row["d"] = 1
            rows.append(row)
    return rows


def _mark_rows(spec: dict) -> list[dict]:
    xlog, ylog, rows = spec.get("xlog", False), spec.get("ylog", False), []
    for p in spec.get("points", []):
        rows.append({"m": "point", "k": colour_key("", p.get("color") or style.INK),
                     "x": _number(p["x"], xlog), "y": _number(p["y"], ylog),
                     "t": p.get("label", "")})
    for v in spec.get("vlines", []):
        rows.append({"m": "vline", "k": colour_key("", v.get("color") or style.GREY),
                     "x": _number(v["x"], xlog), "t": v.get("label", "")})
    for h in spec.get("hlines", []):
        rows.append({"m": "hline", "k": colour_key("", h.get("color") or style.GREY),
                     "y": _number(h["y"], ylog), "t": h.get("label", "")})
    return rows


def spec_rows(spec: dict) -> list[dict]:
    """The rows that draw one chart spec: ``m`` the mark kind (``ROW_KINDS``), ``k`` the
    colour key, ``s`` and ``j`` the series name and index, ``c`` and ``o`` a bar's
    category and its position, ``x``, ``y``, ``t`` a label, ``d`` dashed, ``w`` an
    outline bar."""
    if spec.get("bars") and not spec.get("categories"):
        raise ValueError("a chart spec with bars needs categories "
                         f"(got keys {sorted(spec)})")
    return _bar_rows(spec) + _line_rows(spec) + _mark_rows(spec)


def frame_rows(frames: list[dict]) -> tuple[list[dict], list[str]]:
    """The rows of every frame, each tagged with ``f``, its frame's index (a row that
    every frame draws alike is kept once, with ``f = -1``), and the colour keys: a row's
    ``k`` becomes its key's index in that list, and ``s`` (the series name, in the key)
    goes."""
    per_frame = [[tuple(sorted(r.items())) for r in spec_rows(spec)] for spec in frames]
    if not per_frame:
        raise ValueError("no frames: a figure needs at least one chart spec")
    common = set(per_frame[0]).intersection(*per_frame[1:])
    rows = [{**dict(r), "f": -1} for r in per_frame[0] if r in common]
    for f, keyed in enumerate(per_frame):
        rows += [{**dict(r), "f": f} for r in keyed if r not in common]
    keys = list(dict.fromkeys(r["k"] for r in rows))
    index = {k: i for i, k in enumerate(keys)}
    for r in rows:
        r["k"] = index[r["k"]]
        r.pop("s", None)
    return rows, keys


# --- drawing: layers over the rows ---------------------------------------------------
def first(frames: list[dict], key: str, default=None):
    """The first frame's value of ``key`` among those that set it."""
    return next((s[key] for s in frames if s.get(key) not in (None, "")), default)


def _colour_scale(rows: list[dict], keys: list[str]):
    """Colour by key index; a legend entry for each named bar or line series (its first
    colour), labelled with the series' name."""
    import altair as alt

    names = [k.rsplit("|", 1)[0] for k in keys]
    series = {}  # series name -> its first key: one legend entry per series
    for r in rows:
        if r["m"] in ("bar", "line") and names[r["k"]]:
            series.setdefault(names[r["k"]], r["k"])
    lines_only = all(r["m"] != "bar" for r in rows)
    legend = alt.Legend(values=list(series.values()), title=None,
                        labelExpr=f"{json.dumps(names)}[datum.value]",
                        symbolType="stroke" if lines_only else "square",
                        symbolStrokeWidth=3 if lines_only else 1) if series else None
    return alt.Color("k:N", legend=legend, scale=alt.Scale(
        domain=list(range(len(keys))), range=[k.rsplit("|", 1)[1] for k in keys]))


def _category_axis(frames: list[dict], width: int):
    """Category labels side by side when they fit, slanted when they would collide."""
    import altair as alt

    cats = [str(c) for s in frames for c in (s.get("categories") or [])]
    n = max(len(s.get("categories") or []) for s in frames)
    longest = max((len(c) for c in cats), default=1)
    fits = longest * 0.62 * style.FONT_SIZES["tick"] + 6 <= width / max(n, 1)
    return alt.Axis(labelAngle=0 if fits else -40, labelLimit=150, labelOverlap=False,
                    labelAlign="center" if fits else "right", labelPadding=4)


def _scale(log: bool, lim, zero: bool):
    import altair as alt

    kw = {"type": "log"} if log else {"zero": zero}
    if lim:
        kw["domain"] = [float(lim[0]), float(lim[1])]
    return alt.Scale(**kw)


# log-axis labels at the powers of ten only: 0.01, 0.1, 1, 10, 100, 1k, 10k, 1M
LOG_LABELS = ("abs(log(datum.value) / LN10 - round(log(datum.value) / LN10)) > 1e-6 ? '' "
              ": datum.value >= 1000 ? format(datum.value, '~s') "
              ": format(datum.value, '~g')")


def _axes(frames: list[dict], width: int) -> dict:
    """The x, y (and for grouped bars xOffset) encodings shared by the layers."""
    import altair as alt

    xlabel, ylabel = first(frames, "xlabel"), first(frames, "ylabel")
    ylog, bars = bool(first(frames, "ylog", False)), bool(first(frames, "categories"))
    # bars start at zero; lines and points fill the plot (unless a frame sets ylim)
    y = alt.Y("y:Q", title=ylabel, scale=_scale(ylog, first(frames, "ylim"), bars),
              axis=alt.Axis(labelExpr=LOG_LABELS if ylog else alt.Undefined,
                            labelOverlap=True))
    if bars:
        x = alt.X("c:N", title=xlabel, axis=_category_axis(frames, width),
                  sort=alt.EncodingSortField(field="o", op="min"))
        return {"x": x, "y": y, "xOffset": alt.XOffset("j:N")}
    xlog = bool(first(frames, "xlog", False))
    x = alt.X("x:Q", title=xlabel, scale=_scale(xlog, first(frames, "xlim"), False),
              axis=alt.Axis(labelExpr=LOG_LABELS if xlog else alt.Undefined,
                            labelOverlap=True))
    return {"x": x, "y": y}


def _tooltips(frames: list[dict], kind: str) -> list:
    import altair as alt

    xl, yl = first(frames, "xlabel", "x"), first(frames, "ylabel", "y")
    value = [alt.Tooltip("y:Q", title=yl, format=".4~g")]
    if kind == "bar":
        return [alt.Tooltip("c:N", title=xl if xl != "x" else "category"),
                alt.Tooltip("s:N", title="series")] + value
    x = [alt.Tooltip("x:Q", title=xl, format=".4~g")]
    return ([alt.Tooltip("s:N", title="series")] if kind == "line" else
            [alt.Tooltip("t:N", title="point")]) + x + value


def _bar_layers(frames, enc, where, kinds, clip) -> list:
    import altair as alt

    bars = alt.Chart().encode(**enc, tooltip=_tooltips(frames, "bar"))
    out = []
    if "bar" in kinds:
        out.append(bars.mark_bar(opacity=0.9, clip=clip)
                   .transform_filter(f"{where} && datum.m == 'bar' && !datum.w"))
    if "outline" in kinds:
        out.append(bars.mark_bar(filled=False, strokeWidth=1.5, clip=clip)
                   .transform_filter(f"{where} && datum.m == 'bar' && datum.w"))
    return out


def _line_layer(frames, enc, where, clip):
    import altair as alt

    dash = alt.StrokeDash("d:N", legend=None,
                          scale=alt.Scale(domain=[0, 1], range=[[1, 0], [6, 4]]))
    return (alt.Chart().mark_line(clip=clip)
            .encode(x=enc["x"], y=enc["y"], color=enc["color"], detail="j:N",
                    strokeDash=dash, tooltip=_tooltips(frames, "line"))
            .transform_filter(f"{where} && datum.m == 'line'")
            .transform_calculate(d="datum.d || 0"))


def _rule_layers(enc, where, kind: str, width: int) -> list:
    """Dashed reference lines (``vline`` at an x, ``hline`` at a y) and their labels."""
    import altair as alt

    at = {"x": enc["x"]} if kind == "vline" else {"y": enc["y"]}
    rules = alt.Chart().transform_filter(f"{where} && datum.m == '{kind}'")
    text = (dict(align="left", baseline="top", dx=4, y=4) if kind == "vline" else
            dict(align="right", baseline="bottom", dy=-3, x=width))
    colour = enc["color"]
    return [rules.mark_rule(strokeDash=[5, 4], strokeWidth=1.5)
            .encode(**at, color=colour),
            rules.mark_text(**text).encode(**at, text="t:N", color=colour)]


def _point_layers(frames, enc, where, clip) -> list:
    import altair as alt

    points = alt.Chart().transform_filter(f"{where} && datum.m == 'point'")
    xy = {"x": enc["x"], "y": enc["y"], "color": enc["color"]}
    tips = _tooltips(frames, "point")
    return [points.mark_circle(size=90, opacity=1, stroke="white", strokeWidth=1,
                               clip=clip).encode(**xy, tooltip=tips),
            points.mark_text(align="left", dx=8, dy=-8, fontWeight="bold")
            .encode(**xy, text="t:N")]


def chart_layers(frames: list[dict], rows: list[dict], keys: list[str], where: str,
                 width: int, height: int):
    """A layered Vega-Lite chart (Altair) of ``rows`` (with ``keys``, from
    ``frame_rows(frames)``) that draws the rows passing the filter expression ``where``
    (which selects a frame)."""
    import altair as alt

    kinds = {("outline" if r.get("w") else r["m"]) for r in rows}
    enc = {**_axes(frames, width), "color": _colour_scale(rows, keys)}
    clip = bool(first(frames, "xlim") or first(frames, "ylim"))  # limits cut the rest
    layers = _bar_layers(frames, enc, where, kinds, clip)
    if "line" in kinds:
        layers.append(_line_layer(frames, enc, where, clip))
    for kind in ("vline", "hline"):
        if kind in kinds:
            layers += _rule_layers(enc, where, kind, width)
    if "point" in kinds:
        layers += _point_layers(frames, enc, where, clip)
    if not layers:
        raise ValueError("the chart specs draw nothing: give bars, lines, points or "
                         "vlines/hlines")
    names = json.dumps([k.rsplit("|", 1)[0] for k in keys], ensure_ascii=False)
    return (alt.layer(*layers, data=alt.NamedData(name="frames"))
            .transform_calculate(s=f"{names}[datum.k]")  # series names, for tooltips
            .properties(width=width, height=height))
