"""book/_ext/reading_time.py: the line under a chapter's title, from the built page's words
and the notebook's recorded Run All seconds."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from docutils import nodes

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location(
    "reading_time", ROOT / "book" / "_ext" / "reading_time.py")
ext = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(ext)


def cell(text: str, *classes: str) -> nodes.container:
    box = nodes.container(classes=["cell", *classes])
    box += nodes.container("", nodes.literal_block(text, text), classes=["cell_input"])
    box += nodes.container("", nodes.literal_block(text, text), classes=["cell_output"])
    return box


def test_reading_minutes_count_prose_and_shown_code_never_outputs():
    page = nodes.section()
    page += nodes.paragraph(text="word " * 400)          # 2 minutes of prose
    page += cell("x = 1 " * 100)                          # 300 words of code: 3 minutes
    page += cell("hidden " * 1000, "tag_hide-input")     # input folded, output: not read
    assert ext.reading_minutes(page) == 5
    assert ext.reading_minutes(nodes.section()) == 1     # never "0 minutes"


def test_run_all_seconds_come_from_the_notebooks_metadata(tmp_path):
    recorded = tmp_path / "a.ipynb"
    recorded.write_text(json.dumps({"metadata": {"shakespeare_lm": {"run_all_seconds": 41.6}}}))
    bare = tmp_path / "b.ipynb"
    bare.write_text(json.dumps({"metadata": {}}))
    assert ext.run_all_seconds(recorded) == 42
    assert ext.run_all_seconds(bare) is None
    assert ext.run_all_seconds(tmp_path / "page.md") is None
    assert ext.time_line(25, 42) == ("About 25 minutes to read; Run All takes about 42 s "
                                     "on 2 CPU cores.")
    assert ext.time_line(3, None) == "About 3 minutes to read."
