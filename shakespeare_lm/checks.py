"""Argument checks shared across the package, with messages that name the argument, the
bad value and what would be right: ``check_count`` (integers), ``check_number`` (finite
numbers in a range), ``check_positive``, and ``optional_import`` for the libraries that
only the ``book`` extra installs. The decoders' own checks (prompts, budgets, the
context-window policy) are in ``shakespeare_lm.decoding.checks``."""

from __future__ import annotations

import importlib
import math


def check_count(name: str, value, low: int = 0, high: int | None = None, hint: str = "") -> None:
    """Raise ValueError unless ``value`` is an int (not a bool) in [low, high]."""
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        where = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name}={value!r} is invalid: {name} must be an integer {where}{hint}")


def check_number(name: str, value, low: float | None = None, high: float | None = None,
                 hint: str = "") -> None:
    """Raise ValueError unless ``value`` is a finite real number (not a bool) in [low, high]."""
    ok = (not isinstance(value, bool) and isinstance(value, (int, float))
          and math.isfinite(value) and (low is None or value >= low)
          and (high is None or value <= high))
    if not ok:
        where = "" if low is None and high is None else f" in [{low}, {high}]"
        kind = "a finite number" if not where else "a number"
        raise ValueError(f"{name}={value!r} is invalid: {name} must be {kind}{where}{hint}")


def check_positive(name: str, value, integer: bool = False, allow_zero: bool = False) -> None:
    """Raise ValueError unless ``value`` is a positive (or, with ``allow_zero``, non-negative)
    finite number, or, with ``integer``, such an int (``check_count``); bools are refused."""
    if integer:
        check_count(name, value, 0 if allow_zero else 1)
        return
    low_ok = isinstance(value, (int, float)) and (value >= 0 if allow_zero else value > 0)
    if isinstance(value, bool) or not low_ok or not math.isfinite(value):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name}={value!r} is invalid: {name} must be a finite number {bound}")


def optional_import(module: str, needed_by: str):
    """Import ``module``, which only the ``book`` extra installs, or raise an ImportError
    that says who needs it and how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:  # pragma: no cover - only without the book extra
        raise ImportError(f"{needed_by} needs the {module} package: pip install "
                          f"'shakespeare_lm[book]' (or pip install {module})") from e
