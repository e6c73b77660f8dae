"""The code a page shows runs as shown.

A chapter's cells are of two kinds: the ones the site shows (folded or not) and the ones it
removes (``remove-cell``, ``remove-input``), which check, glue and store values. A student
who copies only the shown cells, in order, must get no error. Two tests hold the chapters to
that:

- ``test_shown_code_uses_only_shown_names`` reads every chapter (no kernel, well under a
  second): each name a shown cell reads and does not bind itself must last have been bound
  by a shown cell. A removed cell may read shown names and bind its own, but a name it binds
  (or rebinds) must never be read by shown code.
- ``test_shown_cells_run_alone`` executes the shown cells only, in order, in a fresh kernel
  under native kernels on one thread (as a student's kernel runs them; nothing is compared
  bit for bit here, so the pinned numerics would only make it slower: chapter 5 took 38 s
  pinned and 21 s native), with a chapter-4 cache of its own, and fails on every cell that
  raises, naming it. Like the cross-environment check (``test_portable_outputs.py``) it
  re-executes every chapter under native numerics, so it shares that check's marker,
  ``portable``, and its target, ``make test-portable``, which CI (``.ci/run``) runs after
  ``make test``; the two run side by side in the background (``tests/conftest.py``), one a
  core. ``make test`` keeps the first test.

``python -m tests.site.test_shown_cells [NOTEBOOK ...]`` runs the second one from the shell
and prints each chapter's count of failing cells.
"""

from __future__ import annotations

import ast
import builtins
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
REMOVED = {"remove-cell", "remove-input"}
KERNEL_NAMES = set(dir(builtins)) | {"display", "get_ipython", "In", "Out", "exit", "quit"}


def shown(cell: dict) -> bool:
    """A code cell whose input the site shows (``hide-input`` folds it: still shown)."""
    return cell["cell_type"] == "code" and not REMOVED & set(cell["metadata"].get("tags", []))


def _python(source: str) -> str:
    """The cell without IPython's magics and shell escapes (they bind nothing we check)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                     for line in source.splitlines())


def bound_and_read(source: str) -> tuple[set[str], set[str]]:
    """Names a cell binds at any depth, and names it reads that it never binds."""
    tree = ast.parse(_python(source))
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
    return bound, read - bound


def hidden_dependencies(nb: dict) -> list[str]:
    """Each shown cell's reads whose last binding was in a removed cell, or nowhere."""
    last: dict[str, tuple[int, bool]] = {}  # name -> (cell index, bound by a shown cell)
    problems = []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        bound, read = bound_and_read("".join(cell["source"]))
        if shown(cell):
            for name in sorted(read - KERNEL_NAMES):
                where = last.get(name)
                if where is None:
                    problems.append(f"cell {index} reads {name!r}, which no earlier cell binds")
                elif not where[1]:
                    problems.append(f"cell {index} reads {name!r}, last bound by removed "
                                    f"cell {where[0]}")
        for name in bound:
            last[name] = (index, shown(cell))
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_shown_code_uses_only_shown_names(path):
    problems = hidden_dependencies(json.loads(path.read_text("utf-8")))
    assert not problems, (f"{path.name}: shown code depends on removed cells; bind these "
                          "names in a shown cell:\n  " + "\n  ".join(problems))


def test_hidden_dependencies_finds_hidden_and_overridden_names():
    def cell(source, *tags):
        return {"cell_type": "code", "source": [source], "metadata": {"tags": list(tags)}}
    nb = {"cells": [cell("import math\nx = 1"), cell("y = x + 1", "remove-cell"),
                    cell("print(y)"), cell("x = 2", "remove-input"), cell("print(x, math.pi)"),
                    cell("def f(a):\n    return a + z\nfor i in range(3): f(i)"),
                    cell("%timeit f(1)\nprint(len([k for k in range(3)]))", "hide-input")]}
    assert hidden_dependencies(nb) == [
        "cell 2 reads 'y', last bound by removed cell 1",
        "cell 4 reads 'x', last bound by removed cell 3",
        "cell 5 reads 'z', which no earlier cell binds"]


def shown_only(nb: dict) -> dict:
    """The notebook with only its shown code cells, outputs cleared."""
    cells = []
    for cell in nb["cells"]:
        if shown(cell):
            source = cell["source"]
            source = "".join(source) if isinstance(source, list) else source
            cells.append({**cell, "source": source, "outputs": [], "execution_count": None})
    return {**nb, "cells": cells}


def run_shown(path: Path, cache_dir: Path, timeout: int = 600) -> list[str]:
    """Execute the shown cells of path in order, under native kernels on one thread, in a
    fresh kernel started in notebooks/, with its chapter-4 cache in ``cache_dir`` (never the
    pinned runs' cache: its values would differ in their last bits). Returns one line per
    cell that raised (empty: all ran)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    from tests.site.test_portable_outputs import native_env

    nb = nbformat.from_dict(shown_only(json.loads(path.read_text("utf-8"))))
    env = native_env(cache_dir)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    client.km = client.create_kernel_manager()
    failures = []
    with client.setup_kernel(env=env):
        for index, cell in enumerate(nb.cells):
            try:
                client.execute_cell(cell, index)
            except CellExecutionError as error:  # only if allow_errors were off
                failures.append(f"shown cell {index}: {error}")
            errors = [o for o in cell.outputs if o.get("output_type") == "error"]
            if errors:
                first = "".join(cell.source).splitlines()[0][:70]
                failures.append(f"shown cell {index} ({first!r}): {errors[0]['ename']}: "
                                f"{errors[0]['evalue']}")
    return failures


def start_shown_run() -> tuple[subprocess.Popen, Path]:
    """Start ``python -m tests.site.test_shown_cells`` on every chapter in the background,
    at the session's own priority: ``make test`` runs the browser tests in a process of their
    own beside the session, and a run at a lower priority would get nothing from two busy
    cores until they end, then hold the session up alone. Its report goes to a file."""
    work = Path(tempfile.mkdtemp(prefix="shown-cells-"))
    with open(work / "report.txt", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "tests.site.test_shown_cells",
                                 *map(str, NOTEBOOKS)], cwd=ROOT, stdout=log,
                                stderr=subprocess.STDOUT, text=True)
    return proc, work


@pytest.mark.slow
@pytest.mark.portable
def test_shown_cells_run_alone(request):
    # started when the session began (tests/conftest.py) and moved to the end of it
    proc, work = getattr(request.config, "shown_run", None) or start_shown_run()
    try:
        proc.wait(timeout=3600)
        report = (work / "report.txt").read_text()
        print(report[-20000:])
        assert report.count("failing shown cell(s)") == len(NOTEBOOKS), report[-20000:]
        assert proc.returncode == 0, "shown cells failed when run alone:\n" + report[-20000:]
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    paths = [Path(p).resolve() for p in sys.argv[1:]] or NOTEBOOKS
    total = 0
    cache = Path(tempfile.mkdtemp(prefix="shown-cells-cache-"))
    for path in paths:
        failures = run_shown(path, cache)
        total += len(failures)
        print(f"{path.name}: {len(failures)} failing shown cell(s)")
        for line in failures:
            print("   ", line)
    shutil.rmtree(cache, ignore_errors=True)
    sys.exit(1 if total else 0)
