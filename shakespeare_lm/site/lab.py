"""What the chapters need in JupyterLab: progress for long cells, honest widget placeholders.

* :func:`progress` wraps an iterable in a progress bar (``tqdm.auto``: a bar widget in
  JupyterLab, text in a terminal) for any loop that runs longer than a few seconds. It is
  silent when ``SLM_PROGRESS=0``, which ``numerics.env`` sets, so the stored outputs that
  ``make execute`` writes and nbval compares carry no bars.
* :func:`panel` marks a live ipywidgets panel: before its cell runs (or on a page without a
  kernel) a reader sees one line saying what it is and what it needs, never a
  ``VBox(children=...)`` repr.
"""

from __future__ import annotations

import os
from collections.abc import Iterable


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
    text = f"[{what}: a live panel. Run this cell in JupyterLab (make lab) to use it.]"
    original = widget._repr_mimebundle_

    def bundle(**kwargs):
        data = original(**kwargs) or {}
        if isinstance(data, tuple):
            data = data[0]
        return {**data, "text/plain": text}

    widget._repr_mimebundle_ = bundle
    return widget
