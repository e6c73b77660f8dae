"""Chapter 7's two kernel-free widgets: the prefill/decode player and the batching
figure. What they draw equals the package's roofline functions and the stored
measurements; the player's play button (a JSON patch of the compiled Vega spec, see
``figures.Player``) steps, pauses and wraps around, run in node with vega."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from shakespeare_lm import cost as rf
from shakespeare_lm.site import roofline_charts as charts
from shakespeare_lm.site.figures import Player, Slider, SliderFigure, read_dataset

from ..site.vega_helpers import NODE, NODE_MODULES, ROOT, drawn, need_vega, param_setting

B7, M70 = rf.MODELS["7b"], rf.MODELS["70b"]
ROUND, H100 = rf.HARDWARE["round-gpu"], rf.HARDWARE["h100"]
H200_RUN = json.loads((ROOT / "notebooks" / "07_cost_of_generation_h200.json").read_text())


def close(a: float, b: float, digits: int = 4) -> bool:
    """Equal as the page stores numbers: to ``digits`` significant digits."""
    return math.isclose(a, b, rel_tol=10 ** (1 - digits))


# --- the prefill/decode player -------------------------------------------------------
def test_a_request_is_the_packages_prefill_then_decode_steps():
    steps = charts.request_steps(B7, ROUND, 1000, n_decode=4)
    assert steps[0] == rf.prefill_cost(B7, ROUND, 1000)
    assert steps[1:] == [rf.decode_cost(B7, ROUND, 1000 + i) for i in range(4)]


def test_every_row_of_the_player_is_the_rooflines_numbers():
    fig = charts.prefill_decode_figure()
    rows = read_dataset(fig.to_dict(), "steps")
    assert len(rows) == 2 * 3 * 3 * 9  # models, hardware, prompt lengths, steps
    for row in rows:
        spec, hw = charts.PLAYER_MODELS[row["model"]], charts.PLAYER_HARDWARE[row["hw"]]
        cost = charts.request_steps(spec, hw, int(row["prompt_len"]))[int(row["step"])]
        assert close(row[charts.WEIGHTS], spec.weight_bytes / rf.GB)  # every step, all
        assert close(row[charts.WEIGHTS] + row[charts.KV], cost.bytes / rf.GB)
        assert close(row["flops"], cost.flops) and close(row["ms"], cost.seconds * 1e3)
        assert close(row["intensity"], cost.intensity)
        assert close(row["ridge"], hw.ridge_intensity) and row["bound"] == cost.bound
        assert [row["c0"], row["c1"], row["c2"]] == charts.step_caption(
            spec, hw, int(row["prompt_len"]), int(row["step"]), cost, 8)


def test_weights_load_in_full_every_step_while_the_math_collapses_in_decode():
    steps = charts.request_steps(B7, ROUND, 1000)
    assert all(c.bytes >= B7.weight_bytes for c in steps)
    assert steps[0].bound == "compute" and steps[0].intensity > ROUND.ridge_intensity
    assert all(c.bound == "memory" and c.flops < steps[0].flops / 500 for c in steps[1:])
    caption = charts.step_caption(B7, ROUND, 1000, 3, steps[3], 8)
    assert caption[0] == "decode step 3 of 8: 1 new token, 1,002 cached"
    assert caption[2].startswith("1 FLOP/byte, ridge 250: memory-bound, 7.26 ms")
    one = charts.step_caption(M70, H100, 1000, 0, rf.prefill_cost(M70, H100, 1000), 8)
    assert one[0].endswith("(weights exceed its 80 GB)")  # 140 GB on one H100
    assert charts.fmt3(1012.3) == "1,010" and charts.fmt3(0.4) == "0.4"
    assert charts.si(14.3e12) == "14.3 T" and charts.si(512) == "512 "


def test_the_player_draws_the_steps_played_so_far_and_the_caption_of_the_step():
    fig = charts.prefill_decode_figure(n_decode=4)
    settings = [param_setting(fig, step=s) for s in (0, 2)]
    pages = drawn(fig.to_dict(), settings, fields=["step", "flops", "intensity", "lines"])
    for step, items in zip((0, 2), pages):
        marks = [i for i in items if i["role"] == "mark"]
        points = {i["datum"]["step"]: i for i in marks if i["mark"] == "symbol"}
        assert sorted(points) == list(range(5))  # every step placed (the axes stay put)
        cost = charts.request_steps(B7, ROUND, 1000, 4)
        for s, item in points.items():
            assert close(item["datum"]["intensity"], cost[s].intensity)
        [caption] = [i["text"] for i in marks if isinstance(i["text"], list)]
        assert caption == charts.step_caption(B7, ROUND, 1000, step, cost[step], 4)


def test_a_player_needs_a_range_slider():
    sliders = [Slider("which", ["a", "b"]), Slider("step", range(4))]
    with pytest.raises(ValueError, match="not a range slider"):
        SliderFigure(sliders, vega=lambda v, w, h: [], player=Player("which"))
    with pytest.raises(ValueError, match="interval_ms"):
        Player("step", interval_ms=10)


def test_the_player_is_a_patch_that_appends_a_group_and_the_figure_keeps_its_sliders():
    fig = charts.prefill_decode_figure()
    spec = fig.to_dict()
    patch = spec["usermeta"]["embedOptions"]["patch"]
    assert [op["op"] for op in patch] == ["add"] and patch[0]["path"] == "/marks/-"
    pushed = {s["name"] for s in patch[0]["value"]["signals"]}
    assert pushed == {"slm_player", "slm_playing", "step"}
    assert all(s["push"] == "outer" for s in patch[0]["value"]["signals"])
    assert [p["name"] for p in spec["params"]][:4] == ["model", "hardware", "prompt_len",
                                                       "step"]
    assert spec["params"][3]["bind"]["input"] == "range"  # the slider stays
    assert spec["usermeta"]["embedOptions"]["actions"]["editor"] is False
    plain = charts.roofline_explorer().to_dict()["usermeta"]["embedOptions"]
    assert "patch" not in plain


PLAY = r"""
const fs = require("fs"), path = require("path");
const input = JSON.parse(fs.readFileSync(0, "utf8"));
const vega = require(path.join(input.root, "vega"));
const vl = require(path.join(input.root, "vega-lite"));
const jsonpatch = require(path.join(input.root, "fast-json-patch"));
const wait = ms => new Promise(r => setTimeout(r, ms));
(async () => {
  const patch = input.spec.usermeta.embedOptions.patch;
  const compiled = jsonpatch.applyPatch(vl.compile(input.spec).spec, patch, true, false);
  const view = new vega.View(vega.parse(compiled.newDocument), { renderer: "none" });
  await view.runAsync();
  const log = [], seen = [];
  const note = what => log.push([what, view.signal("step"), view.signal("slm_playing"),
                                 view.signal("slm_player")]);
  view.addSignalListener("step", (name, value) => seen.push(value));
  note("start");
  await wait(input.interval * 1.5);
  note("idle");                       // the timer ran: the buttons show, nothing moved
  view.signal("slm_playing", true); await view.runAsync();
  await wait(input.interval * (input.steps + 2.5));
  note("played");
  view.signal("slm_playing", false); await view.runAsync();
  note("paused");
  await wait(input.interval * 2.5);
  note("still paused");
  view.finalize();
  log.push(["seen", seen]);
  process.stdout.write(JSON.stringify(log));
})().catch(e => { console.error(e.stack || String(e)); process.exit(1); });
"""


def test_play_moves_the_step_on_wraps_around_and_pause_stops_it():
    need_vega()
    interval = 120
    fig = charts.prefill_decode_figure(n_decode=3)
    fig.player = Player("step", interval)
    payload = json.dumps({"root": str(NODE_MODULES), "spec": fig.to_dict(),
                          "interval": interval, "steps": 4})
    done = subprocess.run([NODE, "-e", PLAY], input=payload, capture_output=True, text=True,
                          timeout=120, cwd=Path(NODE_MODULES).parent)
    assert done.returncode == 0, done.stderr[-3000:]
    log = {what: rest for what, *rest in json.loads(done.stdout)}
    assert log["start"] == [0, False, False]
    assert log["idle"] == [0, False, True]
    played, [seen] = log["played"][0], log["seen"]
    # one step a tick, from the prefill (0) through the 3 decode steps, then round again
    assert len(seen) >= 5 and seen == [(i + 1) % 4 for i in range(len(seen))]
    assert log["played"][1] is True and played == seen[-1]
    assert log["paused"][:2] == [played, False] and log["still paused"][0] == played


# --- the batching figure ----------------------------------------------------------------
CPU_ROWS = [{"batch": b, "tokens_per_s": t, "seconds_per_token": b / t}
            for b, t in ((1, 400.0), (4, 1200.0), (16, 2600.0), (64, 3900.0), (256, 4100.0))]


def runs():
    gpu_rows = H200_RUN["batching"] + [r for r in H200_RUN["batching_large"]
                                       if r["batch"] > 1024]
    return [charts.measured_run("CPU (measured)", CPU_ROWS),
            charts.measured_run("H200 (measured)", gpu_rows),
            charts.roofline_run(B7, H100, 128, name="7B, H100, context 128 (roofline)")]


def test_a_roofline_run_is_decode_cost_and_knows_where_memory_runs_out():
    run = runs()[2]
    assert run.batches == tuple(2**e for e in range(16))  # 1 to 32,768
    for b, tps, spt in zip(run.batches, run.tokens_per_s, run.seconds_per_token):
        assert tps == rf.decode_tokens_per_s(B7, H100, 128, b)
        assert spt == rf.decode_cost(B7, H100, 128, b).seconds
    assert run.fits == rf.max_batch_for_memory(B7, H100.memory_bytes, 129) == 975
    assert run.knee == 1024 and not run.measured


def test_the_figures_curves_are_the_measurements_and_the_roofline():
    fig = charts.batching_figure(runs())
    spec = fig.to_dict()
    rows = read_dataset(spec, "curves")
    gpu = {r["batch"]: r for r in H200_RUN["batching"]}
    gpu.update({r["batch"]: r for r in H200_RUN["batching_large"] if r["batch"] > 1024})
    drawn_gpu = {int(r["batch"]): r for r in rows if r["run"] == "H200 (measured)"}
    assert sorted(drawn_gpu) == sorted(gpu) and max(gpu) == 32768  # past the knee, 4,096
    for b, r in drawn_gpu.items():
        assert close(r["tps"], gpu[b]["tokens_per_s"])
        assert close(r["ms"], gpu[b]["seconds_per_token"] * 1e3)
    cpu = [r for r in rows if r["run"] == "CPU (measured)"]
    assert [r["batch"] for r in cpu] == [1, 4, 16, 64, 256]  # no point made up
    assert all(close(r["tps"], c["tokens_per_s"]) for r, c in zip(cpu, CPU_ROWS))
    model = [r for r in rows if r["run"].startswith("7B")]
    limit = [r for r in model if r.get("limit")]
    assert [r["batch"] for r in limit] == [975]
    assert all(r["fits"] == (r["batch"] <= 975) for r in model if not r.get("limit"))
    for r in model:
        if not r.get("limit"):
            assert close(r["ms"], rf.decode_cost(B7, H100, 128, int(r["batch"])).seconds * 1e3)
    knees = {r["run"]: r for r in read_dataset(spec, "knees")}
    assert {k: int(r["batch"]) for k, r in knees.items()} == {
        "CPU (measured)": rf.throughput_knee([1, 4, 16, 64, 256], [400, 1200, 2600, 3900,
                                                                   4100]),
        "H200 (measured)": 4096, "7B, H100, context 128 (roofline)": 1024}
    assert close(knees["H200 (measured)"]["tps"], gpu[4096]["tokens_per_s"])
    assert [p["bind"] for p in spec["params"]] == [
        {"input": "range", "min": 0, "max": 15, "step": 1, "name": "log\u2082 batch size\u00a0"}]


def test_the_table_says_where_a_curve_has_no_data():
    rs = runs()
    text = [line.replace("\u00a0", " ") for line in charts.batch_caption(rs, 8)]
    assert text[1].split() == ["CPU", "(measured)", "not", "measured", "at", "this", "batch"]
    text = [line.replace("\u00a0", " ") for line in charts.batch_caption(rs, 4096)]
    assert "not measured beyond a batch of 256" in text[1]
    gpu = rs[1].at(4096)
    assert text[2].split() == ["H200", "(measured)", f"{gpu[0]:,.0f}",
                               charts.fmt3(gpu[0] / rs[1].at(1)[0]) + "x",
                               charts.fmt3(gpu[1] * 1e3),
                               charts.fmt3(gpu[1] / rs[1].at(1)[1]) + "x"]
    caches, weights = 4096 * 129 * 524288 / 1e9, rs[2].weights_gb
    assert text[4] == (f"7B, H100, context 128: caches {caches:,.0f} + weights "
                       f"{weights:,.0f} GB; 80 GB hold 975")
    assert 975 * rs[2].gb_per_sequence + weights <= 80 < 976 * rs[2].gb_per_sequence + weights
    assert all("  " not in line for line in charts.batch_caption(rs, 4096))  # SVG-safe


def test_moving_the_batch_control_marks_that_batch_on_every_curve_with_data():
    fig = charts.batching_figure(runs())
    settings = [param_setting(fig, batch_log2=e) for e in (2, 12)]
    pages = drawn(fig.to_dict(), settings, fields=["run", "batch", "tps", "ms"])

    def at(items, batch):  # the points drawn at a batch, by run
        out = {}
        for i in items:
            d = i["datum"]
            if i["role"] == "mark" and i["mark"] == "symbol" and d.get("batch") == batch:
                out.setdefault(d["run"], []).append(d)
        return out

    elsewhere, chosen = at(pages[0], 4096), at(pages[1], 4096)
    rs = runs()
    for run in rs:  # two more points (one a panel) where there are data, none elsewhere
        added = len(chosen.get(run.name, [])) - len(elsewhere.get(run.name, []))
        assert added == (2 if run.at(4096) else 0), run.name
        for d in chosen.get(run.name, []):
            assert close(d["tps"], run.at(4096)[0]) and close(d["ms"], run.at(4096)[1] * 1e3)
    [table] = [i["text"] for i in pages[1] if i["mark"] == "text"
               and isinstance(i["text"], list)]
    assert table == charts.batch_caption(rs, 4096)  # the table under it, at that batch
