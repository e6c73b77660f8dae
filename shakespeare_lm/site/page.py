"""One import for a page of the book: what every chapter's first cell needs, gathered.

    from shakespeare_lm.site import page

    model, tok = page.setup()        # the book's figure style, a fixed seed, the trained model

A page's code then reads ``page.panel(...)`` for a JupyterLab panel, ``page.progress(...)``
for a long loop, ``page.Slider`` and ``page.SliderFigure`` for a figure with sliders, and
``page.style`` for the palette. The hidden cells that put values into the prose use the same
names: ``page.glue``, and ``glued`` and ``cite`` (which the prose's ``{eval}`` roles read,
so a page binds them with ``from shakespeare_lm.site.page import cite, glued``).

The names are the site modules' own, gathered here so that a page starts with one line
instead of five or six presentation imports; nothing is redefined.
"""

from __future__ import annotations

from . import live, style
from .citations import cite
from .figures import Slider, SliderFigure
from .lab import panel, progress
from .rounding import below, glue, glued

__all__ = ["Slider", "SliderFigure", "below", "cite", "glue", "glued", "live", "panel",
           "progress", "setup", "style"]


def setup(name: str = "shakespeare", seed: int | None = 0, threads: int | None = None):
    """Apply the book's figure style, seed torch, and load a trained model.

    ``name`` is the weights to load ("shakespeare", or "draft" for the small draft model),
    ``seed`` the seed for torch's generator (None leaves it alone) and ``threads`` the
    number of CPU threads torch uses (None leaves torch's default). Returns ``(model, tok)``
    as :func:`shakespeare_lm.load_pretrained` does.
    """
    import torch

    from .. import load_pretrained

    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads={threads!r} is invalid: give a whole number of CPU "
                             "threads of at least 1, such as 1, or None for torch's default")
        torch.set_num_threads(threads)
    if seed is not None:
        torch.manual_seed(seed)
    style.use()
    return load_pretrained(name)
