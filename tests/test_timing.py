import pytest

from shakespeare_lm import timing


def test_interleaved_warms_each_function_up_then_times_rotated_round_robin_passes():
    calls = []
    runs = {k: (lambda k=k: calls.append(k) or k.upper()) for k in "abc"}
    seconds, first = timing.interleaved(runs, repeats=3)
    assert first == {"a": "A", "b": "B", "c": "C"}                  # the warm-up's results
    assert calls == list("abc") + list("abc") + list("bca") + list("cab")
    assert all(len(s) == 3 and min(s) >= 0 for s in seconds.values())


def test_relative_spread_is_range_over_median():
    assert timing.relative_spread([1.0, 2.0, 3.0]) == pytest.approx(1.0)
    assert timing.relative_spread([2.0, 2.0]) == 0.0


def test_paired_ratio_follows_bursts_that_hit_both_sides():
    from shakespeare_lm.timing import paired_ratio

    # repeat 2 ran during a burst that doubled both times: the timings spread by 100%,
    # the paired ratios not at all
    baseline, other = [1.0, 2.0, 1.0, 1.1], [0.5, 1.0, 0.5, 0.55]
    r = paired_ratio(baseline, other)
    assert r["ratio"] == pytest.approx(2.0) and r["ratio_spread"] == pytest.approx(0.0)
    assert r["trustworthy"]
    # a burst that hit only one side shows in the spread and the verdict
    r = paired_ratio([1.0, 1.0, 1.0], [0.5, 1.0, 0.5])
    assert r["ratio_min"] == pytest.approx(1.0) and r["ratio_max"] == pytest.approx(2.0)
    assert r["ratio_spread"] == pytest.approx(0.5) and not r["trustworthy"]


def test_against_baseline_runs_each_function_beside_its_own_baseline_run():
    from shakespeare_lm.timing import against_baseline

    order = []
    runs = {k: (lambda k=k: order.append(k)) for k in ("a", "b")}
    base, seconds, first = against_baseline(lambda: order.append("base"), runs, repeats=2)
    assert order[:3] == ["base", "a", "b"]             # the warm-ups
    timed = order[3:]
    pairs = [tuple(timed[i:i + 2]) for i in range(0, len(timed), 2)]
    assert pairs[:2] == [("base", "a"), ("base", "b")]  # pass 1: baseline first
    assert sorted(pairs[2:]) == [("a", "base"), ("b", "base")]  # pass 2: second
    assert {k: len(v) for k, v in base.items()} == {"a": 2, "b": 2} == {
        k: len(v) for k, v in seconds.items()}
