"""Stored notebook outputs that reproduce on any machine.

Two mechanisms keep a chapter's committed outputs true on a machine other than the one
that executed it (CONTRIBUTING.md, "Outputs that reproduce"):

1. **Pinned numerics.** ``numerics.env`` at the repository root is the one fixed numerical
   environment (portable ATen kernels, MKL's compatible branch, oneDNN capped at SSE4.1, one
   thread, numpy's baseline loops). ``make execute`` and ``make test`` run the chapters
   under it, so the same notebook gives the same bits on every x86-64 CPU.
2. **Rounding at the source** (:mod:`shakespeare_lm.site.rounding`): what a page shows is
   rounded, so the last bits never reach the page in the first place.

:func:`compare_notebook` is the check that the second mechanism works without the first:
it re-executes a chapter under whatever environment it is started in (the test starts it
under the *native* kernels with two threads, which differ from the pinned set) and compares
the stored outputs with the new ones, allowing each number to differ by one unit in the
last digit it shows. An unrounded float (16 digits), a repr, or a value that moves further
than its last shown digit fails it; all other text must match exactly. Cells tagged
``nbval-ignore-output`` (wall-clock timings, hardware probes) are skipped, as nbval does;
so are the inline values of a Markdown cell with that tag (prose that quotes a timing).
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from ..paths import NOTEBOOKS_DIR, NUMERICS_ENV

SANITIZE_CFG = NOTEBOOKS_DIR / "sanitize.cfg"
IGNORE_TAG = "nbval-ignore-output"
REASON_KEY = "output_varies"  # cell metadata: why an opted-out cell's output varies
SKIPPED_MIME = {"image/png", "image/jpeg", "application/vnd.jupyter.widget-view+json"}
PROBE = ("import os, torch\n"
         "print(torch.backends.cpu.get_cpu_capability(), torch.get_num_threads(), "
         "os.environ.get('MKL_CBWR', 'AUTO'))")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def pinned_numerics(path: Path = NUMERICS_ENV) -> dict[str, str]:
    """The pinned environment variables of ``numerics.env`` (shell ``KEY=value`` lines)."""
    pinned = {}
    for line in path.read_text("utf-8").splitlines():
        words = shlex.split(line, comments=True)
        if words:
            key, sep, value = words[0].partition("=")
            if not sep or len(words) > 1:
                raise ValueError(f"{path}: cannot read {line!r}; write KEY=value, quoting a "
                                 "value that has spaces")
            pinned[key] = value
    return pinned


def unpinned(pinned: dict[str, str], environ: dict[str, str] | None = None) -> list[str]:
    """Names of pinned variables that ``environ`` lacks or sets otherwise, with their values."""
    environ = dict(os.environ if environ is None else environ)
    return [f"{k}={environ.get(k)!r} (pinned: {v!r})" for k, v in pinned.items()
            if environ.get(k) != v]


def sanitizers(path: Path = SANITIZE_CFG) -> list[tuple[re.Pattern, str]]:
    """The (regex, replacement) pairs of nbval's sanitize file."""
    cfg = configparser.ConfigParser()
    cfg.read(path)
    return [(re.compile(cfg[s]["regex"]), cfg[s]["replace"]) for s in cfg.sections()]


def cell_texts(cell: dict, subs: list[tuple[re.Pattern, str]]) -> list[str]:
    """The compared text of a code cell's outputs: streams joined per name, like nbval."""
    texts, streams = [], {}
    for out in cell.get("outputs", []):
        kind = out["output_type"]
        if kind == "stream":
            streams[out["name"]] = streams.get(out["name"], "") + _join(out["text"])
        elif kind == "error":
            texts.append(f"{out['ename']}: {out['evalue']}")
        else:
            texts += [f"{mime}: {_as_text(v)}" for mime, v in sorted(out.get("data", {}).items())
                      if mime not in SKIPPED_MIME]
    texts += [f"{name}: {text}" for name, text in sorted(streams.items())]
    for pattern, repl in subs:
        texts = [pattern.sub(repl, t) for t in texts]
    return texts


def inline_texts(cell: dict) -> list[str]:
    """The values a Markdown cell's ``{eval}`` expressions showed, as ``expression: text``."""
    from .inline import stored_text

    return [f"{e['expression']}: {stored_text(e['result'])[1]}"
            for e in cell.get("metadata", {}).get("user_expressions", [])]


def _as_text(value) -> str:
    """An output's data as text; JSON data (a Vega-Lite spec) with sorted keys, as nbformat
    stores it, so a fresh in-memory output and a stored one compare alike."""
    if isinstance(value, (dict, list)) and not (isinstance(value, list)
                                                 and all(isinstance(v, str) for v in value)):
        return json.dumps(value, sort_keys=True)
    return _join(value)


def _join(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _last_digit_unit(token: str) -> float:
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def numbers_agree(stored: str, fresh: str) -> str | None:
    """None if the texts agree up to one unit in each number's last shown digit, else why."""
    a_parts, b_parts = _NUMBER.split(stored), _NUMBER.split(fresh)
    a_nums, b_nums = _NUMBER.findall(stored), _NUMBER.findall(fresh)
    offset = 0  # where the current text part starts in ``stored``, for the report
    for i, (pa, pb) in enumerate(zip(a_parts, b_parts)):
        if pa != pb:
            return _first_difference(stored, fresh, offset)
        offset += len(pa)
        if i < min(len(a_nums), len(b_nums)):
            x, y = a_nums[i], b_nums[i]
            unit = max(_last_digit_unit(x), _last_digit_unit(y))
            # 1e-6 of a unit of slack: binary floats cannot hold 50.009131 - 50.009132 exactly
            if abs(float(x.replace(",", "")) - float(y.replace(",", ""))) > unit * (1 + 1e-6):
                return (f"{x} became {y}: more than one unit ({unit:g}) in its last shown digit, "
                        f"at {stored[max(0, offset - 40):offset + len(x) + 20]!r}")
            offset += len(x)
    if len(a_parts) != len(b_parts):
        return _first_difference(stored, fresh, offset)
    return None


def _first_difference(a: str, b: str, start: int = 0, context: int = 60) -> str:
    i = next((j for j, (x, y) in enumerate(zip(a[start:], b[start:])) if x != y),
             min(len(a), len(b)) - start) + start
    lo = max(0, i - context)
    return f"text differs: stored {a[lo:i + context]!r} vs new {b[lo:i + context]!r}"


@dataclass
class Mismatch:
    cell: int
    why: str

    def __str__(self) -> str:
        return f"cell {self.cell}: {self.why}"


def compare_cells(stored: dict, fresh: dict) -> list[Mismatch]:
    """Compare two executions of one notebook cell by cell (see module doc)."""
    subs, found = sanitizers(), []
    for i, (a, b) in enumerate(zip(stored["cells"], fresh["cells"])):
        tags = a.get("metadata", {}).get("tags", [])
        if a["cell_type"] == "markdown" and IGNORE_TAG not in tags:
            if len(inline_texts(a)) != len(inline_texts(b)):
                found.append(Mismatch(i, f"{len(inline_texts(a))} inline values stored, "
                                         f"{len(inline_texts(b))} now"))
                continue
            found += [Mismatch(i, why) for x, y in zip(inline_texts(a), inline_texts(b))
                      if (why := numbers_agree(x, y))]
            continue
        if a["cell_type"] != "code" or IGNORE_TAG in tags or "nbval-skip" in tags:
            continue
        ta, tb = cell_texts(a, subs), cell_texts(b, subs)
        if len(ta) != len(tb):
            found.append(Mismatch(i, f"{len(ta)} outputs stored, {len(tb)} now"))
            continue
        found += [Mismatch(i, why) for x, y in zip(ta, tb) if (why := numbers_agree(x, y))]
    return found


def compare_notebook(path: Path, timeout: int = 600) -> tuple[list[Mismatch], str]:
    """Re-execute ``path`` here, in memory, and compare; also return the kernel's numerics."""
    import copy

    import nbformat

    from .inline import InlineClient

    stored = nbformat.read(path, as_version=4)
    fresh = copy.deepcopy(stored)
    fresh.cells.append(nbformat.v4.new_code_cell(PROBE))
    InlineClient(fresh, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    probe = fresh.cells.pop()
    kernel = "".join(o.get("text", "") for o in probe.outputs).strip()
    return compare_cells(stored, fresh), kernel
