"""The cost chapter's figures for the static site, all kernel-free:

* the roofline explorer, whose ``RooflineChart`` computes the formulas of
  ``cost.roofline`` in Vega-Lite (``roofline_numbers`` are the same numbers in Python:
  tests/cost/test_roofline.py checks that the two agree, in node);
* the prefill/decode player (``prefill_decode_figure``): a request step by step, the
  bytes each step reads and the FLOPs it does, with a play button;
* the batching figure (``batching_figure``): throughput and each request's time per
  token against the batch size, measured or by the roofline, with each curve's knee."""

from __future__ import annotations

from types import SimpleNamespace

import itertools
import json
import math
from dataclasses import dataclass

from ..cost.roofline import (
    GB,
    HARDWARE,
    MODELS,
    Hardware,
    ModelSpec,
    PassCost,
    attainable_flops,
    decode_cost,
    max_batch_for_memory,
    prefill_cost,
    throughput_knee,
)
from . import style
from .figures import CAPTION_LINE_PX, Player, Slider, SliderFigure, frame_title

# --- figures: kernel-free sliders for the static site ----------------------------------
# The original transformer's base model as a decode step sees it: its decoder only. The
# encoder runs once over the source; each decode step reads the decoder's 6 layers of width
# 512 (self-attention 4 d^2, cross-attention 4 d^2, MLP 2 d d_ff with d_ff = 2048) and the
# output layer, which shares the 37,000 x 512 embedding (chapter 7 counts it the same way).
BASE_DECODER = MODELS["base-65m"].with_(
    name="base model's decoder (fp32)", n_params=6 * (8 * 512**2 + 2 * 512 * 2048) + 37_000 * 512)
EXPLORER_SPECS = {"shakespeare": MODELS["shakespeare"], "base-decoder": BASE_DECODER,
                  "7b": MODELS["7b"], "70b": MODELS["70b"]}
EXPLORER_MODELS = tuple(EXPLORER_SPECS)
# 0.01 .. 1e6 FLOPs per byte, 20 a decade: the roof's corner at the ridge point stays sharp
INTENSITIES = tuple(10 ** (e / 20) for e in range(-40, 121))
INTENSITY = "arithmetic intensity (FLOP per byte)"


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def fmt3(x: float) -> str:
    """3 significant digits as the page shows them: no exponent at 1,000 and above
    (1,010 rather than 1.01e+03)."""
    text = f"{x:.3g}"
    return f"{float(text):,.0f}" if "e+" in text else text


def si_label(value: float, pos=None) -> str:
    """A log axis's tick label as the Altair figures write it (``style.LOG_LABELS``): 0.1,
    1, 10, 100, then 1k, 10k, 1M, 1G, 1T, 1P. ``pos`` is matplotlib's tick position."""
    for power, prefix in ((15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k")):
        if value >= 10**power:
            return f"{value / 10**power:g}{prefix}"
    return f"{value:g}"


def plain_log_ticks(*axes, subs=(1.0,)) -> None:
    """Label matplotlib log axes (``ax.xaxis``, ``ax.yaxis``) with ``si_label`` at the
    axis's own font size: no small raised exponents, no minor labels. A label at each
    decade, or at each of ``subs`` times a decade (``subs=(1, 2, 5)`` on a short axis)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    for axis in axes:
        axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=15))
        axis.set_major_formatter(FuncFormatter(si_label))
        axis.set_minor_formatter(NullFormatter())


@dataclass(frozen=True)
class RooflineNumbers:
    """What the roofline explorer shows for one setting: the roof (attainable FLOP/s at
    each of ``INTENSITIES``), the operating points (pass -> intensity, FLOP/s), the
    ridge point's intensity, a title and a caption."""

    title: str
    roof: tuple[float, ...]
    points: dict[str, tuple[float, float]]
    ridge: float
    caption: str


def roofline_numbers(spec: ModelSpec, hw: Hardware, prompt_len: int,
                     batch: int = 1) -> RooflineNumbers:
    """The roofline of ``hw`` with the operating points of a prefill of ``batch`` prompts
    of ``prompt_len`` tokens and of the decode step that follows it."""
    pre = prefill_cost(spec, hw, prompt_len, batch)
    dec = decode_cost(spec, hw, prompt_len, batch)
    caption = (f"prefill {batch} x {prompt_len} tokens: {_fmt(pre.seconds * 1e3)} ms, "
               f"{pre.bound}-bound at {_fmt(pre.intensity)} FLOP/byte\n"
               f"decode step at context {prompt_len}: {_fmt(dec.seconds * 1e3)} ms, "
               f"{dec.bound}-bound at {_fmt(dec.intensity)} FLOP/byte, "
               f"{_fmt(batch / dec.seconds)} tokens/s\n"
               f"ridge point {_fmt(hw.ridge_intensity)} FLOP/byte")
    return RooflineNumbers(
        title=f"{spec.name} on {hw.name}",
        roof=tuple(attainable_flops(hw, x) for x in INTENSITIES),
        points={"prefill": (pre.intensity, pre.flops / pre.seconds),
                "decode": (dec.intensity, dec.flops / dec.seconds)},
        ridge=hw.ridge_intensity, caption=caption)


def explorer_setting(model: str, bytes_per_weight: float, bandwidth_gbs: float,
                     peak_tflops: float) -> tuple[ModelSpec, Hardware]:
    """The ModelSpec and Hardware of one setting of the roofline explorer's sliders (the KV
    cache is stored with the weights' precision)."""
    spec = EXPLORER_SPECS[model].with_(bytes_per_weight=bytes_per_weight,
                                       kv_bytes_per_number=None)
    hw = Hardware(f"{_fmt(bandwidth_gbs)} GB/s, {_fmt(peak_tflops)} TFLOP/s",
                  peak_tflops * 1e12, bandwidth_gbs * 1e9)
    return spec, hw


def explorer_numbers(model: str = "7b", bytes_per_weight: float = 2, prompt_len: int = 1000,
                     batch: int = 1, bandwidth_gbs: float = 2000,
                     peak_tflops: float = 500) -> RooflineNumbers:
    """``roofline_numbers`` for one setting of the explorer's sliders (``RooflineChart``
    draws them in the page)."""
    spec, hw = explorer_setting(model, bytes_per_weight, bandwidth_gbs, peak_tflops)
    return roofline_numbers(spec, hw, prompt_len, batch)


# The same chart in Vega-Lite, computed in the page from the sliders:
# tests/cost/test_roofline.py runs it in node (vega) and checks it against
# explorer_numbers.
def _calc(expr: str, as_: str) -> dict:
    return {"calculate": expr, "as": as_}


def _cost_transforms(name: str, tokens: str, context: str, v: dict) -> list[dict]:
    """``{name}_flops``, ``_bytes``, ``_s``, ``_x`` (intensity), ``_y`` (FLOP/s),
    ``_bound``: a pass of ``tokens`` new tokens over ``context`` cached ones for the
    model row (``prefill_cost`` and ``decode_cost`` of ``cost.roofline``)."""
    b, bpw = f"({v['batch']})", f"({v['bytes_per_weight']})"
    t, c = f"({tokens})", f"({context})"
    pairs = f"{t} * {c} + {t} * ({t} + 1) / 2"
    head_dim = "datum.d_model / datum.n_head"
    kv = f"2 * datum.n_layer * ({head_dim} * datum.n_kv_heads) * {bpw}"
    flops, bytes_ = f"datum.{name}_flops", f"datum.{name}_bytes"
    compute, memory = f"{flops} / datum.peak", f"{bytes_} / datum.bw"
    return [
        _calc(f"2 * datum.n_params * {t} * {b} + "
              f"4 * datum.n_layer * datum.d_model * ({pairs}) * {b}", f"{name}_flops"),
        _calc(f"datum.n_params * {bpw} + {kv} * ({c} + {t}) * {b}", f"{name}_bytes"),
        _calc(f"max({compute}, {memory})", f"{name}_s"),
        _calc(f"{compute} > {memory} ? 'compute' : 'memory'", f"{name}_bound"),
        _calc(f"{flops} / {bytes_}", f"{name}_x"),
        _calc(f"{flops} / datum.{name}_s", f"{name}_y"),
    ]


def _f(expr: str) -> str:
    """3 significant digits, as ``_fmt`` writes them but without an exponent."""
    return f"format({expr}, '.3~r')"


class RooflineChart:
    """The roofline explorer's Vega-Lite chart, for ``SliderFigure(vega=...)``: the
    model's row of the ``models`` dataset and the sliders give both passes' points."""

    def transforms(self, v: dict) -> list[dict]:
        """The chosen model's row -> both passes, the ridge point and the caption."""
        p, batch = f"({v['prompt_len']})", f"({v['batch']})"
        prefill = (f"'prefill ' + {batch} + ' x ' + {p} + ' tokens: ' + "
                   f"{_f('datum.pre_s * 1e3')} + ' ms, ' + datum.pre_bound + "
                   f"'-bound at ' + {_f('datum.pre_x')} + ' FLOP/byte'")
        decode = (f"'decode step at context ' + {p} + ': ' + "
                  f"{_f('datum.dec_s * 1e3')} + ' ms, ' + datum.dec_bound + "
                  f"'-bound at ' + {_f('datum.dec_x')} + ' FLOP/byte,'")
        ridge = (f"'  ' + {_f(f'{batch} / datum.dec_s')} + ' tokens/s; ridge point ' + "
                 f"{_f('datum.ridge')} + ' FLOP/byte'")
        return ([{"filter": f"datum.key == ({v['model']})"},
                 _calc(f"({v['peak_tflops']}) * 1e12", "peak"),
                 _calc(f"({v['bandwidth_gbs']}) * 1e9", "bw"),
                 _calc("datum.peak / datum.bw", "ridge")]
                + _cost_transforms("pre", p, "0", v)
                + _cost_transforms("dec", "1", p, v)
                + [_calc(f"[{prefill}, {decode}, {ridge}]", "caption")])

    @staticmethod
    def title(v: dict) -> dict:
        """The model's name and the hardware, from the sliders."""
        keys = json.dumps(list(EXPLORER_MODELS))
        names = json.dumps([EXPLORER_SPECS[k].name for k in EXPLORER_MODELS])
        return {"expr": f"{names}[indexof({keys}, {v['model']})] + ' on ' + "
                        f"{_f(v['bandwidth_gbs'])} + ' GB/s, ' + "
                        f"{_f(v['peak_tflops'])} + ' TFLOP/s'"}

    # the passes: a hollow circle and a hollow square in their colours (where the two
    # meet, as they do for a 1-token prompt, both stay visible)
    PASSES = {"prefill": ("circle", style.PALETTE[0]), "decode": ("square", style.PALETTE[3])}
    # the key under the title: (x in pixels, text, colour); a glyph for each mark, as the
    # figure's colour legend would draw only circles
    KEY = ((0, "\u25cb prefill", style.PALETTE[0]), (90, "\u25a1 decode", style.PALETTE[3]),
           (176, "\u2014 roofline", style.INK), (280, "\u2506 ridge point", style.FAINT_INK))

    @classmethod
    def encodings(cls) -> dict:
        import altair as alt

        shapes, colors = zip(*cls.PASSES.values())
        return {"x": alt.X("x:Q", title=INTENSITY, scale=alt.Scale(type="log"),
                           axis=alt.Axis(labelExpr=style.LOG_LABELS)),
                "y": alt.Y("y:Q", title="FLOP/s", scale=alt.Scale(type="log"),
                           axis=alt.Axis(labelExpr=style.LOG_LABELS)),
                "color": alt.Color("what:N", legend=None, scale=alt.Scale(
                    domain=list(cls.PASSES), range=list(colors))),
                "shape": alt.Shape("what:N", legend=None, scale=alt.Scale(
                    domain=list(cls.PASSES), range=list(shapes)))}

    def __call__(self, v: dict, width: int, height: int):
        import altair as alt

        xy = self.encodings()
        peak, bandwidth = f"({v['peak_tflops']}) * 1e12", f"({v['bandwidth_gbs']}) * 1e9"
        roof = alt.Chart(alt.NamedData(name="intensities")).transform_calculate(
            y=f"min({peak}, datum.x * {bandwidth})", what="'roofline'"
        ).mark_line(color=style.INK).encode(x=xy["x"], y=xy["y"])
        row = alt.Chart(alt.NamedData(name="models"), transform=self.transforms(v))
        tip = [alt.Tooltip("what:N", title="pass"), alt.Tooltip("x:Q", format=".3~g"),
               alt.Tooltip("y:Q", format=".3~g")]
        # "ridge" at the foot of the ridge line, right of it: every pass's point lies on
        # the roof, so there it is either on the slope, left of the line, or on the flat
        # roof at the top, and no point or label can reach the label at any setting
        layers = [roof, row.mark_rule().encode(x="ridge:Q"),  # the style's reference line
                  row.mark_text(align="left", baseline="bottom", dx=4, y=height - 4,
                                color=style.GREY, text="ridge").encode(x="ridge:Q")]
        # both passes in one layer: the prefill first, the decode drawn over it
        points = row.transform_fold(["pre", "dec"], as_=["key", "what"])
        points = points.transform_calculate(
            x="datum.key == 'pre' ? datum.pre_x : datum.dec_x",
            y="datum.key == 'pre' ? datum.pre_y : datum.dec_y",
            what="datum.key == 'pre' ? 'prefill' : 'decode'")
        layers.append(points.mark_point(filled=False, size=170, strokeWidth=2.5, opacity=1)
                      .encode(**xy, tooltip=tip))
        main = alt.layer(*layers).properties(width=width, height=height)
        key = alt.layer(*(row.mark_text(align="left", baseline="top", x=x, y=2, text=text,
                                        color=color, fontSize=style.FONT_SIZES["legend"])
                          for x, text, color in self.KEY)).properties(
            width=width, height=CAPTION_LINE_PX, title=frame_title(self.title(v)))
        caption = (row.mark_text(align="left", baseline="top", font=style.MONOSPACE,
                                 lineHeight=CAPTION_LINE_PX)
                   .encode(x=alt.value(0), y=alt.value(2), text="caption:N")
                   .properties(width=width, height=3 * CAPTION_LINE_PX + 4))
        return [key, main, caption]


EXPLORER_SLIDERS = {
    "model": (EXPLORER_MODELS, "7b"),
    "bytes_per_weight": ((0.5, 1, 2, 4), 2),
    "prompt_len": ((1, 16, 128, 1000, 4096, 16384), 1000),
    "batch": ((1, 16, 256, 1024, 4096, 16384), 1),
    "bandwidth_gbs": ((50, 500, 1000, 2000, 3350, 4800), 2000),
    "peak_tflops": ((1, 10, 100, 500, 989, 2000), 500),
}


def roofline_explorer():
    """A kernel-free ``figures.SliderFigure``: the roofline and the prefill and decode
    operating points for a model, bytes per weight, prompt length, batch, bandwidth and
    FLOP/s."""
    labels = {"model": "model", "bytes_per_weight": "bytes per weight",
              "prompt_len": "prompt length", "batch": "batch size",
              "bandwidth_gbs": "bandwidth (GB/s)", "peak_tflops": "peak TFLOP/s"}
    sliders = [Slider(name, values, value, labels[name],
                      fmt=(lambda k: EXPLORER_SPECS[k].name) if name == "model" else str)
               for name, (values, value) in EXPLORER_SLIDERS.items()]
    models = [{"key": k, "name": m.name, "n_params": m.n_params, "n_layer": m.n_layer,
               "d_model": m.d_model, "n_head": m.n_head,
               "n_kv_heads": m.n_kv_heads or m.n_head}
              for k, m in EXPLORER_SPECS.items()]
    intensities = [{"x": x} for x in INTENSITIES]
    return SliderFigure(sliders, vega=RooflineChart(), height=400,
                        data={"models": models, "intensities": intensities})


# --- the prefill/decode player ---------------------------------------------------------
# the presets: the chapter's models, and its hardware (the 70B model needs eight H100s to
# hold its weights)
PLAYER_MODELS = {"7b": MODELS["7b"], "70b": MODELS["70b"]}
PLAYER_HARDWARE = {"round-gpu": HARDWARE["round-gpu"], "h100": HARDWARE["h100"],
                   "8xh100": HARDWARE["h100"].parallel(8)}
PLAYER_LABELS = {"round-gpu": "illustrative GPU", "h100": "H100", "8xh100": "8 x H100"}
WEIGHTS, KV = "weights", "KV cache"
STEP_INTERVAL_MS = 900


def request_steps(spec: ModelSpec, hw: Hardware, prompt_len: int,
                  n_decode: int = 8) -> list[PassCost]:
    """The passes of one request: the prefill of ``prompt_len`` tokens, then ``n_decode``
    decode steps, the i-th (1-based) over a cache of ``prompt_len + i - 1`` tokens."""
    return ([prefill_cost(spec, hw, prompt_len)]
            + [decode_cost(spec, hw, prompt_len + i) for i in range(n_decode)])


def si(value: float) -> str:
    """3 significant digits and an SI prefix, then a space: "14.3 T", "982 "."""
    for power, prefix in ((15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k")):
        if value >= 10**power:
            return f"{fmt3(value / 10**power)} {prefix}"
    return f"{fmt3(value)} "


def step_label(step: int) -> str:
    return "prefill" if step == 0 else f"decode {step}"


def step_caption(spec: ModelSpec, hw: Hardware, prompt_len: int, step: int,
                 cost: PassCost, n_decode: int) -> list[str]:
    """The three lines under the player for one step."""
    weights = spec.weight_bytes
    what = (f"prefill: {prompt_len:,} tokens in one pass" if step == 0 else
            f"decode step {step} of {n_decode}: 1 new token, {prompt_len + step - 1:,} cached")
    fit = ("" if hw.memory_bytes is None or weights <= hw.memory_bytes else
           f" (weights exceed its {hw.memory_bytes / GB:,.0f} GB)")
    return [what + fit,
            f"moves {fmt3(cost.bytes / GB)} GB: weights {fmt3(weights / GB)} GB read, KV cache "
            f"{fmt3((cost.bytes - weights) / GB)} GB {'written' if step == 0 else 'read'}; "
            f"{si(cost.flops)}FLOP",
            f"{fmt3(cost.intensity)} FLOP/byte, ridge {fmt3(hw.ridge_intensity)}: "
            f"{cost.bound}-bound, {fmt3(cost.seconds * 1e3)} ms, arithmetic busy "
            f"{fmt3(100 * cost.compute_utilization)}%"]


def player_rows(models: dict, hardware: dict, prompt_lens, n_decode: int) -> list[dict]:
    """One row per model, hardware, prompt length and step: what the player draws."""
    rows = []
    for (mk, spec), (hk, hw), p in itertools.product(models.items(), hardware.items(),
                                                     prompt_lens):
        for step, cost in enumerate(request_steps(spec, hw, p, n_decode)):
            caption = step_caption(spec, hw, p, step, cost, n_decode)
            rows.append({"model": mk, "hw": hk, "prompt_len": p, "step": step,
                         "label": step_label(step), WEIGHTS: spec.weight_bytes / GB,
                         KV: (cost.bytes - spec.weight_bytes) / GB, "flops": cost.flops,
                         "intensity": cost.intensity, "ridge": hw.ridge_intensity,
                         "bound": cost.bound, "ms": cost.seconds * 1e3,
                         "c0": caption[0], "c1": caption[1], "c2": caption[2]})
    return rows


class PrefillDecodeChart:
    """The player's Vega-Lite views, for ``SliderFigure(vega=...)``: the bytes each step
    reads, the FLOPs it does, its arithmetic intensity against the ridge point, and a
    caption, for the steps played so far (the later ones are drawn transparent, so that
    the axes stay put while the request plays)."""

    def __init__(self, models: dict, hardware: dict, n_decode: int):
        self.models, self.hardware, self.n_decode = models, hardware, n_decode

    def title(self, v: dict) -> dict:
        names = json.dumps([m.name for m in self.models.values()])
        keys = json.dumps(list(self.models))
        hws = json.dumps([PLAYER_LABELS.get(k, h.name) for k, h in self.hardware.items()])
        hkeys = json.dumps(list(self.hardware))
        return {"expr": f"{names}[indexof({keys}, {v['model']})] + ' on ' + "
                        f"{hws}[indexof({hkeys}, {v['hardware']})] + ', a ' + "
                        f"format({v['prompt_len']}, ',') + '-token prompt'"}

    def __call__(self, v: dict, width: int, height: int):
        import altair as alt

        step = f"({v['step']})"
        rows = alt.Chart(alt.NamedData(name="steps")).transform_filter(
            f"datum.model == {v['model']} && datum.hw == {v['hardware']} && "
            f"datum.prompt_len == {v['prompt_len']}").transform_calculate(
            shown=f"datum.step < {step} ? 0.35 : datum.step == {step} ? 1 : 0")
        order = [step_label(i) for i in range(self.n_decode + 1)]
        hidden_x = alt.X("label:N", sort=order, title=None,
                         axis=alt.Axis(labels=False, ticks=False, domain=True))
        x = alt.X("label:N", sort=order, title=None, axis=alt.Axis(labelAngle=0))
        opacity = alt.Opacity("shown:Q", scale=None, legend=None)
        panel = max(80, (height - 40) // 3)
        # the bytes moved: the weights (all read, every step) and the KV cache (written by
        # the prefill, read and extended by each decode step)
        bytes_ = rows.transform_fold([WEIGHTS, KV], as_=["part", "GB"]).mark_bar().encode(
            x=hidden_x, y=alt.Y("GB:Q", title="bytes moved (GB)", stack="zero",
                                axis=alt.Axis(tickCount=3)),
            color=alt.Color("part:N", title=None, sort=[WEIGHTS, KV], scale=alt.Scale(
                domain=[WEIGHTS, KV], range=[style.PALETTE[0], style.PALETTE[1]])),
            order=alt.Order("part:N", sort="descending"), opacity=opacity,
            tooltip=["label:N", "part:N", alt.Tooltip("GB:Q", format=".3~g")],
        ).properties(width=width, height=panel, title=frame_title(self.title(v)))
        # the useful arithmetic
        flops_bar = rows.mark_bar(color=style.PALETTE[2]).encode(
            x=hidden_x, y=alt.Y("flops:Q", title="useful FLOPs",
                                axis=alt.Axis(format="~s", tickCount=3)),
            opacity=opacity, tooltip=["label:N", alt.Tooltip("flops:Q", format=".3~s")])
        flops_text = rows.transform_calculate(text="format(datum.flops, '.3~s')").mark_text(
            baseline="bottom", dy=-3, color=style.INK).encode(
            x=hidden_x, y="flops:Q", text="text:N", opacity=opacity)
        flops = alt.layer(flops_bar, flops_text).properties(width=width, height=panel)
        intensity = _intensity_panel(rows, x, opacity, width, panel)
        caption = rows.transform_filter(f"datum.step == {step}").transform_calculate(
            lines="[datum.c0, datum.c1, datum.c2]").mark_text(
            align="left", baseline="top", font=style.MONOSPACE,
            lineHeight=CAPTION_LINE_PX).encode(
            x=alt.value(0), y=alt.value(2), text="lines:N").properties(
            width=width, height=3 * CAPTION_LINE_PX + 4)
        return [bytes_, flops, intensity, caption]



def _intensity_panel(rows, x, opacity, width: int, panel: int):
    """The player's third panel: each step's arithmetic intensity against the ridge point
    (above it compute-bound)."""
    import altair as alt

    # the arithmetic intensity against the ridge point: above it compute-bound
    ridge = rows.transform_filter("datum.step == 0")
    colours = {"compute": style.PALETTE[3], "memory": style.PALETTE[0]}
    bound = alt.Fill("bound:N", legend=None, scale=alt.Scale(
        domain=list(colours), range=list(colours.values())))
    ai = alt.Y("intensity:Q", title="FLOPs per byte",
               scale=alt.Scale(type="log", domain=[0.1, 1e5]),
               axis=alt.Axis(labelExpr=style.LOG_LABELS, values=[0.1, 10, 1000, 1e5]))
    labels = [ridge.transform_calculate(text=text).mark_text(
        align="right", baseline=baseline, dy=dy, x=width, color=colours[side],
        fontWeight="bold").encode(y="ridge:Q", text="text:N")
        for side, text, baseline, dy in (
            ("compute", "'compute-bound above the ridge point, ' + "
                        "format(datum.ridge, ',.0f') + ' FLOPs per byte'", "bottom", -3),
            ("memory", "'memory-bound below'", "top", 3))]
    intensity = alt.layer(
        ridge.mark_rule().encode(y=alt.Y("ridge:Q", scale=alt.Scale(type="log"))),
        *labels,
        rows.mark_point(filled=True, size=110, shape="circle").encode(
            x=x, y=ai, fill=bound, opacity=opacity,
            tooltip=["label:N", alt.Tooltip("intensity:Q", format=".3~g"), "bound:N"]),
    ).properties(width=width, height=panel).resolve_scale(y="shared")
    return intensity

def prefill_decode_figure(models: dict | None = None, hardware: dict | None = None,
                          prompt_lens=(10, 100, 1000), n_decode: int = 8):
    """A kernel-free figure that plays one request, prefill then ``n_decode`` decode
    steps: per step the bytes moved (weights read; KV cache written or read), the useful
    FLOPs and the arithmetic intensity against the hardware's ridge point, for a model of
    ``models`` and a hardware preset of ``hardware`` (``{key: ModelSpec}``, ``{key: Hardware}``;
    by default ``PLAYER_MODELS`` and ``PLAYER_HARDWARE``). Its controls: model,
    hardware, prompt length, and the step, which a play button moves on."""
    models = dict(models or PLAYER_MODELS)
    hardware = dict(hardware or PLAYER_HARDWARE)
    rows = player_rows(models, hardware, prompt_lens, n_decode)
    sliders = [
        Slider("model", list(models), next(iter(models)), "model",
               fmt=lambda k: models[k].name),
        Slider("hardware", list(hardware), next(iter(hardware)), "hardware",
               fmt=lambda k: PLAYER_LABELS.get(k, hardware[k].name)),
        Slider("prompt_len", list(prompt_lens), prompt_lens[-1], "prompt length"),
        Slider("step", range(n_decode + 1), 0, "step (0 = prefill)"),
    ]
    return SliderFigure(sliders, vega=PrefillDecodeChart(models, hardware, n_decode),
                        data={"steps": rows}, height=470,
                        player=Player("step", STEP_INTERVAL_MS))


# --- the batching figure ----------------------------------------------------------------
BATCH_LOG2 = tuple(range(16))  # the batch sizes the control offers: 1, 2, 4, ..., 32,768
# the runs' lines: solid, dashed, dash-dot, long dash (where a roofline run's caches no
# longer fit, its line is dotted)
BATCH_DASHES = ((1, 0), (7, 3), (10, 3, 2, 3), (14, 4))


@dataclass(frozen=True)
class BatchRun:
    """One curve of the batching figure: per batch size, the tokens per second over the
    whole batch and the seconds per token that each request waits (a decode step's time),
    measured or by the roofline. A roofline run may know ``fits``, the largest batch whose
    KV caches fit in the hardware's memory beside the weights, ``memory_gb`` and the
    weights' own ``weights_gb``."""

    name: str
    batches: tuple[int, ...]
    tokens_per_s: tuple[float, ...]
    seconds_per_token: tuple[float, ...]
    measured: bool = True
    fits: int | None = None
    memory_gb: float | None = None
    gb_per_sequence: float | None = None
    weights_gb: float | None = None

    @property
    def knee(self) -> int:
        """``cost.throughput_knee``: the smallest batch within 80% of the best throughput."""
        return throughput_knee(list(self.batches), list(self.tokens_per_s))

    def at(self, batch: int) -> tuple[float, float] | None:
        """(tokens/s, seconds per token) at ``batch``, or None where there is no data."""
        if batch not in self.batches:
            return None
        i = self.batches.index(batch)
        return self.tokens_per_s[i], self.seconds_per_token[i]


def measured_run(name: str, rows: list[dict]) -> BatchRun:
    """A measured run from rows of ``measure_model_costs(...)["batching"]``."""
    rows = sorted(rows, key=lambda r: r["batch"])
    return BatchRun(name, tuple(r["batch"] for r in rows),
                    tuple(r["tokens_per_s"] for r in rows),
                    tuple(r["seconds_per_token"] for r in rows))


def roofline_run(spec: ModelSpec, hw: Hardware, context: int, batches=None,
                 name: str | None = None) -> BatchRun:
    """The roofline's decode step for ``spec`` on ``hw`` at ``context`` cached tokens, at
    each of ``batches`` (default: every batch the figure offers)."""
    batches = tuple(batches or (2**e for e in BATCH_LOG2))
    costs = [decode_cost(spec, hw, context, b) for b in batches]
    fits = (None if hw.memory_bytes is None
            else max_batch_for_memory(spec, hw.memory_bytes, context + 1))
    return BatchRun(name or f"{spec.name} on {hw.name} (roofline)", batches,
                    tuple(b / c.seconds for b, c in zip(batches, costs)),
                    tuple(c.seconds for c in costs), measured=False, fits=fits,
                    memory_gb=None if hw.memory_bytes is None else hw.memory_bytes / GB,
                    gb_per_sequence=spec.kv_bytes_per_token * (context + 1) / GB,
                    weights_gb=spec.weight_bytes / GB)


def _batch_rows(runs: list[BatchRun]) -> list[dict]:
    """The curves' points: each run's data; a roofline run split where its caches stop
    fitting (the point where they just fit belongs to both parts)."""
    rows = []
    for run in runs:
        for b, tps, spt in zip(run.batches, run.tokens_per_s, run.seconds_per_token):
            fits = run.fits is None or b <= run.fits
            rows.append({"run": run.name, "batch": b, "tps": tps, "ms": spt * 1e3,
                         "fits": fits, "over": not fits, "measured": run.measured})
        if run.fits is not None and run.batches[0] < run.fits < run.batches[-1]:
            # the curve between its neighbours in the log-log plane, at the limit
            i = next(i for i, b in enumerate(run.batches) if b > run.fits)
            f = math.log(run.fits / run.batches[i - 1]) / math.log(
                run.batches[i] / run.batches[i - 1])
            ms = [run.seconds_per_token[j] * 1e3 for j in (i - 1, i)]
            at = ms[0] * (ms[1] / ms[0]) ** f
            rows.append({"run": run.name, "batch": run.fits, "tps": run.fits / at * 1e3,
                         "ms": at, "fits": True, "over": True, "measured": False,
                         "limit": True})
    return sorted(rows, key=lambda r: (r["run"], r["batch"]))


def batch_caption(runs: list[BatchRun], batch: int) -> list[str]:
    """The table under the batching figure at ``batch``: each run's tokens/s and time
    per token, and either as a multiple of its batch of 1."""
    width = max(len(r.name) for r in runs) + 1
    lines = [f"{f'batch {batch:,}':{width}s}{'tokens/s':>9s}{'x batch 1':>11s}"
             f"{'ms/token':>10s}{'x batch 1':>11s}"]
    for run in runs:
        now, one = run.at(batch), run.at(1)
        if now is None:
            where = (f"not measured beyond a batch of {max(run.batches):,}"
                     if batch > max(run.batches) else "not measured at this batch")
            lines.append(f"{run.name:{width}s}{where}")
            continue
        (tps, spt), ms = now, fmt3(now[1] * 1e3)
        line = f"{run.name:{width}s}{tps:9,.0f}"
        line += (f"{f'{fmt3(tps / one[0])}x':>11s}{ms:>10s}{f'{fmt3(spt / one[1])}x':>11s}"
                 if one else f"{'':11s}{ms:>10s}")
        lines.append(line)
        if run.fits is not None and batch > run.fits:
            # (Vega trims a line's leading spaces: the note names its run)
            caches = batch * run.gb_per_sequence
            lines.append(f"{run.name.split(' (')[0]}: caches {caches:,.0f} + weights "
                         f"{run.weights_gb:,.0f} GB; {run.memory_gb:,.0f} GB hold {run.fits:,}")
    # spaces that SVG text keeps (it would fold a run of plain ones into one)
    return [line.replace(" ", "\u00a0") for line in lines]


class BatchingChart:
    """The batching figure's Vega-Lite views, for ``SliderFigure(vega=...)``: throughput
    above, each request's time per token below, against the batch size on a shared log
    axis; each run's knee marked; the chosen batch's values, and a table of them."""

    def __init__(self, runs: list[BatchRun]):
        self.runs = runs

    def __call__(self, v: dict, width: int, height: int):
        import altair as alt

        batch = f"pow(2, {v['batch_log2']})"
        names = [r.name for r in self.runs]
        colors = list(style.PALETTE[:len(names)])
        x_scale = alt.Scale(type="log", domain=[1, 2 ** BATCH_LOG2[-1]])
        x = alt.X("batch:Q", title="batch size (sequences decoded together)",
                  scale=x_scale, axis=alt.Axis(labelExpr=style.LOG_LABELS))
        c_scale = alt.Scale(domain=names, range=colors)
        plain = alt.Color("run:N", scale=c_scale, legend=None)
        # each run's line in its own colour and dash, named in the key above the panels (a
        # legend would show the colours only)
        dash = alt.StrokeDash("run:N", legend=None, scale=alt.Scale(
            domain=names, range=[list(BATCH_DASHES[i % len(BATCH_DASHES)])
                                 for i in range(len(names))]))
        curves = alt.Chart(alt.NamedData(name="curves"))
        knees = alt.Chart(alt.NamedData(name="knees"))
        here = curves.transform_filter(f"datum.batch == {batch}")
        rule = alt.Chart(alt.NamedData(name="slm_one")).transform_calculate(
            batch=batch, text=f"'batch ' + format({batch}, ',')")
        panel = (height - 60) // 2

        k = SimpleNamespace(plain=plain, dash=dash, x_scale=x_scale, x=x, curves=curves,
                            knees=knees, here=here, rule=rule, panel=panel, width=width, v=v)
        key_rows = alt.Chart(alt.NamedData(name="runs")).transform_calculate(
            ky=f"datum.row * {CAPTION_LINE_PX} + {CAPTION_LINE_PX // 2}")
        ky = alt.Y("ky:Q", scale=None, axis=None)
        key = alt.layer(
            key_rows.mark_rule(strokeWidth=2, opacity=1).encode(
                x=alt.value(0), x2=alt.value(34), y=ky, color=plain, strokeDash=dash),
            key_rows.mark_text(align="left", baseline="middle").encode(
                x=alt.value(42), y=ky, text="run:N"),
        ).properties(width=width, height=len(names) * CAPTION_LINE_PX)
        top = _batching_panel(k, "tps", "tokens per second (whole batch)", last=False)
        bottom = _batching_panel(k, "ms", "ms per token (each request)", last=True)
        captions = [batch_caption(self.runs, 2**e) for e in BATCH_LOG2]
        lines = max(map(len, captions))
        table = alt.Chart(alt.NamedData(name="slm_one")).mark_text(
            align="left", baseline="top", font=style.MONOSPACE,
            lineHeight=CAPTION_LINE_PX).encode(
            x=alt.value(0), y=alt.value(2),
            text=alt.value({"expr": f"{json.dumps(captions)}[{v['batch_log2']}]"}),
        ).properties(width=width, height=lines * CAPTION_LINE_PX + 4)
        return [key, top, bottom, table]



def _batching_panel(k, field: str, title: str, last: bool):
    """One panel of the batching figure (``k``: what the figure's call prepared)."""
    import altair as alt

    c = k.plain
    y = alt.Y(f"{field}:Q", title=title, scale=alt.Scale(type="log"),
              axis=alt.Axis(labelExpr=style.LOG_LABELS))
    tip = ["run:N", alt.Tooltip("batch:Q", format=","),
           alt.Tooltip("tps:Q", title="tokens/s", format=",.0f"),
           alt.Tooltip("ms:Q", title="ms per token", format=".3~g")]
    xs = k.x if last else alt.X("batch:Q", scale=k.x_scale, title=None,
                                axis=alt.Axis(labelExpr=style.LOG_LABELS))
    layers = [
        k.rule.mark_rule().encode(x=xs),
        k.curves.transform_filter("datum.fits").mark_line().encode(
            x=xs, y=y, color=c, strokeDash=k.dash, detail="run:N"),
        k.curves.transform_filter("datum.over").mark_line(strokeDash=[2, 3]).encode(
            x=xs, y=y, color=c, detail="run:N"),
        k.curves.transform_filter("datum.measured").mark_point(
            filled=True, size=30, opacity=1).encode(x=xs, y=y, color=c, tooltip=tip),
        k.knees.mark_point(shape="diamond", size=190, strokeWidth=2, filled=False,
                           opacity=1).encode(x=xs, y=y, color=c, tooltip=tip),
        k.knees.mark_text(dy=-14, fontWeight="bold").encode(
            x=xs, y=y, text=alt.value("knee"), color=c),
        k.here.mark_circle(size=120).encode(x=xs, y=y, color=c, tooltip=tip),
    ]
    if last:
        layers.append(k.curves.transform_filter("datum.limit").mark_text(
            align="left", dx=6, dy=12, fontStyle="italic").encode(
            x=xs, y=y, text=alt.value("memory full"), color=c))
    else:
        # in a corner the curves leave free: top left, or bottom right (and inside
        # the plot at the largest batches)
        right = f"{k.v['batch_log2']} > {BATCH_LOG2[-1] // 2}"
        far = f"{k.v['batch_log2']} > {BATCH_LOG2[-1] - 4}"
        layers.append(k.rule.mark_text(
            align={"expr": f"{far} ? 'right' : 'left'"},
            baseline={"expr": f"{right} ? 'bottom' : 'top'"},
            dx={"expr": f"{far} ? -4 : 4"}, y={"expr": f"{right} ? {k.panel - 2} : 2"},
            color=style.FAINT_INK).encode(x=xs, text="text:N"))
    return alt.layer(*layers).properties(width=k.width, height=k.panel)


def batching_figure(runs: list[BatchRun], start: int = 1) -> SliderFigure:
    """A kernel-free figure: each run's throughput (tokens/s over the batch) and time per
    token (what each request waits) against the batch size, both on log axes, with each
    run's knee marked (``BatchRun.knee``); a log2 batch control from 1 to 32,768 (starting
    at ``start``) picks the batch whose values are marked and listed. A curve is drawn
    only where it has data: a measured run between the batches measured, a roofline run
    dotted where its caches no longer fit in memory."""
    rows = _batch_rows(runs)
    knees = [{"run": r.name, "batch": r.knee, "tps": r.at(r.knee)[0],
              "ms": r.at(r.knee)[1] * 1e3} for r in runs]
    slider = Slider("batch_log2", BATCH_LOG2, int(math.log2(start)), "log\u2082 batch size")
    key = [{"run": r.name, "row": i} for i, r in enumerate(runs)]
    return SliderFigure([slider], vega=BatchingChart(runs), height=560,
                        data={"curves": rows, "knees": knees, "slm_one": [{}], "runs": key})
