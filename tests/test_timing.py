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


def test_the_pinned_variables_are_those_of_numerics_env():
    """``timing.natively`` drops exactly the numerics that numerics.env pins."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "numerics.env").read_text()
    names = {line.split("=", 1)[0] for line in text.splitlines()
             if line and not line.startswith("#")}
    assert set(timing.PINNED_VARIABLES) == names - {"SLM_PROGRESS"}


def test_natively_runs_a_closure_under_native_numerics_when_pinned(monkeypatch):
    """Under the pinned numerics a call (here a closure over a tensor, as a notebook cell
    would write it) runs in a fresh process without them, its prints come back and so does
    its result; with native numerics it runs here."""
    import os

    import torch

    weights = torch.arange(6.0)
    probe = lambda scale: (os.environ.get("ATEN_CPU_CAPABILITY"), os.getpid(),
                           print("hello from", "the native process") or weights * scale)
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    capability, pid, out = timing.natively(probe, 2)
    assert capability is None and pid != os.getpid() and torch.equal(out, weights * 2)
    for name in timing.PINNED_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    capability, pid, out = timing.natively(probe, scale=3)
    assert pid == os.getpid() and torch.equal(out, weights * 3)


def test_natively_reports_the_native_process_error(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        timing.natively(lambda: 1 / 0)


def test_native_environment_drops_the_pinned_set_and_honours_timing_threads(monkeypatch):
    from shakespeare_lm.timing import PINNED_VARIABLES, TIMING_THREADS, native_environment

    for name in PINNED_VARIABLES:
        monkeypatch.setenv(name, "1")
    monkeypatch.delenv(TIMING_THREADS, raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    env = native_environment()
    assert not set(PINNED_VARIABLES) & set(env) and "OMP_WAIT_POLICY" not in env
    monkeypatch.setenv(TIMING_THREADS, "1")
    env = native_environment()
    assert (env["OMP_NUM_THREADS"], env["MKL_NUM_THREADS"], env["OMP_WAIT_POLICY"]) == \
        ("1", "1", "PASSIVE")
    assert not {"ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA"} & set(env)
