"""Stored notebook outputs reproduce under numerics other than the ones that produced them.

The chapters are executed and compared under the pinned numerics of ``numerics.env``
(portable kernels, one thread), which make them bit-identical on every x86-64 CPU. That
alone would hide a page that prints unrounded floats: on another architecture, or for a
reader who runs a chapter natively, its last digits would move. So this test re-executes
every chapter once more with the pinned variables removed (native AVX2 / AVX-512 kernels,
MKL's automatic branch, oneDNN's native instruction set), in a fresh chapter-4 cache, and
requires each stored number to hold up to one unit in the last digit it shows
(``shakespeare_lm.site.outputs``). It is a third full execution of every page, so it has a
target of its own, ``make test-portable`` (marker ``portable``), which CI (``.ci/run``) runs
after ``make test``, beside the run of every chapter's shown cells alone
(``test_shown_cells.py``): ``make test`` re-executes the pages once (nbval).
The 17 nbval failures that this project once had on a fresh machine (unrounded glued
floats, 16-digit floats in figure JSON, a printed ``4.3e-06`` noise value) all fail it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from shakespeare_lm.site.outputs import IGNORE_TAG, REASON_KEY, numbers_agree, pinned_numerics

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))


def native_env(cache_dir: Path) -> dict[str, str]:
    """The environment without the pinned set: native kernels, MKL's automatic branch. One
    thread, because the check runs beside the rest of the suite on the second core. Progress
    bars stay off (``SLM_PROGRESS=0``): they are not numerics, and the stored outputs have none."""
    env = {k: v for k, v in os.environ.items() if k not in pinned_numerics()}
    env.update(OMP_NUM_THREADS="1", SLM_CACHE_DIR=str(cache_dir), SLM_PROGRESS="0")
    return env


def start_native_compare(notebooks: list[Path] = NOTEBOOKS) -> tuple[subprocess.Popen, Path]:
    """Start ``python -m shakespeare_lm.site.book compare`` on ``notebooks``, in the
    background, under the native environment, with an empty chapter-4 cache; its report goes
    to a file."""
    work = Path(tempfile.mkdtemp(prefix="portable-outputs-"))
    # the child keeps its own copy of the file descriptor: ours closes when Popen returns
    with open(work / "report.txt", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "shakespeare_lm.site.book", "compare",
                                 *map(str, notebooks)], env=native_env(work / "cache"), cwd=ROOT,
                                stdout=log, stderr=subprocess.STDOUT, text=True)
    return proc, work


def test_numbers_agree_up_to_one_unit_in_the_last_shown_digit():
    assert numbers_agree("p = 0.5322, 1,234 tokens, 4.3e-06",
                         "p = 0.5323, 1,235 tokens, 4.4e-06") is None
    assert numbers_agree("0.9999", "1.000") is None
    assert "more than one unit" in numbers_agree("0.5322336554527283", "0.5322335362434387")
    assert "more than one unit" in numbers_agree("4.3e-06", "4.5e-06")
    assert "text differs" in numbers_agree("drew 'h'", "drew 'o'")


def test_compare_skips_inline_values_of_prose_tagged_as_varying():
    from shakespeare_lm.site.outputs import compare_cells

    def prose(value, tags=()):
        result = {"status": "ok", "data": {"text/plain": value}, "metadata": {}}
        return {"cell_type": "markdown", "source": "{eval}`glued.x`",
                "metadata": {"tags": list(tags),
                             "user_expressions": [{"expression": "glued.x",
                                                   "result": result}]}}

    stored, fresh = {"cells": [prose("26.8")]}, {"cells": [prose("31.2")]}
    assert "more than one unit" in compare_cells(stored, fresh)[0].why
    stored["cells"][0] = prose("26.8", [IGNORE_TAG])
    assert compare_cells(stored, fresh) == []


def test_every_opted_out_cell_says_why_and_uses_the_tag():
    import nbformat

    for path in NOTEBOOKS:
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            assert "NBVAL_" not in "".join(cell.source), f"{path.name} cell {i}: use the tag"
            if IGNORE_TAG in cell.metadata.get("tags", []):
                assert len(cell.metadata.get(REASON_KEY, "")) > 10, \
                    f"{path.name} cell {i} opts out of the comparison without a reason"


def test_notebooks_were_executed_under_the_pinned_numerics():
    import nbformat

    pinned = pinned_numerics()
    for path in NOTEBOOKS:
        meta = nbformat.read(path, as_version=4).metadata.get("shakespeare_lm", {})
        assert meta.get("numerics") == pinned, \
            f"{path.name} was not executed under numerics.env: run `make execute NB={path}`"


@pytest.mark.slow
@pytest.mark.portable
def test_stored_outputs_reproduce_under_native_kernels(request):
    # In a whole session, started when it began (tests/conftest.py) and moved to its end, so
    # that it re-executes the chapters on one core while the rest runs on the other. Alone
    # (make test-portable), the pages split between two processes, one a core.
    started = getattr(request.config, "portable_compare", None)
    runs = [started] if started else [start_native_compare(NOTEBOOKS[0::2]),
                                      start_native_compare(NOTEBOOKS[1::2])]
    try:
        reports = []
        for proc, work in runs:
            proc.wait(timeout=1800)
            reports.append((proc.returncode, (work / "report.txt").read_text()))
        for code, report in reports:
            print(report[-20000:])
            kernels = re.findall(r"MKL_CBWR = (\S+ \S+ \S+)", report)
            assert kernels and "DEFAULT 1 COMPATIBLE" not in kernels, \
                f"the check must run under other numerics than the pinned ones: {kernels}"
            assert code == 0, report[-20000:]
    finally:
        for proc, work in runs:
            if proc.poll() is None:
                proc.kill()
            shutil.rmtree(work, ignore_errors=True)
