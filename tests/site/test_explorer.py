"""Chapter 3's explorers: the distribution they draw, and the live widget's buttons."""

import pytest
import torch

from shakespeare_lm.decoding import registry, rules
from shakespeare_lm.site import explorer

from ..conftest import make_tiny


@pytest.fixture(scope="module")
def model():
    return make_tiny(seed=4)


def test_surviving_is_softmax_of_compose_and_greedy_at_temperature_zero():
    logits = torch.tensor([[1.0, 3.0, 3.0, -2.0], [0.5, 0.1, 2.0, 1.9]], dtype=torch.float64)
    got = explorer.surviving(logits, temperature=0.7, top_p=0.8)
    assert torch.equal(got, torch.softmax(rules.compose(logits, temperature=0.7, top_p=0.8), -1))
    greedy = explorer.surviving(logits, temperature=0, top_k=3)
    assert greedy.tolist() == [[0, 1, 0, 0], [0, 0, 1, 0]]  # argmax, lower id among ties


def test_off_values_leave_the_distribution_alone():
    logits = torch.randn(3, 63, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    off = explorer.surviving(logits, top_k=63,
                             **{k: v for k, v in explorer.OFF.items() if k != "top_k"})
    assert torch.allclose(off, torch.softmax(logits, -1))
    assert explorer.generation_kwargs({"top_p": 1.0, "temperature": 0.8}) == {
        "temperature": 0.8, "top_k": None, "top_p": None, "min_p": None, "typical_p": None,
        "epsilon": None, "eta": None}


def test_the_explorers_settings_are_chapter_3s_rules_of_the_registry():
    assert explorer.SETTINGS == ("temperature", "top_k", "top_p", "min_p", "typical_p",
                                 "epsilon", "eta")
    assert explorer.OFF == {"temperature": 1.0, "top_k": None, "top_p": 1.0, "min_p": 0.0,
                            "typical_p": 1.0, "epsilon": 0.0, "eta": 0.0}
    assert explorer.RULE_LABELS == {"top_k": "top-k", "top_p": "top-p", "min_p": "min-p",
                                    "typical_p": "typical", "epsilon": "epsilon", "eta": "eta"}
    assert all(registry.SETTINGS[n].slider for n in explorer.SETTINGS)


def test_unknown_setting_and_bad_value_are_errors():
    with pytest.raises(TypeError, match="top_q"):
        explorer.surviving(torch.zeros(4), top_q=0.5)
    with pytest.raises(ValueError, match="top_p=1.5 is invalid"):
        explorer.surviving(torch.zeros(4), top_p=1.5)


def test_summarize_counts_kept_characters(model, tok):
    logits = explorer.next_logits(model, tok, explorer.START_OF_WORD)
    assert logits.shape == (63,) and logits.dtype == torch.float64
    assert explorer.summarize(logits, tok)["kept"] == 63
    assert explorer.summarize(logits, tok, top_k=4)["kept"] == 4
    assert explorer.summarize(logits, tok, temperature=0)["entropy_bits"] == 0


def test_live_explorer_buttons_extend_the_context(model, tok):
    pytest.importorskip("ipywidgets")
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    box = explorer.live_explorer(model, tok, context="KATHARINA:\n", seed=1, line_chars=30)
    text, tail, grid, row, status = box.children[:5]
    sliders, buttons = grid.children, row.children
    assert [s.description for s in sliders] == ["temperature (0 = greedy)", "top-k", "top-p",
                                                "min-p", "typical mass", "epsilon", "eta"]
    # the registry's sliders, at rest where the rule is off (top-k at the vocabulary's size)
    for name, s in zip(explorer.SETTINGS, sliders):
        spec = registry.SETTINGS[name].slider
        assert (s.min, s.max, s.step) == tuple(63 if v == registry.VOCAB else v
                                               for v in (spec.low, spec.high, spec.step)), name
        assert s.value == (63 if name == "top_k" else explorer.OFF[name]), name
    assert [s.readout_format for n, s in zip(explorer.SETTINGS, sliders) if n != "top_k"] == [
        ".2f", ".2f", ".2f", ".2f", ".3f", ".3f"]  # as many decimals as the step, at least 2
    assert status.value.startswith("kept 63 of 63 characters")
    sliders[1].value = 3  # top-k
    assert status.value.startswith("kept 3 of 63 characters")
    buttons[0].click()    # sample one character under top-k 3
    assert len(text.value) == len("KATHARINA:\n") + 1
    assert text.value[-1] in [tok.chars[i] for i in torch.topk(
        explorer.next_logits(model, tok, "KATHARINA:\n"), 3).indices.tolist()]
    before = text.value
    buttons[1].click()    # continue the line: up to 30 characters or a newline
    added = text.value[len(before):]
    assert 1 <= len(added) <= 30 and ("\n" not in added[:-1])
    # the end of the context shows under the box, what the button added in bold
    assert tail.value == explorer.tail_html(text.value, len(added))
    assert tail.value.endswith(f"{added.replace(chr(10), chr(0x23ce) + '<br>')}</b></div>")
    text.value += "I"     # the reader types: nothing is highlighted any more
    assert tail.value == explorer.tail_html(text.value, 0)
    assert box.children[5].value  # the chart
    text.value = "KATHARINA:\n{"   # not in the vocabulary: an error message, no crash
    assert "not in the vocabulary" in status.value
    assert box.children[5].value == b""  # and no chart of an earlier context beside it
    sliders[2].value = 0.5  # top-p; then "reset settings" puts every slider back at rest
    buttons[2].click()
    assert [s.value for s in sliders] == [1.0, 63, 1.0, 0.0, 1.0, 0.0, 0.0]


def test_the_models_own_entropy_does_not_move_with_the_settings(model, tok):
    logits = explorer.next_logits(model, tok, explorer.START_OF_WORD)
    settings = [{}, {"temperature": 0.5}, {"top_k": 3}, {"temperature": 0}, {"top_p": 0.5}]
    summaries = [explorer.summarize(logits, tok, **s) for s in settings]
    assert len({s["model_bits"] for s in summaries}) == 1
    assert summaries[0]["model_bits"] == summaries[0]["entropy_bits"]  # no rule: the same
    assert len({s["entropy_bits"] for s in summaries}) == len(settings)


def test_the_chart_names_each_colour_and_puts_its_title_above_the_legend():
    chart = explorer.distribution_chart(400, 200, "a title", "chars").to_dict()
    assert chart["vconcat"][0]["title"] == "a title"
    assert chart["resolve"] == {"legend": {"color": "independent"}}  # the legend under it
    scale = chart["vconcat"][0]["layer"][0]["encoding"]["color"]["scale"]
    assert scale["domain"] == [explorer.FINAL, "the model's own", "removed by the rules"]
    grey = chart["vconcat"][0]["layer"][1]["encoding"]["color"]["condition"]["value"]
    assert scale["range"][2] == grey  # the grey outline is named in the legend
    assert "raw" not in " ".join(scale["domain"])


def test_top_lists_only_the_characters_the_rules_keep(model, tok):
    logits = explorer.next_logits(model, tok, explorer.START_OF_WORD)
    top = explorer.summarize(logits, tok, top_k=2)["top5"]
    assert top.count(":") == 2 and ":0.00" not in top
    assert explorer.summarize(logits, tok)["top5"].count(":") == 5


@pytest.mark.parametrize("text,added,expected_end", [
    ("a\nb\nc\nd\ne\nf\ng", 0, "f\u21b5<br>g</div>"),
    ("KATHARINA:\nMoved", 3, "<b style='color:#0072B2'>ved</b></div>"),
])
def test_tail_html_shows_the_last_lines_and_the_new_text(text, added, expected_end):
    shown = explorer.tail_html(text, added, lines=3)
    assert shown.endswith(expected_end)
    if text.count("\n") >= 3:
        assert "\u2026" in shown and "a\u21b5" not in shown   # the head is cut
    assert ("<b style" in shown) == (added > 0)


# --- the kernel-free explorer's stored distributions -------------------------------------
def test_encode_distribution_round_trips_and_keeps_the_kept_set():
    gen = torch.Generator().manual_seed(2)
    for _ in range(50):
        logits = torch.randn(11, generator=gen, dtype=torch.float64) * 4
        keep = torch.rand(11, generator=gen) < 0.6
        keep[torch.randint(0, 11, (1,), generator=gen)] = True
        probs = torch.softmax(logits.masked_fill(~keep, float("-inf")), -1).tolist()
        order = torch.randperm(11, generator=gen).tolist()
        cells = explorer.encode_distribution(probs, order)
        back = explorer.decode_distribution(cells, 11, order)
        assert [b is not None for b in back] == keep.tolist()     # tiny but kept: not None
        assert all(b is None or abs(b - p) <= 0.5 / explorer.UNITS for b, p in zip(back, probs))
        assert not cells.endswith(" ")
    assert explorer.encode_distribution([0.0, 1e-9, 0.25, 0.0], [2, 0, 1, 3]) == "2500  0"


def test_rule_choices_stay_below_the_vocabulary():
    labels = [label for label, _ in explorer.rule_choices(5)]
    assert labels[:4] == ["none", "top-k 1", "top-k 2", "top-k 3"] and "top-k 5" not in labels
    assert len(explorer.rule_choices(63)) == 1 + sum(map(len, explorer.STATIC_RULES.values()))
    assert ("top-p 0.9", {"top_p": 0.9}) in explorer.rule_choices(63)


def test_static_explorer_stores_the_samplers_distribution_for_every_state(model, tok):
    data = explorer.explorer_data(model, tok, {"a": "KATHARINA:\n", "b": explorer.SPEECH})
    n_rules, temps = len(data["choices"]), explorer.STATIC_TEMPERATURES
    assert len(data["states"]) == 2 * len(temps) * n_rules
    for c, context in enumerate(data["contexts"]):
        for t, temperature in enumerate(temps):
            for r, (_, rule) in enumerate(data["choices"]):
                row = data["states"][explorer.state_index(c, t, r, n_rules)]
                expected = explorer.surviving(context["logits"], temperature=temperature, **rule)
                got = explorer.decode_distribution(row["p"], len(tok.chars), context["order"])
                assert [g is not None for g in got] == (expected > 0).tolist(), (c, t, r)
                assert all(g is None or abs(g - e) <= 0.5 / explorer.UNITS
                           for g, e in zip(got, expected.tolist())), (c, t, r)
                summary = explorer.summarize(context["logits"], tok, temperature=temperature,
                                             **rule)
                assert row["bits"] == summary["entropy_bits"], (c, t, r)
    raw = [row["raw_p"] for row in data["chars"] if row["ctx"] == 1]
    assert raw == sorted(raw, reverse=True) and abs(sum(raw) - 1) < 1e-9  # in raw order
