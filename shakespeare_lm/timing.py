"""Timing that is honest on both CPU and GPU.

On a GPU, kernels run asynchronously: ``Stopwatch`` records CUDA events and synchronises
before reading them. On the CPU it reads ``time.perf_counter``. ``benchmark`` runs a
warm-up first so one-off costs (allocation, lazy initialisation) are not counted.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

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


def model_device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device
