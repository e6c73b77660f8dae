"""The drawing primitives of the book's diagrams (``diagrams.py`` and the chapters'
``diagrams_ch*.py``): the colours and text sizes of the style, a canvas whose data
coordinates are SVG pixels, and byte-stable SVG files that carry their own description.
"""

from __future__ import annotations

import argparse
import html
import json
import re
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from ..paths import ROOT
from . import style
from .style import VISIBLE, visible  # noqa: F401  (the diagrams import them from here)

# the book's colours (style.py: Okabe and Ito's, told apart under every common
# colour-vision deficiency, and its greys), by the names the drawings use
COLOUR = {**style.COLOURS, "grey": style.GREY, "pale": style.PALE, "text": style.INK,
          "muted": style.FAINT_INK}
TEXT = {"family": ["DejaVu Sans", "sans-serif"],
        "mono": ["DejaVu Sans Mono", "monospace"],
        "size": 12.5, "small": 12.2, "large": 14.5}

WIDTH_PX = 740
OUT_DIR = ROOT / "notebooks" / "diagrams"  # beside the chapters, which JupyterLab serves
SVG_RC = {"svg.hashsalt": "shakespeare_lm.site.diagrams", "svg.fonttype": "none",
          "font.family": TEXT["family"], "font.size": TEXT["size"],
          "text.color": COLOUR["text"], "hatch.linewidth": 0.8}


def tint(colour: str, alpha: float) -> tuple[float, float, float]:
    """``colour`` mixed with white: an opaque pale fill that keeps its hue."""
    return tuple(1 - alpha * (1 - c) for c in matplotlib.colors.to_rgb(colour))


def signed(x: float, digits: int) -> str:
    """``x`` to ``digits`` decimals with a typographic minus sign."""
    return f"{x:.{digits}f}".replace("-", "\u2212")


# --- the canvas: pixel coordinates, y pointing down -----------------------------------
class Canvas:
    """A matplotlib figure whose data coordinates are SVG pixels, y pointing down."""

    def __init__(self, height: int):
        self.fig = Figure(figsize=(WIDTH_PX / 72, height / 72))
        self.ax = self.fig.add_axes((0, 0, 1, 1))
        self.ax.set_xlim(0, WIDTH_PX)
        self.ax.set_ylim(height, 0)
        self.ax.axis("off")

    def text(self, x, y, s, *, size="size", ha="center", va="center", **kw):
        self.ax.text(x, y, s, fontsize=TEXT[size], ha=ha, va=va, **kw)

    def box(self, x, y, w, h, *, fc="white", ec=COLOUR["black"], lw=1.2, ls="-",
            radius=6.0):
        """A rounded box centred on (x, y), w x h pixels."""
        style = f"round,pad=0,rounding_size={radius}"
        self.ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle=style,
                                         fc=fc, ec=ec, lw=lw, ls=ls))

    def rect(self, x0, y0, w, h, **kw):
        """A plain rectangle from its top-left corner (x0, y0)."""
        self.ax.add_patch(Rectangle((x0, y0), w, h, **kw))

    def arrow(self, start, end, *, colour=COLOUR["black"], lw=1.3):
        self.ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>",
                                          mutation_scale=13, color=colour, lw=lw,
                                          shrinkA=0, shrinkB=0))

    def line(self, xs, ys, *, colour=COLOUR["black"], lw=1.2, ls="-", zorder=1):
        self.ax.plot(xs, ys, color=colour, lw=lw, ls=ls, solid_capstyle="butt",
                     zorder=zorder)

    def legend(self, x, y, items) -> None:
        """A row of (label, fill, edge, line style, hatch) swatches."""
        for label, fc, ec, ls, hatch in items:
            self.rect(x, y - 8, 26, 16, fc=fc, ec=ec, lw=1.3, ls=ls, hatch=hatch)
            self.text(x + 34, y, label, ha="left")
            x += 60 + 7.2 * len(label)


def save_svg(canvas: Canvas, path: Path, title: str, description: dict) -> None:
    """Write the canvas as a byte-stable SVG sized in pixels, with ``title`` as its
    accessible name and ``description`` (JSON) in its metadata."""
    metadata = {"Date": None, "Creator": "shakespeare_lm.site.diagrams", "Title": title,
                "Description": json.dumps(description, sort_keys=True)}
    path.parent.mkdir(parents=True, exist_ok=True)
    with matplotlib.rc_context(SVG_RC):
        canvas.fig.savefig(path, format="svg", metadata=metadata)
    svg = re.sub(r'(<svg[^>]*?)width="([\d.]+)pt" height="([\d.]+)pt"',
                 r'\1width="\2px" height="\3px"', path.read_text("utf-8"), count=1)
    path.write_text(svg, "utf-8")


def svg_description(path: Path) -> dict:
    """The JSON ``description`` a diagram was saved with (``save_svg``)."""
    found = re.search(r"<dc:description>(.*?)</dc:description>",
                      Path(path).read_text("utf-8"), re.S)
    if found is None:
        raise ValueError(f"{path} has no <dc:description>: save_svg did not write it")
    return json.loads(html.unescape(found.group(1)))


# --- 1. the beam-search tree ----------------------------------------------------------


def save_all(drawn: dict, alt: dict, out_dir: Path) -> list[Path]:
    """Save each ``name: (canvas, description)`` of ``drawn`` into ``out_dir`` with its alt
    text ``alt[name]``; the paths written, in order."""
    paths = []
    for name, (canvas, description) in drawn.items():
        paths.append(Path(out_dir) / name)
        save_svg(canvas, paths[-1], alt[name], description)
    return paths


def redraw_command(write, what: str, argv: list[str] | None = None) -> None:
    """The command line of a diagrams module: ``--out`` a folder, ``write(out)`` the
    diagrams into it, and print the paths written."""
    parser = argparse.ArgumentParser(description=f"Redraw {what} as SVG.")
    parser.add_argument("--out", type=Path, default=OUT_DIR,
                        help="folder for the SVGs (default: notebooks/diagrams)")
    written = write(parser.parse_args(argv).out)
    for path in written if isinstance(written, list) else [written]:
        print(path)

