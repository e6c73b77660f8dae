"""Live explorers: the real model, running in the reader's browser on the static site.

    from shakespeare_lm.site import live
    live.explorer("truncation")    # chapter 3: every rule on your own context, and samples
    live.explorer("step")          # chapter 1: one character at a time, the KV cache filling
    live.explorer("speculative")   # chapter 6: draft proposals kept or rejected, acceptance
    live.explorer("beam")          # chapter 2: the beams as a tree that grows step by step
    live.explorer("builder")       # chapter 1: the reader picks each character; its score
    live.explorer("race")          # chapter 6: plain against speculative, timed in the browser

Each returns an HTML fragment (an ``IPython.display.HTML``): a text box for the reader's
context, Sample and Continue buttons and a view. On the built site, a page that has one
gets the scripts of ``_static`` that ``book/_ext/live_explorers.py`` lists (``SCRIPTS``), in
this order: ``live/rules.js`` (what the browser needs of the registry of the decoding rules,
``shakespeare_lm.site.browser_rules``), ``slm_vega.js`` (Vega, and the site's script
loader), ``slm_runtime.js`` (ONNX Runtime Web running the graphs of
``python -m shakespeare_lm.interop.export``, and ``decoding.js``, the JavaScript copy of
``shakespeare_lm.decoding``; ``make book`` vendors them), ``slm_explorers.js``, which mounts
the fragment, and the explorers with a file of their own (``slm_beam.js``,
``slm_builder.js``, ``slm_race.js``). No kernel and no network: it works from ``file://``
and when served. Outside the site (in JupyterLab) there is no ``_static``
folder, so the fragment says where the live version runs; the chapters' ipywidgets
explorers are bound to the Python model there.
"""

from __future__ import annotations

import html
import json

from .explorer import START_OF_WORD as DEFAULT_CONTEXT  # the explorers' usual context

KINDS = {
    "truncation": "Your context, every truncation rule, and continuations under them",
    "step": "Generation one character at a time, and the KV cache filling",
    "speculative": "Speculative decoding live: the draft model proposes, the target verifies",
    "beam": "Beam search live: the beams on your own context, step by step",
    "builder": "Build a text yourself: choose each next character, and see its score",
    "race": "Race: plain decoding against speculative decoding with the n-gram draft, timed "
            "in this browser",
}

# On the site (Sphinx writes data-content_root on <html>) the page's scripts mount every
# .slm-live element; this asks them again for the elements that came after them.
_LOADER = """(function () {
  var box = document.currentScript.parentNode, fallback = box.querySelector(".slm-fallback");
  if (document.documentElement.getAttribute("data-content_root") === null) {
    fallback.textContent = "The live model runs on the book's static site (make book, " +
      "then open _build/html/index.html); in JupyterLab, use the chapter's ipywidgets explorer.";
  } else if (window.slmExplorers) {
    window.slmExplorers.mountAll();
  } else {
    fallback.textContent = "The live model's scripts are missing from this page: " +
      "build the site with make book.";
  }
})();"""


def explorer_html(kind: str = "truncation", context: str = DEFAULT_CONTEXT, seed: int = 0,
                  title: str | None = None) -> str:
    """The HTML fragment of one live explorer (see the module docstring)."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is invalid: kind must be one of {sorted(KINDS)}")
    if not context:
        raise ValueError("context is empty: the model needs at least one character")
    config = {"kind": kind, "context": context, "seed": int(seed), "title": title or KINDS[kind]}
    payload = json.dumps(config).replace("</", "<\\/")
    # no random ids: a notebook's stored output must be the same on every run (nbval)
    return (f'<div class="slm-live" data-kind="{kind}" style="font-family:sans-serif;'
            f'font-size:13px;margin:.5em 0;max-width:900px">'
            f'<script type="application/json">{payload}</script>'
            f'<div class="slm-fallback" style="color:#555">{html.escape(config["title"])}: '
            f'loading the live model\u2026</div>'
            f'<script>{_LOADER}</script></div>')


def explorer(kind: str = "truncation", context: str = DEFAULT_CONTEXT, seed: int = 0,
             title: str | None = None):
    """A live explorer for a notebook cell: an ``IPython.display.HTML`` object."""
    from IPython.display import HTML

    return HTML(explorer_html(kind, context, seed, title))


# --- the explorers' charts: Vega-Lite specs that the page feeds ---------------------
def _live_spec(chart, params: dict, datasets: dict) -> dict:
    """A chart whose parameters the page sets (no inputs of its own), in the style."""
    import altair as alt

    from . import style
    from .figures import EMBED_OPTIONS

    chart = chart.add_params(*(alt.param(name=k, value=v) for k, v in params.items()))
    return chart.properties(datasets=datasets, config=style.vega_config(),
                            usermeta={"embedOptions": EMBED_OPTIONS}).to_dict()


def truncation_chart() -> dict:
    """The truncation explorer's chart (``explorer.distribution_chart``): the page puts the
    distribution after the reader's context in the ``chars`` dataset, rows ``{id, ch, r0,
    raw_p, pf, kept, bits}`` computed by ``decoding.js`` (every character of the
    vocabulary), and sets ``title``. Its bars are the 20 most probable characters and the
    rest together (``explorer.top_and_rest_bars``)."""
    from . import style
    from .explorer import distribution_chart, top_and_rest_bars
    from .figures import frame_title

    width, title = style.FIGURE_WIDTH_PX - style.PLOT_MARGIN_PX, frame_title({"expr": "title"})
    chart = distribution_chart(width, 230, title, "chars")
    chart.vconcat[0] = top_and_rest_bars(width, 230).properties(title=title)
    return _live_spec(chart, {"title": ""}, {"chars": []})


STEP_DRAWN_FROM = "the distribution drawn from"
STEP_DRAWN = "the character drawn"
STEP_OWN = "the model's own, T = 1"


def step_chart() -> dict:
    """The step explorer's chart: the page puts the model's 20 most probable next characters
    (and the drawn one, if it is not among them) in the ``top`` dataset, rows ``{rank, ch, p,
    raw_p, drawn}``: ``p`` the distribution the character was drawn from (after the
    temperature), ``raw_p`` the model's own; and sets ``title``. ``p`` is drawn as solid bars
    (the drawn character in its own colour), ``raw_p`` as an outline over them."""
    import altair as alt

    from . import style
    from .figures import frame_title

    scale = alt.Scale(domain=[STEP_DRAWN_FROM, STEP_DRAWN, STEP_OWN],
                      range=[style.PALETTE[0], style.PALETTE[3], style.INK])
    x = alt.X("ch:N", title=None, sort=alt.EncodingSortField(field="rank", op="min"),
              axis=alt.Axis(labelAngle=0, labelFont=style.MONOSPACE))
    tooltip = [alt.Tooltip("ch:N", title="character"),
               alt.Tooltip("p:Q", title=STEP_DRAWN_FROM, format=".4f"),
               alt.Tooltip("raw_p:Q", title=STEP_OWN, format=".4f")]
    base = alt.Chart(alt.NamedData(name="top")).encode(x=x, tooltip=tooltip)
    solid = (base.mark_bar()
             .transform_calculate(what=f"datum.drawn ? {json.dumps(STEP_DRAWN)} : "
                                       f"{json.dumps(STEP_DRAWN_FROM)}")
             .encode(y=alt.Y("p:Q", title="probability"),
                     color=alt.Color("what:N", scale=scale, legend=alt.Legend(title=None))))
    outline = (base.mark_bar(filled=False, strokeWidth=1.2)
               .transform_calculate(what=json.dumps(STEP_OWN))
               .encode(y=alt.Y("raw_p:Q", title="probability"),
                       color=alt.Color("what:N", scale=scale, legend=alt.Legend(title=None))))
    chart = alt.layer(solid, outline).properties(
        width=style.FIGURE_WIDTH_PX - style.PLOT_MARGIN_PX, height=200,
        title=frame_title({"expr": "title"}))
    return _live_spec(chart, {"title": ""}, {"top": []})


def chart_specs() -> dict:
    """Every live explorer's chart, by kind (``make book`` writes them for the page)."""
    return {"truncation": truncation_chart(), "step": step_chart()}
