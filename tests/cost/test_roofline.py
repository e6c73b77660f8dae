import itertools
import json
import math
import re

import pytest

import shakespeare_lm as slm
from shakespeare_lm import cost as rf
from shakespeare_lm.site import roofline_charts as charts

from ..conftest import make_tiny
from ..site.vega_helpers import drawn, param_setting

ROUND = rf.HARDWARE["round-gpu"]
B7 = rf.MODELS["7b"]


# --- the classic worked numbers ---------------------------------------------------------
def test_base_model_intensity_is_500_for_prefill_and_half_for_decode():
    base = rf.MODELS["base-65m"]
    assert base.weight_bytes == pytest.approx(260e6)
    prefill = rf.prefill_cost(base, ROUND, 1000, weights_only=True)
    decode = rf.decode_cost(base, ROUND, weights_only=True)
    assert prefill.flops == pytest.approx(130e9) and decode.flops == pytest.approx(130e6)
    assert prefill.intensity == pytest.approx(500) and decode.intensity == pytest.approx(0.5)


@pytest.mark.parametrize("dtype, per_weight", [("fp32", 4), ("bf16", 2), ("fp16", 2),
                                                ("int8", 1), ("int4", 0.5), (2, 2)])
def test_weight_bytes_is_params_times_bytes_per_weight(dtype, per_weight):
    assert rf.weight_bytes(7e9, dtype) == 7e9 * per_weight
    assert rf.MODELS["7b"].weight_bytes == rf.weight_bytes(7e9, "bf16") == 14 * rf.GB
    assert rf.GiB == 2**30


@pytest.mark.parametrize("dtype, match", [("fp64x", "dtype='fp64x' is unknown"),
                                          (0, "bytes per weight")])
def test_weight_bytes_rejects_an_unknown_dtype_by_name(dtype, match):
    with pytest.raises(ValueError, match=match):
        rf.weight_bytes(1e6, dtype)


def test_7b_prefill_28ms_compute_bound_decode_7ms_memory_bound():
    assert B7.weight_bytes == pytest.approx(14e9)
    prefill = rf.prefill_cost(B7, ROUND, 1000, weights_only=True)
    decode = rf.decode_cost(B7, ROUND, weights_only=True)
    assert prefill.seconds == pytest.approx(0.028) and prefill.bound == "compute"
    assert prefill.memory_s == pytest.approx(0.007)
    assert decode.seconds == pytest.approx(0.007) and decode.bound == "memory"
    assert decode.compute_s == pytest.approx(0.028e-3)
    assert round(rf.decode_tokens_per_s(B7, ROUND, weights_only=True)) == 143
    # per token, prefill is 250 times faster than decode
    assert decode.seconds / (prefill.seconds / 1000) == pytest.approx(250)


def test_200_token_answer_takes_prefill_plus_199_decode_steps():
    answer = rf.answer_seconds(B7, ROUND, 1000, 200, weights_only=True)
    assert answer == pytest.approx(0.028 + 199 * 0.007)
    # counting 200 decode steps (1.43 s) counts one step more than the loop runs
    assert round(0.028 + 200 * 0.007, 2) == 1.43 and round(answer, 2) == 1.42


def test_70b_decode_on_h100_42ms_and_5ms_over_eight():
    m70, h100 = rf.MODELS["70b"], rf.HARDWARE["h100"]
    assert m70.weight_bytes == pytest.approx(140e9)
    one = rf.decode_cost(m70, h100, weights_only=True)
    eight = rf.decode_cost(m70, h100.parallel(8), weights_only=True)
    assert round(one.seconds * 1e3) == 42 and round(eight.seconds * 1e3) == 5
    assert one.compute_utilization < 0.01  # well under 1% of the arithmetic
    assert h100.peak_flops * one.seconds > 10e12  # tens of trillions of operations forgone


def test_kv_cache_worked_numbers():
    assert rf.MODELS["base-65m"].kv_bytes_per_token == 24_576
    assert rf.MODELS["llama2-7b"].kv_bytes_per_token == 524_288
    one = rf.kv_cache_bytes(32, 4096, 4096, 1, 2)
    assert round(one / 1e9, 2) == 2.15
    assert round(rf.kv_cache_bytes(32, 4096, 4096, 32, 2) / 1e9, 1) == 68.7


# --- KV cache formula ---------------------------------------------------------------
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("max_len", [1, 17, 64])
def test_kv_cache_bytes_agrees_with_the_models_cache(batch, max_len):
    model = make_tiny()
    cfg = model.config
    with model.cache(batch, max_len) as cache:
        assert cache.nbytes == rf.kv_cache_bytes(cfg.n_layer, cfg.d_model, max_len, batch)
        assert cache.nbytes == rf.kv_cache_bytes(cfg.n_layer, cfg.d_model, max_len, batch,
                                                 n_kv_heads=cfg.n_head, n_head=cfg.n_head)
        spec = rf.ModelSpec.from_model(model)
        assert cache.nbytes == spec.kv_bytes_per_token * max_len * batch


def test_grouped_query_attention_shrinks_cache_by_kv_heads_over_heads():
    full = rf.kv_cache_bytes(80, 8192, 100, 2, 2)
    assert rf.kv_cache_bytes(80, 8192, 100, 2, 2, n_kv_heads=8, n_head=64) == full / 8


@pytest.mark.parametrize("kwargs, name", [
    ({"n_layer": 0}, "n_layer"), ({"d_model": 1.5}, "d_model"), ({"n_tokens": -1}, "n_tokens"),
    ({"batch": True}, "batch"), ({"bytes_per_number": 0}, "bytes_per_number"),
    ({"n_kv_heads": 2}, "n_kv_heads"), ({"n_kv_heads": 3, "n_head": 4}, "n_kv_heads"),
])
def test_kv_cache_bytes_rejects_bad_arguments_by_name(kwargs, name):
    args = {"n_layer": 2, "d_model": 32, "n_tokens": 5, **kwargs}
    with pytest.raises(ValueError, match=name):
        rf.kv_cache_bytes(**args)


# --- presets ------------------------------------------------------------------------
@pytest.mark.parametrize("preset", ["shakespeare", "draft", "tiny"])
def test_count_params_matches_the_model(preset):
    assert rf.count_params(slm.PRESETS[preset]) == slm.make_model(preset).num_params()


def test_book_model_spec_matches_the_model():
    model = slm.make_model("shakespeare")
    assert rf.ModelSpec.from_model(model) == rf.MODELS["shakespeare"]


def test_hardware_rejects_bad_numbers_by_name():
    with pytest.raises(ValueError, match="bandwidth=0"):
        rf.Hardware("x", 1e12, 0)
    with pytest.raises(ValueError, match="peak_flops"):
        rf.Hardware("x", -1, 1e9)
    with pytest.raises(ValueError, match="n=0"):
        ROUND.parallel(0)


# --- the roofline ---------------------------------------------------------------------
@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("prompt_len", [1, 10, 300])
def test_prefill_flops_count_weights_and_causal_attention(batch, prompt_len):
    spec = rf.MODELS["shakespeare"]
    pairs = prompt_len * (prompt_len + 1) // 2
    expected = (2 * spec.n_params * prompt_len * batch
                + 4 * spec.n_layer * spec.d_model * pairs * batch)
    assert rf.pass_flops(spec, prompt_len, batch) == expected


def test_prefill_in_one_pass_equals_the_attention_of_token_by_token_decode():
    spec = rf.MODELS["llama2-7b"]
    one_pass = rf.pass_flops(spec, 50, 3)
    stepwise = sum(rf.pass_flops(spec, 1, 3, context=c) for c in range(50))
    assert one_pass == stepwise


@pytest.mark.parametrize("context", [0, 100, 4000])
def test_decode_bytes_are_weights_plus_kv_read_and_write(context):
    spec = rf.MODELS["70b"]
    assert rf.pass_bytes(spec, 1, 8, context) == (spec.weight_bytes
                                                  + 8 * (context + 1) * spec.kv_bytes_per_token)


def test_binding_limit_and_time_are_the_larger_term():
    for tokens in (1, 10, 100, 1000, 10000):
        cost = rf.prefill_cost(B7, ROUND, tokens)
        assert cost.seconds == max(cost.compute_s, cost.memory_s)
        assert cost.bound == ("compute" if cost.intensity > ROUND.ridge_intensity else "memory")


def test_attainable_flops_is_the_roofline():
    ridge = ROUND.ridge_intensity
    assert rf.attainable_flops(ROUND, ridge / 2) == pytest.approx(ROUND.peak_flops / 2)
    assert rf.attainable_flops(ROUND, ridge * 4) == ROUND.peak_flops


@pytest.mark.parametrize("context", [0, 64, 512])
def test_knee_batch_is_where_decode_turns_compute_bound(context):
    knee = rf.knee_batch(B7, ROUND, context)
    if math.isinf(knee):
        assert rf.decode_cost(B7, ROUND, context, batch=100_000).bound == "memory"
        return
    below, above = math.floor(knee), math.ceil(knee + 1e-9)
    assert rf.decode_cost(B7, ROUND, context, batch=max(below, 1)).bound == "memory"
    assert rf.decode_cost(B7, ROUND, context, batch=above).bound == "compute"


def test_weights_only_knee_is_the_ridge_over_two_flops_per_byte():
    # 2 FLOPs per weight of 2 bytes: intensity B per byte, so the knee is the ridge point
    assert rf.knee_batch(B7, ROUND, weights_only=True) == pytest.approx(ROUND.ridge_intensity)


def test_batched_decode_throughput_grows_until_the_knee():
    knee = rf.knee_batch(B7, ROUND)
    small = [rf.decode_tokens_per_s(B7, ROUND, batch=b) for b in (1, 2, 4, 8)]
    assert all(b / a == pytest.approx(2, rel=0.01) for a, b in zip(small, small[1:]))
    big = [rf.decode_tokens_per_s(B7, ROUND, batch=b) for b in (int(4 * knee), int(8 * knee))]
    assert big[1] / big[0] == pytest.approx(1, rel=0.01)


def test_overhead_adds_to_every_pass():
    slow = rf.Hardware("slow", 1e12, 1e10, overhead_s=1e-3)
    fast = rf.Hardware("fast", 1e12, 1e10)
    spec = rf.MODELS["shakespeare"]
    assert rf.decode_cost(spec, slow).seconds == pytest.approx(
        rf.decode_cost(spec, fast).seconds + 1e-3)


def test_max_batch_for_memory_fits_weights_and_caches():
    h100 = rf.HARDWARE["h100"]
    n = rf.max_batch_for_memory(B7, h100.memory_bytes, 4096)
    per_seq = B7.kv_bytes_per_token * 4096
    assert B7.weight_bytes + n * per_seq <= h100.memory_bytes < B7.weight_bytes + (n + 1) * per_seq
    assert rf.max_batch_for_memory(rf.MODELS["70b"], h100.memory_bytes, 4096) == 0


@pytest.mark.parametrize("fn, kwargs, name", [
    (rf.pass_flops, {"tokens": 0}, "tokens"), (rf.pass_bytes, {"context": -1}, "context"),
    (rf.pass_flops, {"batch": 0}, "batch"), (rf.answer_seconds, {"new_tokens": 0}, "new_tokens"),
])
def test_cost_functions_reject_bad_counts_by_name(fn, kwargs, name):
    args = {"spec": B7, "tokens": 1, "batch": 1, "context": 0}
    if fn is rf.answer_seconds:
        args = {"spec": B7, "hw": ROUND, "prompt_len": 10, "new_tokens": 1}
    with pytest.raises(ValueError, match=name):
        fn(**{**args, **kwargs})


# --- probes and measurements (values vary by machine: check shapes and sanity only) ---------
def test_probes_return_positive_rates():
    bw = rf.measure_bandwidth("cpu", n_bytes=2**20, repeats=1)
    flops = rf.measure_matmul_flops("cpu", n=64, repeats=1)
    assert bw > 0 and flops > 0 and math.isfinite(bw) and math.isfinite(flops)


def test_measure_model_costs_returns_plain_numbers(tiny, tok):
    out = rf.measure_model_costs(tiny, tok, "cpu", prompt_lengths=(1, 8), prefill_batches=(1, 2),
                                 contexts=(4, 16), decode_steps=3, batch_sizes=(1, 3),
                                 batch_prompt_len=5, batch_new_tokens=3, repeats=3, probe=False)
    assert [(r["prompt_len"], r["batch"]) for r in out["prefill"]] == [
        (1, 1), (8, 1), (1, 2), (8, 2)]
    assert [(r["context"], r["use_cache"]) for r in out["decode"]] == [
        (5, True), (17, True), (5, False), (17, False)]
    assert [r["batch"] for r in out["batching"]] == [1, 3]
    for row in out["prefill"] + out["decode"] + out["batching"]:
        assert all(isinstance(v, (int, float, bool)) for v in row.values())
    assert all(r["seconds"] > 0 for r in out["prefill"])
    # each median lies within the fastest and slowest of its runs
    assert all(r["seconds_low"] <= r["seconds"] <= r["seconds_high"] for r in out["prefill"])
    assert all(r["seconds_per_token_low"] <= r["seconds_per_token"]
               <= r["seconds_per_token_high"] for r in out["decode"] + out["batching"])
    assert out["n_params"] == tiny.num_params() and out["bytes_per_weight"] == 4


def test_measure_model_costs_rejects_context_past_the_window(tiny, tok):
    with pytest.raises(ValueError, match="contexts"):
        rf.measure_model_costs(tiny, tok, prompt_lengths=(4,), contexts=(tiny.config.block_size,),
                               probe=False)


# --- the kernel-free figures (the player and the batching figure: test_cost_widgets.py) ---
def test_roofline_explorer_builds_and_names_the_binding_limits():
    spec = charts.roofline_explorer().to_dict()
    assert [p["bind"]["input"] for p in spec["params"]] == ["select"] + ["radio"] * 5
    assert spec["params"][0]["bind"]["labels"][2] == rf.MODELS["7b"].name  # not keys
    assert "http" not in json.dumps(spec).replace(spec["$schema"], "")
    numbers = charts.explorer_numbers("7b", 2, 1000, 1, 2000, 500)
    assert "compute-bound" in numbers.caption.splitlines()[0]
    assert "memory-bound" in numbers.caption.splitlines()[1]
    assert numbers.ridge == 250 and len(numbers.roof) == len(charts.INTENSITIES)


# --- the explorer's Vega-Lite agrees with Python (run in node with vega) --------------
def settings_grid():
    names = list(charts.EXPLORER_SLIDERS)
    grids = [charts.EXPLORER_SLIDERS[n][0] for n in names]
    every = list(itertools.product(*grids))
    return [dict(zip(names, every[i])) for i in range(0, len(every), 37)]  # a spread sample


def numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text)]


def test_vega_roofline_matches_python():
    fig = charts.roofline_explorer()
    settings = settings_grid()
    # the formulas are compared on the figure's unrounded data; the page embeds it rounded
    # to 4 significant digits (SliderFigure.to_dict), which is plenty for a picture
    spec = fig.to_dict(digits=None)
    pages = drawn(spec, [param_setting(fig, **v) for v in settings],
                  fields=["what", "x", "y", "ridge", "caption"])
    assert len(pages) == len(settings) > 100
    for values, items in zip(settings, pages):
        py = charts.explorer_numbers(**values)
        items = [i for i in items if i["role"] == "mark"]  # not axes and legends
        points = {i["datum"]["what"]: i["datum"] for i in items
                  if i["mark"] == "symbol"}
        assert set(points) == set(py.points) == {"prefill", "decode"}
        for name, (x, y) in py.points.items():
            assert points[name]["x"] == pytest.approx(x, rel=1e-9)
            assert points[name]["y"] == pytest.approx(y, rel=1e-9)
        roof = [i["datum"]["y"] for i in items if i["mark"] == "line"]
        assert roof == pytest.approx(list(py.roof), rel=1e-12)
        [ridge] = {i["datum"]["ridge"] for i in items if i["mark"] == "rule"}
        assert ridge == pytest.approx(py.ridge, rel=1e-12)
        [caption] = [i["text"] for i in items
                     if i["mark"] == "text" and isinstance(i["text"], list)]
        caption = "\n".join(caption)
        bound = re.compile(r"\w+-bound")
        assert bound.findall(caption) == bound.findall(py.caption)
        assert numbers(caption) == pytest.approx(numbers(py.caption), rel=1e-2)


def test_throughput_knee_is_the_first_batch_near_the_best_throughput():
    assert rf.throughput_knee([1, 2, 4, 8, 16], [1, 2, 4, 7.5, 8]) == 8
    assert rf.throughput_knee([1, 2, 4], [1, 2, 4]) == 4  # still linear: no knee in range
    with pytest.raises(ValueError, match="fraction"):
        rf.throughput_knee([1], [1], fraction=0)
    with pytest.raises(ValueError, match="same length"):
        rf.throughput_knee([1, 2], [1])
