"""Timing that is honest on both CPU and GPU.

On a GPU, kernels run asynchronously: ``Stopwatch`` records CUDA events and synchronises
before reading them. On the CPU it reads ``time.perf_counter``. ``benchmark`` runs a
warm-up first so one-off costs (allocation, lazy initialisation) are not counted.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Hashable

import torch


class Stopwatch:
    """``with Stopwatch(device) as sw: ...`` then ``sw.seconds``."""

    def __init__(self, device: str | torch.device = "cpu"):
        self.cuda = torch.device(device).type == "cuda"
        self.seconds = float("nan")

    def __enter__(self):
        if self.cuda:
            self._start = torch.cuda.Event(enable_timing=True)
            self._end = torch.cuda.Event(enable_timing=True)
            self._start.record()
        else:
            self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            self._end.record()
            torch.cuda.synchronize()
            self.seconds = self._start.elapsed_time(self._end) / 1000.0
        else:
            self.seconds = time.perf_counter() - self._t0
        return False


def sync(device: str | torch.device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def benchmark(fn: Callable[[], object], device: str | torch.device = "cpu", warmup: int = 1,
              repeats: int = 3, reduce: Callable[[list[float]], float] = statistics.median) -> float:
    """Seconds of ``fn()``: ``reduce`` (median by default; ``min`` for microbenchmarks on a
    busy machine, where noise only ever adds time) over ``repeats`` runs after ``warmup``
    untimed runs."""
    for _ in range(warmup):
        fn()
    sync(device)
    times = []
    for _ in range(repeats):
        with Stopwatch(device) as sw:
            fn()
        times.append(sw.seconds)
    return reduce(times)


def interleaved(runs: dict[Hashable, Callable[[], object]], repeats: int,
                device: str | torch.device = "cpu", log: Callable[[str], object] | None = None
                ) -> tuple[dict[Hashable, list[float]], dict[Hashable, object]]:
    """Time several functions side by side: one untimed warm-up of each, then ``repeats``
    round-robin passes, each in a rotated order, so that a burst of load on a shared machine
    falls on every function alike. Returns (seconds per repeat, each warm-up's result)."""
    first = {k: fn() for k, fn in runs.items()}
    sync(device)
    keys, seconds = list(runs), {k: [] for k in runs}
    for r in range(repeats):
        j = (r * len(keys)) // max(repeats, 1)
        for k in keys[j:] + keys[:j]:
            with Stopwatch(device) as sw:
                runs[k]()
            seconds[k].append(sw.seconds)
        if log is not None:
            log(f"   pass {r + 1}/{repeats} done")
    return seconds, first


def relative_spread(seconds: list[float]) -> float:
    """(max - min) / median of repeated timings: above ~0.3 a ratio of medians is noise."""
    return (max(seconds) - min(seconds)) / statistics.median(seconds)


def paired_ratio(baseline: list[float], other: list[float]) -> dict:
    """How many times faster ``other`` ran than ``baseline``, from repeats timed side by
    side (``interleaved``): the per-repeat ratios baseline[i] / other[i], their median
    ("ratio"), min and max, and their spread, (max - min) / median. A burst of load during
    one repeat slows both runs of that repeat, so paired ratios vary far less than the
    timings do; a ratio whose spread exceeds ``RATIO_SPREAD_LIMIT`` is not to be trusted."""
    paired = [b / o for b, o in zip(baseline, other)]
    mid = statistics.median(paired)
    spread = (max(paired) - min(paired)) / mid
    return {"ratio": mid, "ratio_min": min(paired), "ratio_max": max(paired),
            "ratio_spread": spread, "trustworthy": spread <= RATIO_SPREAD_LIMIT}


RATIO_SPREAD_LIMIT = 0.3  # (max - min) / median of paired ratios above which a ratio is noise


def model_device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def write_json(path, results: dict) -> None:
    """Save a bench's results (``--json PATH``); numpy and torch scalars become floats."""
    import json

    with open(path, "w") as f:
        json.dump(results, f, indent=2, default=float)
