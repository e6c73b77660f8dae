"""nbval's chapters shared between the session and a second pytest process, on the other
core.

In one ``make test`` session (tests/ and notebooks/ together), nbval compares the chapters
one after another on one thread once the tests of tests/ are done, and one core would sit
idle. So ``tests/conftest.py`` starts ``LateNbval``: a thread that waits for the background
re-executions the session started, if any (``test_shown_cells`` and
``test_portable_outputs``, where the session collects them: ``make test`` leaves both to
``make test-portable``), then takes the chapters from the last one backwards and runs
``pytest --nbval`` on each, with the session's own nbval options, under the same pinned
numerics. The session takes them from the first one forwards. Each side claims a chapter
before it starts it (a file created exclusively in a shared folder), so every chapter is
compared exactly once, by whichever side reaches it first; the session skips the cells of a
chapter the second process took. ``test_later_chapters_pass_nbval`` waits for the second
process's chapters and fails with their reports.

Run alone (``pytest notebooks/06_speculative_decoding.ipynb --nbval``), the session compares
every chapter itself, and the test here is skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LATE_TEST = "test_later_chapters_pass_nbval"


def nbval_args(config) -> list[str]:
    """The session's nbval options, to run the same comparison in another process."""
    args = ["--nbval", f"--nbval-cell-timeout={config.getoption('nbval_cell_timeout')}"]
    sanitize = config.getoption("nbval_sanitize_with")
    if sanitize:
        args += ["--nbval-sanitize-with", str(sanitize)]
    return args


def chapter_of(item) -> Path | None:
    """The notebook an nbval cell belongs to (None for any other test)."""
    path = Path(str(item.fspath))
    return path if path.suffix == ".ipynb" else None


class LateNbval:
    """Claims on ``chapters`` shared with the session, and a thread that waits for ``waits``
    (background processes) to end, then runs nbval on unclaimed chapters from the last one
    backwards until it meets one the session has claimed."""

    def __init__(self, chapters: list[Path], args: list[str], waits: list[subprocess.Popen]):
        self.work = Path(tempfile.mkdtemp(prefix="late-nbval-"))
        self.chapters, self.args, self.waits = chapters, args, waits
        self.proc, self.stopped = None, threading.Event()
        self.runs: list[tuple[str, int, str]] = []  # (chapter, exit code, report)
        self.session_claims: dict[Path, bool] = {}   # the session's: chapter -> it is mine
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def claim(self, chapter: Path) -> bool:
        """Whether this caller is the first to claim ``chapter`` (then it must compare it)."""
        try:
            os.close(os.open(self.work / f"{chapter.name}.claim", os.O_CREAT | os.O_EXCL))
            return True
        except FileExistsError:
            return False

    def session_has(self, chapter: Path) -> bool:
        """For the session: whether ``chapter`` is its own, claimed the first time it asks."""
        if chapter not in self.session_claims:
            self.session_claims[chapter] = self.claim(chapter)
        return self.session_claims[chapter]

    def _run(self) -> None:
        for proc in self.waits:
            proc.wait()
        for chapter in reversed(self.chapters):
            if self.stopped.is_set() or not self.claim(chapter):
                return  # the session has reached the chapters from here on down
            report = self.work / f"{chapter.name}.txt"
            with open(report, "w") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "pytest", str(chapter), *self.args,
                     "-p", "no:cacheprovider", "-q"],
                    cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True)
            self.runs.append((chapter.name, self.proc.wait(), report.read_text()))

    def result(self, timeout: float) -> list[tuple[str, int, str]]:
        """Wait for the thread; the chapters it compared, each with nbval's exit code and
        report (an empty list: the session compared every chapter itself)."""
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise TimeoutError(f"the second nbval process was still running after {timeout} s")
        return self.runs

    def stop(self) -> None:
        self.stopped.set()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        shutil.rmtree(self.work, ignore_errors=True)


def start_late_nbval(config, items: list, waits: list[subprocess.Popen]) -> None:
    """Start ``LateNbval`` on the session's nbval chapters (``config.late_nbval``), if the
    session collected some and the test that reports on them."""
    chapters = sorted({path for path in map(chapter_of, items) if path is not None})
    if chapters and any(item.name == LATE_TEST for item in items):
        config.late_nbval = LateNbval(chapters, nbval_args(config), waits)
        config.add_cleanup(config.late_nbval.stop)
        if hasattr(config, "pluginmanager"):
            # a plugin, not a hook in tests/conftest.py: a conftest's item hooks reach only
            # the items under its folder, and nbval's cells are under notebooks/
            config.pluginmanager.register(SkipTaken(), "late-nbval-claims")


class SkipTaken:
    """The session's side of the claims, as a pytest plugin."""

    @pytest.hookimpl(tryfirst=True)  # before nbval starts a kernel for the chapter
    def pytest_runtest_setup(self, item):
        skip_if_taken(item)


def skip_if_taken(item) -> None:
    """In the session: claim an nbval cell's chapter when its first cell is about to run,
    and skip every cell of a chapter the second process claimed first."""
    late, chapter = getattr(item.config, "late_nbval", None), chapter_of(item)
    if late is not None and chapter is not None and not late.session_has(chapter):
        pytest.skip("compared by the second nbval process (test_later_chapters_pass_nbval)")


@pytest.mark.slow
def test_later_chapters_pass_nbval(request):
    late = getattr(request.config, "late_nbval", None)
    if late is None:
        pytest.skip("the session compares every chapter itself (notebooks/ collected alone, "
                    "or not at all)")
    runs = late.result(timeout=3600)
    for name, code, report in runs:
        print(f"{name}: exit code {code}\n{report[-3000:]}")
    failed = [f"{name} (exit code {code}):\n{report[-10000:]}"
              for name, code, report in runs if code != 0]
    assert not failed, "nbval failed in the second process on " + "\n".join(failed)


def test_chapters_are_claimed_once_the_second_process_from_the_end():
    class Item:
        def __init__(self, path, name="Cell 0"):
            self.fspath, self.name = ROOT / path, name

    chapters = [ROOT / f"notebooks/0{i}_x.ipynb" for i in (1, 2, 3)]
    items = [Item(path) for path in chapters]

    class Config:
        def getoption(self, name):
            return {"nbval_cell_timeout": 600.0, "nbval_sanitize_with": None}[name]

        def add_cleanup(self, fn):
            self.cleanup = fn

    config = Config()
    start_late_nbval(config, items, [])                  # no test to report: nothing starts
    assert not hasattr(config, "late_nbval")
    wait = subprocess.Popen(["sleep", "60"])              # the background runs, still going
    start_late_nbval(config, [*items, Item("tests/site/test_late_nbval.py", LATE_TEST)], [wait])
    late = config.late_nbval
    try:
        assert late.chapters == chapters
        for item in items:
            item.config = config
        skip_if_taken(items[0])                          # the session claims chapter 1 ...
        assert late.claim(chapters[2]) and not late.claim(chapters[2]) and \
            not late.claim(chapters[0])                  # ... and a claim is taken once
        with pytest.raises(pytest.skip.Exception):       # chapter 3 is another's: skipped
            skip_if_taken(items[2])
        skip_if_taken(items[1])                          # chapter 2 is free: the session's
        assert late.session_claims == {chapters[0]: True, chapters[2]: False,
                                       chapters[1]: True}
    finally:
        config.cleanup()  # the session's end: nothing may start after it
        wait.kill()
        late.thread.join(10)
    assert not late.thread.is_alive() and late.proc is None and late.runs == []
