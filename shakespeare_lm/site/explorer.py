"""Chapter 3's explorers: what the decoding rules keep of the next-character
distribution.

    from shakespeare_lm.site import explorer
    explorer.live_explorer(model, tok)      # ipywidgets bound to the model (JupyterLab)
    explorer.static_explorer(model, tok)    # a kernel-free SliderFigure (site, JupyterLab)

Both draw the model's own probabilities (its distribution p, before any rule or penalty)
as outlines and the distribution a token is drawn from after the rules (``surviving``,
the sampler's) as solid bars; removed characters are grey. Under the chart, the entropy
after the rules stands beside the model's own, each named. The live one computes with
``shakespeare_lm.decoding`` and samples with ``slm.generate``. The static one offers a
handful of contexts, a few temperatures and no rule or one rule at one of a few settings;
the distribution of every combination is computed here and stored in the figure, which
only looks it up (``lookup_transforms``): plain Vega-Lite with no rule code, so it draws
the same in JupyterLab and on the site. Their settings, off values, labels and sliders are
the registry's (``shakespeare_lm.decoding.registry``): chapter 3's rules, its "classic" kind.
The live explorers of the site (``shakespeare_lm.site.live``) draw ``distribution_chart``
too, from what the page's JavaScript copy of the decoding computes
(``shakespeare_lm/site/static/decoding.js``).
"""

from __future__ import annotations

import html
import io
import json
from collections.abc import Sequence

import torch

from ..decoding import registry, rules
from ..decoding.generate import generate
from ..decoding.sampler import DecodingConfig, Sampler
from ..decoding.scoring import next_token_logits
from . import style
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
# The explorer's settings: chapter 3's rules, in rules.ORDER; the value that switches each
# rule off (None for top-k, whose slider stands at the vocabulary's size).
SETTINGS = tuple(name for name in rules.ORDER if registry.RULE[name].kind == "classic")
OFF = {name: None if registry.SETTINGS[name].off == registry.VOCAB else registry.SETTINGS[name].off
       for name in SETTINGS}


def char_label(ch: str) -> str:
    """A visible label for a character: newline and space get symbols."""
    return style.visible(ch)


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
    """For one (V,) distribution under the settings: characters kept, the entropy in bits
    after the rules (``entropy_bits``) and of the model's own distribution (``model_bits``,
    which no setting changes), and the (at most) five most probable characters that the
    rules keep, with their probabilities."""
    probs = surviving(logits, **config)
    top = torch.sort(probs, descending=True, stable=True)
    kept = int((probs > 0).sum())
    entropy = rules.entropy_bits(probs.log()).item()
    own = rules.entropy_bits(torch.log_softmax(logits.double(), -1)).item()
    shown = min(5, kept)
    return {"kept": kept, "entropy_bits": round(abs(entropy), 2),
            "model_bits": round(abs(own), 2),
            "top5": " ".join(f"{tok.chars[i]!r}:{p:.2f}" for p, i in
                             zip(top.values[:shown].tolist(), top.indices[:shown].tolist()))}


def plot_distribution(ax, logits: torch.Tensor, tok, title: str = "", **config) -> None:
    """Bar chart on a matplotlib axis: the model's own probability as an outline, what the
    rules leave as solid bars, removed characters grey; characters in the order of the
    model's own probability. The colours and names are ``distribution_chart``'s."""
    from matplotlib.patches import Patch

    raw = torch.softmax(logits.double(), -1)
    final = surviving(logits.double(), **config)
    order = torch.sort(raw, descending=True, stable=True).indices.tolist()
    x = range(len(order))
    trimmed = [final[i] == 0 for i in order]
    ax.bar(x, [final[i].item() for i in order], width=0.8, color=style.PALETTE[0],
           label=FINAL)
    ax.bar(x, [raw[i].item() for i in order], width=0.8, fill=False,
           edgecolor=[style.MUTED if t else style.INK for t in trimmed], label=RAW)
    ax.set_xticks(list(x), [char_label(tok.chars[i]) for i in order], fontsize=9,
                  family="monospace")
    for label, t in zip(ax.get_xticklabels(), trimmed):
        label.set_color(style.MUTED if t else style.INK)
    ax.set_xlim(-0.6, len(order) - 0.4)
    ax.set_ylabel("probability")
    ax.set_title(title, fontsize=10)
    handles = [Patch(color=style.PALETTE[0], label=FINAL),
               Patch(fill=False, edgecolor=style.INK, label=RAW),
               Patch(fill=False, edgecolor=style.MUTED, label=REMOVED)]
    ax.legend(handles=handles, loc="upper right", fontsize=9, frameon=False)


# --- kernel-free explorer -------------------------------------------------------------
# Its controls: a context, a temperature, and no rule or one rule at one setting. Every
# combination's distribution is computed here (``surviving``, the sampler's) and stored in the
# figure: the page only looks it up, so it needs no rule code (plain Vega-Lite, as JupyterLab
# draws it) and shows exactly the package's numbers.
STATIC_TEMPERATURES = (0.0, 0.5, 0.7, 1.0, 1.5, 2.0)
STATIC_RULES = {"top_k": (1, 2, 3, 5, 10, 20, 40),
                "top_p": (0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99),
                "min_p": (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5),
                "typical_p": (0.2, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99),
                "epsilon": (1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1),
                "eta": (1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1)}
RULE_LABELS = {name: registry.RULE[name].label for name in STATIC_RULES}
UNITS = 10_000  # a stored probability is an integer number of 1/UNITS


def rule_choices(vocab_size: int) -> list[tuple[str, dict]]:
    """The explorer's rule control: ``(label, settings)`` for no rule, then each rule of
    ``STATIC_RULES`` at each of its settings (top-k below the vocabulary's size)."""
    out = [("none", {})]
    for name, values in STATIC_RULES.items():
        out += [(f"{RULE_LABELS[name]} {v:g}", {name: v}) for v in values
                if name != "top_k" or v < vocab_size]
    return out


def static_sliders(context_names: Sequence[str],
                   choices: Sequence[tuple[str, dict]]) -> list[Slider]:
    """The explorer's controls: a context, a temperature and a rule (each value an index)."""
    temps = STATIC_TEMPERATURES
    return [Slider("context", range(len(context_names)), 0, "context",
                   fmt=lambda i: context_names[i]),
            Slider("temperature", range(len(temps)), temps.index(1.0), "temperature",
                   fmt=lambda i: "0 (greedy)" if temps[i] == 0 else f"{temps[i]:g}"),
            Slider("rule", range(len(choices)), 0, "rule", fmt=lambda i: choices[i][0])]


def encode_distribution(probs: Sequence[float], order: Sequence[int]) -> str:
    """A distribution as the explorer stores it: the probabilities in ``order`` (the raw
    ranking), each in units of 1/UNITS, a character the rules removed as an empty cell (one
    they kept is never empty, at worst "0"), separated by spaces, without trailing empty
    cells."""
    cells = ["" if probs[i] == 0 else str(round(probs[i] * UNITS)) for i in order]
    return " ".join(cells).rstrip(" ")


def decode_distribution(cells: str, vocab_size: int, order: Sequence[int]) -> list[float | None]:
    """``encode_distribution`` undone: per id, the probability, or None where removed."""
    out: list[float | None] = [None] * vocab_size
    for i, cell in zip(order, cells.split(" ")):
        out[i] = None if cell == "" else int(cell) / UNITS
    return out


def state_index(context: int, temperature: int, rule: int, n_rules: int) -> int:
    """The row of the explorer's ``states`` data for the controls' indices."""
    return (context * len(STATIC_TEMPERATURES) + temperature) * n_rules + rule


def _context_states(logits: torch.Tensor, order: list[int], choices) -> list[dict]:
    """One context's rows of the ``states`` data, temperature by rule, in index order."""
    rows = []
    for t in STATIC_TEMPERATURES:
        for _, rule in choices:
            probs = surviving(logits, temperature=t, **rule)
            bits = abs(rules.entropy_bits(probs.log()).item())
            rows.append({"bits": round(bits, 2),
                         "p": encode_distribution(probs.tolist(), order)})
    return rows


def explorer_data(model, tok, contexts: dict[str, str] | None = None) -> dict:
    """What the kernel-free explorer stores: per context its ``name``, ``text``, ``logits``
    (V, float64) and ``order`` (ids by raw probability, ties to the lower id); the rule
    ``choices``; ``chars``, a row per context and character ``{ctx, r0, id, ch, raw_p}``
    (``r0`` the raw rank from 1); ``states``, a row ``{s, bits, p}`` per combination of the
    controls (``state_index``): the distribution ``p`` (``encode_distribution``) and its
    entropy in bits."""
    contexts = CONTEXTS if contexts is None else contexts
    choices = rule_choices(len(tok.chars))
    out = {"contexts": [], "choices": choices, "chars": [], "states": []}
    for c, (name, text) in enumerate(contexts.items()):
        logits = next_logits(model, tok, text)
        order = torch.sort(logits, descending=True, stable=True).indices.tolist()
        raw = torch.softmax(logits, -1).tolist()
        out["contexts"].append({"name": name, "text": text, "logits": logits, "order": order})
        out["chars"] += [{"ctx": c, "r0": r + 1, "id": i, "ch": char_label(tok.chars[i]),
                          "raw_p": raw[i]} for r, i in enumerate(order)]
        out["states"] += _context_states(logits, order, choices)
    out["states"] = [{"s": s, **row} for s, row in enumerate(out["states"])]
    return out


# The chart's names: "the model's own" is p, the model's distribution before any rule or
# penalty (never anything else); what the rules and penalties leave is "after the rules".
FINAL, RAW = "after the rules (renormalised)", "the model's own"
REMOVED = "removed by the rules"


def _quote(text: str) -> str:
    """``text`` as a string literal of a Vega expression (an apostrophe needs no escape)."""
    return json.dumps(text)


def _bar_colour_and_axis():
    """The bars' colour (after the rules, the model's own, grey where removed) and their
    character axis, shared by ``_bars`` and ``top_and_rest_bars``."""
    import altair as alt

    series = alt.Color("sname:N", legend=alt.Legend(title=None), scale=alt.Scale(
        domain=[FINAL, RAW, REMOVED], range=[style.PALETTE[0], style.INK, style.MUTED]))
    colour = alt.condition("datum.series == 'raw_p' && !datum.kept",
                           alt.value(style.MUTED), series)
    axis = alt.Axis(labelAngle=0, labelOverlap=False, labelFont=style.MONOSPACE,
                    labelPadding=3)
    return colour, axis


def _bars(width: int, height: int):
    """Per character (in the order of the model's own probability, ``r0``) the model's own
    probability ``raw_p`` as an outline (grey where the rules removed the character: ``kept``
    false), the one after the rules ``pf`` solid."""
    import altair as alt

    colour, axis = _bar_colour_and_axis()
    enc = {"x": alt.X("ch:N", title=None, axis=axis,
                      sort=alt.EncodingSortField(field="r0", op="min")),
           "xOffset": alt.XOffset("sname:N", sort=[FINAL, RAW]),
           "y": alt.Y("prob:Q", title="probability"), "color": colour,
           "tooltip": [alt.Tooltip("ch:N", title="character"),
                       alt.Tooltip("raw_p:Q", title=RAW, format=".4f"),
                       alt.Tooltip("pf:Q", title=FINAL, format=".4f")]}
    base = (alt.Chart().transform_fold(["raw_p", "pf"], as_=["series", "prob"])
            .transform_calculate(sname=f"datum.series == 'pf' ? {_quote(FINAL)} : {_quote(RAW)}")
            .encode(**enc))
    solid = base.mark_bar().transform_filter("datum.series == 'pf'")
    outline = base.mark_bar(filled=False, strokeWidth=1.2).transform_filter(
        "datum.series == 'raw_p'")
    return alt.layer(solid, outline).properties(width=width, height=height)


TRUNCATION_SHOWN = 20  # the truncation chart's bars: the model's 20 most probable, then "rest"
TRUNCATION_REST = "rest"


def top_and_rest_bars(width: int, height: int):
    """The truncation chart's bars, from the ``chars`` rows: the model's
    ``TRUNCATION_SHOWN`` most probable characters (by its own probability, ``r0``), then one
    bar ``TRUNCATION_REST`` for all the others together. Each bar is what the rules leave,
    ``pf`` (summed over the rest), solid, with the model's own probability ``raw_p`` as an
    outline over it at the same place; a bar the rules removed entirely keeps a grey
    outline. The live truncation explorer draws these (with 63 characters side by side no
    bar could be read; with 21 each can); the kernel-free one keeps ``_bars``, every
    character."""
    import altair as alt

    colour, axis = _bar_colour_and_axis()
    rest = json.dumps(TRUNCATION_REST)
    enc = {"x": alt.X("slot:N", title=None, axis=axis,
                      sort=alt.EncodingSortField(field="r0", op="min")),
           "y": alt.Y("prob:Q", title="probability"), "color": colour,
           "tooltip": [alt.Tooltip("what:N", title="character"),
                       alt.Tooltip("raw_p:Q", title=RAW, format=".4f"),
                       alt.Tooltip("pf:Q", title=FINAL, format=".4f")]}
    base = (alt.Chart()
            .transform_calculate(slot=f"datum.r0 <= {TRUNCATION_SHOWN} ? datum.ch : {rest}",
                                 kept1="datum.kept ? 1 : 0")
            .transform_aggregate(raw_p="sum(raw_p)", pf="sum(pf)", r0="min(r0)",
                                 n_kept="sum(kept1)", n="count()", groupby=["slot"])
            .transform_calculate(
                kept="datum.n_kept > 0",
                what=f"datum.slot === {rest} ? 'the other ' + datum.n + ' together' "
                     ": datum.slot")
            .transform_fold(["raw_p", "pf"], as_=["series", "prob"])
            .transform_calculate(sname=f"datum.series == 'pf' ? {json.dumps(FINAL)} : "
                                       f"{json.dumps(RAW)}")
            .encode(**enc))
    solid = base.mark_bar().transform_filter("datum.series == 'pf'")
    outline = base.mark_bar(filled=False, strokeWidth=1.5).transform_filter(
        "datum.series == 'raw_p'")
    return alt.layer(solid, outline).properties(width=width, height=height)


def summary_transforms() -> list[dict]:
    """From the rows of one distribution, one row (the most probable character after the
    rules, ties to the lower ``r0``) with ``n_kept`` and ``n`` characters, ``mass`` (the
    model's own probability of the kept ones), ``raw_bits`` (the entropy of the model's own
    distribution, ``raw_p``: no rule or penalty changes it) and ``best``, its probability
    after the rules."""
    best_first = [{"field": "pf", "order": "descending"}, {"field": "r0", "order": "ascending"}]
    return [{"calculate": "datum.kept ? 1 : 0", "as": "kept1"},
            {"calculate": "datum.kept ? datum.raw_p : 0", "as": "mass1"},
            {"calculate": "datum.raw_p > 0 ? -datum.raw_p * log(datum.raw_p) / LN2 : 0",
             "as": "raw_h1"},
            {"joinaggregate": [{"op": "sum", "field": "kept1", "as": "n_kept"},
                               {"op": "count", "as": "n"},
                               {"op": "sum", "field": "mass1", "as": "mass"},
                               {"op": "sum", "field": "raw_h1", "as": "raw_bits"}]},
            {"window": [{"op": "row_number", "as": "best_r"}], "sort": best_first},
            {"filter": "datum.best_r == 1"}, {"calculate": "datum.pf", "as": "best"}]


def _summary(width: int):
    """The caption under the chart, from the rows and their ``bits`` (the entropy after the
    rules): what the rules kept, both entropies, each named, and the most probable now."""
    import altair as alt

    line1 = ("'kept ' + datum.n_kept + ' of ' + datum.n + ' characters, holding ' + "
             "format(100 * datum.mass, '.1f') + " + _quote(f"% of {RAW} probability"))
    line2 = ("'entropy after the rules ' + format(datum.bits, '.2f') + "
             + _quote(f" bits; {RAW} ") + " + format(datum.raw_bits, '.2f') + ' bits'")
    line3 = ("'most probable after the rules: \u201c' + datum.ch + '\u201d at ' + "
             "format(datum.best, '.3f')")
    return (alt.Chart(transform=summary_transforms())
            .transform_calculate(caption=f"[{line1}, {line2}, {line3}]")
            .mark_text(align="left", baseline="top", font=style.MONOSPACE,
                       fontSize=style.FONT_SIZES["caption"], lineHeight=CAPTION_LINE_PX)
            .encode(x=alt.value(0), y=alt.value(2), text="caption:N")
            .properties(width=width, height=3 * CAPTION_LINE_PX + 4))


def distribution_chart(width: int, height: int, title, data: str):
    """The explorers' chart of one distribution: the bars and the caption under them, of
    the named dataset ``data``, rows ``{id, ch, r0, raw_p, pf, kept, bits}`` (``bits``: the
    entropy of ``pf``, the same on every row). The live explorers' page computes them with
    ``decoding.js``; the kernel-free explorer looks them up (``StaticChart``)."""
    import altair as alt

    # the legend is the bars' own (resolved independently), so it sits under their title
    bars = _bars(width, height).properties(title=title)
    return alt.vconcat(bars, _summary(width), data=alt.NamedData(name=data),
                       spacing=6).resolve_legend(color="independent")


def lookup_transforms(values: dict[str, str], n_rules: int) -> list[dict]:
    """The kernel-free explorer's only transforms: the ``chars`` rows of the chosen context
    get the chosen state's ``bits`` and ``p`` (``lookup``), and their own cell of it:
    ``kept`` and ``pf``. ``values``: Vega expressions of the controls' indices."""
    state = (f"(({values['context']}) * {len(STATIC_TEMPERATURES)} + ({values['temperature']}))"
             f" * {n_rules} + ({values['rule']})")
    return [{"filter": f"datum.ctx == ({values['context']})"},
            {"calculate": state, "as": "s"},
            {"lookup": "s", "from": {"data": {"name": "states"}, "key": "s",
                                     "fields": ["bits", "p"]}},
            {"calculate": "split('' + datum.p, ' ')[datum.r0 - 1]", "as": "cell"},
            {"calculate": "isValid(datum.cell) && datum.cell !== ''", "as": "kept"},
            {"calculate": f"datum.kept ? toNumber(datum.cell) / {UNITS} : 0", "as": "pf"}]


class StaticChart:
    """The kernel-free explorer's Vega-Lite chart, for ``SliderFigure(vega=...)``: the
    distribution of the chosen state looked up in the stored data (``lookup_transforms``)."""

    def __init__(self, titles: list[str], n_rules: int):
        self.titles, self.n_rules = titles, n_rules  # a title per context

    def __call__(self, values: dict[str, str], width: int, height: int):
        title = frame_title(pick(self.titles, f"({values['context']})"))
        chart = distribution_chart(width, height, title, "chars")
        chart.transform = lookup_transforms(values, self.n_rules)
        return chart


def static_explorer(model, tok, contexts: dict[str, str] | None = None) -> SliderFigure:
    """A kernel-free SliderFigure over the next-character distributions at ``contexts``: a
    context, a temperature and a rule (``rule_choices``) to choose."""
    data = explorer_data(model, tok, contexts)
    sliders = static_sliders([c["name"] for c in data["contexts"]], data["choices"])
    titles = ["next character after \u2026" + c["text"][-24:].replace("\n", style.NEWLINE)
              for c in data["contexts"]]
    return SliderFigure(sliders, vega=StaticChart(titles, len(data["choices"])), data=data,
                        datasets={"chars": data["chars"], "states": data["states"]},
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
        return html.escape(part).replace("\n", style.NEWLINE + "<br>")

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
            grid_template_columns="repeat(auto-fill, minmax(26em, 1fr))", max_width="960px"))
        self.box = w.VBox([self.text, self.tail, grid, w.HBox(buttons), self.status, self.chart],
                          layout=w.Layout(width="100%", max_width="960px"))

    def _make_sliders(self, w) -> dict:
        """A slider per setting, its label, range, step and resting value the registry's."""
        style, layout = {"description_width": "12em"}, w.Layout(width="auto")
        out = {}
        for name in SETTINGS:
            setting = registry.SETTINGS[name]
            spec = setting.slider
            common = dict(value=self._size(setting.rest), min=self._size(spec.low),
                          max=self._size(spec.high), step=spec.step, description=spec.label,
                          continuous_update=False, style=style, layout=layout)
            if setting.valid.integer:
                out[name] = w.IntSlider(**common)
            else:  # as many decimals as the step has, at least two
                decimals = max(2, len(f"{spec.step:g}".partition(".")[2]))
                out[name] = w.FloatSlider(readout_format=f".{decimals}f", **common)
        return out

    def _size(self, value):
        """A slider's value, ``registry.VOCAB`` standing for the vocabulary's size."""
        return self.V if value == registry.VOCAB else value

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
        except ValueError as e:  # an unknown character, an empty box: no stale chart
            self.status.value = _error_html(e)
            self.chart.value = b""
            return
        fig, ax = plt.subplots(figsize=(9.6, 3.0), dpi=100)
        plot_distribution(ax, logits, self.tok, title="next character", **self.config())
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", bbox_inches="tight")
        plt.close(fig)
        self.chart.value = buffer.getvalue()
        self.status.value = html.escape(
            f"kept {summary['kept']} of {self.V} characters; entropy after the rules "
            f"{summary['entropy_bits']:.2f} bits, the model's own {summary['model_bits']:.2f}"
            f" bits; most probable kept: {summary['top5']}")

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
            s.value = self._size(registry.SETTINGS[name].rest)


def live_explorer(model, tok, context: str = START_OF_WORD, seed: int = 0,
                  line_chars: int = 120):
    """An ipywidgets explorer bound to ``model``: a context box, a slider per rule, the
    next-character chart, and buttons that sample one character or continue the line with
    ``slm.generate`` under the current settings (seeds ``seed``, ``seed + 1``, ...)."""
    return LiveExplorer(model, tok, context, seed, line_chars).box
