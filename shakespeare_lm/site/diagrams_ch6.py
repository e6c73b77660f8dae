"""Chapter 6's diagram: Medusa's heads against an EAGLE feature head, drafting after one
context with the shipped heads.

    python -m shakespeare_lm.site.diagrams_ch6 [--out notebooks/diagrams]

writes ``draft_heads.svg`` in the style of ``shakespeare_lm.site.diagrams``. Both panels
start from the shipped model's last hidden state after ``CONTEXT`` and the character that
follows it in the text; each guess is the head's most likely character, with its
probability, as the shipped heads (``data/heads.safetensors``, ``data/eagle.safetensors``)
compute them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib
import torch
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

from ..speculative.eagle import load_feature_head
from ..speculative.heads import load_heads
from ..weights import load_pretrained
from .svg import (COLOUR, OUT_DIR, SVG_RC, TEXT, Canvas, redraw_command, save_svg, tint,
                  visible)

# from The Taming of the Shrew, a held-out play: "And woo her with some spirit when she comes"
CONTEXT = "PETRUCHIO:\nI pray you do; I'll attend her here,\nAnd woo her with some spi"
NEXT = "r"      # what follows CONTEXT in the play: the character the target draws here
STATE = (tint(COLOUR["orange"], 0.35), COLOUR["vermillion"])   # the target's state
HEAD = (tint(COLOUR["sky"], 0.35), COLOUR["blue"])              # a head's layer
GUESS = (tint(COLOUR["green"], 0.3), COLOUR["green"])           # a proposal
HEIGHT = 362
ROWS = {"title": 18, "note": 42, "guess": 104, "head": 194, "state": 286}


@dataclass(frozen=True)
class HeadFacts:
    """The guesses of both drafts after CONTEXT + NEXT: (character, probability) each."""

    medusa: list[tuple[str, float]]
    eagle: list[tuple[str, float]]


@torch.no_grad()
def head_facts(model, tok, heads, feature_head) -> HeadFacts:
    """Each draft's most likely characters after CONTEXT and NEXT, as it drafts them."""
    ids = torch.tensor([tok.encode(CONTEXT)])
    h = model(ids, return_hidden=True)[1][0, -1]            # the state after CONTEXT
    medusa = [_top(tok, row) for row in heads(h)]             # head i: i past NEXT
    eagle, fed = [], tok.encode(NEXT)[0]
    for _ in range(heads.n_heads):
        h = feature_head(h, torch.tensor(fed))
        char, p = _top(tok, feature_head.logits(h))
        eagle.append((char, p))
        fed = tok.encode(char)[0]
    return HeadFacts(medusa, eagle)


def _top(tok, logits: torch.Tensor) -> tuple[str, float]:
    probs = torch.softmax(logits.double(), -1)
    i = int(probs.argmax())
    return tok.decode([i]), round(float(probs[i]), 2)


def node(c: Canvas, x: float, y: float, w: float, text: str, colours: tuple, *,
         mono: bool = False) -> None:
    fc, ec = colours
    c.box(x, y, w, 34, fc=fc, ec=ec, lw=1.5)
    c.text(x, y, text, family=["DejaVu Sans Mono", "monospace"] if mono else None)


# a symbol with a subscript is drawn in pieces: the letter in italics, the subscript at the
# text's own size and lowered (Unicode subscripts and mathtext draw it at a third less, too
# small to read at the column's width)
PIECE = {"text": {"size": TEXT["size"]},
         "math": {"size": TEXT["large"], "style": "italic"},
         "sub": {"size": TEXT["size"], "style": "italic"}}
SUB_DROP = 5.0     # pixels a subscript sits below the line


def piece_width(text: str, kind: str) -> float:
    """The width in pixels of one piece, as the font draws it (1 pt = 1 px here)."""
    font = FontProperties(family=TEXT["family"], **PIECE[kind])
    return TextToPath().get_text_width_height_descent(text, font, ismath=False)[0]


def rich_text(c: Canvas, x: float, y: float, pieces: list[tuple[str, str]], *,
              ha: str = "center", color: str = COLOUR["text"]) -> None:
    """``pieces`` of ("text" | "math" | "sub", string) in a row, centred on x (or from x
    for ha="left"); every piece at least the text's own size."""
    # an SVG viewer drops a text's leading and trailing spaces: they become gaps instead
    gaps = [(piece_width("x" + t[: len(t) - len(t.lstrip())], k) - piece_width("x", k),
             piece_width(t.strip(), k),
             piece_width(t, k) - piece_width(t.rstrip(), k)) for k, t in pieces]
    x0 = x - sum(map(sum, gaps)) / 2 if ha == "center" else x
    for (kind, text), (before, width, after) in zip(pieces, gaps):
        c.ax.text(x0 + before, y + (SUB_DROP if kind == "sub" else 0), text.strip(),
                  ha="left", va="center", color=color, fontsize=PIECE[kind]["size"],
                  fontstyle=PIECE[kind].get("style", "normal"))
        x0 += before + width + after


def y_at(i: int) -> list[tuple[str, str]]:
    """y with the subscript t + i (t alone for i = 0), as pieces for ``rich_text``."""
    return [("math", "y"), ("sub", "t" if i == 0 else f"t+{i}")]


H_T = [("math", "h"), ("sub", "t")]


def guess_label(char: str, p: float) -> str:
    return f"\u2018{visible(char)}\u2019 {p:.2f}"


def medusa_panel(c: Canvas, guesses: list[tuple[str, float]], x0: float, w: float) -> None:
    """Every head reads the one state h_t: its guess cannot see the guesses before it."""
    c.text(x0 + w / 2, ROWS["title"], "Medusa heads", weight="bold")
    rich_text(c, x0 + w / 2, ROWS["note"], [("text", "each guess from "), *H_T,
              ("text", " alone, blind to "), *y_at(0)], color=COLOUR["muted"])
    xs = [x0 + w * (i + 1) / (len(guesses) + 1) for i in range(len(guesses))]
    node(c, x0 + w / 2, ROWS["state"], 170, "", STATE)
    rich_text(c, x0 + w / 2, ROWS["state"], [*H_T, ("text", "  (after \u2026spi)")])
    for i, (x, (char, p)) in enumerate(zip(xs, guesses)):
        node(c, x, ROWS["head"], 76, f"head {i + 1}", HEAD)
        node(c, x, ROWS["guess"], 76, guess_label(char, p), GUESS, mono=True)
        c.arrow((x0 + w / 2, ROWS["state"] - 17), (x, ROWS["head"] + 17))
        c.arrow((x, ROWS["head"] - 17), (x, ROWS["guess"] + 17))
        rich_text(c, x, ROWS["guess"] - 32, y_at(i + 1), color=COLOUR["muted"])


def eagle_panel(c: Canvas, guesses: list[tuple[str, float]], x0: float, w: float) -> None:
    """A chain: each step reads the last feature and the character drafted before it."""
    c.text(x0 + w / 2, ROWS["title"], "EAGLE feature head", weight="bold")
    c.text(x0 + w / 2, ROWS["note"], "each step sees the guess before it",
           color=COLOUR["muted"])
    xs = [x0 + 110 + (w - 110) * (i + 0.5) / len(guesses) for i in range(len(guesses))]
    fed = [NEXT] + [char for char, _ in guesses[:-1]]
    node(c, x0 + 34, ROWS["head"], 52, "", STATE)
    rich_text(c, x0 + 34, ROWS["head"], H_T)
    prev = (x0 + 60, ROWS["head"])
    for i, (x, (char, p), f) in enumerate(zip(xs, guesses, fed)):
        node(c, x, ROWS["head"], 44, "f", HEAD)
        node(c, x, ROWS["state"], 44, f"\u2018{visible(f)}\u2019", HEAD, mono=True)
        node(c, x, ROWS["guess"], 72, guess_label(char, p), GUESS, mono=True)
        c.arrow((x, ROWS["state"] - 17), (x, ROWS["head"] + 17))
        c.arrow(prev, (x - 22, ROWS["head"]))
        c.arrow((x, ROWS["head"] - 17), (x, ROWS["guess"] + 17))
        rich_text(c, x, ROWS["guess"] - 32, y_at(i + 1), color=COLOUR["muted"])
        prev = (x + 22, ROWS["head"])
        if i + 1 < len(xs):  # the guess is the next step's character
            gap = x + 40
            c.line([x + 30, gap, gap, xs[i + 1] - 22], [ROWS["guess"] + 17, ROWS["guess"] + 27,
                   ROWS["state"], ROWS["state"]], colour=COLOUR["green"], ls=(0, (3, 2)))


def draft_heads_figure(f: HeadFacts) -> Canvas:
    c = Canvas(HEIGHT)
    medusa_panel(c, f.medusa, 8, 352)
    c.line([370, 370], [10, HEIGHT - 50], colour=COLOUR["grey"], lw=1.0)
    eagle_panel(c, f.eagle, 380, 352)
    rich_text(c, 370, HEIGHT - 32, [
        ("text", "after \u201c\u2026And woo her with some spi\u201d the target draws "),
        *y_at(0), ("text", f" = \u2018{NEXT}\u2019 (the play has \u201cspirit\u201d);")],
        color=COLOUR["muted"])
    c.text(370, HEIGHT - 11, "each green box: the draft's most likely character there, "
           "and its probability", color=COLOUR["muted"])
    return c


def alt_text(f: HeadFacts) -> str:
    med = ", ".join(f"'{visible(ch)}' ({p:.2f})" for ch, p in f.medusa)
    eag = ", ".join(f"'{visible(ch)}' ({p:.2f})" for ch, p in f.eagle)
    return ("Two drafting schemes after the text 'And woo her with some spi', where the "
            "target draws "
            f"'{NEXT}'. Left, Medusa: three heads each read the same hidden state and guess "
            f"the next three characters independently: {med}. Right, EAGLE: one small layer is "
            "applied in a chain; each step reads the previous feature and the character "
            f"before its place, and guesses {eag}.")


def write(out_dir: Path = OUT_DIR) -> Path:
    """Draw ``draft_heads.svg`` into ``out_dir`` from the shipped model and heads."""
    model, tok = load_pretrained()
    facts = head_facts(model, tok, load_heads(model), load_feature_head(model))
    with matplotlib.rc_context(SVG_RC):
        canvas = draft_heads_figure(facts)
    path = Path(out_dir) / "draft_heads.svg"
    save_svg(canvas, path, alt_text(facts), {"context": CONTEXT, "next": NEXT})
    return path


def main(argv: list[str] | None = None) -> None:
    redraw_command(write, "chapter 6's diagram", argv)


if __name__ == "__main__":
    main()
