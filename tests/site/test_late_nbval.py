"""The later chapters' nbval comparison, in a second pytest process on the core that the
background chapter runs free.

In one ``make test`` session (tests/ and notebooks/ together), nbval compares the chapters
one after another on one thread once the tests of tests/ are done. By then the two
background re-executions (``test_portable_outputs``, ``test_shown_cells``) have ended, so
one core would sit idle while nbval works through eight chapters. ``tests/conftest.py``
therefore takes the chapters in ``LATE`` out of the session and hands them to
``start_late_nbval``: a thread that waits for both background runs to finish and then runs
``pytest --nbval`` on them, with the session's own nbval options, under the same pinned
numerics. ``test_later_chapters_pass_nbval`` waits for it and fails with its report.

Run alone (``pytest notebooks/06_speculative_decoding.ipynb --nbval``), nbval keeps every
chapter in the session, and the test here is skipped.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LATE = ("05_constrained_decoding.ipynb", "06_speculative_decoding.ipynb",
        "07_cost_of_generation.ipynb", "08_decoding_in_practice.ipynb")
LATE_TEST = "test_later_chapters_pass_nbval"


def nbval_args(config) -> list[str]:
    """The session's nbval options, to run the same comparison in another process."""
    args = ["--nbval", f"--nbval-cell-timeout={config.getoption('nbval_cell_timeout')}"]
    sanitize = config.getoption("nbval_sanitize_with")
    if sanitize:
        args += ["--nbval-sanitize-with", str(sanitize)]
    return args


class LateNbval:
    """A thread that waits for ``waits`` (background processes) to end, then runs nbval on
    ``paths`` in a new process; ``result`` waits for it and returns (exit code, report)."""

    def __init__(self, paths: list[Path], args: list[str], waits: list[subprocess.Popen]):
        self.work = Path(tempfile.mkdtemp(prefix="late-nbval-"))
        self.cmd = [sys.executable, "-m", "pytest", *map(str, paths), *args,
                    "-p", "no:cacheprovider", "-q"]
        self.waits, self.proc, self.stopped = waits, None, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for proc in self.waits:
            proc.wait()
        if self.stopped.is_set():  # the session ended first
            return
        with open(self.work / "report.txt", "w") as log:
            self.proc = subprocess.Popen(self.cmd, cwd=ROOT, stdout=log,
                                         stderr=subprocess.STDOUT, text=True)
        self.proc.wait()

    def result(self, timeout: float) -> tuple[int | None, str]:
        self.thread.join(timeout)
        report = (self.work / "report.txt")
        text = report.read_text() if report.exists() else "(nbval never started)"
        return (self.proc.returncode if self.proc else None), text

    def stop(self) -> None:
        self.stopped.set()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        shutil.rmtree(self.work, ignore_errors=True)


def start_late_nbval(config, items: list, waits: list[subprocess.Popen]) -> list:
    """Take the nbval cells of the ``LATE`` chapters out of ``items`` and start ``LateNbval``
    on those chapters; returns the items left. Nothing changes unless the session collected
    both those chapters' cells and the test that reports on them."""
    late = [item for item in items if Path(str(item.fspath)).name in LATE
            and Path(str(item.fspath)).suffix == ".ipynb"]
    if not late or not any(item.name == LATE_TEST for item in items):
        return items
    paths = sorted({Path(str(item.fspath)) for item in late})
    config.late_nbval = LateNbval(paths, nbval_args(config), waits)
    config.add_cleanup(config.late_nbval.stop)
    return [item for item in items if item not in late]


@pytest.mark.slow
def test_later_chapters_pass_nbval(request):
    late = getattr(request.config, "late_nbval", None)
    if late is None:
        pytest.skip("nbval compares these chapters in this session (notebooks/ collected "
                    "alone, or not at all)")
    code, report = late.result(timeout=3600)
    print(report[-20000:])
    assert code == 0, f"nbval failed on {', '.join(LATE)}:\n{report[-20000:]}"
    assert report.count("passed") >= 1, report[-20000:]


def test_start_late_nbval_takes_out_only_the_later_chapters_and_only_with_its_test():
    class Item:
        def __init__(self, path, name):
            self.fspath, self.name = ROOT / path, name

    cells = [Item(f"notebooks/{name}", "Cell 0") for name in
             ("01_generation_loop.ipynb", LATE[0], LATE[-1])]
    report = Item("tests/site/test_late_nbval.py", LATE_TEST)

    class Config:
        def getoption(self, name):
            return {"nbval_cell_timeout": 600.0, "nbval_sanitize_with": None}[name]

        def add_cleanup(self, fn):
            self.cleanup = fn

    config = Config()
    assert start_late_nbval(config, cells, []) == cells          # no test to report: kept
    wait = subprocess.Popen(["sleep", "60"])
    left = start_late_nbval(config, [*cells, report], [wait])
    try:
        assert left == [cells[0], report]
        assert [Path(p).name for p in config.late_nbval.cmd if p.endswith(".ipynb")] == \
            [LATE[0], LATE[-1]]
        assert "--nbval-cell-timeout=600.0" in config.late_nbval.cmd
    finally:
        config.cleanup()  # the session's end: nbval must not start after it
        wait.kill()
        config.late_nbval.thread.join(10)
    assert not config.late_nbval.thread.is_alive() and config.late_nbval.proc is None
