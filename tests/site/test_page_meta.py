"""book/_ext/page_meta.py: a page's meta description is its first paragraph of prose."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from docutils import nodes

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("page_meta", ROOT / "book" / "_ext" / "page_meta.py")
ext = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(ext)


def test_the_description_is_the_first_prose_paragraph_with_plain_formulas():
    page = nodes.section()
    page += nodes.paragraph(text="About 9 minutes to read.", classes=["slm-time"])
    cell = nodes.container(classes=["cell"])
    cell += nodes.paragraph(text="an output")
    page += cell
    para = nodes.paragraph()
    para += nodes.Text("The context length ")
    para += nodes.math("n_\\text{ctx}", nodes.Text("n_\\text{ctx}"))
    para += nodes.Text(" is fixed.")
    page += para
    assert ext.description(page) == "The context length n_ctx is fixed."


def test_a_long_paragraph_is_cut_at_a_word():
    page = nodes.section()
    page += nodes.paragraph(text="word " * 100)
    text = ext.description(page)
    assert len(text) <= ext.LIMIT and text.endswith("word…")
    assert ext.description(nodes.section()) == ""
