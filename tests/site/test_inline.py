"""Numbers in the prose: glue() -> {eval}`glued.name` -> stored user_expressions -> pages.

The same Markdown source shows its numbers in JupyterLab (jupyterlab-myst evaluates the
expression in the kernel) and on the static site (book/_ext/inline_values.py shows what the
executing client stored). These tests run a real kernel on small notebooks.
"""

import nbformat
import pytest

from shakespeare_lm.site.inline import InlineClient, expressions, stored_text
from shakespeare_lm.site.outputs import compare_cells
from shakespeare_lm.site.rounding import Glued, glue, glued


def _notebook(*cells):
    nb = nbformat.v4.new_notebook()
    for kind, src in cells:
        maker = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
        nb.cells.append(maker(src))
    return nb


def _run(nb):
    InlineClient(nb, timeout=60, kernel_name="python3").execute()
    return nb


def test_expressions_are_found_in_order_without_repeats():
    src = "a {eval}`glued.x` b {eval}`glued.y(\".1f\")` c {eval}`glued.x`"
    assert expressions(src) == ["glued.x", 'glued.y(".1f")']


def test_glued_values_show_as_text_never_as_python_reprs():
    import numpy as np

    glue("t_prob", np.float64(0.5812345))
    glue("t_count", np.int64(12))
    assert repr(glued.t_prob) == "0.5812"          # rounded to 4 significant digits
    assert repr(glued.t_count) == "12"
    assert repr(glued.t_prob(".1%")) == "58.1%"
    glue("t_words", "rises")
    assert repr(glued.t_words) == "rises"           # no quotes


def test_glue_names_and_formats_are_checked_with_clear_errors():
    with pytest.raises(ValueError, match="Python identifier"):
        glue("not a name", 1.0)
    with pytest.raises(AttributeError, match="nothing is glued as 't_never'"):
        _ = Glued().t_never
    glue("t_text", "abc")
    with pytest.raises(ValueError, match="not a number"):
        glued.t_text(".2f")


def test_the_client_stores_each_markdown_cells_values_in_order():
    nb = _run(_notebook(
        ("code", "from shakespeare_lm.site.rounding import glue, glued\n"
                 "from IPython.display import Markdown\n"
                 "glue('v', 2 / 3)\nglue('verdict', Markdown('*holds*'))"),
        ("markdown", "Two thirds is {eval}`glued.v`, or {eval}`glued.v(\".0%\")`; "
                     "it {eval}`glued.verdict`."),
        ("code", "glue('v', 0.25)"),
        ("markdown", "Now {eval}`glued.v`."),
    ))
    first = nb.cells[1].metadata.user_expressions
    assert [e["expression"] for e in first] == ["glued.v", 'glued.v(".0%")', "glued.verdict"]
    assert [stored_text(e["result"])[1] for e in first] == ["0.6667", "67%", "*holds*"]
    assert stored_text(first[2]["result"])[0] == "text/markdown"
    # evaluated where the cell stands, as Run All does, not at the end of the notebook
    assert stored_text(nb.cells[3].metadata.user_expressions[0]["result"])[1] == "0.25"


def test_prose_that_uses_a_value_before_it_is_glued_fails_the_execution():
    nb = _notebook(
        ("code", "from shakespeare_lm.site.rounding import glue, glued"),
        ("markdown", "Too early: {eval}`glued.later`."),
        ("code", "glue('later', 1)"),
    )
    with pytest.raises(RuntimeError, match=r"glued.later.*Glue the value in a code cell above"):
        _run(nb)


def test_the_portable_comparison_catches_a_moved_prose_value():
    src = ("code", "from shakespeare_lm.site.rounding import glue, glued\nglue('v', X)")
    md = ("markdown", "The value is {eval}`glued.v`.")
    stored = _run(_notebook(("code", "X = 0.5"), src, md))
    same = _run(_notebook(("code", "X = 0.5"), src, md))
    moved = _run(_notebook(("code", "X = 0.75"), src, md))
    assert compare_cells(stored, same) == []
    found = compare_cells(stored, moved)
    assert len(found) == 1 and found[0].cell == 2
