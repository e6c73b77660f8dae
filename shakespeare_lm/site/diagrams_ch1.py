"""Chapter 1's diagram: a decoder-only model against an encoder-decoder model.

    python -m shakespeare_lm.site.diagrams_ch1 [--out notebooks/diagrams]

writes ``encoder_decoder.svg`` in the style of ``shakespeare_lm.site.diagrams`` (its
canvas, colours and byte-stable SVG). The decoder-only panel counts the layers of the
shipped model's preset; nothing else is measured.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

from ..model import PRESETS
from .svg import redraw_command, COLOUR, OUT_DIR, SVG_RC, Canvas, save_svg, tint

INPUT = (tint(COLOUR["sky"], 0.35), COLOUR["blue"])        # fill, edge: tokens read
STACK = (tint(COLOUR["orange"], 0.35), COLOUR["vermillion"])  # layers
OUTPUT = (tint(COLOUR["green"], 0.3), COLOUR["green"])     # the next token
FED_BACK = COLOUR["blue"]
ROWS = {"title": 18, "next": 62, "stack": 146, "input": 236}   # centres, y down
HEIGHT = 268
ALT = ("Two block diagrams. Decoder-only: one stack of causal layers reads the prompt and "
       "the tokens generated so far and predicts the next token, which is fed back. "
       "Encoder-decoder: an encoder reads the source once; a decoder with causal "
       "self-attention and cross-attention to the encoder reads the output so far and "
       "predicts the next token, which is fed back.")


def block(c: Canvas, x: float, y: float, w: float, h: float, lines: list[str],
          colours: tuple) -> None:
    """A box centred on (x, y): a bold first line over smaller lines of detail."""
    fc, ec = colours
    c.box(x, y, w, h, fc=fc, ec=ec, lw=1.5)
    top = y - 8.5 * (len(lines) - 1)
    for i, line in enumerate(lines):
        c.text(x, top + 17 * i, line, size="size" if i == 0 else "small",
               weight="bold" if i == 0 else "normal")


def fed_back(c: Canvas, x_from: float, x_line: float, x_to: float) -> None:
    """The loop from the next-token box (right side) down into the input box."""
    c.line([x_from, x_line, x_line], [ROWS["next"], ROWS["next"], ROWS["input"]],
           colour=FED_BACK, lw=1.6)
    c.arrow((x_line, ROWS["input"]), (x_to, ROWS["input"]), colour=FED_BACK, lw=1.6)


def up(c: Canvas, x: float, y_from: float, y_to: float) -> None:
    c.arrow((x, y_from), (x, y_to))


def encoder_decoder_figure(n_layer: int) -> Canvas:
    """Left: decoder-only (this book's model). Right: encoder-decoder."""
    c = Canvas(HEIGHT)
    # decoder-only
    x = 172
    c.text(x, ROWS["title"], "decoder-only (our model, GPT)", weight="bold", size="large")
    block(c, x, ROWS["next"], 140, 34, ["next token"], OUTPUT)
    block(c, x, ROWS["stack"], 300, 80,
          [f"{n_layer} causal self-attention layers", "one stack reads the prompt (prefill)",
           "and writes the answer (decode)"], STACK)
    block(c, x, ROWS["input"], 300, 42, ["prompt + tokens generated so far"], INPUT)
    up(c, x, ROWS["input"] - 21, ROWS["stack"] - 40 + 80)
    up(c, x, ROWS["stack"] - 40, ROWS["next"] + 17)
    fed_back(c, x + 70, x + 172, x + 150)
    c.text(x + 178, (ROWS["next"] + ROWS["input"]) / 2, "fed\nback", ha="left",
           size="small", color=FED_BACK, weight="bold")
    # encoder-decoder
    enc, dec = 470, 640
    c.text((enc + dec) / 2, ROWS["title"], "encoder-decoder (original transformer, T5)",
           weight="bold", size="large")
    block(c, enc, ROWS["stack"], 132, 80, ["encoder", "bidirectional", "run once"], STACK)
    block(c, enc, ROWS["input"], 132, 42, ["source tokens"], INPUT)
    block(c, dec, ROWS["stack"], 160, 80,
          ["decoder", "causal self-attention", "+ cross-attention"], STACK)
    block(c, dec, ROWS["input"], 160, 42, ["output so far"], INPUT)
    block(c, dec, ROWS["next"], 120, 34, ["next token"], OUTPUT)
    up(c, enc, ROWS["input"] - 21, ROWS["stack"] + 40)
    up(c, dec, ROWS["input"] - 21, ROWS["stack"] + 40)
    up(c, dec, ROWS["stack"] - 40, ROWS["next"] + 17)
    c.arrow((enc + 66, ROWS["stack"]), (dec - 80, ROWS["stack"]))
    c.text(enc, ROWS["next"] - 6, "its states: computed once,", size="small",
           style="italic")
    c.text(enc, ROWS["next"] + 10, "read at every decoder step", size="small",
           style="italic")
    fed_back(c, dec + 60, dec + 92, dec + 80)
    return c


def write(out_dir: Path = OUT_DIR) -> Path:
    """Draw ``encoder_decoder.svg`` into ``out_dir``."""
    n_layer = PRESETS["shakespeare"].n_layer
    with matplotlib.rc_context(SVG_RC):
        canvas = encoder_decoder_figure(n_layer)
    path = Path(out_dir) / "encoder_decoder.svg"
    save_svg(canvas, path, ALT, {"n_layer": n_layer})
    return path


def main(argv: list[str] | None = None) -> None:
    redraw_command(write, "chapter 1's diagram", argv)


if __name__ == "__main__":
    main()
