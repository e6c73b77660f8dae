"""Chapter 5's two diagrams, drawn by code from the shipped model and the package's
constraints.

    python -m shakespeare_lm.site.diagrams_ch5 [--out notebooks/diagrams]

rewrites ``constraint_mask.svg`` and ``schema_automaton.svg``, in the style of
``shakespeare_lm.site.diagrams`` (its canvas, colours, text sizes and byte-stable SVG).

What comes from the package: both are drawn at chapter 5's running example, the speech
boundary of *The Taming of the Shrew*, Act 2 Scene 1, after Katharina's "Moved! in good
time" (held out from training). The mask diagram's bars are the model's next-character
distribution there, and its allowed set is the start state of the ``ChoiceConstraint`` over
the scene's speakers; the automaton diagram is the ``RegexConstraint`` that
``decoding.schema.schema_to_regex`` compiles from the chapter's FRAUD / OK schema, with the
model's probabilities at its one branch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import torch
from matplotlib.patches import Circle

from ..corpus import load_heldout
from ..decoding.automata import ChoiceConstraint, RegexConstraint
from ..decoding.schema import schema_to_regex
from ..weights import load_pretrained
from .svg import redraw_command, save_all, COLOUR, OUT_DIR, SVG_RC, TEXT, Canvas, tint, visible

# --- the running example ---------------------------------------------------------------
SCENE_FIRST = "BIANCA:\nGood sister, wrong me not"
SCENE_LAST = "A child shall get a sire, if I fail not of my cunning.\n"
EXAMPLE_SPEECH = "Moved! in good time"
PROMPT_CHARS = 236            # as in the chapter: room for the longest label in the window


@dataclass(frozen=True)
class Scene:
    """The running example: the prompt before the boundary and the scene's labels."""

    prompt: str
    labels: list[str]         # "NAME:\n" for every speaker of the scene


def running_example(text: str | None = None) -> Scene:
    """Chapter 5's running example, found in the held-out text as the chapter finds it."""
    text = load_heldout() if text is None else text
    start = text.index(SCENE_FIRST)
    end = text.index(SCENE_LAST) + len(SCENE_LAST)
    speeches = text[start:end].rstrip("\n").split("\n\n")
    speakers = sorted({s.split(":\n", 1)[0] for s in speeches})
    k = next(i for i, s in enumerate(speeches) if EXAMPLE_SPEECH in s)
    boundary = start + sum(len(s) + 2 for s in speeches[: k + 1])
    return Scene(text[boundary - PROMPT_CHARS : boundary], [n + ":\n" for n in speakers])


@torch.no_grad()
def next_probs(model, tok, context: str) -> torch.Tensor:
    return torch.softmax(model(torch.tensor([tok.encode(context)]))[0, -1].double(), -1)


# --- 1. the constraint mask ------------------------------------------------------------
SHOWN_RANKS = 18                       # bars drawn; the rest is summed in words
# every text is at least TEXT["size"] (12.5 px): the page shows a diagram 672 px wide, at
# 0.91 of its natural 740 px, so the smallest text reads 11.4 px there
ALLOWED = tint(COLOUR["blue"], 0.85)   # a character in the allowed set S
FORBIDDEN = tint(COLOUR["grey"], 0.35)


@dataclass(frozen=True)
class MaskFacts:
    """The distribution at the running example, most probable first, and the allowed set."""

    prompt: str
    chars: list[str]
    probs: list[float]
    allowed: str              # the allowed characters, in vocabulary order


def mask_facts(model, tok, scene: Scene | None = None) -> MaskFacts:
    scene = running_example() if scene is None else scene
    probs = next_probs(model, tok, scene.prompt)
    order = torch.sort(probs, descending=True, stable=True).indices.tolist()
    c = ChoiceConstraint(scene.labels, tok)
    return MaskFacts(scene.prompt, [tok.chars[i] for i in order],
                     [float(probs[i]) for i in order], c.allowed_chars(c.start()))


def constraint_mask_figure(f: MaskFacts) -> Canvas:
    """Top: p, most probable first, the allowed characters blue. Bottom: the masked and
    renormalised distribution on the same scale."""
    c = Canvas(506)
    x0, bar, gap = 64, 22, 9
    scale = 150 / 0.9                         # pixels per unit of probability
    mass = sum(p for ch, p in zip(f.chars, f.probs) if ch in f.allowed)
    masked = [p / mass if ch in f.allowed else 0.0 for ch, p in zip(f.chars, f.probs)]
    end = x0 + SHOWN_RANKS * (bar + gap)
    rows = ((188, f.probs, "the model\u2019s distribution $p(v)$, most probable first"),
            (438, masked, "after the mask: $\\tilde p(v)$, the allowed set renormalised"))
    for base, values, title in rows:
        c.text(x0 - 50, base - 166, title, ha="left", weight="bold")
        c.line([x0 - 4, end], [base, base], lw=1.0)
        for tick in (0.0, 0.25, 0.5, 0.75):
            y = base - tick * scale
            c.text(x0 - 8, y, f"{tick:.2f}", ha="right", color=COLOUR["muted"])
            if tick:
                c.line([x0 - 4, end], [y, y], colour="#e6e6e6", lw=0.8, zorder=0)
        for i, p in enumerate(values[:SHOWN_RANKS]):
            x = x0 + i * (bar + gap) + gap / 2
            in_s = f.chars[i] in f.allowed
            if p > 0:
                c.rect(x, base - p * scale, bar, p * scale, fc=ALLOWED if in_s else FORBIDDEN,
                       ec=COLOUR["blue"] if in_s else COLOUR["grey"], lw=0.8)
            else:
                c.rect(x, base - 3, bar, 3, fc="white", ec=COLOUR["grey"], lw=0.8,
                       ls=(0, (2, 2)))
            if in_s:
                c.text(x + bar / 2, base - p * scale - 9, f"{p:.2f}", color=COLOUR["blue"])
            c.text(x + bar / 2, base + 13, visible(f.chars[i]), family=TEXT["mono"],
                   weight="bold" if in_s else "normal",
                   color=COLOUR["text"] if in_s else COLOUR["muted"])
        rest = len(f.probs) - SHOWN_RANKS
        c.text(end + 8, base - 10, f"+{rest} more,", ha="left", color=COLOUR["muted"])
        c.text(end + 8, base + 6, f"{sum(values[SHOWN_RANKS:]):.3f} in all", ha="left",
               color=COLOUR["muted"])
    allowed = ", ".join(f.allowed)
    c.arrow((x0 + 2, 214), (x0 + 2, 246), colour=COLOUR["blue"], lw=1.6)
    c.text(x0 + 14, 222, f"the constraint allows $S$ = {{{allowed}}}, the initials of the "
           "cast: every other logit becomes \u2212\u221e,", ha="left", color=COLOUR["blue"])
    c.text(x0 + 14, 240, f"and the softmax divides each allowed $p(v)$ by their total, "
           f"{mass:.3f}", ha="left", color=COLOUR["blue"])
    c.text(x0 - 50, 476, f"Next character after \u201c\u2026{visible(f.prompt[-24:])}\u201d "
           "(the chapter\u2019s running example), our model.", ha="left")
    c.text(x0 - 50, 494, "Blue: allowed by the constraint (values shown); grey: forbidden, "
           "set to zero.", ha="left")
    return c


# --- 2. a JSON schema as an automaton ----------------------------------------------------
SCHEMA = {"type": "object", "properties": {"label": {"enum": ["FRAUD", "OK"]}},
          "required": ["label"]}
TABLE = {'"': "'", "{": "&", "}": ";"}     # JSON characters our vocabulary lacks
# SCHEMA as the diagram prints it (schema_automaton_figure checks that they agree)
SCHEMA_LINES = ['{"type": "object",', ' "properties": {', '   "label": {',
                '     "enum": ["FRAUD", "OK"]}},', ' "required": ["label"]}']


@dataclass(frozen=True)
class SchemaFacts:
    """The compiled schema: its regex, the forced prefix, the branch and its two tails,
    with the model's probabilities at the branch."""

    regex: str
    num_states: int
    prefix: str                 # the characters forced before the branch
    tails: dict[str, str]       # first character at the branch -> the rest, forced
    p_branch: dict[str, float]  # the model's p of each first character at the branch


def schema_facts(model, tok, scene: Scene | None = None) -> SchemaFacts:
    scene = running_example() if scene is None else scene
    regex = schema_to_regex(SCHEMA, TABLE)
    c = RegexConstraint(regex, tok)
    state, prefix = c.start(), ""
    while len(c.allowed_chars(state)) == 1:
        prefix += c.allowed_chars(state)
        state = c.walk(prefix[-1], state)
    tails = {}
    for first in c.allowed_chars(state):
        s, tail = c.walk(first, state), ""
        while c.can_continue(s):
            tail += c.allowed_chars(s)      # a single character: the tails are forced
            s = c.walk(tail[-1], s)
        tails[first] = tail
    probs = next_probs(model, tok, scene.prompt + prefix)
    return SchemaFacts(regex, c.num_states, prefix, tails,
                       {ch: float(probs[tok.stoi[ch]]) for ch in tails})


def state_chain(c: Canvas, x: float, y: float, chars: str, step: float, *,
                colour: str, final: bool) -> float:
    """States joined by edges labelled with ``chars``, from a state at (x, y) (already
    drawn); returns the x of the last state."""
    r = 8
    for ch in chars:
        c.line([x + r, x + step - r], [y, y], colour=colour, lw=1.2)
        c.arrow((x + step - r - 6, y), (x + step - r, y), colour=colour, lw=1.2)
        c.text(x + step / 2, y - 12, visible(ch), family=TEXT["mono"], weight="bold")
        x += step
        c.ax.add_patch(Circle((x, y), r, fc="white", ec=colour, lw=1.2))
    if final:
        c.ax.add_patch(Circle((x, y), r + 3.5, fc="none", ec=colour,
                                                 lw=1.2))
    return x


def schema_automaton_figure(f: SchemaFacts) -> Canvas:
    """The schema, its regex, and the automaton: a forced chain, one branch, two tails."""
    if json.loads("".join(SCHEMA_LINES)) != SCHEMA:
        raise RuntimeError("SCHEMA_LINES no longer spell SCHEMA: update them together")
    c = Canvas(390)
    nbsp = "\u00a0"
    c.text(14, 20, "1. the JSON Schema", ha="left", weight="bold")
    for i, line in enumerate(SCHEMA_LINES):
        c.text(14, 44 + 17 * i, line.replace(" ", nbsp), ha="left", family=TEXT["mono"])
    c.arrow((282, 70), (370, 70))
    c.text(318, 52, "schema_to_regex")
    c.text(380, 20, "2. a regular expression", ha="left", weight="bold")
    c.box(550, 70, 340, 34, fc=COLOUR["pale"], ec=COLOUR["grey"])
    c.text(550, 70, f.regex, family=TEXT["mono"])
    c.text(380, 104, f"JSON\u2019s {' '.join(TABLE)} become {' '.join(TABLE.values())} "
           "(our model has them)", ha="left")
    c.text(380, 124, f"RegexConstraint: {f.num_states} states, one mask each", ha="left")
    c.text(14, 168, "3. the automaton over characters (a circle is a state; the double "
           "circles accept)", ha="left", weight="bold")
    step, y0, y_up, y_down = 28, 250, 214, 292
    blue, forced = COLOUR["blue"], COLOUR["black"]
    c.ax.add_patch(Circle((22, y0), 8, fc=tint(blue, 0.2), ec=forced,
                                             lw=1.2))
    x = state_chain(c, 22, y0, f.prefix, step, colour=forced, final=False)
    c.text(22 + step * len(f.prefix) / 2, y0 + 26, "one allowed character each: the mask "
           "forces it", color=COLOUR["muted"])
    (a, tail_a), (b, tail_b) = f.tails.items()
    for first, tail, y in ((a, tail_a, y_up), (b, tail_b, y_down)):
        c.line([x + 8, x + step], [y0, y], colour=blue, lw=1.6)
        c.text(x + step / 2 - 2, (y0 + y) / 2 + (-12 if y < y0 else 12), visible(first),
               family=TEXT["mono"], weight="bold", color=blue, size="large")
        c.ax.add_patch(Circle((x + step + 8, y), 8, fc="white", ec=blue,
                                                 lw=1.2))
        end = state_chain(c, x + step + 8, y, tail, step - 4, colour=forced, final=True)
        c.text(end + 16, y, f"accepts {f.prefix + first + tail}", ha="left",
               family=TEXT["mono"], color=COLOUR["muted"])
    pa, pb = f.p_branch[a], f.p_branch[b]
    c.text(14, 332, f"At the branch only {a} and {b} are allowed; after the running example "
           f"our model gives them {pa:.3f}", ha="left")
    c.text(14, 352, f"and {pb:.3f}. Masking renormalises them to {pa / (pa + pb):.3f} and "
           f"{pb / (pa + pb):.3f}, and every forced character", ha="left")
    c.text(14, 372, "gets probability 1.", ha="left")
    return c


# --- both --------------------------------------------------------------------------------
def alt_texts(mask: MaskFacts, schema: SchemaFacts) -> dict[str, str]:
    """One-line descriptions (the SVGs' titles), worded from the data they describe."""
    (a, tail_a), (b, tail_b) = schema.tails.items()
    return {
        "constraint_mask.svg":
            f"Our model's next-character probabilities at the chapter's running example, "
            f"most probable first, with the constraint's allowed initials "
            f"{', '.join(mask.allowed)} in blue; below, the same after masking: the allowed "
            f"ones renormalised, the rest zero.",
        "schema_automaton.svg":
            f"A JSON Schema with an enum of FRAUD and OK, compiled to the regular "
            f"expression {schema.regex} and to an automaton of {schema.num_states} states: "
            f"a forced chain {schema.prefix}, then a branch on {a} or {b}, each followed "
            f"by a forced tail.",
    }


def write_ch5(out_dir: Path = OUT_DIR) -> list[Path]:
    """Draw chapter 5's two diagrams from the shipped model into ``out_dir``."""
    model, tok = load_pretrained()
    scene = running_example()
    mask, schema = mask_facts(model, tok, scene), schema_facts(model, tok, scene)
    alt = alt_texts(mask, schema)
    with matplotlib.rc_context(SVG_RC):
        drawn = {
            "constraint_mask.svg": (constraint_mask_figure(mask),
                                    {"prompt_end": scene.prompt[-40:]}),
            "schema_automaton.svg": (schema_automaton_figure(schema),
                                     {"schema": SCHEMA, "table": TABLE}),
        }
    return save_all(drawn, alt, out_dir)


def main(argv: list[str] | None = None) -> None:
    redraw_command(write_ch5, "chapter 5's diagrams", argv)


if __name__ == "__main__":
    main()
