"""Chapter 4's diagram, drawn by code from the chapter's experiment.

    python -m shakespeare_lm.site.diagrams_ch4 [--out notebooks/diagrams]

rewrites ``quality_likelihood.svg``, in the style of ``shakespeare_lm.site.diagrams`` (its
canvas, colours, text sizes and byte-stable SVG).

What comes from the package: the points are the results of
``analysis.experiment.run_experiment`` on the shipped model (the committed results, so
drawing it generates nothing): the temperature settings, greedy decoding, beam search and
the held-out text, each at its NLL and real-word share (``analysis.metrics``). The quoted
line is greedy decoding's first line that repeats a word trigram, and the invented words
are the first words of the hottest temperature's samples missing from the training plays.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

from ..analysis import experiment, metrics
from ..corpus import load_train
from ..weights import load_pretrained
from .svg import redraw_command, COLOUR, OUT_DIR, SVG_RC, TEXT, Canvas, save_svg, tint, visible

NAME = "quality_likelihood.svg"
RULE = (tint(COLOUR["sky"], 0.18), COLOUR["blue"])   # the rule's boxes: fill, edge
MEASURE = (tint(COLOUR["orange"], 0.25), COLOUR["vermillion"])
# the text size of the notes and ticks: the page shows the 740 px canvas about 672 px wide
# at a 1280 px window, so 12.5 px text reads at about 11.4 px (11.5 px would read 10.4)
SMALL = "size"


@dataclass(frozen=True)
class QLFacts:
    """What the diagram draws: points as (label, NLL, real-word share)."""

    prompt_tail: str                               # the end of the first prompt
    temperature: list[tuple[float, float, float]]  # (T, NLL, real words), by T
    greedy: tuple[float, float]
    beam: tuple[float, float]
    heldout: tuple[float, float]
    loop_line: str                                  # a line of greedy text that loops
    invented: list[str]                             # words the hottest setting made up


def first_looping_line(text: str) -> str:
    """The first line of ``text`` whose words repeat a word trigram of the text so far."""
    seen = set()
    for line in text.split("\n"):
        ws = metrics.words(line)
        grams = list(zip(ws, ws[1:], ws[2:]))
        if any(g in seen for g in grams) or len(set(grams)) < len(grams):
            return line
        seen.update(grams)
    raise ValueError("no line of the text repeats a word trigram")


def quality_likelihood_facts(model, tok, n_invented: int = 3) -> QLFacts:
    results = experiment.run_experiment(model, tok, progress=False)
    vocab = metrics.vocabulary(load_train())
    rows = {r["label"]: r for r in results.table(vocab)}

    def at(label):
        return rows[label]["nats_per_char"], rows[label]["real_words"]

    temps = sorted((r["value"], r["nats_per_char"], r["real_words"])
                   for r in rows.values() if r["family"] == "temperature")
    hottest = f"temperature {temps[-1][0]:g}"
    invented = []
    for text in results.texts[hottest]:
        for w in metrics.words(text, complete=True):
            if w not in vocab and w not in invented and len(invented) < n_invented:
                invented.append(w)
    return QLFacts(results.prompts[0].prompt[-21:], temps, at("greedy"), at("beam 4"),
                   at(results.REFERENCE), first_looping_line(results.texts["greedy"][0]),
                   invented)


class Plane:
    """Maps (NLL, real-word share) to pixels in the panel [x0, x1] x [y0, y1]."""

    def __init__(self, x0, x1, y0, y1, nll=(0.3, 1.6), real=(0.84, 1.01)):
        self.x0, self.x1, self.y0, self.y1, self.nll, self.real = x0, x1, y0, y1, nll, real

    def __call__(self, nll: float, real: float) -> tuple[float, float]:
        fx = (nll - self.nll[0]) / (self.nll[1] - self.nll[0])
        fy = (real - self.real[0]) / (self.real[1] - self.real[0])
        return self.x0 + fx * (self.x1 - self.x0), self.y1 - fy * (self.y1 - self.y0)


def pipeline(c: Canvas, f: QLFacts) -> None:
    """Left: prompt, rule and continuation; then the two measures of the continuation."""
    x, w = 130, 244
    c.box(x, 52, w, 62, fc=COLOUR["pale"])
    c.text(x, 36, "prompt", weight="bold")
    c.text(x, 56, "128 characters of a play", size=SMALL)
    c.text(x, 74, "\u2026" + visible(f.prompt_tail), size=SMALL, family=TEXT["mono"])
    c.arrow((x, 83), (x, 109))
    c.box(x, 146, w, 74, fc=RULE[0], ec=RULE[1], lw=1.6)
    c.text(x, 124, "a decoding rule and its knob", weight="bold")
    c.text(x, 144, "greedy, beam search or sampling", size=SMALL)
    c.text(x, 162, "with temperature, top-k, top-p, \u2026", size=SMALL)
    c.arrow((x, 183), (x, 209))
    c.box(x, 234, w, 50, fc=COLOUR["pale"])
    c.text(x, 226, "continuation", weight="bold")
    c.text(x, 244, "300 new characters", size=SMALL)
    for cx, title, lines in [
            (70, "likelihood", ["NLL: how", "probable the", "model finds it"]),
            (198, "quality", ["share of its", "words found in", "the training", "plays"])]:
        c.arrow((x + (cx - x) * 0.45, 259), (cx, 289))
        c.box(cx, 338, 124, 94, fc=MEASURE[0], ec=MEASURE[1], lw=1.6)
        c.text(cx, 303, title, weight="bold")
        for i, line in enumerate(lines):
            c.text(cx, 322 + 17 * i, line, size=SMALL)
    c.text(70, 402, "x axis \u2192", size=SMALL, color=COLOUR["muted"])
    c.text(198, 402, "y axis \u2192", size=SMALL, color=COLOUR["muted"])


def plane_axes(c: Canvas, at: Plane) -> None:
    c.line([at.x0, at.x1], [at.y1, at.y1], colour=COLOUR["grey"])
    c.line([at.x0, at.x0], [at.y0, at.y1], colour=COLOUR["grey"])
    for nll in (0.5, 1.0, 1.5):
        x, y = at(nll, at.real[0])
        c.line([x, x], [y, y + 5], colour=COLOUR["grey"])
        c.text(x, y + 16, f"{nll:.1f}", size=SMALL, color=COLOUR["muted"])
    for real in (0.85, 0.90, 0.95, 1.00):
        x, y = at(at.nll[0], real)
        c.line([x - 5, x], [y, y], colour=COLOUR["grey"])
        c.text(x - 8, y, f"{real:.2f}", size=SMALL, ha="right", color=COLOUR["muted"])
    c.text((at.x0 + at.x1) / 2, at.y1 + 36,
           "NLL, nats per character  (more probable \u2190  \u2192 less probable)")
    c.text(at.x0 - 44, (at.y0 + at.y1) / 2, "share of real words", rotation=90)


def plane_points(c: Canvas, at: Plane, f: QLFacts) -> None:
    """The temperature curve, greedy and beam search, the held-out text, and what each
    region writes. No two labels share a spot: the loop's quote sits under greedy and beam
    search, the knob's note left of the curve's middle, the invented words left of its
    hottest end."""
    xs, ys = zip(*(at(nll, real) for _, nll, real in f.temperature))
    c.ax.plot(xs, ys, color=COLOUR["blue"], lw=2.2, marker="o", ms=5, zorder=3)
    (_, n0, r0), (_, n1, r1) = f.temperature[0], f.temperature[-1]
    c.text(*at(n0 + 0.03, r0 + 0.006), f"T = {f.temperature[0][0]:g}", ha="left",
           size=SMALL, color=COLOUR["blue"])
    c.text(*at(n1, r1 - 0.009), f"T = {f.temperature[-1][0]:g}", size=SMALL,
           color=COLOUR["blue"])
    for (nll, real), marker, label in [(f.beam, "h", "beam search"),
                                       (f.greedy, "X", "greedy")]:
        c.ax.plot(*at(nll, real), marker=marker, ms=16, color=COLOUR["grey"],
                  mec="white", zorder=4)
        c.text(*at(nll, real - 0.011), label, size=SMALL)
    # greedy's loop, under the markers of greedy and beam search, the curve's probable end
    lx, ly = at.x0 + 12, at(at.nll[0], max(f.greedy[1], f.beam[1]) - 0.024)[1]
    c.text(lx, ly, "most probable: loops", ha="left", size=SMALL, weight="bold")
    for i, part in enumerate(two_lines(f.loop_line, 27)):
        c.text(lx, ly + 18 * (i + 1), part, ha="left", size=SMALL, family=TEXT["mono"])
    # the knob's note, left of the curve below its middle
    mid = len(f.temperature) // 2
    _, nm, rm = f.temperature[mid + 1]
    kx, ky = at(nm, rm)
    c.text(kx - 16, ky + 14, "the knob moves a rule", ha="right", size=SMALL,
           color=COLOUR["blue"], weight="bold")
    c.text(kx - 16, ky + 32, "along one curve", ha="right", size=SMALL,
           color=COLOUR["blue"], weight="bold")
    # Shakespeare's text, above the curve, labelled above its star
    c.ax.plot(*at(*f.heldout), marker="*", ms=17, color=COLOUR["black"], zorder=4)
    n, r = f.heldout
    sx, sy = at(n, r)
    c.text(sx, sy - 57, "Shakespeare's text:", size=SMALL, weight="bold")
    c.text(sx, sy - 39, "good, yet improbable", size=SMALL)
    c.text(sx, sy - 21, "to the model", size=SMALL)
    # the hottest setting's invented words, left of its end of the curve
    hx, hy = at(n1, r1)
    c.text(hx - 28, hy - 36, "least probable:", ha="right", size=SMALL, weight="bold")
    c.text(hx - 28, hy - 18, "invented words", ha="right", size=SMALL, weight="bold")
    c.text(hx - 28, hy, ", ".join(f.invented), ha="right", size=SMALL,
           family=TEXT["mono"])


def two_lines(text: str, n: int) -> list[str]:
    """``text`` in quotes on at most two lines of about ``n`` characters, broken at a space
    (shortened with an ellipsis if it is longer)."""
    if len(text) <= n:
        return [f"\u201c{text}\u201d"]
    cut = text.rfind(" ", 0, n + 1)
    cut = n if cut <= 0 else cut
    return [f"\u201c{text[:cut]}", shorten(text[cut:].strip(), n) + "\u201d"]


def shorten(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1].rstrip() + "\u2026"


def quality_likelihood_figure(f: QLFacts) -> Canvas:
    """Left: what is measured; right: where the rules land, on the chapter's numbers."""
    c = Canvas(436)
    pipeline(c, f)
    at = Plane(316, 728, 24, 388, nll=(0.2, 1.6))
    plane_axes(c, at)
    plane_points(c, at, f)
    return c


def alt_text(f: QLFacts) -> str:
    t0, t1 = f.temperature[0][0], f.temperature[-1][0]
    return (f"A prompt goes through a decoding rule to a continuation, which is measured "
            f"twice: its NLL under the model and its share of real words. On those two "
            f"axes, temperatures from {t0:g} to {t1:g} trace one falling curve, greedy "
            f"decoding and beam search sit at its probable, looping end, and "
            f"Shakespeare's text lies above the curve.")


def write_all(out_dir: Path = OUT_DIR) -> list[Path]:
    """Draw the diagram from the committed experiment results into ``out_dir``."""
    model, tok = load_pretrained()
    facts = quality_likelihood_facts(model, tok)
    with matplotlib.rc_context(SVG_RC):
        canvas = quality_likelihood_figure(facts)
    path = Path(out_dir) / NAME
    save_svg(canvas, path, alt_text(facts),
             {"settings": [f"temperature {t:g}" for t, _, _ in facts.temperature]
              + ["greedy", "beam 4"]})
    return [path]


def main(argv: list[str] | None = None) -> None:
    redraw_command(write_all, "chapter 4's diagram", argv)


if __name__ == "__main__":
    main()
