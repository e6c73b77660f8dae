"""What the chapters need in JupyterLab: progress for long cells, honest widget placeholders.

* :func:`progress` wraps an iterable in a progress bar (``tqdm.auto``: a bar widget in
  JupyterLab, text in a terminal) for any loop that runs longer than a few seconds. It is
  silent when ``SLM_PROGRESS=0``, which ``numerics.env`` sets, so the stored outputs that
  ``make execute`` writes and nbval compares carry no bars.
* :func:`panel` marks a live ipywidgets panel: before its cell runs (or on a page without a
  kernel) a reader sees one line saying what it is and what it needs, never a
  ``VBox(children=...)`` repr.
* :func:`without_widget_views` is how an executed chapter stores its panels: as that one
  line only. A stored widget view would come back in JupyterLab before the cell runs:
  restored from the saved widget state, a panel whose controls move and change nothing
  (ipywidgets marks them only with small broken-link icons); without the state, the words
  "Error displaying widget: model not found". JupyterLab prefers a widget view to the text
  beside it, so the text shows only when the view is gone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
NOTE = "[{what}: a live panel. Run this cell in JupyterLab (make lab) to use it.]"
_NOTE = re.compile(re.escape(NOTE).replace(re.escape("{what}"), r"(?P<what>[^\n]+)"))


def progress_enabled() -> bool:
    """False when ``SLM_PROGRESS=0`` (executing for the stored outputs), else True."""
    return os.environ.get("SLM_PROGRESS", "1") != "0"


def progress(iterable: Iterable, total: int | None = None, desc: str = ""):
    """``iterable`` with a progress bar in JupyterLab, unchanged when bars are off."""
    if not progress_enabled():
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, leave=False)


def panel(widget, what: str):
    """``widget`` with a one-line placeholder (``what``) instead of its repr.

    ``what`` names the panel, e.g. "Live step-by-step generation". The placeholder says it
    needs a running kernel: JupyterLab shows the live panel once the cell has run.
    """
    if not what or not isinstance(what, str):
        raise ValueError(f"what={what!r} is invalid: give the panel a short name, such as "
                         "'Live step-by-step generation'")
    text = panel_note(what)
    original = widget._repr_mimebundle_

    def bundle(**kwargs):
        data = original(**kwargs) or {}
        if isinstance(data, tuple):
            data = data[0]
        return {**data, "text/plain": text}

    widget._repr_mimebundle_ = bundle
    return widget


def panel_note(what: str) -> str:
    """The one line a live panel named ``what`` shows until its cell has run."""
    return NOTE.format(what=what)


def panel_name(text: str) -> str | None:
    """The name of the panel whose note ``text`` is; None if it is not a panel's note."""
    match = _NOTE.fullmatch(text.strip())
    return match.group("what") if match else None


def without_widget_views(nb) -> int:
    """Drop from an executed notebook (nbformat's or plain JSON) every output's ipywidgets
    view, so its panel's note shows until the cell runs, and the saved widget state; return
    how many views were dropped. A view without a panel's note (a widget not wrapped with
    :func:`panel`) is an error: its place would show a repr."""
    dropped = 0
    for index, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW not in data:
                continue
            text = data.get("text/plain", "")
            if panel_name("".join(text) if isinstance(text, list) else text) is None:
                raise ValueError(f"cell {index} displays an ipywidgets widget whose text is "
                                 f"{text!r}, not a panel's note: wrap it with "
                                 "shakespeare_lm.site.lab.panel(widget, 'Live ...')")
            del data[WIDGET_VIEW]
            dropped += 1
    nb["metadata"].pop("widgets", None)
    return dropped
