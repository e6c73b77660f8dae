"""Round at the source: every number the book shows goes through here.

A notebook executed on one CPU and re-executed on another differs in the last bits of its
floats (other SIMD kernels, another BLAS code path, another thread count). The book never
shows those bits: what a page prints, glues into its prose or draws in a figure is rounded
first, to the precision a reader needs.

* :func:`rounded` rounds floats, numpy scalars and arrays, torch tensors, pandas
  DataFrames and Series, and any list, tuple or dict of them, to ``digits`` significant
  digits, and returns plain Python numbers (so a repr reads ``0.58``, never
  ``np.float64(0.58)``). Integers stay exact.
* :func:`glue` records ``rounded(value)`` under a name in :data:`glued`: the one way a
  chapter puts a number into its prose. The prose shows it with MyST's inline expression
  role, ``{eval}`glued.name``` (or ``{eval}`glued.name(".1f")``` with a format spec).
  JupyterLab (jupyterlab-myst) evaluates the expression in the reader's kernel; the static
  site shows the value that ``python -m shakespeare_lm.site.book execute`` stored in the cell's
  ``user_expressions`` metadata (``book/_ext/inline_values.py``). One source, both media.
* :func:`below` shows a quantity that *measures* numerical noise (the largest difference
  between two ways of computing the same thing) as a bound, never as its noisy value.

Four significant digits is the default: it is more than any sentence of the book shows, and
a rounding boundary between two runs that differ by one part in 10^7 is then a one-in-a-
thousand event per number.
"""

from __future__ import annotations

import math
import numbers
import re

from ..checks import check_count

DIGITS = 4
MARKUP = re.compile(r"[*_`\[\]<>$\\~]")  # characters that make a glued text Markdown


def _round_float(x: float, digits: int) -> float:
    if not math.isfinite(x) or x == 0:
        return x
    return float(f"{x:.{digits - 1}e}")


def rounded(value, digits: int = DIGITS):
    """``value`` with every float rounded to ``digits`` significant digits (see module doc)."""
    check_count("digits", digits, 1, hint=" significant digits, such as 4")
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return _round_float(float(value), digits)
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v, digits) for v in value]
    if isinstance(value, tuple):
        return tuple(rounded(v, digits) for v in value)
    if type(value).__module__.startswith("pandas") and hasattr(value, "map"):
        return value.map(lambda v: rounded(v, digits))  # a DataFrame or Series, cell by cell
    if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
        return rounded(value.tolist(), digits)
    return value


class Shown:
    """A glued value as prose shows it: its repr is the text itself, never a Python repr.

    ``shown(".1f")`` is the same value under a format spec (as ``format(value, spec)``).
    ``markdown=True`` values are Markdown fragments (a verdict with emphasis, say); one
    without markup is offered as plain text only, which reads the same on both media.
    """

    def __init__(self, name: str, value, markdown: bool = False):
        self.name, self.value, self.markdown = name, value, markdown

    def __call__(self, spec: str) -> Shown:
        if not isinstance(self.value, numbers.Real) or isinstance(self.value, bool):
            raise ValueError(f"glued value {self.name!r} is {self.value!r}, not a number: a "
                             f"format spec such as {spec!r} applies to numbers only")
        return Shown(self.name, format(self.value, spec))

    def __str__(self) -> str:
        return str(self.value)

    __repr__ = __str__

    def _repr_markdown_(self):
        # Markdown only when the text has markup: JupyterLab (jupyterlab-myst) shows a
        # Markdown value as a paragraph of its own, a plain one inline in the sentence.
        text = str(self)
        return text if self.markdown and MARKUP.search(text) else None


class Glued:
    """Every value glued in this kernel, by name: ``glued.ch3_tail_count``."""

    def __init__(self):
        self._values: dict[str, Shown] = {}

    def record(self, name: str, value, markdown: bool = False) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"glue name {name!r} is invalid: use a Python identifier such "
                             "as 'ch3_tail_count', so that prose can write glued.<name>")
        self._values[name] = Shown(name, value, markdown)

    def __getattr__(self, name: str) -> Shown:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"nothing is glued as {name!r} yet: run the cell that calls "
                                 f"glue({name!r}, ...) first") from None

    def __dir__(self):
        return sorted(self._values)

    def __repr__(self) -> str:
        return f"<{len(self._values)} glued values: {', '.join(sorted(self._values))}>"


glued = Glued()


def glue(name: str, value, digits: int = DIGITS, *, markdown: bool = False) -> None:
    """Record ``value``, rounded to ``digits`` significant digits, as ``glued.<name>``.

    ``markdown=True`` (or an ``IPython.display.Markdown`` value) for a Markdown fragment.
    """
    if type(value).__name__ == "Markdown" and hasattr(value, "data"):  # IPython.display
        value, markdown = value.data, True
    if markdown and not isinstance(value, str):
        raise ValueError(f"glue({name!r}, markdown=True) needs a string, got {value!r}")
    glued.record(name, rounded(value, digits), markdown)


def below(value: float, bound: float) -> str:
    """``"below 1e-04"``: a noise-sized ``value`` shown as the bound it stays under.

    Raises if ``value`` is not below ``bound``, so the page never states a false bound.
    """
    if not bound > 0:
        raise ValueError(f"bound={bound!r} is invalid: give a positive bound, such as 1e-4")
    if not abs(value) < bound:
        raise ValueError(f"{value!r} is not below {bound:g}: the bound shown would be false")
    return f"below {bound:.0e}"
