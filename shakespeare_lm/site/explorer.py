"""Chapter 3's explorers: what the decoding rules keep of the next-character
distribution.

    from shakespeare_lm import explorer
    explorer.live_explorer(model, tok)      # ipywidgets bound to the model (JupyterLab)
    explorer.static_explorer(model, tok)    # a kernel-free SliderFigure (site, JupyterLab)

Both draw the model's raw probabilities as outlines and the distribution a token is
drawn from after the rules (``surviving``) as solid bars; trimmed characters are grey.
The live one computes with ``shakespeare_lm.decoding.rules`` and samples with ``slm.generate``;
the static one embeds the full next-character logits at a handful of contexts and
computes every rule in the page with Vega-Lite transforms (``rules_vega``), which
``tests/site/test_rules_js.py`` runs in node and checks against ``rules``.
"""

from __future__ import annotations

import html
import io
from collections.abc import Sequence

import torch

from ..decoding import rules
from ..decoding.generate import generate
from ..decoding.sampler import DecodingConfig, Sampler
from ..decoding.scoring import next_token_logits
from . import rules_vega, style
from .figures import CAPTION_LINE_PX, Slider, SliderFigure, frame_title, pick

# The running example of the book (The Taming of the Shrew, held out from training).
SPEECH = ("KATHARINA:\nMoved! in good time: let him that moved you hither\n"
          "Remove you hence: I knew you at the first\nYou were a moveable.\n\n")
START_OF_WORD = "KATHARINA:\nMoved! in good time: let him that moved you "
MIDDLE_OF_WORD = "KATHARINA:\nMoved! in good time: let him that moved you hith"
CONTEXTS = {
    "start of a word": START_OF_WORD,
    "middle of 'hither'": MIDDLE_OF_WORD,
    "start of a line": "KATHARINA:\nMoved! in good time: let him that moved you hither\n",
    "after 'I knew you at the '": SPEECH[:SPEECH.index("first")],
    "a new speaker": SPEECH,
}
# The explorer's settings, in rules.ORDER; the value that switches each rule off.
SETTINGS = ("temperature", "top_k", "top_p", "min_p", "typical_p", "epsilon", "eta")
OFF = {"temperature": 1.0, "top_k": None, "top_p": 1.0, "min_p": 0.0, "typical_p": 1.0,
       "epsilon": 0.0, "eta": 0.0}


def char_label(ch: str) -> str:
    """A visible label for a character: newline and space get symbols."""
    return {"\n": "\u23ce", " ": "\u2423"}.get(ch, ch)


@torch.no_grad()
def next_logits(model, tok, text: str) -> torch.Tensor:
    """The model's next-character logits (V,) after ``text`` (its last block_size
    characters), in float64."""
    if not text:
        raise ValueError("text is empty: the model needs at least one character of context")
    ids = tok.encode(text)[-model.config.block_size:]
    return next_token_logits(model, [ids])[0].double().cpu()


def _settings(config: dict) -> dict:
    unknown = set(config) - set(SETTINGS)
    if unknown:
        raise TypeError(f"unknown explorer setting(s) {sorted(unknown)}; known: {list(SETTINGS)}")
    return {name: config.get(name, OFF[name]) for name in SETTINGS}


def surviving(logits: torch.Tensor, **config) -> torch.Tensor:
    """The distribution a token is drawn from, (..., V) logits -> (..., V) probabilities:
    the ``shakespeare_lm.decoding.sampler`` distribution that ``slm.generate`` draws from (at
    temperature 0 all the mass on the greedy token). Settings left out are off."""
    return Sampler(DecodingConfig(**_settings(config))).probs(logits)


def summarize(logits: torch.Tensor, tok, **config) -> dict:
    """For one (V,) distribution under the settings: characters kept, entropy in bits and the
    (at most) five most probable characters that the rules keep, with their probabilities."""
    probs = surviving(logits, **config)
    top = torch.sort(probs, descending=True, stable=True)
    kept = int((probs > 0).sum())
    entropy = rules.entropy_bits(probs.log()).item()
    shown = min(5, kept)
    return {"kept": kept, "entropy_bits": round(abs(entropy), 2),
            "top5": " ".join(f"{tok.chars[i]!r}:{p:.2f}" for p, i in
                             zip(top.values[:shown].tolist(), top.indices[:shown].tolist()))}


def plot_distribution(ax, logits: torch.Tensor, tok, title: str = "", **config) -> None:
    """Bar chart on a matplotlib axis: raw probability as outline, surviving as solid bars,
    trimmed characters grey; characters in order of raw probability."""
    raw = torch.softmax(logits.double(), -1)
    final = surviving(logits.double(), **config)
    order = torch.sort(raw, descending=True, stable=True).indices.tolist()
    x = range(len(order))
    trimmed = [final[i] == 0 for i in order]
    ax.bar(x, [final[i].item() for i in order], width=0.8, color="#1f77b4", alpha=0.85,
           label="after the rules (renormalised)")
    ax.bar(x, [raw[i].item() for i in order], width=0.8, fill=False,
           edgecolor=["#bbbbbb" if t else "#333333" for t in trimmed], label="model, raw")
    ax.set_xticks(list(x), [char_label(tok.chars[i]) for i in order], fontsize=9, family="monospace")
    for label, t in zip(ax.get_xticklabels(), trimmed):
        label.set_color("#bbbbbb" if t else "#222222")
    ax.set_xlim(-0.6, len(order) - 0.4)
    ax.set_ylabel("probability")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper right", fontsize=9, frameon=False)


# --- kernel-free explorer -------------------------------------------------------------
def _fmt_off(off_value, fmt):
    return lambda v: f"off ({fmt(v)})" if v == off_value else fmt(v)


def static_sliders(n_contexts: int, labels: Sequence[str], vocab_size: int) -> list[Slider]:
    """The explorer's sliders: a context, then each rule over a grid of values."""
    num = "{:g}".format
    return [
        Slider("context", list(range(n_contexts)), 0, "context", fmt=lambda i: labels[i]),
        Slider("temperature", [0.0] + [round(0.1 * i, 1) for i in range(1, 21)] + [2.5, 3.0], 1.0,
               "temperature", fmt=lambda v: "0 (greedy)" if v == 0 else num(v)),
        Slider("top_k", [1, 2, 3, 5, 10, 20, 40, vocab_size], vocab_size, "top-k",
               fmt=_fmt_off(vocab_size, str)),
        Slider("top_p", [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0], 1.0,
               "top-p", fmt=_fmt_off(1.0, num)),
        Slider("min_p", [0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1.0], 0.0, "min-p",
               fmt=_fmt_off(0.0, num)),
        Slider("typical_p", [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0], 1.0,
               "typical mass", fmt=_fmt_off(1.0, num)),
        Slider("epsilon", [0.0, 1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1], 0.0, "epsilon",
               fmt=_fmt_off(0.0, num)),
        Slider("eta", [0.0, 1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3], 0.0, "eta",
               fmt=_fmt_off(0.0, num)),
    ]


def explorer_data(model, tok, contexts: dict[str, str] | None = None, digits: int = 4) -> dict:
    """What the static explorer embeds: the characters, and per context its text and full
    next-character logits (rounded to ``digits``; the page computes every rule from them)."""
    contexts = CONTEXTS if contexts is None else contexts
    return {"chars": list(tok.chars), "labels": [char_label(c) for c in tok.chars],
            "contexts": [{"name": name, "text": text,
                          "logits": [round(x, digits) for x in next_logits(model, tok, text).tolist()]}
                         for name, text in contexts.items()]}


def explorer_rows(data: dict) -> list[dict]:
    """The explorer's logits as rows ``{ctx, id, ch, logit}`` (``ch``: the label)."""
    return [{"ctx": c, "id": i, "ch": data["labels"][i], "logit": x}
            for c, context in enumerate(data["contexts"])
            for i, x in enumerate(context["logits"])]


FINAL, RAW = "after the rules (renormalised)", "model, raw"


def _bars(width: int, height: int):
    """The chart of the explorer: per character (in order of raw probability) the raw
    probability as an outline (grey where a rule removed it), the final one solid."""
    import altair as alt

    series = alt.Color("sname:N", legend=alt.Legend(title=None), scale=alt.Scale(
        domain=[FINAL, RAW], range=[style.PALETTE[0], style.INK]))
    colour = alt.condition("datum.series == 'raw_p' && datum.pf == 0",
                           alt.value(style.MUTED), series)
    axis = alt.Axis(labelAngle=0, labelOverlap=False, labelFont=style.MONOSPACE,
                    labelPadding=3)
    enc = {"x": alt.X("ch:N", title=None, axis=axis,
                      sort=alt.EncodingSortField(field="r0", op="min")),
           "xOffset": alt.XOffset("sname:N", sort=[FINAL, RAW]),
           "y": alt.Y("prob:Q", title="probability"), "color": colour,
           "tooltip": [alt.Tooltip("ch:N", title="character"),
                       alt.Tooltip("raw_p:Q", title=RAW, format=".4f"),
                       alt.Tooltip("pf:Q", title=FINAL, format=".4f")]}
    base = (alt.Chart().transform_fold(["raw_p", "pf"], as_=["series", "prob"])
            .transform_calculate(sname=f"datum.series == 'pf' ? '{FINAL}' : '{RAW}'")
            .encode(**enc))
    solid = base.mark_bar().transform_filter("datum.series == 'pf'")
    outline = base.mark_bar(filled=False, strokeWidth=1.2).transform_filter(
        "datum.series == 'raw_p'")
    return alt.layer(solid, outline).properties(width=width, height=height)


def _summary(width: int):
    """The caption under the chart, computed in the page from the rules' output."""
    import altair as alt

    line1 = ("'kept ' + datum.kept + ' of ' + datum.n + ' characters, holding ' + "
             "format(100 * datum.mass, '.1f') + '% of the raw probability;'")
    line2 = ("'entropy ' + format(abs(datum.bits), '.2f') + ' bits (raw ' + "
             "format(datum.raw_bits, '.2f') + '); most likely now \u201c' + "
             "datum.ch + '\u201d at ' + format(datum.best, '.3f')")
    return (alt.Chart(transform=rules_vega.summary_transforms())
            .transform_calculate(caption=f"[{line1}, {line2}]")
            .mark_text(align="left", baseline="top", font=style.MONOSPACE,
                       fontSize=style.FONT_SIZES["caption"], lineHeight=CAPTION_LINE_PX)
            .encode(x=alt.value(0), y=alt.value(2), text="caption:N")
            .properties(width=width, height=2 * CAPTION_LINE_PX + 4))


class StaticChart:
    """The kernel-free explorer's Vega-Lite chart, for ``SliderFigure(vega=...)``: the
    rules computed in the page from the embedded logits (``rules_vega``)."""

    def __init__(self, titles: list[str] | dict):
        self.titles = titles  # one per context, or a Vega expression ({"expr": ...})

    def __call__(self, values: dict[str, str], width: int, height: int):
        import altair as alt

        context = values["context"]  # the context's index
        title = frame_title(self.titles if isinstance(self.titles, dict)
                            else pick(self.titles, f"({context})"))
        bars = _bars(width, height).properties(title=title)
        chart = alt.vconcat(bars, _summary(width), data=alt.NamedData(name="logits"),
                            spacing=6)
        chart.transform = ([{"filter": f"datum.ctx == ({context})"}]
                           + rules_vega.rule_transforms(values))
        return chart


def static_explorer(model, tok, contexts: dict[str, str] | None = None) -> SliderFigure:
    """A kernel-free SliderFigure over the next-character distributions at ``contexts``."""
    data = explorer_data(model, tok, contexts)
    sliders = static_sliders(len(data["contexts"]), [c["name"] for c in data["contexts"]],
                             len(tok.chars))
    titles = ["next character after \u2026" + c["text"][-24:].replace("\n", "\u23ce")
              for c in data["contexts"]]
    return SliderFigure(sliders, vega=StaticChart(titles), data=data,
                        datasets={"logits": explorer_rows(data)},
                        title="What each rule keeps of the next-character distribution")


# --- live explorer (JupyterLab) ---------------------------------------------------------
def generation_kwargs(config: dict) -> dict:
    """Explorer settings -> keyword arguments of ``slm.generate`` (rules that are off: None)."""
    settings = _settings(config)
    out = {name: (None if name != "temperature" and value == OFF[name] else value)
           for name, value in settings.items()}
    return out


def _error_html(e: Exception) -> str:
    return f"<span style='color:#b00'>{html.escape(str(e))}</span>"


def tail_html(text: str, added: int = 0, lines: int = 5) -> str:
    """The end of ``text`` as the live explorer shows it under the context box: its last
    ``lines`` lines, the last ``added`` characters (what the buttons just generated) in
    bold blue, newlines as the symbol the chart uses and a line break."""
    added = min(max(added, 0), len(text))
    start = len(text)
    for _ in range(lines):
        start = text.rfind("\n", 0, start - 1) + 1 if start > 0 else 0
    start = min(start, len(text) - added)
    cut = "\u2026" if start > 0 else ""

    def show(part: str) -> str:
        return html.escape(part).replace("\n", "\u23ce<br>")

    old, new = text[start:len(text) - added], text[len(text) - added:]
    bold = f"<b style='color:#0072B2'>{show(new)}</b>" if new else ""
    return ("<div style='font-family:monospace;font-size:13px;line-height:1.35;"
            "padding:4px 8px;background:#f6f6f6;border-radius:4px;overflow-wrap:anywhere'>"
            f"{cut}{show(old)}{bold}</div>")


class LiveExplorer:
    """The widgets of ``live_explorer`` and their callbacks, bound to one model."""

    def __init__(self, model, tok, context: str, seed: int, line_chars: int):
        import ipywidgets as w

        self.model, self.tok, self.seed, self.line_chars = model, tok, seed, line_chars
        self.V, self.added, self.extending = len(tok.chars), 0, False
        self.logits_cache: dict[str, torch.Tensor] = {}
        full = w.Layout(width="100%", max_width="960px")
        self.text = w.Textarea(value=context, description="context", rows=3, layout=full,
                               style={"description_width": "5em"})
        # the box does not scroll to new text, so its end is shown under it
        self.tail = w.HTML(layout=full)
        self.sliders = self._make_sliders(w)
        buttons = [w.Button(description="sample", icon="random"),
                   w.Button(description="continue the line", layout=w.Layout(width="auto")),
                   w.Button(description="reset settings", layout=w.Layout(width="auto"))]
        # the chart is a PNG in an Image widget: no captured output, so it renders the same in
        # JupyterLab and under nbclient/nbval
        self.chart = w.Image(format="png", layout=w.Layout(width="100%", max_width="960px"))
        self.status = w.HTML(layout=full)
        for sl in self.sliders.values():
            sl.observe(self.redraw, names="value")
        self.text.observe(self.edited, names="value")
        buttons[0].on_click(lambda _: self.extend(1, None))
        buttons[1].on_click(lambda _: self.extend(self.line_chars, "\n"))
        buttons[2].on_click(self.reset)
        self.redraw()
        grid = w.GridBox(list(self.sliders.values()), layout=w.Layout(
            grid_template_columns="repeat(auto-fill, minmax(21em, 1fr))", max_width="960px"))
        self.box = w.VBox([self.text, self.tail, grid, w.HBox(buttons), self.status, self.chart],
                          layout=w.Layout(width="100%", max_width="960px"))

    def _make_sliders(self, w) -> dict:
        style, layout = {"description_width": "7.5em"}, w.Layout(width="auto")

        def fslider(desc, value, lo, hi, step, fmt=".2f"):
            return w.FloatSlider(value=value, min=lo, max=hi, step=step, description=desc,
                                 readout_format=fmt, continuous_update=False, style=style,
                                 layout=layout)

        return {
            "temperature": fslider("temperature", 1.0, 0.0, 2.0, 0.05),
            "top_k": w.IntSlider(value=self.V, min=1, max=self.V, description="top-k",
                                 continuous_update=False, style=style, layout=layout),
            "top_p": fslider("top-p", 1.0, 0.01, 1.0, 0.01),
            "min_p": fslider("min-p", 0.0, 0.0, 1.0, 0.01),
            "typical_p": fslider("typical mass", 1.0, 0.01, 1.0, 0.01),
            "epsilon": fslider("epsilon", 0.0, 0.0, 0.1, 0.001, ".3f"),
            "eta": fslider("eta", 0.0, 0.0, 0.1, 0.001, ".3f"),
        }

    def config(self) -> dict:
        return {name: s.value for name, s in self.sliders.items()}

    def logits_for(self, ctx: str) -> torch.Tensor:
        if ctx not in self.logits_cache:  # keeps only the latest context
            self.logits_cache = {ctx: next_logits(self.model, self.tok, ctx)}
        return self.logits_cache[ctx]

    def edited(self, _):
        """The context changed: by a button (``extending``) or by the reader."""
        if not self.extending:
            self.added = 0  # the reader's own text: nothing to highlight
        self.redraw()

    def redraw(self, *_):
        import matplotlib.pyplot as plt

        self.tail.value = tail_html(self.text.value, self.added)
        try:
            logits = self.logits_for(self.text.value)
            summary = summarize(logits, self.tok, **self.config())
        except ValueError as e:  # an unknown character, an empty box
            self.status.value = _error_html(e)
            return
        fig, ax = plt.subplots(figsize=(9.6, 3.0), dpi=100)
        plot_distribution(ax, logits, self.tok, title="next character", **self.config())
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", bbox_inches="tight")
        plt.close(fig)
        self.chart.value = buffer.getvalue()
        self.status.value = html.escape(
            f"kept {summary['kept']} of {self.V} characters, entropy "
            f"{summary['entropy_bits']:.2f} bits; most probable kept: {summary['top5']}")

    def extend(self, n: int, stop):
        prompt = self.text.value[-(self.model.config.block_size - n):]
        try:
            g = generate(self.model, self.tok, prompt, n, stop=stop, seed=self.seed,
                         **generation_kwargs(self.config()))
        except ValueError as e:
            self.status.value = _error_html(e)
            return
        self.seed += 1
        self.added, self.extending = len(g.text), True
        try:
            self.text.value += g.text  # triggers edited() and redraw for the new context
        finally:
            self.extending = False

    def reset(self, *_):
        for name, s in self.sliders.items():
            s.value = self.V if name == "top_k" else OFF[name]


def live_explorer(model, tok, context: str = START_OF_WORD, seed: int = 0,
                  line_chars: int = 120):
    """An ipywidgets explorer bound to ``model``: a context box, a slider per rule, the
    next-character chart, and buttons that sample one character or continue the line with
    ``slm.generate`` under the current settings (seeds ``seed``, ``seed + 1``, ...)."""
    return LiveExplorer(model, tok, context, seed, line_chars).box
