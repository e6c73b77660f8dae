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
