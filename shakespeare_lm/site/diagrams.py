"""The book's five conceptual diagrams, drawn by code from the real models and package.

    python -m shakespeare_lm.site.diagrams [--out notebooks/diagrams]

rewrites ``beam_tree.svg``, ``generation_loop.svg``, ``kv_cache.svg``,
``speculative_timeline.svg`` and ``continuous_batching.svg``. Each is drawn in pixel
coordinates on a canvas ``WIDTH_PX`` wide: one figure unit is one CSS pixel when the SVG
is shown at its natural width, so text sizes are pixel sizes. The files are byte stable:
a fixed ``svg.hashsalt``, no date, and text kept as text (``svg.fonttype='none'``).

What comes from the package: the beam tree is the record of ``beam.beam_core`` run on
the shipped model; the KV cache fills with the model's own greedy continuation; the
speculative rounds are ``speculative.speculative_round`` with the shipped draft model,
and their costs are forward passes timed on this machine (kept in the SVG's description,
so the figure can be redrawn from them); the batching schedules are
``serving.simulate``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import torch

from .. import speculative as sp
from ..corpus import load_heldout
from ..cost import kv_cache_bytes
from ..cost.serving import make_requests, simulate
from ..decoding.beam import BENCH_PROMPT, beam_core, naive_logits, prefix_step
from ..decoding.generate import generate, prefill
from ..decoding.sampler import DecodingConfig
from ..timing import benchmark
from ..weights import load_pretrained

from .svg import (COLOUR, OUT_DIR, SVG_RC, TEXT, VISIBLE, WIDTH_PX, Canvas,  # noqa: F401
                  save_all, save_svg, signed, svg_description, tint, visible)

BEAM_PROMPT = BENCH_PROMPT   # the running example: "KATHARINA:\nMoved! in good time: "
NODE_W = 86                  # a tree node's width in pixels


@dataclass(frozen=True)
class TreeNode:
    """One extension shown in the tree."""

    parent: int         # index of the parent in the previous column (-1: the prompt)
    char: str
    logprob: float      # log p(prefix | prompt), summed over the prefix's characters
    kept: bool          # one of the beam_width best at this step
    winner: bool        # a prefix of the best final beam


@dataclass(frozen=True)
class BeamTree:
    """The search as drawn: one column of nodes per step, the beam's answer and
    greedy's, each as (text, log-probability)."""

    prompt: str
    beam_width: int
    columns: list[list[TreeNode]]
    best: tuple[str, float]
    greedy: tuple[str, float]


class StepRecorder:
    """A ``prefixes (N, t) -> logits (N, V)`` function that keeps what it was asked and
    what it answered: each step's live prefixes and their next-character log-probs."""

    def __init__(self, next_logits):
        self.next_logits = next_logits
        self.calls: list[tuple[list[tuple[int, ...]], torch.Tensor]] = []

    def __call__(self, prefixes: torch.Tensor) -> torch.Tensor:
        logits = self.next_logits(prefixes)
        logp = torch.log_softmax(logits, dim=-1).double()   # as beam_core scores them
        self.calls.append(([tuple(p) for p in prefixes.tolist()], logp))
        return logits


def beam_tree(model, tok, prompt: str = BEAM_PROMPT, beam_width: int = 2,
              steps: int = 4, children: int = 3) -> BeamTree:
    """Run ``beam_core`` on the model and record its tree: every live prefix with its
    ``children`` most probable extensions; the kept ones are the next step's live
    ones."""
    rec = StepRecorder(naive_logits(model, tok.encode(prompt)))
    hyps = beam_core(prefix_step(rec), model.config.vocab_size, steps, beam_width)
    live = [set(prefixes) for prefixes, _ in rec.calls[1:]] + [{h.ids for h in hyps}]
    winner = hyps[0].ids
    cum, order, columns = {(): 0.0}, [()], []
    for t, (prefixes, logp) in enumerate(rec.calls):
        rows = {p: i for i, p in enumerate(prefixes)}
        column, next_order = [], []
        for parent_index, parent in enumerate(order):
            if parent not in rows:
                continue                  # pruned: it has no children
            row = logp[rows[parent]]
            best = torch.sort(row, descending=True, stable=True).indices[:children]
            for token in best:
                prefix = parent + (int(token),)
                cum[prefix] = cum[parent] + float(row[token])
                column.append(TreeNode(parent_index if t else -1, tok.chars[prefix[-1]],
                                       cum[prefix], prefix in live[t],
                                       prefix == winner[: t + 1]))
                next_order.append(prefix)
        columns.append(column)
        order = next_order
    g = generate(model, tok, prompt, steps, temperature=0)
    return BeamTree(prompt, beam_width, columns, (tok.decode(winner), hyps[0].logprob),
                    (g.text, sum(g.logprobs)))


def node_style(node: TreeNode, greedy: bool = False) -> tuple[str, float, object]:
    """(edge colour, line width, line style) of a node and the edge into it; ``greedy``:
    the node is on greedy's line (dash-dot: the best beam's is solid)."""
    if node.winner:
        return COLOUR["vermillion"], 2.4, "-"
    if greedy:
        return COLOUR["orange"], 2.2, (0, (6, 2, 1.5, 2))
    if node.kept:
        return COLOUR["blue"], 1.5, "-"
    return COLOUR["grey"], 1.0, (0, (3, 2))


def beam_tree_figure(tree: BeamTree) -> Canvas:
    """The tree left to right: the prompt, then one column per step."""
    c, spacing, top = Canvas(408), 44, 62
    pos = [[(88, top + 2.5 * spacing)]]
    for t, column in enumerate(tree.columns):
        x = 252 + 128 * t
        y0 = top + (6 - len(column)) * spacing / 2
        pos.append([(x, y0 + i * spacing) for i in range(len(column))])
        c.text(x, 24, f"step {t + 1}", weight="bold")
    c.text(88, 24, "prompt", weight="bold")
    c.box(*pos[0][0], 150, 34, fc=COLOUR["pale"])
    c.text(*pos[0][0], "\u2026" + visible(tree.prompt[-11:]), family=TEXT["mono"])
    text = [[""]]                     # each node's prefix, to find greedy's line
    for t, column in enumerate(tree.columns):
        text.append([text[t][max(node.parent, 0)] + node.char for node in column])
        for (x, y), node, prefix in zip(pos[t + 1], column, text[t + 1]):
            px, py = pos[t][max(node.parent, 0)]
            on_greedy = tree.greedy[0].startswith(prefix)
            colour, lw, ls = node_style(node, on_greedy)
            c.line([px + (75 if t == 0 else NODE_W / 2), x - NODE_W / 2], [py, y],
                   colour=colour, lw=lw if node.kept or on_greedy else 0.9, ls=ls)
            fill = tint(COLOUR["sky"], 0.35) if node.kept else "white"
            c.box(x, y, NODE_W, 32, fc=fill, ec=colour, lw=lw, ls=ls)
            shade = COLOUR["text"] if node.kept else COLOUR["muted"]
            c.text(x - 29, y, visible(node.char), size="large", weight="bold",
                   color=shade, family=TEXT["mono"])
            c.text(x + 11, y, signed(node.logprob, 3), color=shade)
    beam_tree_legend(c, tree, 340)
    return c


def beam_tree_legend(c: Canvas, tree: BeamTree, y: float) -> None:
    """The key to the colours, and the two answers."""
    c.legend(40, y, [
        ("kept in the beam", tint(COLOUR["sky"], 0.35), COLOUR["blue"], "-", None),
        ("pruned", "white", COLOUR["grey"], (0, (3, 2)), None),
        ("path of the best beam", "white", COLOUR["vermillion"], "-", None),
        ("greedy's line", "white", COLOUR["orange"], (0, (6, 2, 1.5, 2)), None)])
    (best, best_lp), (greedy, greedy_lp) = tree.best, tree.greedy
    width = tree.beam_width
    c.text(40, y + 30, f"Numbers: log-probability of the prefix given the prompt. "
           f"Width {width} keeps the {width} best extensions per step.", ha="left")
    c.text(40, y + 54, f"beam search returns \u201c{visible(best)}\u201d  "
           f"({signed(best_lp, 3)});   greedy returns \u201c{visible(greedy)}\u201d  "
           f"({signed(greedy_lp, 3)})", ha="left")


# --- 2. the generation loop -----------------------------------------------------------
@dataclass(frozen=True)
class LoopFacts:
    """The real values the flowchart quotes: the prompt, its ids, the vocabulary size
    and the first character greedy decoding picks, with its probability."""

    prompt: str
    ids: list[int]
    vocab_size: int
    first_char: str
    first_prob: float


def loop_facts(model, tok, prompt: str = BEAM_PROMPT) -> LoopFacts:
    g = generate(model, tok, prompt, 1, temperature=0)
    return LoopFacts(prompt, tok.encode(prompt), model.config.vocab_size, g.text,
                     float(torch.tensor(g.logprobs[0]).exp()))


def flow_box(c: Canvas, x: float, y: float, title: str, lines: list[str], *,
             loop: bool = True, h: float = 74) -> None:
    """A flowchart step: a bold title over lines of detail; ``loop``: drawn in the
    colours of the per-character loop."""
    c.box(x, y, 214, h, fc=tint(COLOUR["sky"], 0.18) if loop else "white",
          ec=COLOUR["blue"] if loop else COLOUR["black"], lw=1.6)
    top = y - 9 * len(lines)
    c.text(x, top, title, weight="bold")
    for i, line in enumerate(lines):
        c.text(x, top + 17 * (i + 1), line, size="small")


def generation_loop_figure(f: LoopFacts) -> Canvas:
    """Prompt to text: the one-time path (top row) and the per-character loop."""
    c = Canvas(472)
    xs, rows = (124, 370, 616), (58, 196, 318, 430)
    c.rect(8, 126, 724, 250, fc=tint(COLOUR["sky"], 0.07), ec=COLOUR["blue"], lw=1.0,
           ls=(0, (4, 3)))
    c.text(20, 139, "once per new character", ha="left", size="small",
           color=COLOUR["blue"], style="italic")
    c.text(20, 10, "once per prompt", ha="left", size="small", style="italic", va="top")
    ids = ", ".join(map(str, f.ids[:6]))
    prompt_lines = [visible(line) for line in f.prompt.splitlines(keepends=True)]
    flow_box(c, xs[0], rows[0], "prompt", prompt_lines[:2], loop=False)
    flow_box(c, xs[1], rows[0], "tokenize (tok.encode)",
             [f"[{ids}, \u2026]", f"{len(f.ids)} ids, one per character"], loop=False)
    flow_box(c, xs[2], rows[0], "prefill: one forward pass",
             [f"over all {len(f.ids)} prompt characters;",
              "writes their K, V to the cache"], loop=False)
    flow_box(c, xs[2], rows[1], "logits",
             [f"{f.vocab_size} scores, one per character", "of the vocabulary"])
    flow_box(c, xs[1], rows[1], "decoding rules (Sampler)",
             ["penalties \u2192 constraint mask",
              "\u2192 temperature \u2192 truncation"])
    flow_box(c, xs[0], rows[1], "choose a character",
             ["softmax and a seeded draw,", "or argmax at temperature 0",
              f"(greedy here: \u2018{visible(f.first_char)}\u2019, "
              f"p = {f.first_prob:.3f})"], h=88)
    flow_box(c, xs[0], rows[2], "append and stream",
             ["append the id to the text;", "tok.decode shows the character"])
    flow_box(c, xs[1], rows[2], "stop?",
             ["stop sequence, max_new_tokens", "or a full context window"])
    flow_box(c, xs[2], rows[2], "decode step: forward pass",
             ["on the 1 new character,", "reading the KV cache"])
    flow_box(c, xs[1], rows[3], "return the Generation",
             [".text .ids .logprobs .stop_reason"], loop=False, h=56)
    generation_loop_arrows(c, xs, rows)
    return c


def generation_loop_arrows(c: Canvas, xs, rows) -> None:
    """The edges: right along the top, down, round the loop, out at 'stop? yes'."""
    half_w, half_h, loop = 107, 37, COLOUR["blue"]
    c.arrow((xs[0] + half_w, rows[0]), (xs[1] - half_w, rows[0]))
    c.arrow((xs[1] + half_w, rows[0]), (xs[2] - half_w, rows[0]))
    c.arrow((xs[2], rows[0] + half_h), (xs[2], rows[1] - half_h))
    c.arrow((xs[2] - half_w, rows[1]), (xs[1] + half_w, rows[1]), colour=loop)
    c.arrow((xs[1] - half_w, rows[1]), (xs[0] + half_w, rows[1]), colour=loop)
    c.arrow((xs[0], rows[1] + 44), (xs[0], rows[2] - half_h), colour=loop)
    c.arrow((xs[0] + half_w, rows[2]), (xs[1] - half_w, rows[2]), colour=loop)
    c.arrow((xs[1] + half_w, rows[2]), (xs[2] - half_w, rows[2]), colour=loop)
    c.text((xs[1] + xs[2]) / 2, rows[2] - 10, "no", size="small", color=loop,
           weight="bold")
    c.arrow((xs[2] + 40, rows[2] - half_h), (xs[2] + 40, rows[1] + half_h), colour=loop,
            lw=2.0)
    c.text(xs[2] + 48, (rows[1] + rows[2]) / 2, "next step", ha="left", size="small",
           color=loop, weight="bold")
    c.arrow((xs[1], rows[2] + half_h), (xs[1], rows[3] - 28))
    c.text(xs[1] + 8, (rows[2] + rows[3]) / 2 + 4, "yes", ha="left", size="small",
           weight="bold")


# --- 3. the KV cache ------------------------------------------------------------------
KV_PROMPT = "ROMEO:\n"
NEW = (tint(COLOUR["orange"], 0.6), COLOUR["vermillion"], "-")   # fill, edge, style
CACHED = (tint(COLOUR["sky"], 0.45), COLOUR["blue"], "-")
EMPTY = ("white", COLOUR["grey"], (0, (2, 2)))


@dataclass(frozen=True)
class KVFacts:
    """A prompt and the model's greedy continuation (character i is fed at decode step
    i + 1), and what one cache slot holds."""

    prompt: str
    generated: str
    n_layer: int
    d_model: int
    bytes_per_slot: int
    dtype: str


def kv_facts(model, tok, prompt: str = KV_PROMPT, steps: int = 3) -> KVFacts:
    g = generate(model, tok, prompt, steps + 1, temperature=0)
    cfg, weight = model.config, next(model.parameters())
    size = int(kv_cache_bytes(cfg.n_layer, cfg.d_model, 1, 1, weight.element_size()))
    return KVFacts(prompt, g.text, cfg.n_layer, cfg.d_model, size,
                   str(weight.dtype).removeprefix("torch."))


def kv_cache_figure(f: KVFacts, spare: int = 2) -> Canvas:
    """One block per step (prefill, then decode steps): the cache's K and V rows."""
    steps = len(f.generated) - 1
    fed = f.prompt + f.generated[:steps]
    n_slots, cell, x0, pitch = len(fed) + spare, 36, 150, 84
    c = Canvas(182 + pitch * (steps + 1))
    c.text(x0 - 14, 24, "slot", ha="right", size="small")
    c.text(x0 - 14, 46, "character", ha="right", size="small")
    for j in range(n_slots):
        c.text(x0 + cell * (j + 0.5), 24, str(j), size="small", color=COLOUR["muted"])
        if j < len(fed):
            c.text(x0 + cell * (j + 0.5), 46, visible(fed[j]), size="large",
                   weight="bold", family=TEXT["mono"])
    for s in range(steps + 1):
        top = 76 + pitch * s
        before = 0 if s == 0 else len(f.prompt) + s - 1   # slots cached before the step
        after = len(f.prompt) + s                         # ... and after it
        kv_cache_rows(c, x0, top, cell, n_slots, before, after)
        feeds = visible(f.prompt) if s == 0 else f"\u2018{visible(fed[before])}\u2019"
        c.text(10, top + 6, "prefill" if s == 0 else f"decode step {s}", ha="left",
               weight="bold")
        c.text(10, top + 25, f"feeds {feeds}", ha="left", size="small")
        c.text(10, top + 43, f"predicts \u2018{visible(f.generated[s])}\u2019",
               ha="left", size="small")
        kv_query(c, x0, cell, x0 + cell * n_slots, top, s, after)
    kv_cache_legend(c, 94 + pitch * (steps + 1), f)
    return c


def kv_cache_rows(c: Canvas, x0, top, cell, n_slots, before, after) -> None:
    """The K and V rows: slots < before were cached earlier, [before, after) are written
    now, the rest are preallocated and empty."""
    for r, label in enumerate(("K", "V")):
        y = top + 30 * r
        c.text(x0 - 12, y + 13, label, ha="right", weight="bold")
        for j in range(n_slots):
            fc, ec, ls = CACHED if j < before else NEW if j < after else EMPTY
            c.rect(x0 + cell * j + 1, y, cell - 2, 26, fc=fc, ec=ec, lw=1.1, ls=ls)


def kv_query(c: Canvas, x0, cell, x_end, top, step: int, reads: int) -> None:
    """The step's query (or the prompt's queries), bracketing the slots it reads."""
    x, colour = x_end + 30, COLOUR["vermillion"]
    c.box(x, top + 13, 38, 26, fc=NEW[0], ec=colour, radius=3)
    c.text(x, top + 13, f"q\u00d7{reads}" if step == 0 else "q", size="small",
           weight="bold")
    reach = x0 + cell * reads
    c.line([x0 + 1, x0 + 1, reach - 1, reach - 1], [top - 1, top - 7, top - 7, top - 1],
           colour=colour, lw=1.3, zorder=3)
    c.line([reach - 1, x, x], [top - 7, top - 7, top], colour=colour, lw=1.0,
           ls=(0, (2, 2)))
    c.text(x, top + 44, f"reads {reads}" if step else "used once,", size="small")
    c.text(x, top + 60, "K and V" if step else "then dropped", size="small")


def kv_cache_legend(c: Canvas, y: float, f: KVFacts) -> None:
    c.legend(12, y, [("written this step", *NEW, None),
                     ("cached, read again", *CACHED, None),
                     ("preallocated, empty", *EMPTY, None)])
    lines = ["A query is used only in the step its character is fed: later characters "
             "read",
             "the old keys and values, never the old queries. So K and V are cached; "
             "Q is not.",
             f"One slot holds K and V in {f.n_layer} layers \u00d7 {f.d_model} numbers "
             f"each: {f.bytes_per_slot:,} bytes in {f.dtype}."]
    for i, line in enumerate(lines):
        c.text(12, y + 28 + 20 * i, line, ha="left")


# --- 4. speculative rounds on a timeline ----------------------------------------------
SPEC_SEED = 13        # a seed whose first two rounds show a rejection and a bonus token
SPEC_GAMMA = 4


@dataclass(frozen=True)
class SpecRound:
    """One draft-and-verify round: the draft's proposals, how many the target kept, and
    the token drawn after them (from the residual, or the bonus token)."""

    proposals: str
    accepted: int
    token: str


@dataclass(frozen=True)
class SpecFacts:
    """The rounds drawn, their costs and a longer run's statistics."""

    gamma: int
    seed: int
    rounds: list[SpecRound]
    draft_cost: float         # one draft step, in target passes over one position
    verify_cost: float        # one target pass over gamma + 1 positions, likewise
    chars_per_pass: float     # over a longer run with the same settings
    acceptance: float
    run_chars: int


def speculative_rounds(target, draft, tok, prompt: str, gamma: int, seed: int,
                       n_rounds: int = 2) -> list[SpecRound]:
    """The first ``n_rounds`` rounds of ``speculative_decode`` at temperature 1 with
    ``seed``, run one at a time with ``speculative.speculative_round``."""
    cfg = DecodingConfig.from_settings(None, temperature=1.0, seed=seed)
    budget = n_rounds * (gamma + 1)
    su = sp.setup(target, draft, tok, prompt, budget, gamma, "exact", cfg)
    gen = cfg.generator(torch.device("cpu"))
    cache = sp.prefill_both(target, su.drafter, su.ids, len(su.ids) + su.budget)
    seq, rounds = list(su.ids), []
    try:
        for _ in range(n_rounds):
            rnd = sp.speculative_round(target, su.drafter, seq, gamma, su.sampler, gen)
            seq += rnd.new_tokens
            rounds.append(SpecRound(tok.decode(rnd.proposals), rnd.accepted,
                                    tok.chars[rnd.token]))
    finally:
        cache.close()
        su.drafter.finish()
    return rounds


@torch.no_grad()
def pass_seconds(model, tok, width: int, context: int = 100) -> float:
    """Seconds of one cached forward pass over ``width`` new positions after ``context``
    cached ones (the fastest of 20, after 3 untimed passes)."""
    ids = torch.tensor([tok.encode((BEAM_PROMPT * 8)[: context + width])])
    new_pos = torch.arange(context, context + width)
    with model.cache(1, context + width):
        prefill(model, ids[:, :context], torch.arange(context))
        return benchmark(lambda: model(ids[:, context:], new_pos), warmup=3, repeats=20,
                         reduce=min)


def measure_pass_costs(target, draft, tok, gamma: int,
                       trials: int = 5) -> tuple[float, float]:
    """(a draft step, a target pass over gamma + 1 positions), each in target passes
    over one position, timed on one thread as the chapters run: the three passes are
    timed in turn ``trials`` times, keeping the fastest of each (noise only adds
    time)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        best = [float("inf")] * 3
        for _ in range(trials):
            times = (pass_seconds(target, tok, 1), pass_seconds(draft, tok, 1),
                     pass_seconds(target, tok, gamma + 1))
            best = [min(b, t) for b, t in zip(best, times)]
    finally:
        torch.set_num_threads(threads)
    return round(best[1] / best[0], 2), round(best[2] / best[0], 2)


def speculative_facts(target, draft, tok, costs: tuple[float, float] | None = None, *,
                      prompt: str = BEAM_PROMPT, gamma: int = SPEC_GAMMA,
                      seed: int = SPEC_SEED, run_chars: int = 200) -> SpecFacts:
    """The rounds to draw, their costs (timed here unless given as (draft step,
    verifying pass)) and the statistics of a ``run_chars``-character run with the same
    settings."""
    rounds = speculative_rounds(target, draft, tok, prompt, gamma, seed)
    draft_cost, verify_cost = costs or measure_pass_costs(target, draft, tok, gamma)
    run = sp.speculative_decode(target, draft, tok, prompt, run_chars, gamma,
                                temperature=1.0, seed=seed)
    return SpecFacts(gamma, seed, rounds, draft_cost, verify_cost,
                     run.stats.tokens_per_pass, run.stats.acceptance_rate, len(run.ids))


def spec_time(f: SpecFacts) -> float:
    """The drawn rounds' time, in target passes over one position."""
    return len(f.rounds) * (f.gamma * f.draft_cost + f.verify_cost)


def plain_chars(f: SpecFacts) -> int:
    """Characters plain decoding makes in that time: one per whole pass."""
    return int(spec_time(f) + 1e-9)


class TimeAxis:
    """Maps time (steps, or target passes over one position) to pixels."""

    def __init__(self, x0: float, x1: float, span: float):
        self.x0, self.scale = x0, (x1 - x0) / span

    def __call__(self, t: float) -> float:
        return self.x0 + t * self.scale

    def mid(self, t0: float, t1: float) -> float:
        return self.x0 + (t0 + t1) / 2 * self.scale

    def draw(self, c: Canvas, y: float, span: float, every: int, label: str) -> None:
        """The axis line at height y, a tick every ``every`` units, and its label."""
        c.line([self(0), self(span)], [y, y])
        for t in range(0, int(span + 1e-9) + 1, every):
            c.line([self(t)] * 2, [y, y + 5])
            c.text(self(t), y + 15, str(t), size="small")
        c.text(self(span / 2), y + 33, label, size="small")


def speculative_timeline_figure(f: SpecFacts) -> Canvas:
    """Plain decoding and speculative rounds on one time axis."""
    # every text at the style's full size or larger: the page shows the figure at about
    # 90% of its natural width, and 11 px is the least a reader should have to read
    c = Canvas(430)
    total, passes = spec_time(f), plain_chars(f)
    round_cost, at = total / len(f.rounds), TimeAxis(188, 622, total)
    plain_y, draft_y, target_y, axis_y = 48, 138, 178, 292
    c.text(10, plain_y - 9, "plain decoding", ha="left", weight="bold")
    c.text(10, plain_y + 11, "target: 1 character", ha="left")
    c.text(10, draft_y - 42, "speculative decoding", ha="left", weight="bold")
    c.text(10, draft_y, f"draft: {f.gamma} proposals", ha="left")
    c.text(10, target_y, f"target: checks all {f.gamma}", ha="left")
    for i in range(passes):
        c.box(at.mid(i, i + 1), plain_y, at(1) - at(0) - 3, 28, fc=CACHED[0],
              ec=COLOUR["blue"], radius=3)
        c.text(at.mid(i, i + 1), plain_y, f"pass {i + 1}")
    start, emitted = 0.0, 0
    for r, rnd in enumerate(f.rounds):
        spec_round(c, at, f, rnd, start, draft_y, target_y)
        c.text(at.mid(start, start + round_cost), draft_y - 42, f"round {r + 1}",
               weight="bold")
        start += round_cost
        emitted += rnd.accepted + 1
        c.line([at(start)] * 2, [draft_y - 50, axis_y], colour=COLOUR["grey"], lw=0.9,
               ls=(0, (3, 3)))
    c.text(at(total) + 10, plain_y, f"{passes} characters", ha="left", weight="bold")
    c.text(at(total) + 10, (draft_y + target_y) / 2, f"{emitted} characters", ha="left",
           weight="bold")
    spec_axis(c, at, axis_y, total)
    spec_footer(c, f, axis_y + 60)
    return c


def spec_axis(c: Canvas, at: TimeAxis, y: float, span: float) -> None:
    """The time axis, as ``TimeAxis.draw`` draws it, with its text at the full size."""
    c.line([at(0), at(span)], [y, y])
    for t in range(0, int(span + 1e-9) + 1):
        c.line([at(t)] * 2, [y, y + 5])
        c.text(at(t), y + 16, str(t))
    c.text(at(span / 2), y + 36, "time, in target passes over one position")


def spec_round(c: Canvas, at: TimeAxis, f: SpecFacts, rnd: SpecRound, start: float,
               draft_y: float, target_y: float) -> None:
    """One round: the draft's proposals in turn, one verifying pass, what it decided."""
    for i, ch in enumerate(rnd.proposals):
        t = start + i * f.draft_cost
        c.box(at.mid(t, t + f.draft_cost), draft_y, at(f.draft_cost) - at(0) - 2, 26,
              fc=NEW[0], ec=COLOUR["orange"], radius=2)
        c.text(at.mid(t, t + f.draft_cost), draft_y, visible(ch), family=TEXT["mono"])
    v0 = start + f.gamma * f.draft_cost
    v1 = v0 + f.verify_cost
    c.box(at.mid(v0, v1), target_y, at(v1) - at(v0) - 2, 26, fc=CACHED[0],
          ec=COLOUR["blue"], radius=3)
    c.text(at.mid(v0, v1), target_y, f"{f.gamma + 1} positions")
    cell = (at(v1) - at(v0)) / (f.gamma + 1)
    for i, ch in enumerate(rnd.proposals):
        mark, colour = (("\u2713", COLOUR["green"]) if i < rnd.accepted else
                        ("\u2717", COLOUR["vermillion"]) if i == rnd.accepted else
                        ("\u2013", COLOUR["grey"]))
        x = at(v0) + cell * (i + 0.5)
        c.text(x, target_y + 28, visible(ch), family=TEXT["mono"],
               color=COLOUR["text"] if i <= rnd.accepted else COLOUR["grey"])
        c.text(x, target_y + 46, mark, size="large", weight="bold", color=colour)
    bonus = rnd.accepted == len(rnd.proposals)
    if bonus:  # every proposal kept: the pass's last position gives one more token
        x = at(v0) + cell * (len(rnd.proposals) + 0.5)
        c.text(x, target_y + 28, visible(rnd.token), family=TEXT["mono"], weight="bold",
               color=COLOUR["blue"])
        c.text(x, target_y + 46, "+", size="large", weight="bold",
               color=COLOUR["blue"])
    kept = visible(rnd.proposals[: rnd.accepted] + rnd.token)
    c.text(at.mid(v0, v1), target_y + 70, f"emits \u2018{kept}\u2019", weight="bold")
    c.text(at.mid(v0, v1), target_y + 89, f"{'bonus' if bonus else 'residual'} draw: "
           f"\u2018{visible(rnd.token)}\u2019")


def spec_footer(c: Canvas, f: SpecFacts, y: float) -> None:
    lines = [f"Box widths, timed once on one CPU thread: a draft step {f.draft_cost:.2f} and "
             f"a pass over {f.gamma + 1} positions",
             f"{f.verify_cost:.2f} target passes over one position. Draft model, "
             f"\u03b3 = {f.gamma}, temperature 1, seed {f.seed}.",
             f"Over {f.run_chars} characters from this prompt: {f.chars_per_pass:.2f} "
             f"characters per target pass, acceptance {f.acceptance:.2f}."]
    for i, line in enumerate(lines):
        c.text(10, y + 20 * i, line, ha="left")


# --- 5. static vs continuous batching -------------------------------------------------
BATCH_SEED, BATCH_REQUESTS, BATCH_ROWS = 7, 7, 3
REQUEST_COLOURS = ("orange", "sky", "green", "blue", "vermillion", "purple", "yellow")
IDLE = ("white", COLOUR["grey"], "-", "////")


@dataclass(frozen=True)
class Stay:
    """One request's stay in a batch row: steps [start, end); it reads its prompt one
    character a step until step ``generating``, then makes one new character a step."""

    rid: int
    row: int
    start: int
    generating: int
    end: int


@dataclass(frozen=True)
class BatchSchedule:
    """What ``serving.simulate`` did with the requests under one scheduler, by row."""

    policy: str
    rows: int
    stays: list[Stay]
    steps: int
    row_utilization: float
    mean_finish_step: float


def batch_schedule(requests, policy: str, max_batch: int) -> BatchSchedule:
    """``serving.simulate``'s schedule, laid out by row. The simulation records when
    each request finished; a request with a P-character prompt and N new characters
    holds its row for P + N - 1 steps, and takes the lowest free row, as the engine
    does. The layout is checked against the simulation's busy rows at every step."""
    longest = max(len(r.prompt) + r.max_new_tokens for r in requests)
    result = simulate(requests, policy=policy, max_batch=max_batch, context=longest)
    spans = sorted((result.finish_step[r.rid] - len(r.prompt) - r.max_new_tokens + 1,
                    r.rid, len(r.prompt), result.finish_step[r.rid]) for r in requests)
    free_at, stays = [0] * max_batch, []
    for start, rid, prompt_len, end in spans:
        row = next((i for i, f in enumerate(free_at) if f <= start), None)
        if row is None:
            raise RuntimeError(f"request {rid} starts at step {start} with no free "
                               "row: the layout disagrees with serving.simulate")
        free_at[row] = end
        stays.append(Stay(rid, row, start, start + prompt_len - 1, end))
    busy = [sum(s.start <= t < s.end for s in stays) for t in range(result.steps)]
    if busy != result.active_rows:
        raise RuntimeError(f"the {policy} layout disagrees with serving.simulate: "
                           f"busy rows {busy} per step, the simulation had "
                           f"{result.active_rows}")
    return BatchSchedule(policy, max_batch, stays, result.steps, result.row_utilization,
                         result.mean_finish_step)


def batching_schedules(text: str, *, n: int = BATCH_REQUESTS, seed: int = BATCH_SEED,
                       max_batch: int = BATCH_ROWS) -> list[BatchSchedule]:
    """The same requests (drawn as in chapter 7, with short prompts and answers) under
    static and continuous batching."""
    requests = make_requests(n, text, seed=seed, prompt_len=(2, 4), new_tokens=(2, 14))
    return [batch_schedule(requests, p, max_batch) for p in ("static", "continuous")]


def continuous_batching_figure(schedules: list[BatchSchedule]) -> Canvas:
    """One Gantt panel per scheduler: batch rows against decode steps, on one axis."""
    c = Canvas(400)
    span = max(s.steps for s in schedules)
    at = TimeAxis(64, 724, span)
    titles = {"static": "static batching: a new batch starts only when every row is "
                        "free",
              "continuous": "continuous batching: a free row takes the next request at "
                            "once"}
    for k, sched in enumerate(schedules):
        top = 14 + 150 * k
        c.text(10, top + 8, titles[sched.policy], ha="left", weight="bold")
        c.text(10, top + 28, f"all {len(sched.stays)} requests done after "
               f"{sched.steps} steps; rows busy {sched.row_utilization:.0%} of the "
               f"time; a request finishes at step {sched.mean_finish_step:.1f} on "
               "average",
               ha="left", size="small")
        gantt_rows(c, at, sched, top + 42)
    axis_y = 14 + 150 * len(schedules)
    at.draw(c, axis_y, span, 5,
            "decode step (every busy row feeds one character a step)")
    blue = COLOUR["blue"]
    c.legend(10, axis_y + 62, [
        ("reading the prompt", tint(blue, 0.25), blue, "-", None),
        ("generating", tint(blue, 0.6), blue, "-", None), ("idle row", *IDLE)])
    c.text(WIDTH_PX - 10, axis_y + 62, "All requests wait in the queue at step 0.",
           ha="right", size="small")
    return c


def gantt_rows(c: Canvas, at: TimeAxis, sched: BatchSchedule, top: float) -> None:
    """The batch's rows: each stay a bar (prompt pale, new characters darker) over the
    hatched idle row."""
    h, pitch = 26, 32
    for row in range(sched.rows):
        y = top + pitch * row
        c.text(at(0) - 8, y + h / 2, f"row {row + 1}", ha="right", size="small")
        c.rect(at(0), y, at(sched.steps) - at(0), h, fc=IDLE[0], ec=IDLE[1], lw=0.6,
               hatch=IDLE[3])
    for s in sched.stays:
        colour = COLOUR[REQUEST_COLOURS[s.rid % len(REQUEST_COLOURS)]]
        y = top + pitch * s.row
        c.rect(at(s.start), y, at(s.generating) - at(s.start), h, fc=tint(colour, 0.25),
               ec=colour, lw=1.0)
        c.rect(at(s.generating), y, at(s.end) - at(s.generating), h,
               fc=tint(colour, 0.6), ec=colour, lw=1.0)
        c.text(at.mid(s.start, s.end), y + h / 2, f"R{s.rid + 1}", weight="bold")


# --- all five -------------------------------------------------------------------------
def alt_texts(tree: BeamTree, spec: SpecFacts) -> dict[str, str]:
    """One-line descriptions (the SVGs' titles), worded from the data they describe."""
    best, greedy = visible(tree.best[0]), visible(tree.greedy[0])
    made = sum(r.accepted + 1 for r in spec.rounds)
    return {
        "beam_tree.svg":
            f"Beam search of width {tree.beam_width} over {len(tree.columns)} "
            f"characters after the prompt: the kept prefixes lead to "
            f"\u201c{best}\u201d, while greedy's \u201c{greedy}\u201d is pruned.",
        "generation_loop.svg":
            "Flowchart of generation: tokenize and prefill once, then logits, decoding "
            "rules, choose, append and stream, a stop check and a cached decode step, "
            "once per new character.",
        "kv_cache.svg":
            "The KV cache over a prefill and decode steps: the prefill writes the "
            "prompt's key and value slots at once; each decode step then writes one new "
            "slot, and its query reads every cached slot.",
        "speculative_timeline.svg":
            f"Timeline over {spec_time(spec):.2f} target passes' time: plain decoding "
            f"makes {plain_chars(spec)} characters, and {len(spec.rounds)} speculative "
            f"rounds of {spec.gamma} draft steps and one verifying target pass each "
            f"make {made}.",
        "continuous_batching.svg":
            "Gantt charts of the same requests on a batch of rows: static batching "
            "leaves rows idle until the longest request ends; continuous batching "
            "refills them at once.",
    }


def write_all(out_dir: Path = OUT_DIR,
              spec_costs: tuple[float, float] | None = None) -> list[Path]:
    """Draw the book's diagrams from the shipped models into ``out_dir``. ``spec_costs``:
    (draft step, verifying pass) for the timeline; timed on this machine when None."""
    model, tok = load_pretrained()
    draft, _ = load_pretrained("draft")
    tree = beam_tree(model, tok)
    spec = speculative_facts(model, draft, tok, spec_costs)
    alt = alt_texts(tree, spec)
    with matplotlib.rc_context(SVG_RC):
        drawn = {
            "beam_tree.svg": (beam_tree_figure(tree), {"prompt": tree.prompt}),
            "generation_loop.svg": (generation_loop_figure(loop_facts(model, tok)),
                                    {"prompt": BEAM_PROMPT}),
            "kv_cache.svg": (kv_cache_figure(kv_facts(model, tok)),
                             {"prompt": KV_PROMPT}),
            "speculative_timeline.svg": (speculative_timeline_figure(spec), {
                "draft_cost": spec.draft_cost, "verify_cost": spec.verify_cost,
                "gamma": spec.gamma, "seed": spec.seed, "prompt": BEAM_PROMPT}),
            "continuous_batching.svg": (continuous_batching_figure(
                batching_schedules(load_heldout())), {"seed": BATCH_SEED}),
        }
    return save_all(drawn, alt, out_dir) + write_chapters(out_dir)


def write_chapters(out_dir: Path = OUT_DIR) -> list[Path]:
    """The diagrams of chapters 1, 3, 4, 5, 6 and 8, each drawn by its chapter's module."""
    from . import (diagrams_ch1, diagrams_ch3, diagrams_ch4, diagrams_ch5, diagrams_ch6,
                   diagrams_ch8)

    return [diagrams_ch1.write(out_dir), *diagrams_ch3.write_ch3(out_dir),
            *diagrams_ch4.write_all(out_dir), *diagrams_ch5.write_ch5(out_dir),
            diagrams_ch6.write(out_dir), diagrams_ch8.write(out_dir)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Redraw the book's diagrams as SVG.")
    parser.add_argument("--out", type=Path, default=OUT_DIR,
                        help="folder for the SVGs (default: notebooks/diagrams)")
    parser.add_argument("--spec-costs", type=float, nargs=2,
                        metavar=("DRAFT", "VERIFY"),
                        help="the timeline's costs, in target passes over one "
                             "position (default: time them on this machine)")
    args = parser.parse_args(argv)
    costs = tuple(args.spec_costs) if args.spec_costs else None
    for path in write_all(args.out, costs):
        print(path)


if __name__ == "__main__":
    main()
