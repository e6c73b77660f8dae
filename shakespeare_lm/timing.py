"""Timing that is honest on both CPU and GPU.

On a GPU, kernels run asynchronously: ``Stopwatch`` records CUDA events and synchronises
before reading them. On the CPU it reads ``time.perf_counter``. ``benchmark`` runs a
warm-up first so one-off costs (allocation, lazy initialisation) are not counted.
"""

from __future__ import annotations

import math
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
              repeats: int = 3,
              reduce: Callable[[list[float]], float] = statistics.median) -> float:
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


def rotations(keys: list, repeats: int) -> list[list]:
    """The order of each of ``repeats`` round-robin passes over ``keys``: pass r starts
    r / repeats of the way along, so every key is timed early in some passes and late in
    others."""
    return [keys[j:] + keys[:j] for j in (r * len(keys) // max(repeats, 1)
                                          for r in range(repeats))]


def interleaved(runs: dict[Hashable, Callable[[], object]], repeats: int,
                device: str | torch.device = "cpu", log: Callable[[str], object] | None = None
                ) -> tuple[dict[Hashable, list[float]], dict[Hashable, object]]:
    """Time several functions side by side: one untimed warm-up of each, then ``repeats``
    round-robin passes, each in a rotated order, so that a burst of load on a shared machine
    falls on every function alike. Returns (seconds per repeat, each warm-up's result)."""
    first = {k: fn() for k, fn in runs.items()}
    sync(device)
    seconds = {k: [] for k in runs}
    for r, order in enumerate(rotations(list(runs), repeats)):
        for k in order:
            with Stopwatch(device) as sw:
                runs[k]()
            seconds[k].append(sw.seconds)
        if log is not None:
            log(f"   pass {r + 1}/{repeats} done")
    return seconds, first


def against_baseline(baseline: Callable[[], object], runs: dict[Hashable, Callable[[], object]],
                     repeats: int, device: str | torch.device = "cpu"
                     ) -> tuple[dict[Hashable, list[float]], dict[Hashable, list[float]],
                                dict[Hashable, object]]:
    """Time each function right beside its own run of ``baseline``: one untimed warm-up of
    each, then ``repeats`` passes in a rotated order, in which every function runs back to
    back with a fresh baseline run (baseline first in even passes, second in odd ones).
    Each pair is timed within a second or two, so a burst of load that lasts longer falls on
    both of its runs. Returns (baseline seconds paired with each key, seconds per key, each
    function's warm-up result); ``paired_ratio(base[k], seconds[k])`` is k's speedup."""
    baseline()
    first = {k: fn() for k, fn in runs.items()}
    sync(device)
    base, seconds = {k: [] for k in runs}, {k: [] for k in runs}
    for r, order in enumerate(rotations(list(runs), repeats)):
        for k in order:
            for which in (("base", k) if r % 2 == 0 else (k, "base")):
                with Stopwatch(device) as sw:
                    (baseline if which == "base" else runs[k])()
                (base[k] if which == "base" else seconds[k]).append(sw.seconds)
    return base, seconds, first


def relative_spread(seconds: list[float]) -> float:
    """(max - min) / median of repeated timings: above ~0.3 a ratio of medians is noise."""
    return (max(seconds) - min(seconds)) / statistics.median(seconds)


def paired_ratio(baseline: list[float], other: list[float]) -> dict:
    """How many times faster ``other`` ran than ``baseline``, from repeats timed side by
    side: the per-repeat ratios baseline[i] / other[i], their median ("ratio"), min and max,
    a 95% interval for the median (``median_interval_rank``; min and max for up to 8
    repeats) and its width relative to the median ("ratio_spread"). A burst of load during
    a repeat slows both of its runs, so paired ratios vary far less than the timings do; a
    ratio whose spread exceeds ``RATIO_SPREAD_LIMIT`` is not to be trusted."""
    paired = sorted(b / o for b, o in zip(baseline, other))
    mid = statistics.median(paired)
    k = median_interval_rank(len(paired))
    low, high = paired[k - 1], paired[len(paired) - k]
    spread = (high - low) / mid
    return {"ratio": mid, "ratio_min": paired[0], "ratio_max": paired[-1],
            "ci_low": low, "ci_high": high, "ratio_spread": spread,
            "trustworthy": spread <= RATIO_SPREAD_LIMIT}


def median_interval_rank(n: int, level: float = 0.95) -> int:
    """k such that the k-th smallest and k-th largest of n repeats bracket their median with
    probability >= ``level``, whatever their distribution (the sign test's interval); the
    largest such k, and 1 (min and max) when n is too small to reach ``level``. n = 7 gives
    1, n = 15 gives 4: more repeats narrow the interval."""
    best, below = 1, 0.0
    for k in range(1, (n + 1) // 2 + 1):
        below += math.comb(n, k - 1) / 2**n        # P(fewer than k of n fall below it)
        if 2 * below <= 1 - level:
            best = k
        else:
            break
    return best


RATIO_SPREAD_LIMIT = 0.3  # width of the median's 95% interval / median, above which: noise


def model_device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def write_json(path, results: dict) -> None:
    """Save a bench's results (``--json PATH``); numpy and torch scalars become floats."""
    import json

    with open(path, "w") as f:
        json.dump(results, f, indent=2, default=float)


def machine(threads: int | None = None) -> str:
    """The hardware a timing ran on, in a reader's terms: ``"1 thread of a 2-core Intel(R)
    Xeon(R) Processor"``. ``threads`` defaults to torch's intra-op thread count. A page
    prints this beside its timings, so a reader can tell how their machine differs."""
    import os
    import platform

    name = ""
    try:
        with open("/proc/cpuinfo") as f:
            name = next((line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name")), "")
    except OSError:
        pass
    name = name or platform.processor() or platform.machine() or "CPU"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = torch.get_num_threads() if threads is None else threads
    return f"{threads} thread{'s' if threads != 1 else ''} of a {cores}-core {name}"


# --- timings at a reader's speed under the pinned numerics -------------------------------
# numerics.env's variables: the portable kernels and the one thread that make stored outputs
# reproduce bit for bit. tests/test_timing.py checks this list against the file.
PINNED_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "OMP_NUM_THREADS",
                    "MKL_NUM_THREADS", "NPY_DISABLE_CPU_FEATURES")


def pinned() -> bool:
    """Whether this process runs under any of the pinned numerics (``PINNED_VARIABLES``)."""
    import os

    return any(name in os.environ for name in PINNED_VARIABLES)


TIMING_THREADS = "SLM_TIMING_THREADS"


def native_environment() -> dict[str, str]:
    """This process's environment without the pinned numerics: the native kernels and every
    core, with OpenMP's default wait policy, as ``make bench`` runs.

    With ``SLM_TIMING_THREADS=n`` set, the native process gets n threads and OpenMP's
    passive wait policy instead. ``make test`` sets it to 1: it runs several chapters at
    once, and a timing job whose idle threads spin on every core fights them for the cores
    (in one run of the suite on 2 cores, the chapters' timing jobs used 876 s of CPU, half
    of all it used). The suite does not compare timings; it only runs them."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in PINNED_VARIABLES}
    threads = env.get(TIMING_THREADS)
    if threads:
        env.update(OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads, OMP_WAIT_POLICY="PASSIVE")
    return env


def natively(fn: Callable, /, *args, **kwargs):
    """``fn(*args, **kwargs)`` at this machine's native speed: what a timing should measure.

    In a process with native numerics (a reader's JupyterLab kernel) this just calls ``fn``.
    Under the pinned numerics (``make execute``, nbval), which pay for reproducible bits
    with portable kernels and one thread, it runs ``fn`` in a fresh Python process with
    ``native_environment()``: every vectorised kernel and every core, as ``make bench``
    measures. ``fn``, its arguments and its result travel with cloudpickle, so ``fn`` may
    be a lambda or a function defined in a notebook, and a model may be an argument. What
    ``fn`` prints is printed here.
    Use it for timings only: values computed natively can differ from pinned ones in their
    last bits.
    """
    if not pinned():
        return fn(*args, **kwargs)
    import subprocess
    import sys
    import tempfile

    import cloudpickle

    with tempfile.TemporaryDirectory() as tmp:
        job, result = f"{tmp}/job.pkl", f"{tmp}/result.pkl"
        with open(job, "wb") as f:
            cloudpickle.dump((fn, args, kwargs), f)
        done = subprocess.run([sys.executable, "-m", "shakespeare_lm.timing", job, result],
                              env=native_environment(), capture_output=True, text=True)
        if done.stdout:
            print(done.stdout, end="")
        if done.returncode:
            raise RuntimeError(f"natively({getattr(fn, '__name__', fn)!r}) failed in its native "
                               f"process (exit code {done.returncode}):\n{done.stderr}")
        with open(result, "rb") as f:
            return cloudpickle.load(f)


def _run_job(job: str, result: str) -> None:
    """The native process of ``natively``: run the pickled call, pickle what it returns."""
    import cloudpickle

    with open(job, "rb") as f:
        fn, args, kwargs = cloudpickle.load(f)
    out = fn(*args, **kwargs)
    with open(result, "wb") as f:
        cloudpickle.dump(out, f)


if __name__ == "__main__":
    import sys

    _run_job(*sys.argv[1:])
