"""Chapter 8's diagram: a chat template, from a list of messages to the one string the
model continues, and what the model writes when the template is not the one it learned.

    python -m shakespeare_lm.site.diagrams_ch8 [--out notebooks/diagrams]

writes ``chat_template.svg`` in the style of ``shakespeare_lm.site.diagrams`` (its canvas,
colours, text sizes and byte-stable SVG). The template is the chapter's: the plays' speaker
headers (``decoding.chat``) with ``&`` as the begin-of-text character; Llama 3's markers
are shown beside ours. Every reply in the figure is the shipped model's greedy
continuation (``generate``, stopped at its template's end of turn or after ``MAX_REPLY``
characters) of the prompt drawn beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

from ..decoding.chat import END_OF_TURN, open_turn, speaker_turn
from ..decoding.generate import generate
from ..weights import load_pretrained
from .svg import COLOUR, OUT_DIR, SVG_RC, TEXT, Canvas, redraw_command, save_svg, tint, visible

# the chapter's conversation (Petruchio's and Katharina's lines from The Taming of the
# Shrew, a held-out play), as an application holds it: (role, content)
MESSAGES = [("system", "Answer as Katharina, in one line."),
            ("user", "Why, what's a moveable?"), ("assistant", "A join'd-stool."),
            ("user", "Thou hast hit it: come, sit on me.")]
BOS = "&"                                    # our begin-of-text character
HEADERS = {"system": "SYSTEM", "user": "PETRUCHIO", "assistant": "KATHARINA"}
# the same roles under names the plays never use, and a template of another shape
OTHER_NAMES = {"system": "SYSTEM", "user": "USER", "assistant": "ASSISTANT"}
OTHER_SHAPE = {"system": "System", "user": "User", "assistant": "Assistant"}
OTHER_SHAPE_END = "\n"
MAX_REPLY = 48                               # characters
LLAMA3 = {"begin": "<|begin_of_text|>",
          "open": "<|start_header_id|>user<|end_header_id|>\n\n",
          "end": "<|eot_id|>"}
MARKER = (tint(COLOUR["orange"], 0.35), COLOUR["vermillion"])   # fill, edge
REPLY = COLOUR["green"]
BROKEN = COLOUR["vermillion"]
MONO_EM = 0.602                              # DejaVu Sans Mono's advance, in em
HEIGHT = 690
ROW = 22                                     # a row of text, in px


def render(messages=MESSAGES, headers=HEADERS, *, bos: str = BOS,
           open_header: bool = True) -> str:
    """The conversation in the play's template: the prompt the model continues."""
    text = bos + "".join(speaker_turn(headers[role], content) for role, content in messages)
    return text + (open_turn(headers["assistant"]) if open_header else "")


def render_other_shape(messages=MESSAGES) -> str:
    """The same conversation in a template of another shape: ``Role: content`` a line,
    so that its end of turn is a newline (``OTHER_SHAPE_END``)."""
    return "".join(f"{OTHER_SHAPE[role]}: {content}\n" for role, content in messages) + \
        f"{OTHER_SHAPE['assistant']}: "


@dataclass(frozen=True)
class Variant:
    """One prompt for the same messages, and the model's greedy reply to it."""

    label: str
    prompt: str
    stop: str                 # the template's end of turn: the application stops there
    reply: str
    stop_reason: str


@dataclass(frozen=True)
class TemplateFacts:
    right: Variant            # the template the model learned
    wrong: list[Variant]      # the same messages, rendered otherwise


def template_facts(model, tok) -> TemplateFacts:
    """Each prompt's greedy reply, stopped at its template's end of turn or after
    MAX_REPLY characters."""
    prompts = [("the template it learned", render(), END_OF_TURN),
               ("the assistant\u2019s header left out", render(open_header=False),
                END_OF_TURN),
               ("other role names: USER, ASSISTANT", render(headers=OTHER_NAMES),
                END_OF_TURN),
               ("another template: \u201cUser: \u2026\u201d lines",
                render_other_shape(), OTHER_SHAPE_END)]
    variants = []
    for label, prompt, stop in prompts:
        g = generate(model, tok, prompt, MAX_REPLY, temperature=0, stop=stop)
        variants.append(Variant(label, prompt, stop, g.text, g.stop_reason))
    return TemplateFacts(variants[0], variants[1:])


def verdict(v: Variant, assistant: str = HEADERS["assistant"]) -> str:
    """What went wrong with a reply, in words, from the reply itself."""
    first = v.reply.split("\n", 1)[0]
    parts = []
    if first.endswith(":") and first.isupper() and first[:-1] != assistant:
        parts.append(f"another speaker, {first[:-1]}, answers")
    elif first[:1].islower():
        parts.append("it starts in lower case, mid-sentence")
    if v.stop_reason == "stop_sequence":
        parts.append("it stops at its end of turn")
    else:
        parts.append(f"no end of turn: cut at {MAX_REPLY} characters")
    return "; ".join(parts)


def shown(text: str) -> str:
    """``text`` with its newlines drawn as \u21b5 (a message's spaces stay spaces)."""
    return text.replace("\n", visible("\n"))


def mono(c: Canvas, x: float, y: float, s: str, *, size: str = "size", **kw) -> float:
    """Monospaced text from x, left-aligned; returns the x where it ends."""
    c.text(x, y, s, ha="left", size=size, family=TEXT["mono"], **kw)
    return x + MONO_EM * TEXT[size] * len(s)


def marker(c: Canvas, x: float, y: float, s: str, *, colours=MARKER) -> float:
    """A template marker: monospaced, on a tinted box; returns the x where it ends."""
    w = MONO_EM * TEXT["size"] * len(s)
    c.rect(x - 1.5, y - 10, w + 3, 20, fc=colours[0], ec=colours[1], lw=0.9)
    mono(c, x, y, s)
    return x + w + 5


def messages_band(c: Canvas, top: float) -> float:
    """The messages, a role and a content each; returns the y below the band."""
    c.text(14, top, "1. the messages the application holds: a role and a content each",
           ha="left", weight="bold")
    for i, (role, content) in enumerate(MESSAGES):
        y = top + 28 + ROW * i
        c.box(62, y, 92, 20, fc=COLOUR["pale"], ec=COLOUR["grey"], lw=0.9, radius=4)
        c.text(62, y, role, weight="bold")
        c.text(122, y, f"\u201c{content}\u201d", ha="left")
    c.text(476, top + 28 + ROW * 1.5 - 9, "the model must write the", ha="left",
           color=COLOUR["muted"], style="italic")
    c.text(476, top + 28 + ROW * 1.5 + 9, "assistant\u2019s next message", ha="left",
           color=COLOUR["muted"], style="italic")
    return top + 28 + ROW * len(MESSAGES)


def template_band(c: Canvas, top: float) -> float:
    """The markers of our template and of Llama 3's; returns the y below the band."""
    c.text(14, top, "2. the template: markers around each message (ours; Llama 3\u2019s)",
           ha="left", weight="bold")
    rows = [("begin of text", [BOS], LLAMA3["begin"]),
            ("a message opens", [f"{HEADERS[r]}:\n" for r in HEADERS], LLAMA3["open"]),
            ("a message ends", [END_OF_TURN], LLAMA3["end"])]
    ours_x, llama_x = 140, 410
    c.text(ours_x, top + 24, "ours: the plays\u2019 format", ha="left",
           color=COLOUR["muted"])
    c.text(llama_x, top + 24, "Llama 3\u2019s: special tokens", ha="left",
           color=COLOUR["muted"])
    for i, (what, ours, llama) in enumerate(rows):
        y = top + 50 + ROW * i
        c.text(14, y, what, ha="left")
        x = ours_x
        for m in ours:
            x = marker(c, x, y, visible(m)) + 3
        marker(c, llama_x, y, visible(llama))
    return top + 50 + ROW * len(rows)


def string_band(c: Canvas, top: float, f: TemplateFacts) -> float:
    """The rendered conversation, a message a row, and the model's reply after the
    assistant's header; returns the y below the band."""
    c.text(14, top, "3. rendered: one string (drawn a message a row) that ends with the "
           "assistant\u2019s header", ha="left", weight="bold")
    y = top + 28
    for i, (role, content) in enumerate(MESSAGES):
        x = 14
        if i == 0:
            x = marker(c, x, y, BOS)
        x = marker(c, x, y, visible(f"{HEADERS[role]}:\n"))
        x = mono(c, x, y, shown(content)) + 4
        marker(c, x, y, visible(END_OF_TURN))
        y += ROW
    x = marker(c, 14, y, visible(open_turn(HEADERS["assistant"])))
    reply = f.right.reply
    stopped = f.right.stop_reason == "stop_sequence"
    body = reply[:-len(END_OF_TURN)] if stopped else reply
    c.rect(x - 3, y - 12, MONO_EM * TEXT["size"] * len(shown(body)) + 6, 24,
           fc=tint(REPLY, 0.12), ec=REPLY, lw=1.2)
    x = mono(c, x, y, shown(body), weight="bold") + 7
    if stopped:
        x = marker(c, x, y, visible(END_OF_TURN), colours=(tint(REPLY, 0.35), REPLY))
    c.text(x + 8, y - 9, "4. the model writes this,", ha="left", color=REPLY,
           weight="bold")
    c.text(x + 8, y + 9, "then its end of turn: stop" if stopped else
           f"and no end of turn: cut at {MAX_REPLY}", ha="left", color=REPLY,
           weight="bold")
    return y + 12


def wrong_band(c: Canvas, top: float, f: TemplateFacts) -> float:
    """The same messages in other templates, and the model's replies; returns the y
    below the band."""
    c.text(14, top, "5. the same messages in a template the model did not learn, and its "
           "greedy reply", ha="left", weight="bold", color=BROKEN)
    y = top + 6
    for v in f.wrong:
        y += 24
        c.text(14, y, v.label, ha="left", weight="bold")
        c.text(726, y, f"after \u2026{shown(v.prompt[-20:])}", ha="right",
               family=TEXT["mono"], color=COLOUR["muted"])
        cut = "" if v.stop_reason == "stop_sequence" else "\u2026"
        mono(c, 30, y + 19, shown(v.reply) + cut)
        c.text(30, y + 37, verdict(v), ha="left", color=BROKEN, style="italic")
        y += 37
    return y


def chat_template_figure(f: TemplateFacts) -> Canvas:
    """Messages, template, the rendered string and the model's reply; below, the same
    messages in templates the model did not learn, and what it writes after them."""
    c = Canvas(HEIGHT)
    y = messages_band(c, 18)
    c.arrow((370, y - 6), (370, y + 12), lw=1.5)
    y = template_band(c, y + 30)
    c.arrow((370, y - 6), (370, y + 12), lw=1.5)
    y = string_band(c, y + 30, f)
    c.line([14, 726], [y + 12, y + 12], colour=COLOUR["grey"], lw=0.8, ls=(0, (4, 3)))
    y = wrong_band(c, y + 34, f)
    if y + 16 > HEIGHT:
        raise RuntimeError(f"the figure needs {y + 16:.0f} px; HEIGHT is {HEIGHT}")
    return c


def alt_text(f: TemplateFacts) -> str:
    """A one-line description (the SVG's title), worded from the data it describes."""
    return ("Flowchart of a chat template: four messages (system, user, assistant, user) "
            "get the template's markers, a begin-of-text character, a speaker header "
            "before each message and a blank line after it, and become one string that "
            "ends with the assistant's header; our model continues it with "
            f"\u201c{f.right.reply.strip()}\u201d. Below, the same messages with the "
            "assistant's header left out, with other role names, and in another "
            "template, and the model's replies: "
            + "; ".join(f"{v.label}: {verdict(v)}" for v in f.wrong) + ".")


def write(out_dir: Path = OUT_DIR) -> Path:
    """Draw ``chat_template.svg`` from the shipped model into ``out_dir``."""
    model, tok = load_pretrained()
    facts = template_facts(model, tok)
    with matplotlib.rc_context(SVG_RC):
        canvas = chat_template_figure(facts)
    path = Path(out_dir) / "chat_template.svg"
    save_svg(canvas, path, alt_text(facts),
             {"messages": MESSAGES, "max_reply": MAX_REPLY,
              "replies": [v.reply for v in [facts.right, *facts.wrong]]})
    return path


def main(argv: list[str] | None = None) -> None:
    redraw_command(write, "chapter 8's diagram", argv)


if __name__ == "__main__":
    main()
