"""Chapter 3's two diagrams, drawn by code from the shipped model and the package's rules.

    python -m shakespeare_lm.site.diagrams_ch3 [--out notebooks/diagrams]

rewrites ``truncation.svg`` and ``rule_pipeline.svg``, in the style of
``shakespeare_lm.site.diagrams`` (its canvas, colours, text sizes and byte-stable SVG).

What comes from the package: the truncation diagram's bars are the model's next-character
distribution at chapter 3's start-of-word context, and its cuts are where
``rules.top_k``, ``rules.top_p`` and ``rules.min_p`` cut it; the pipeline's counts are the
characters that ``rules.compose`` leaves after each stage, in the package's order, at the
same context.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib
import torch

from ..decoding import rules
from ..weights import load_pretrained
from .svg import redraw_command, save_all, COLOUR, OUT_DIR, SVG_RC, TEXT, Canvas, tint, visible
from .explorer import START_OF_WORD, next_logits

# --- 1. truncation: keep a set S, zero the rest, renormalise -----------------------------
SHOWN_RANKS = 28                     # bars drawn; the rest of the tail is summed in words
CUTS = {"top_k": 5, "top_p": 0.9, "min_p": 0.1}
KEPT = tint(COLOUR["blue"], 0.85)    # a character in the kept set S
DROPPED = tint(COLOUR["grey"], 0.35)  # a character the rule sets to zero


@dataclass(frozen=True)
class TruncationFacts:
    """The sorted distribution at one context, and where three rules cut it."""

    context: str
    chars: list[str]        # most probable first
    probs: list[float]      # p of each, same order (all of the vocabulary)
    kept: dict[str, int]    # rule -> how many of the most probable it keeps


def truncation_facts(model, tok, context: str = START_OF_WORD) -> TruncationFacts:
    logits = next_logits(model, tok, context)
    probs = torch.softmax(logits, -1)
    order = torch.sort(probs, descending=True, stable=True).indices.tolist()
    kept = {name: int(torch.isfinite(getattr(rules, name)(logits, value)).sum())
            for name, value in CUTS.items()}
    return TruncationFacts(context, [tok.chars[i] for i in order],
                           [float(probs[i]) for i in order], kept)


def truncation_figure(f: TruncationFacts) -> Canvas:
    """Top: p, sorted, with the cuts of top-k, top-p and min-p. Bottom: top-p's kept set
    renormalised, on the same scale."""
    c = Canvas(470)
    x0, bar, gap = 64, 16, 4
    scale = 118 / 0.16                       # pixels per unit of probability
    n_keep = f.kept["top_p"]
    mass = sum(f.probs[:n_keep])
    rows = ((176, f.probs, "our model's distribution $p$, most probable first"),
            (398, [p / mass if i < n_keep else 0.0 for i, p in enumerate(f.probs)],
             f"$\\tilde p$: top-p {CUTS['top_p']} keeps the first {n_keep} (the set $S$), "
             f"divides by their mass {mass:.2f}"))
    for base, values, title in rows:
        c.text(x0 - 50, base - 146, title, ha="left", weight="bold")
        c.line([x0 - 4, x0 + SHOWN_RANKS * (bar + gap)], [base, base], lw=1.0)
        for tick in (0.0, 0.05, 0.10, 0.15):
            y = base - tick * scale
            c.text(x0 - 8, y, f"{tick:.2f}", ha="right", color=COLOUR["muted"])
            if tick:
                c.line([x0 - 4, x0 + SHOWN_RANKS * (bar + gap)], [y, y],
                       colour="#e6e6e6", lw=0.8, zorder=0)
        for i, p in enumerate(values[:SHOWN_RANKS]):
            x = x0 + i * (bar + gap) + gap / 2
            in_s = i < n_keep
            if p > 0:
                c.rect(x, base - p * scale, bar, p * scale, fc=KEPT if in_s else DROPPED,
                       ec=COLOUR["blue"] if in_s else COLOUR["grey"], lw=0.8)
            else:
                c.rect(x, base - 3, bar, 3, fc="white", ec=COLOUR["grey"], lw=0.8,
                       ls=(0, (2, 2)))
            c.text(x + bar / 2, base + 12, visible(f.chars[i]),
                   family=TEXT["mono"], color=COLOUR["text"] if in_s else COLOUR["muted"])
        rest = len(f.probs) - SHOWN_RANKS
        tail = sum(values[SHOWN_RANKS:])
        c.text(x0 + SHOWN_RANKS * (bar + gap) + 6, base - 10,
               f"+{rest} more,", ha="left", color=COLOUR["muted"])
        c.text(x0 + SHOWN_RANKS * (bar + gap) + 6, base + 6, f"{tail:.3f} in all",
               ha="left", color=COLOUR["muted"])
    truncation_cuts(c, f, x0, bar + gap, 176)
    c.arrow((x0 + 4.5 * (bar + gap), 212), (x0 + 4.5 * (bar + gap), 238),
            colour=COLOUR["blue"], lw=1.6)
    c.text(x0 + 4.5 * (bar + gap) + 12, 224, "keep the set $S$, set the rest to zero, "
           "and divide what is kept by its total", ha="left", color=COLOUR["blue"])
    c.text(x0 - 50, 440, f"Next character after \u201c\u2026{visible(f.context[-22:])}"
           f"\u201d (chapter 3\u2019s start of a word), our model.", ha="left")
    c.text(x0 - 50, 458, "Bars: probability by rank; the blue ones are the kept set $S$ "
           "of top-p, the grey ones are set to zero.", ha="left")
    return c


def truncation_cuts(c: Canvas, f: TruncationFacts, x0: float, step: float,
                    base: float) -> None:
    """A dashed line after the last character each rule keeps, labelled above it."""
    labels = {"top_k": f"top-k {CUTS['top_k']}", "top_p": f"top-p {CUTS['top_p']}",
              "min_p": f"min-p {CUTS['min_p']}"}
    colours = {"top_k": COLOUR["vermillion"], "top_p": COLOUR["blue"],
               "min_p": COLOUR["green"]}
    heights = {"top_k": 92, "top_p": 124, "min_p": 104}
    for name, n in f.kept.items():
        x = x0 + n * step
        top = base - heights[name]
        c.line([x, x], [top, base + 4], colour=colours[name], lw=1.6, ls=(0, (4, 3)),
               zorder=3)
        c.text(x + 4, top + 2, f"{labels[name]} keeps {n}", ha="left", va="bottom",
               color=colours[name], weight="bold")


# --- 2. the rule pipeline ---------------------------------------------------------------
# one example setting per stage (the package's keywords), chosen so that most filters cut
PIPELINE_SETTINGS = {"repetition_penalty": 1.2, "temperature": 0.9, "top_k": 20,
                     "top_p": 0.98, "min_p": 0.08, "typical_p": 0.9, "epsilon": 0.03,
                     "eta": 0.05}
RESHAPE = (tint(COLOUR["orange"], 0.35), COLOUR["vermillion"])   # fill, edge
FILTER = (tint(COLOUR["sky"], 0.3), COLOUR["blue"])
ENDS = ("white", COLOUR["black"])


@dataclass(frozen=True)
class PipelineFacts:
    """How many characters are left after each stage, at one context."""

    context: str
    vocab_size: int
    left: dict[str, int]    # setting -> characters left after it (and all before it)


def pipeline_facts(model, tok, context: str = START_OF_WORD) -> PipelineFacts:
    logits = next_logits(model, tok, context)
    history = torch.tensor(tok.encode(context))
    settings, left = {}, {}
    for name, value in PIPELINE_SETTINGS.items():
        settings[name] = value
        left[name] = int(torch.isfinite(rules.compose(logits, history, **settings)).sum())
    return PipelineFacts(context, len(tok.chars), left)


def rule_pipeline_figure(f: PipelineFacts) -> Canvas:
    """Eleven stages in two rows, left to right, the first row wrapping into the second."""
    c = Canvas(362)
    s = PIPELINE_SETTINGS
    stages = [
        ("logits", "a score for", f"each of {f.vocab_size}", ENDS),
        ("penalties", f"\u03c1 = {s['repetition_penalty']}", None, RESHAPE),
        ("temperature", f"T = {s['temperature']}", "divide by T", RESHAPE),
        ("top-k", f"k = {s['top_k']}", None, FILTER),
        ("top-p", f"mass {s['top_p']}", None, FILTER),
        ("min-p", f"ratio {s['min_p']}", None, FILTER),
        ("typical", f"\u03c4 = {s['typical_p']}", None, FILTER),
        ("epsilon", f"\u03b5 = {s['epsilon']}", None, FILTER),
        ("eta", f"\u03b7 = {s['eta']}", None, FILTER),
        ("renormalise", "softmax", "gives $\\tilde p$", ENDS),
        ("sample", "draw the next", "character", ENDS),
    ]
    keys = [None, "repetition_penalty", "temperature", "top_k", "top_p", "min_p",
            "typical_p", "epsilon", "eta", None, None]
    w, h, gap, x_left = 100, 80, 22, 18
    xs = [x_left + w / 2 + i * (w + gap) for i in range(6)]
    ys = (84, 230)
    pos = [(xs[i], ys[0]) for i in range(6)] + [(xs[i], ys[1]) for i in range(5)]
    c.text(x_left, 18, "At every step, in this order (the package\u2019s and "
           "transformers\u2019)", ha="left", weight="bold")
    for (title, setting, note, (fc, ec)), key, (x, y) in zip(stages, keys, pos):
        c.box(x, y, w, h, fc=fc, ec=ec, lw=1.5)
        c.text(x, y - 22, title, weight="bold")
        c.text(x, y, setting)  # every text at the full size: at least 11 px as shown
        if key is not None:
            note = f"{f.left[key]} left"
        c.text(x, y + 22, note, color=COLOUR["muted"] if key is None else COLOUR["text"])
    for a, b in zip(pos, pos[1:]):
        if a[1] == b[1]:
            c.arrow((a[0] + w / 2, a[1]), (b[0] - w / 2, b[1]))
    wrap_y = (ys[0] + ys[1]) / 2
    c.line([xs[5], xs[5]], [ys[0] + h / 2, wrap_y])
    c.line([xs[5], xs[0]], [wrap_y, wrap_y])
    c.arrow((xs[0], wrap_y), (xs[0], ys[1] - h / 2))
    pipeline_legend(c, f, 300)
    return c


def pipeline_legend(c: Canvas, f: PipelineFacts, y: float) -> None:
    c.legend(18, y, [("reshape: every character stays", *RESHAPE, "-", None),
                     ("truncate: the rest get \u2212\u221e", *FILTER, "-", None)])
    c.text(18, y + 30, "\u201cleft\u201d: characters still possible after the stage, "
           "with all the settings shown,", ha="left")
    c.text(18, y + 48, f"at the context \u201c\u2026{visible(f.context[-20:])}\u201d.",
           ha="left")


# --- both ---------------------------------------------------------------------------------
def alt_texts(trunc: TruncationFacts, pipe: PipelineFacts) -> dict[str, str]:
    """One-line descriptions (the SVGs' titles), worded from the data they describe."""
    k = trunc.kept
    return {
        "truncation.svg":
            f"Our model's next-character probabilities at the start of a word, sorted: "
            f"top-k {CUTS['top_k']} keeps {k['top_k']}, top-p {CUTS['top_p']} keeps "
            f"{k['top_p']}, min-p {CUTS['min_p']} keeps {k['min_p']}; below, top-p's kept "
            f"set renormalised.",
        "rule_pipeline.svg":
            "The decoding rules in order: logits, penalties, temperature, top-k, top-p, "
            "min-p, typical, epsilon, eta, renormalise, sample; with the characters left "
            f"after each at the start of a word ({pipe.left['eta']} of "
            f"{pipe.vocab_size} at the end).",
    }


def write_ch3(out_dir: Path = OUT_DIR) -> list[Path]:
    """Draw chapter 3's two diagrams from the shipped model into ``out_dir``."""
    model, tok = load_pretrained()
    trunc, pipe = truncation_facts(model, tok), pipeline_facts(model, tok)
    alt = alt_texts(trunc, pipe)
    with matplotlib.rc_context(SVG_RC):
        drawn = {
            "truncation.svg": (truncation_figure(trunc),
                               {"context": trunc.context, "cuts": CUTS}),
            "rule_pipeline.svg": (rule_pipeline_figure(pipe),
                                  {"context": pipe.context,
                                   "settings": PIPELINE_SETTINGS}),
        }
    return save_all(drawn, alt, out_dir)


def main(argv: list[str] | None = None) -> None:
    redraw_command(write_ch3, "chapter 3's diagrams", argv)


if __name__ == "__main__":
    main()
