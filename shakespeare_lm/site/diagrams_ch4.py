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
    x, w = 122, 214
    c.box(x, 52, w, 62, fc=COLOUR["pale"])
    c.text(x, 36, "prompt", weight="bold")
    c.text(x, 56, "128 characters of a play", size="small")
    c.text(x, 74, "\u2026" + visible(f.prompt_tail), size="small", family=TEXT["mono"])
    c.arrow((x, 83), (x, 109))
    c.box(x, 146, w, 74, fc=RULE[0], ec=RULE[1], lw=1.6)
    c.text(x, 124, "a decoding rule and its knob", weight="bold")
    c.text(x, 144, "greedy, beam search, or sampling", size="small")
    c.text(x, 162, "with temperature, top-k, top-p, \u2026", size="small")
    c.arrow((x, 183), (x, 209))
    c.box(x, 234, w, 50, fc=COLOUR["pale"])
    c.text(x, 226, "continuation", weight="bold")
    c.text(x, 244, "300 new characters", size="small")
    for cx, title, lines in [
            (62, "likelihood", ["NLL: how", "probable the", "model finds it"]),
            (182, "quality", ["share of its", "words found in", "the training plays"])]:
        c.arrow((x + (cx - x) * 0.45, 259), (cx, 293))
        c.box(cx, 336, 112, 86, fc=MEASURE[0], ec=MEASURE[1], lw=1.6)
        c.text(cx, 308, title, weight="bold")
        for i, line in enumerate(lines):
            c.text(cx, 328 + 17 * i, line, size="small")
    c.text(62, 392, "x axis \u2192", size="small", color=COLOUR["muted"])
    c.text(182, 392, "y axis \u2192", size="small", color=COLOUR["muted"])


def plane_axes(c: Canvas, at: Plane) -> None:
    c.line([at.x0, at.x1], [at.y1, at.y1], colour=COLOUR["grey"])
    c.line([at.x0, at.x0], [at.y0, at.y1], colour=COLOUR["grey"])
    for nll in (0.5, 1.0, 1.5):
        x, y = at(nll, at.real[0])
        c.line([x, x], [y, y + 5], colour=COLOUR["grey"])
        c.text(x, y + 16, f"{nll:.1f}", size="small", color=COLOUR["muted"])
    for real in (0.85, 0.90, 0.95, 1.00):
        x, y = at(at.nll[0], real)
        c.line([x - 5, x], [y, y], colour=COLOUR["grey"])
        c.text(x - 8, y, f"{real:.2f}", size="small", ha="right", color=COLOUR["muted"])
    c.text((at.x0 + at.x1) / 2, at.y1 + 36,
           "NLL, nats per character  (more probable \u2190  \u2192 less probable)")
    c.text(at.x0 - 44, (at.y0 + at.y1) / 2, "share of real words", rotation=90)


def plane_points(c: Canvas, at: Plane, f: QLFacts) -> None:
    """The temperature curve, greedy and beam search, the held-out text, and what each
    region writes."""
    xs, ys = zip(*(at(nll, real) for _, nll, real in f.temperature))
    c.ax.plot(xs, ys, color=COLOUR["blue"], lw=2.2, marker="o", ms=5, zorder=3)
    (_, n0, r0), (_, n1, r1) = f.temperature[0], f.temperature[-1]
    c.text(*at(n0 + 0.03, r0 + 0.006), f"T = {f.temperature[0][0]:g}", ha="left",
           size="small", color=COLOUR["blue"])
    c.text(*at(n1, r1 - 0.008), f"T = {f.temperature[-1][0]:g}", size="small",
           color=COLOUR["blue"])
    mid = len(f.temperature) // 2
    _, nm, rm = f.temperature[mid]
    c.text(*at(nm - 0.05, rm - 0.012), "the knob moves a rule", ha="right", size="small",
           color=COLOUR["blue"], weight="bold")
    c.text(*at(nm - 0.05, rm - 0.021), "along one curve", ha="right", size="small",
           color=COLOUR["blue"], weight="bold")
    for (nll, real), marker, label in [(f.beam, "h", "beam search"),
                                       (f.greedy, "X", "greedy")]:
        c.ax.plot(*at(nll, real), marker=marker, ms=16, color=COLOUR["grey"],
                  mec="white", zorder=4)
        c.text(*at(nll, real - 0.011), label, size="small")
    # greedy's loop, below the curve's probable end, with a leader to greedy's marker
    lx, ly = at(at.nll[0] + 0.04, 0.915)
    gx, gy = at(*f.greedy)
    c.line([lx + 60, gx], [ly - 10, gy + 28], colour=COLOUR["grey"], lw=1.0)
    c.text(lx, ly, "most probable: loops", ha="left", size="small", weight="bold")
    c.text(lx, ly + 17, f"\u201c{shorten(f.loop_line, 34)}\u201d", ha="left",
           size="small", family=TEXT["mono"])
    # Shakespeare's text, above the curve, labelled above its star
    c.ax.plot(*at(*f.heldout), marker="*", ms=17, color=COLOUR["black"], zorder=4)
    n, r = f.heldout
    c.text(*at(n, r + 0.027), "Shakespeare's text:", size="small", weight="bold")
    c.text(*at(n, r + 0.019), "good, yet improbable", size="small")
    c.text(*at(n, r + 0.011), "to the model", size="small")
    # the hottest setting's invented words, above its end of the curve
    hx, hy = at(n1, r1)
    c.text(hx - 60, hy - 52, "least probable:", ha="right", size="small",
           weight="bold")
    c.text(hx - 60, hy - 35, "invented words", ha="right", size="small", weight="bold")
    c.text(hx - 60, hy - 18, ", ".join(f.invented), ha="right", size="small",
           family=TEXT["mono"])


def shorten(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1].rstrip() + "\u2026"


def quality_likelihood_figure(f: QLFacts) -> Canvas:
    """Left: what is measured; right: where the rules land, on the chapter's numbers."""
    c = Canvas(436)
    pipeline(c, f)
    at = Plane(316, 728, 24, 388)
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
