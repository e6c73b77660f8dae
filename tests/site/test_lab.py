"""Live panels (``shakespeare_lm.site.lab``): a panel carries its one-line note beside its
widget view, and an executed chapter stores the note alone, so that JupyterLab shows the
note until the cell runs instead of a panel restored from widget state that looks live
and is not."""

from __future__ import annotations

import copy

import pytest

from shakespeare_lm.site.lab import (
    WIDGET_VIEW,
    panel,
    panel_name,
    panel_note,
    without_widget_views,
)

STATE = {"application/vnd.jupyter.widget-state+json": {"state": {"abc": {}}}}


def executed(*texts: str) -> dict:
    """A notebook as nbclient stores it: one cell per text, each displaying a widget view
    with that text beside it, the widget state in its metadata."""
    cells = [{"cell_type": "code", "source": "", "metadata": {}, "outputs": [
        {"output_type": "execute_result", "execution_count": i, "metadata": {},
         "data": {WIDGET_VIEW: {"model_id": f"m{i}"}, "text/plain": [text]}}]}
        for i, text in enumerate(texts)]
    cells.append({"cell_type": "markdown", "source": "prose", "metadata": {}})
    return {"cells": cells, "metadata": {"widgets": STATE, "kernelspec": {"name": "python3"}}}


@pytest.mark.parametrize("what", ["Live beam search", "Live masking vs the exact conditional"])
def test_panel_name_reads_back_the_name_in_a_panels_note(what):
    assert panel_name(panel_note(what)) == what
    assert panel_name(panel_note(what) + "\n") == what
    assert panel_name(f"VBox(children=(IntSlider(value=0), HTML(value='{what}')))") is None


def test_panel_puts_its_note_beside_the_widget_view():
    widgets = pytest.importorskip("ipywidgets")
    bundle = panel(widgets.VBox([widgets.IntSlider()]), "Live beam search")._repr_mimebundle_()
    assert bundle["text/plain"] == panel_note("Live beam search")
    assert WIDGET_VIEW in bundle


@pytest.mark.parametrize("what", ["", None, 3])
def test_panel_refuses_a_missing_name(what):
    with pytest.raises(ValueError, match="what="):
        panel(object(), what)


@pytest.mark.parametrize("n_panels", [1, 2])
def test_an_executed_chapter_keeps_each_panels_note_and_no_widget_state(n_panels):
    notes = [panel_note(f"Live panel {i}") for i in range(n_panels)]
    nb = executed(*notes)
    before = copy.deepcopy(nb)
    assert without_widget_views(nb) == n_panels
    assert [out["data"] for c in nb["cells"] for out in c.get("outputs", [])] == [
        {"text/plain": [note]} for note in notes]
    assert "widgets" not in nb["metadata"] and nb["metadata"]["kernelspec"]
    assert nb["cells"][-1] == before["cells"][-1]
    assert without_widget_views(nb) == 0  # nothing left to drop


def test_an_executed_chapter_refuses_a_widget_shown_without_a_panels_note():
    nb = executed(panel_note("Live beam search"), "VBox(children=(IntSlider(value=0),))")
    with pytest.raises(ValueError, match=r"cell 1 .*VBox.*wrap it with"):
        without_widget_views(nb)
