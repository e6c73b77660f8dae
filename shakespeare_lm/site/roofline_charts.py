"""The cost chapter's figures for the static site: the kernel-free roofline explorer,
whose ``RooflineChart`` computes the formulas of ``cost.roofline`` in Vega-Lite
(``roofline_numbers`` are the same numbers in Python: tests/cost/test_roofline.py checks
that the two agree, in node), and the stepped prefill/decode chart."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..cost.roofline import (
    HARDWARE,
    MODELS,
    Hardware,
    ModelSpec,
    attainable_flops,
    decode_cost,
    prefill_cost,
)
from . import style
from .figures import CAPTION_LINE_PX, Slider, SliderFigure, frame_title

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
INTENSITIES = tuple(10 ** (e / 4) for e in range(-8, 25))  # 0.01 .. 1e6 FLOPs per byte
INTENSITY = "arithmetic intensity (FLOP per byte)"


def _fmt(x: float) -> str:
    return f"{x:.3g}"


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

    @staticmethod
    def encodings() -> dict:
        import altair as alt

        return {"x": alt.X("x:Q", title=INTENSITY, scale=alt.Scale(type="log"),
                           axis=alt.Axis(labelExpr=style.LOG_LABELS)),
                "y": alt.Y("y:Q", title="FLOP/s", scale=alt.Scale(type="log"),
                           axis=alt.Axis(labelExpr=style.LOG_LABELS)),
                "color": alt.Color("what:N", title=None, scale=alt.Scale(
                    domain=["roofline", "prefill", "decode"],
                    range=[style.INK, style.PALETTE[0], style.PALETTE[3]]))}

    def __call__(self, v: dict, width: int, height: int):
        import altair as alt

        xy = self.encodings()
        peak, bandwidth = f"({v['peak_tflops']}) * 1e12", f"({v['bandwidth_gbs']}) * 1e9"
        roof = alt.Chart(alt.NamedData(name="intensities")).transform_calculate(
            y=f"min({peak}, datum.x * {bandwidth})", what="'roofline'"
        ).mark_line().encode(**xy)
        row = alt.Chart(alt.NamedData(name="models"), transform=self.transforms(v))
        tip = [alt.Tooltip("what:N", title="pass"), alt.Tooltip("x:Q", format=".3~g"),
               alt.Tooltip("y:Q", format=".3~g")]
        layers = [roof, row.mark_rule().encode(x="ridge:Q"),  # the style's reference line
                  row.mark_text(align="left", baseline="top", dx=4, y=4, color=style.GREY,
                                text="ridge").encode(x="ridge:Q")]
        for key, name in (("pre", "prefill"), ("dec", "decode")):
            point = row.transform_calculate(x=f"datum.{key}_x", y=f"datum.{key}_y",
                                            what=f"'{name}'")
            layers += [point.mark_circle(size=110, opacity=1).encode(**xy, tooltip=tip),
                       point.mark_text(align="left", dx=9, dy=-9, fontWeight="bold")
                       .encode(**xy, text="what:N")]
        main = alt.layer(*layers).properties(width=width, height=height,
                                             title=frame_title(self.title(v)))
        caption = (row.mark_text(align="left", baseline="top", font=style.MONOSPACE,
                                 lineHeight=CAPTION_LINE_PX)
                   .encode(x=alt.value(0), y=alt.value(2), text="caption:N")
                   .properties(width=width, height=3 * CAPTION_LINE_PX + 4))
        return [main, caption]


EXPLORER_SLIDERS = {
    "model": (EXPLORER_MODELS, "7b"),
    "bytes_per_weight": ((0.5, 1, 2, 4), 2),
    "prompt_len": ((1, 16, 128, 1000, 4096, 16384), 1000),
    "batch": ((1, 4, 16, 64, 256, 1024), 1),
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


WEIGHTS_READ, BUSY = "weights read (all of them)", "arithmetic units busy"


def prefill_decode_chart(spec: ModelSpec, hw: Hardware, prompt_len: int, step: int,
                         n_decode: int = 8):
    """A frame of ``prefill_decode_figure``: per step (prefill, then ``n_decode`` decode
    steps), the fraction of the weights read (``WEIGHTS_READ``) and the fraction of the
    step's time the arithmetic units are busy (``BUSY``), zero for the steps after
    ``step`` (not drawn yet); and a caption on the step ``step``. The chart's data is a
    DataFrame of one row per step, with the columns ``step`` (its label), ``WEIGHTS_READ``
    and ``BUSY``."""
    import altair as alt
    import pandas as pd

    costs = [prefill_cost(spec, hw, prompt_len)]
    costs += [decode_cost(spec, hw, prompt_len + i) for i in range(n_decode)]
    rows = [{"step": "prefill" if i == 0 else f"d{i}", WEIGHTS_READ: float(i <= step),
             BUSY: c.compute_utilization if i <= step else 0.0} for i, c in enumerate(costs)]
    bars = alt.Chart().transform_fold(
        [WEIGHTS_READ, BUSY], as_=["series", "fraction"]).encode(
        x=alt.X("step:N", sort=None, title=None, axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("series:N", sort=[WEIGHTS_READ, BUSY]),
        y=alt.Y("fraction:Q", scale=alt.Scale(domain=[0, 1.05])),
        color=alt.Color("series:N", title=None, scale=alt.Scale(
            domain=[WEIGHTS_READ, BUSY], range=[style.GREY, style.PALETTE[0]])),
        tooltip=["step:N", "series:N", alt.Tooltip("fraction:Q", format=".3~g")])
    chart = alt.layer(  # all the weights, every step: an outline; the busy share: filled
        bars.mark_bar(filled=False, strokeWidth=1.5).transform_filter(
            alt.datum.series == WEIGHTS_READ),
        bars.mark_bar().transform_filter(alt.datum.series == BUSY),
        data=pd.DataFrame(rows), title=f"{spec.name} on {hw.name}, prompt of {prompt_len} tokens")
    now = costs[step]
    what = (f"prefill: {prompt_len} tokens in one pass" if step == 0
            else f"decode step {step}: 1 token, {prompt_len + step - 1} cached")
    return chart, (f"{what}: reads {_fmt(now.bytes / 1e9)} GB, does "
                   f"{_fmt(now.flops / 1e12)} TFLOP, takes {_fmt(now.seconds * 1e3)} ms "
                   f"({now.bound}-bound); the arithmetic units are busy "
                   f"{_fmt(100 * now.compute_utilization)}% of it")


def prefill_decode_figure(spec: ModelSpec | None = None, hw: Hardware | None = None,
                          prompt_lens=(10, 100, 1000), n_decode: int = 8):
    """A kernel-free stepped figure of ``prefill_decode_chart`` (sliders: prompt length, step)."""
    spec = spec or MODELS["7b"]
    hw = hw or HARDWARE["round-gpu"]
    sliders = [Slider("prompt_len", prompt_lens, prompt_lens[-1], "prompt length"),
               Slider("step", range(n_decode + 1), 0, "step",
                      fmt=lambda s: "prefill" if s == 0 else f"decode {s}")]
    return SliderFigure(sliders, frame_fn=lambda prompt_len, step: prefill_decode_chart(
        spec, hw, prompt_len, step, n_decode), width=680, height=330)
