"""A kernel-free figure's play button (``figures.Player``): generic, on any figure with a
range slider, frames or a vega chart; without one a figure is unchanged."""

from __future__ import annotations

import json

import pytest

from shakespeare_lm.site.figures import (
    EMBED_OPTIONS,
    Player,
    Slider,
    SliderFigure,
    read_dataset,
)

from .test_figures import bars_frame
from .vega_helpers import drawn


def frames_figure(player=None):
    return SliderFigure([Slider("boundary", range(5), 0, "speech boundary")],
                        frame_fn=lambda boundary: bars_frame(boundary, 1.0), player=player)


def test_a_figure_without_a_player_is_unchanged():
    spec = frames_figure().to_dict()
    assert spec["usermeta"]["embedOptions"] == EMBED_OPTIONS
    assert "slm_" not in json.dumps(spec)


def test_a_player_adds_two_buttons_above_the_chart_and_a_patch_that_runs_them():
    spec = frames_figure(Player("boundary", 500)).to_dict()
    names = [p["name"] for p in spec["params"]]
    assert names == ["boundary", "frame", "slm_playing", "slm_player"]
    assert [r["slm_button"] for r in read_dataset(spec, "slm_buttons")] == ["play", "step"]
    [op] = spec["usermeta"]["embedOptions"]["patch"]
    signals = {s["name"]: s for s in op["value"]["signals"]}
    timer = signals["boundary"]["on"][0]
    assert timer["events"] == {"type": "timer", "throttle": 500}
    # after the last value, the first: 0, 1, 2, 3, 4, 0, ...
    assert timer["update"] == "slm_playing ? (boundary + 1 > 4 ? 0 : boundary + 1) : boundary"
    # the buttons are drawn but transparent until the patch's timer shows them
    [page] = drawn(spec, [{"boundary": 3}], fields=["slm_button", "label"])
    buttons = [i for i in page if "slm_button" in i["datum"]]
    assert {i["datum"]["label"] for i in buttons} == {"\u25b6 play", "step \u25b8"}
    [page] = drawn(spec, [{"slm_playing": True}], fields=["label"])
    assert "\u275a\u275a pause" in {i["datum"].get("label") for i in page}


def test_the_player_takes_reserved_names():
    with pytest.raises(ValueError, match="not a range slider"):
        frames_figure(Player("speech boundary"))
    figure = SliderFigure([Slider("slm_playing", range(3))],
                          frame_fn=lambda slm_playing: bars_frame(slm_playing, 1.0))
    assert figure.params == ["slider_slm_playing"]  # no clash with the player's own
