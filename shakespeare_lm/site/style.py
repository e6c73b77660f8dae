"""The book's one figure style: palette, font sizes and widths, for matplotlib and
Vega-Lite alike.

    from shakespeare_lm.site import style
    style.use()      # in a chapter's setup cell: matplotlib rcParams + the Altair theme
    style.PALETTE    # the colours, in the order series get them
    style.COLOURS    # the same colours by name: style.COLOURS["vermillion"]

The palette is Okabe and Ito's (2008), chosen to stay distinct under the common forms of
colour blindness. Figures are as wide as the book's page column (``FIGURE_WIDTH_PX``),
so a figure is shown at its own size and its text at the sizes below: labels are never
smaller than ``FONT_SIZES["tick"]`` pixels. The kernel-free figures
(``shakespeare_lm.site.figures``) always use ``vega_config()``, whether or not ``use()`` was
called; the diagrams (``shakespeare_lm.site.diagrams``) are drawn in these colours too.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import warnings

# Okabe & Ito, "Color Universal Design" (2008), by name (green is their bluish green,
# purple their reddish purple), in the order series get them
COLOURS = {"blue": "#0072B2", "orange": "#E69F00", "green": "#009E73",
           "vermillion": "#D55E00", "purple": "#CC79A7", "sky": "#56B4E9",
           "yellow": "#F0E442", "black": "#000000"}
PALETTE = tuple(COLOURS.values())
GREY = "#8c8c8c"       # reference lines, things switched off
MUTED = "#c8c8c8"      # what a rule removed
INK = "#222222"        # text
FAINT_INK = "#595959"  # secondary text (indices, what was pruned): 7:1 on white
PALE = "#f2f2f2"       # a faint fill behind a box
GRID = "#e6e6e6"       # a chart's grid lines
# the two characters of the vocabulary that print as nothing, as the book shows them in
# figures, diagrams and explorers (book/_js/*.js write the same two)
SPACE, NEWLINE = "\u2423", "\u21b5"  # an open box, a return arrow
VISIBLE = {" ": SPACE, "\n": NEWLINE}
FONT = "Helvetica Neue, Helvetica, Arial, sans-serif"
MONOSPACE = "SFMono-Regular, Menlo, Consolas, monospace"


def tinted(colour: str, alpha: float) -> str:
    """``colour`` ("#rrggbb") mixed with white, ``alpha`` of it: an opaque pale fill that
    keeps its hue (``svg.tint``'s mix, as a hex string)."""
    if len(colour) != 7 or colour[0] != "#":
        raise ValueError(f"colour={colour!r} is invalid: it must be '#rrggbb'")
    channels = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(255 - alpha * (255 - c)):02x}" for c in channels)


# The live explorers' own colours (book/_js/slm_*.js, which read every colour of this module
# from live/style.js, written by make book: browser_style()). Contrast ratios are WCAG 2's.
PAPER = "#ffffff"      # white where it must be said: a pruned node's fill over the edges
FADED = "#b3b3b3"      # the outline of what was pruned, lighter than GREY (its text)
SEPARATOR = "#d9d9d9"  # a thin rule between groups: the beam tree's runners-up, a round's box
TABLE_RULE = "#bbbbbb"  # under a table's header
TEXT_BOX = "#f7f7f7"   # behind an explorer's text; its context in FAINT_INK (6.5:1 on it)
NEW_TEXT = "#e3f0ff"   # behind the characters an action just wrote (INK on it: 13.8:1)
CHOSEN = "#fbe6da"     # behind the characters the reader chose, a pale vermillion
KEPT = tinted(COLOURS["sky"], 0.35)  # a node in the beam: as the diagrams' beam tree fills it
EMPTY = "#eeeeee"      # an empty slot of the KV cache
ERROR_INK = "#bb0000"  # an explorer's error message: 6.8:1 on white
# the speculative explorer's rounds, behind INK or FAINT_INK text (5.5:1 at the least): one
# meaning each, every one named in its legend
ROUND_COLOURS = {"accepted": "#c8f0c8", "rejected": "#f6c6c6", "unchecked": "#e4e4e4",
                 "replacement": "#ffd9a0", "bonus": "#cfe0ff"}
# text sizes in pixels, as the reader sees them
FONT_SIZES = {"tick": 12, "label": 13, "title": 15, "legend": 12, "caption": 12}
# a notebook output on the book's site is 688 px wide in a 1280 px window (measured in
# Chromium): a figure this wide is shown at its own size, its text at FONT_SIZES
FIGURE_WIDTH_PX = 680
FIGURE_HEIGHT_PX = 340
# what a Vega-Lite chart's plotting area leaves of the figure's width: the y axis, its
# labels, a tick label overhanging the right end, and vega-embed's menu button
PLOT_MARGIN_PX = 130
FIGURE_DPI = 100
THEME = "shakespeare_lm"
# a log axis's labels (Vega-Lite ``labelExpr``), at the powers of ten only: 0.01, 0.1,
# 1, 10, 100, 1k, 10k, 1M
LOG_LABELS = ("abs(log(datum.value) / LN10 - round(log(datum.value) / LN10)) > 1e-6 ? '' "
              ": datum.value >= 1000 ? format(datum.value, '~s') "
              ": format(datum.value, '~g')")


def visible(text: str) -> str:
    """``text`` with spaces and newlines drawn as visible symbols (␣, ↵)."""
    return "".join(VISIBLE.get(c, c) for c in text)


def browser_style() -> dict:
    """What the live explorers read of the style (``live/style.js``, written by make book):
    every colour they draw with, the symbols of a space and a newline, the fonts."""
    return {"colours": COLOURS, "grey": GREY, "muted": MUTED, "ink": INK,
            "faint_ink": FAINT_INK, "pale": PALE, "grid": GRID, "paper": PAPER, "faded": FADED,
            "separator": SEPARATOR, "table_rule": TABLE_RULE, "text_box": TEXT_BOX,
            "new_text": NEW_TEXT, "chosen": CHOSEN, "kept": KEPT, "empty": EMPTY,
            "error_ink": ERROR_INK, "round_colours": ROUND_COLOURS, "visible": VISIBLE,
            "space": SPACE, "newline": NEWLINE, "font": FONT, "monospace": MONOSPACE}


def _mpl_rc() -> dict:
    """matplotlib rcParams for the style: sizes in points at FIGURE_DPI, so that a
    figure of FIGURE_WIDTH_PX shows its text at about the pixel sizes of FONT_SIZES."""
    from cycler import cycler

    pt = 72 / FIGURE_DPI  # points per pixel
    return {
        "figure.figsize": (FIGURE_WIDTH_PX / FIGURE_DPI, FIGURE_HEIGHT_PX / FIGURE_DPI),
        "figure.dpi": FIGURE_DPI, "savefig.dpi": FIGURE_DPI,
        "figure.constrained_layout.use": True,
        "font.family": "sans-serif",
        "font.size": FONT_SIZES["label"] * pt,
        "axes.titlesize": FONT_SIZES["title"] * pt,
        "axes.labelsize": FONT_SIZES["label"] * pt,
        "xtick.labelsize": FONT_SIZES["tick"] * pt,
        "ytick.labelsize": FONT_SIZES["tick"] * pt,
        "legend.fontsize": FONT_SIZES["legend"] * pt,
        "legend.title_fontsize": FONT_SIZES["legend"] * pt,
        "legend.loc": "best", "legend.framealpha": 0.85, "legend.frameon": True,
        "axes.prop_cycle": cycler(color=list(PALETTE)),
        "axes.spines.top": False, "axes.spines.right": False,
        "axes.grid": True, "grid.color": GRID, "grid.linewidth": 0.8,
        "axes.axisbelow": True, "text.color": INK, "axes.labelcolor": INK,
        "xtick.color": INK, "ytick.color": INK, "lines.linewidth": 2.0,
    }


def vega_config() -> dict:
    """The style's Vega-Lite ``config`` (the Altair theme's, every SliderFigure's)."""
    axis = {"labelFontSize": FONT_SIZES["tick"], "titleFontSize": FONT_SIZES["label"],
            "titleFontWeight": "normal", "labelColor": INK, "titleColor": INK,
            "gridColor": GRID, "domainColor": "#888888", "tickColor": "#888888"}
    return {
        "font": FONT,
        "axis": axis,
        "legend": {"labelFontSize": FONT_SIZES["legend"],
                   "titleFontSize": FONT_SIZES["legend"], "labelLimit": 320,
                   "symbolSize": 120, "orient": "top", "direction": "horizontal",
                   "titleOrient": "left", "columnPadding": 14},
        "title": {"fontSize": FONT_SIZES["title"], "fontWeight": "bold", "color": INK,
                  "anchor": "start", "subtitleFontSize": FONT_SIZES["label"],
                  "subtitleColor": INK, "offset": 8},
        "range": {"category": list(PALETTE)},
        "mark": {"color": PALETTE[0]},  # a mark with no colour encoding
        "text": {"fontSize": FONT_SIZES["caption"], "color": INK},
        "line": {"strokeWidth": 2},
        # reference lines dashed and grey; points white-edged, so that they stand out
        # from a line they sit on
        "rule": {"strokeDash": [5, 4], "strokeWidth": 1.5, "color": GREY},
        "circle": {"size": 90, "opacity": 1, "stroke": "white", "strokeWidth": 1},
        "view": {"stroke": None, "continuousWidth": FIGURE_WIDTH_PX - PLOT_MARGIN_PX,
                 "continuousHeight": FIGURE_HEIGHT_PX - 80},
        "padding": 6,
        # re-measure when the data or a title change (a slider moved): axes and captions
        # never end up clipped
        "autosize": {"type": "pad", "resize": True},
    }


def altair_theme() -> dict:
    """The Altair theme: ``{"config": vega_config()}``."""
    return {"config": vega_config()}


def register_altair_theme(enable: bool = True) -> None:
    """Register the Altair theme as ``THEME`` (and enable it)."""
    import altair as alt

    if THEME not in alt.theme.names():
        alt.theme.register(THEME, enable=False)(altair_theme)
    if enable:
        alt.theme.enable(THEME)


class _ThemeOnImport(importlib.abc.MetaPathFinder):
    """Registers and enables the Altair theme the moment ``altair`` is first imported.

    Importing Altair takes about 1.7 s (jsonschema and its format checkers), and most
    chapters draw only with matplotlib: ``use()`` leaves the import to the first chart, and
    this finder, placed first on ``sys.meta_path``, adds the theme right after it."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "altair":
            return None
        sys.meta_path.remove(self)  # once: the normal finders find the module
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            run_module = spec.loader.exec_module

            def run_then_register(module):
                run_module(module)
                register_altair_theme(enable=True)

            spec.loader.exec_module = run_then_register
        return spec


def use() -> None:
    """Apply the style: matplotlib rcParams, and the Altair theme registered and enabled
    (now if Altair is loaded, else as soon as something imports it)."""
    import matplotlib as mpl

    mpl.rcParams.update(_mpl_rc())
    # a chapter that still calls fig.tight_layout() switches that figure from
    # constrained to tight layout, which matplotlib announces with a warning: both
    # layouts are fine here
    warnings.filterwarnings("ignore", message="The figure layout has changed to tight")
    if "altair" in sys.modules:
        register_altair_theme(enable=True)
    elif not any(isinstance(finder, _ThemeOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _ThemeOnImport())
