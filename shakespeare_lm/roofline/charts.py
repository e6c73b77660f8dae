"""Figure specs for the static site: the roofline chart, the prefill/decode step chart and
the kernel-free roofline explorer, whose ``ROOFLINE_JS`` is a JavaScript copy of the
formulas of ``roofline.analytic`` (tests/test_roofline.py checks the two agree in node)."""

from __future__ import annotations

from ..figures import Slider, SliderFigure
from .analytic import (HARDWARE, MODELS, Hardware, ModelSpec, attainable_flops, decode_cost,
                       prefill_cost)

# --- figures: kernel-free sliders for the static site ----------------------------------
EXPLORER_MODELS = ("shakespeare", "base-65m", "7b", "70b")
_INTENSITIES = [10 ** (e / 4) for e in range(-8, 25)]  # 0.01 .. 1e6 FLOPs per byte
ROOF_HEADROOM = 30  # the y axis ends this factor above the peak FLOP/s


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def roofline_chart(spec: ModelSpec, hw: Hardware, prompt_len: int, batch: int = 1) -> dict:
    """A ``figures`` chart spec: the roofline of ``hw`` with the operating points of a prefill
    of ``batch`` prompts of ``prompt_len`` tokens and of the decode step that follows it."""
    pre = prefill_cost(spec, hw, prompt_len, batch)
    dec = decode_cost(spec, hw, prompt_len, batch)
    caption = (f"prefill {batch} x {prompt_len} tokens: {_fmt(pre.seconds * 1e3)} ms, "
               f"{pre.bound}-bound at {_fmt(pre.intensity)} FLOP/byte\n"
               f"decode step at context {prompt_len}: {_fmt(dec.seconds * 1e3)} ms, "
               f"{dec.bound}-bound at {_fmt(dec.intensity)} FLOP/byte, "
               f"{_fmt(batch / dec.seconds)} tokens/s\n"
               f"ridge point {_fmt(hw.ridge_intensity)} FLOP/byte")
    return {
        "title": f"{spec.name} on {hw.name}",
        "xlabel": "arithmetic intensity (FLOP per byte)", "ylabel": "FLOP/s",
        "xlog": True, "ylog": True,
        # headroom above the roof, so the prefill point's label stays clear of the title
        "ylim": [_INTENSITIES[0] * hw.bandwidth, hw.peak_flops * ROOF_HEADROOM],
        "lines": [{"x": _INTENSITIES, "y": [attainable_flops(hw, x) for x in _INTENSITIES],
                   "name": "roofline", "color": "#444"}],
        "points": [{"x": pre.intensity, "y": pre.flops / pre.seconds, "label": "prefill",
                    "color": "#1f77b4"},
                   {"x": dec.intensity, "y": dec.flops / dec.seconds, "label": "decode",
                    "color": "#d62728"}],
        "vlines": [{"x": hw.ridge_intensity, "label": "ridge"}],
        "caption": caption,
    }


def explorer_setting(model: str, bytes_per_weight: float, bandwidth_gbs: float,
                     peak_tflops: float) -> tuple[ModelSpec, Hardware]:
    """The ModelSpec and Hardware of one setting of the roofline explorer's sliders (the KV
    cache is stored with the weights' precision)."""
    spec = MODELS[model].with_(bytes_per_weight=bytes_per_weight, kv_bytes_per_number=None)
    hw = Hardware(f"{_fmt(bandwidth_gbs)} GB/s, {_fmt(peak_tflops)} TFLOP/s",
                  peak_tflops * 1e12, bandwidth_gbs * 1e9)
    return spec, hw


def explorer_chart(model: str = "7b", bytes_per_weight: float = 2, prompt_len: int = 1000,
                   batch: int = 1, bandwidth_gbs: float = 2000, peak_tflops: float = 500) -> dict:
    """``roofline_chart`` for one setting of the explorer's sliders (see ``ROOFLINE_JS``)."""
    spec, hw = explorer_setting(model, bytes_per_weight, bandwidth_gbs, peak_tflops)
    return roofline_chart(spec, hw, prompt_len, batch)


# The same chart in JavaScript, for the static page: tests/test_roofline.py checks it
# against ``explorer_chart`` in node.
ROOFLINE_JS = r"""
var m = data.models[values.model], bpw = values.bytes_per_weight;
var peak = values.peak_tflops * 1e12, bw = values.bandwidth_gbs * 1e9;
var P = values.prompt_len, B = values.batch;
var kvPerToken = 2 * m.n_layer * (m.d_model / m.n_head * m.n_kv_heads) * bpw;
function cost(tokens, context) {
  var pairs = tokens * context + tokens * (tokens + 1) / 2;
  var flops = 2 * m.n_params * tokens * B + 4 * m.n_layer * m.d_model * pairs * B;
  var bytes = m.n_params * bpw + kvPerToken * (context + tokens) * B;
  var c = flops / peak, mem = bytes / bw, s = Math.max(c, mem);
  return {flops: flops, bytes: bytes, seconds: s, intensity: flops / bytes,
          bound: c > mem ? "compute" : "memory"};
}
function f(x) { return String(+x.toPrecision(3)); }  // 3 significant digits
var pre = cost(P, 0), dec = cost(1, P), ridge = peak / bw;
return {
  title: m.name + " on " + f(values.bandwidth_gbs) + " GB/s, " + f(values.peak_tflops) + " TFLOP/s",
  xlabel: "arithmetic intensity (FLOP per byte)", ylabel: "FLOP/s", xlog: true, ylog: true,
  ylim: [data.intensities[0] * bw, peak * data.headroom],
  lines: [{x: data.intensities, y: data.intensities.map(function (x) { return Math.min(peak, x * bw); }),
           name: "roofline", color: "#444"}],
  points: [{x: pre.intensity, y: pre.flops / pre.seconds, label: "prefill", color: "#1f77b4"},
           {x: dec.intensity, y: dec.flops / dec.seconds, label: "decode", color: "#d62728"}],
  vlines: [{x: ridge, label: "ridge"}],
  caption: "prefill " + B + " x " + P + " tokens: " + f(pre.seconds * 1e3) + " ms, " + pre.bound +
    "-bound at " + f(pre.intensity) + " FLOP/byte\ndecode step at context " + P + ": " +
    f(dec.seconds * 1e3) + " ms, " + dec.bound + "-bound at " + f(dec.intensity) +
    " FLOP/byte, " + f(B / dec.seconds) + " tokens/s\nridge point " + f(ridge) + " FLOP/byte"
};
"""

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
    operating points for a model, bytes per weight, prompt length, batch, bandwidth, FLOP/s."""
    labels = {"model": "model", "bytes_per_weight": "bytes per weight",
              "prompt_len": "prompt length", "batch": "batch size",
              "bandwidth_gbs": "bandwidth (GB/s)", "peak_tflops": "peak TFLOP/s"}
    sliders = [Slider(name, values, value, labels[name],
                      fmt=(lambda k: MODELS[k].name) if name == "model" else str)
               for name, (values, value) in EXPLORER_SLIDERS.items()]
    models = {k: {"name": MODELS[k].name, "n_params": MODELS[k].n_params,
                  "n_layer": MODELS[k].n_layer, "d_model": MODELS[k].d_model,
                  "n_head": MODELS[k].n_head,
                  "n_kv_heads": MODELS[k].n_kv_heads or MODELS[k].n_head}
              for k in EXPLORER_MODELS}
    return SliderFigure(sliders, render_js=ROOFLINE_JS,
                        data={"models": models, "intensities": _INTENSITIES,
                              "headroom": ROOF_HEADROOM},
                        width=720, height=380)


def prefill_decode_chart(spec: ModelSpec, hw: Hardware, prompt_len: int, step: int,
                         n_decode: int = 8) -> dict:
    """Per step (prefill, then ``n_decode`` decode steps), the fraction of the weights read
    and the fraction of the step's time the arithmetic units are busy; steps after ``step``
    are not drawn yet."""
    costs = [prefill_cost(spec, hw, prompt_len)]
    costs += [decode_cost(spec, hw, prompt_len + i) for i in range(n_decode)]
    shown = [i <= step for i in range(len(costs))]
    now = costs[step]
    what = (f"prefill: {prompt_len} tokens in one pass" if step == 0
            else f"decode step {step}: 1 token, {prompt_len + step - 1} cached")
    return {
        "title": f"{spec.name} on {hw.name}, prompt of {prompt_len} tokens",
        "categories": ["prefill"] + [f"d{i}" for i in range(1, n_decode + 1)],
        "ylabel": "fraction", "ylim": [0, 1.05],
        "bars": [{"y": [1.0 if s else 0.0 for s in shown], "name": "weights read (all of them)",
                  "color": "#7f7f7f", "fill": False},
                 {"y": [c.compute_utilization if s else 0.0 for c, s in zip(costs, shown)],
                  "name": "arithmetic units busy", "color": "#1f77b4"}],
        "caption": (f"{what}: reads {_fmt(now.bytes / 1e9)} GB, does {_fmt(now.flops / 1e12)} "
                    f"TFLOP, takes {_fmt(now.seconds * 1e3)} ms ({now.bound}-bound); "
                    f"the arithmetic units are busy {_fmt(100 * now.compute_utilization)}% of it"),
    }


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
