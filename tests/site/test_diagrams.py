"""The book's diagrams (``shakespeare_lm.site.diagrams``): redrawn from the shipped models
they match the committed SVGs byte for byte, fit the page's column at their natural
size, and show what the package computes."""

from __future__ import annotations

import re

import pytest

import shakespeare_lm as slm
from shakespeare_lm.corpus import load_heldout
from shakespeare_lm.site import diagrams

COMMITTED = diagrams.OUT_DIR
NAMES = ["beam_tree.svg", "generation_loop.svg", "kv_cache.svg",
         "speculative_timeline.svg", "continuous_batching.svg", "encoder_decoder.svg",
         "truncation.svg", "rule_pipeline.svg", "quality_likelihood.svg",
         "constraint_mask.svg", "schema_automaton.svg", "draft_heads.svg",
         "chat_template.svg"]


COLUMN_PX = 672  # the page column's width at 1280 px, where a 740 px diagram is shown


@pytest.fixture(scope="module")
def models():
    model, tok = slm.load_pretrained()
    draft, _ = slm.load_pretrained("draft")
    return model, draft, tok


@pytest.fixture(scope="module")
def redrawn(tmp_path_factory):
    """All of them, redrawn with the timeline's costs read back from the committed SVG
    (they were timed when it was drawn, and timings differ from run to run)."""
    out = tmp_path_factory.mktemp("diagrams")
    costs = diagrams.svg_description(COMMITTED / "speculative_timeline.svg")
    diagrams.write_all(out, (costs["draft_cost"], costs["verify_cost"]))
    return out


@pytest.mark.parametrize("name", NAMES)
def test_redrawing_reproduces_the_committed_svg_byte_for_byte(redrawn, name):
    assert (redrawn / name).read_bytes() == (COMMITTED / name).read_bytes(), (
        f"notebooks/diagrams/{name} is stale: redraw it with "
        "`python -m shakespeare_lm.site.diagrams` and commit the result")


@pytest.mark.parametrize("name", NAMES)
def test_svg_is_column_wide_in_pixels_with_legible_text(name):
    svg = (COMMITTED / name).read_text("utf-8")
    head = re.search(r"<svg[^>]*>", svg).group(0)
    width = float(re.search(r'viewBox="0 0 ([\d.]+) [\d.]+"', head).group(1))
    assert 700 <= width <= 800, f"{name}: viewBox width {width}, expected 700-800"
    assert f'width="{width:g}px"' in head, (
        f"{name}: the width is not the viewBox's, in px: {head}")
    sizes = [float(s) for s in re.findall(r"font-size: ([\d.]+)px", svg)]
    assert sizes, f"{name} has no text elements (keep text as text: fonttype 'none')"
    shown = min(sizes) * min(1.0, COLUMN_PX / width)  # the page scales it to the column
    assert shown >= 11, (f"{name}: text of {min(sizes)} px, shown at {shown:.1f} px in the "
                         f"{COLUMN_PX} px column at 1280 px: below the 11 px minimum")
    assert "<title>" in svg and "<dc:date>" not in svg


def leaf_texts(tree: diagrams.BeamTree) -> dict[str, float]:
    """Text and log-probability of every kept node of the last step, by walking up."""
    out = {}
    for node in tree.columns[-1]:
        if node.kept:
            chars, index = [node.char], node.parent
            for column in reversed(tree.columns[:-1]):
                chars.append(column[index].char)
                index = column[index].parent
            out["".join(reversed(chars))] = node.logprob
    return out


def test_beam_tree_shows_the_package_beam_search(models):
    model, _, tok = models
    tree = diagrams.beam_tree(model, tok)
    beams = slm.beam_search(model, tok, diagrams.BEAM_PROMPT, len(tree.columns),
                            tree.beam_width, return_all=True)
    leaves = leaf_texts(tree)
    assert sorted(leaves) == sorted(b.text for b in beams)
    for b in beams:
        assert leaves[b.text] == pytest.approx(b.logprob, abs=1e-4)
    svg = (COMMITTED / "beam_tree.svg").read_text("utf-8")
    greedy = slm.generate(model, tok, diagrams.BEAM_PROMPT, len(tree.columns),
                          temperature=0)
    for logprob in [b.logprob for b in beams] + [sum(greedy.logprobs)]:
        assert f"{logprob:.3f}".replace("-", "\u2212") in svg
    assert tree.best[0] == beams[0].text and tree.greedy[0] == greedy.text


def test_beam_tree_keeps_the_best_width_of_each_step(models):
    model, _, tok = models
    tree = diagrams.beam_tree(model, tok)
    for column in tree.columns:
        ranked = sorted(column, key=lambda n: -n.logprob)
        assert [n.kept for n in ranked] == [True] * tree.beam_width + [False] * (
            len(column) - tree.beam_width)
        assert sum(n.winner for n in column) == 1


def test_speculative_rounds_are_the_start_of_speculative_decode(models):
    model, draft, tok = models
    rounds = diagrams.speculative_rounds(model, draft, tok, diagrams.BEAM_PROMPT,
                                         diagrams.SPEC_GAMMA, diagrams.SPEC_SEED)
    text = "".join(r.proposals[: r.accepted] + r.token for r in rounds)
    g = slm.speculative_decode(model, draft, tok, diagrams.BEAM_PROMPT, len(text),
                               diagrams.SPEC_GAMMA, temperature=1.0,
                               seed=diagrams.SPEC_SEED)
    assert g.text == text
    assert g.stats.tokens_per_round == [r.accepted + 1 for r in rounds]


def test_batch_schedules_never_share_a_row_and_static_waits_for_the_longest():
    static, continuous = diagrams.batching_schedules(load_heldout())
    for sched in (static, continuous):
        for row in range(sched.rows):
            stays = sorted((s.start, s.end) for s in sched.stays if s.row == row)
            assert all(a[1] <= b[0] for a, b in zip(stays, stays[1:]))
    for start in sorted({s.start for s in static.stays})[1:]:   # each later batch
        assert start == max(s.end for s in static.stays if s.start < start)
    assert continuous.steps < static.steps
