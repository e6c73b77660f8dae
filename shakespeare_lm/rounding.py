"""Round at the source: every number the book shows goes through here.

A notebook executed on one CPU and re-executed on another differs in the last bits of its
floats (other SIMD kernels, another BLAS code path, another thread count). The book never
shows those bits: what a page prints, glues into its prose or draws in a figure is rounded
first, to the precision a reader needs.

* :func:`rounded` rounds floats, numpy scalars and arrays, torch tensors, pandas
  DataFrames and Series, and any list, tuple or dict of them, to ``digits`` significant digits, and returns plain Python
  numbers (so a repr reads ``0.58``, never ``np.float64(0.58)``). Integers stay exact.
* :func:`glue` is ``myst_nb.glue(name, rounded(value), display=False)``: the one way a
  chapter puts a number into its prose.
* :func:`below` shows a quantity that *measures* numerical noise (the largest difference
  between two ways of computing the same thing) as a bound, never as its noisy value.

Four significant digits is the default: it is more than any sentence of the book shows, and
a rounding boundary between two runs that differ by one part in 10^7 is then a one-in-a-
thousand event per number.
"""

from __future__ import annotations

import math
import numbers

DIGITS = 4


def _round_float(x: float, digits: int) -> float:
    if not math.isfinite(x) or x == 0:
        return x
    return float(f"{x:.{digits - 1}e}")


def rounded(value, digits: int = DIGITS):
    """``value`` with every float rounded to ``digits`` significant digits (see module doc)."""
    if not isinstance(digits, int) or isinstance(digits, bool) or digits < 1:
        raise ValueError(f"digits={digits!r} is invalid: give a positive integer number of "
                         "significant digits, such as 4")
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


def glue(name: str, value, digits: int = DIGITS) -> None:
    """Glue ``value``, rounded to ``digits`` significant digits, for ``{glue:text}`name```."""
    from myst_nb import glue as myst_glue

    myst_glue(name, rounded(value, digits), display=False)


def below(value: float, bound: float) -> str:
    """``"below 1e-04"``: a noise-sized ``value`` shown as the bound it stays under.

    Raises if ``value`` is not below ``bound``, so the page never states a false bound.
    """
    if not bound > 0:
        raise ValueError(f"bound={bound!r} is invalid: give a positive bound, such as 1e-4")
    if not abs(value) < bound:
        raise ValueError(f"{value!r} is not below {bound:g}: the bound shown would be false")
    return f"below {bound:.0e}"
