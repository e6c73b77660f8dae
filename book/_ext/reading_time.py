"""Under each chapter page's title, how long it takes: reading minutes and Run All seconds.

Reading minutes come from the page as built: the words of its prose at 200 a minute, and of
its visible code at 100 a minute (code is read slower); outputs, and the inputs of cells
tagged ``hide-input``, are not counted. Run All seconds are those of the notebook's last
execution by ``python -m shakespeare_lm.site.book execute``, which records them in the
notebook's metadata (``shakespeare_lm.run_all_seconds``) under the pinned numerics of
``numerics.env``; a page whose notebook has none shows the reading time alone.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from docutils import nodes

PROSE_PER_MINUTE, CODE_PER_MINUTE = 200, 100


def _inside(node, cls: str) -> bool:
    parent = node.parent
    while parent is not None:
        if cls in parent.get("classes", []):
            return True
        parent = parent.parent
    return False


def reading_minutes(doctree) -> int:
    """Minutes to read the page: prose and visible code, never outputs."""
    prose = code = 0
    for text in doctree.findall(nodes.Text):
        if _inside(text, "cell_output") or _inside(text, "tag_hide-input") and \
                _inside(text, "cell_input"):
            continue
        words = len(text.astext().split())
        if _inside(text, "cell_input"):
            code += words
        else:
            prose += words
    return max(1, math.ceil(prose / PROSE_PER_MINUTE + code / CODE_PER_MINUTE))


def run_all_seconds(path: Path) -> int | None:
    """The seconds the notebook's last recorded execution took, or None."""
    if path.suffix != ".ipynb" or not path.exists():
        return None
    meta = json.loads(path.read_text()).get("metadata", {}).get("shakespeare_lm", {})
    seconds = meta.get("run_all_seconds")
    return round(seconds) if isinstance(seconds, (int, float)) else None


def time_line(minutes: int, seconds: int | None) -> str:
    line = f"About {minutes} minutes to read"
    if seconds is not None:
        line += f"; Run All takes about {max(seconds, 1)} s on 2 CPU cores"
    return line + "."


def add_time_line(app, doctree):
    """Put the line under the first title of every notebook page."""
    docname = app.env.docname
    path = Path(app.env.doc2path(docname))
    if path.suffix != ".ipynb":
        return
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not isinstance(section[0], nodes.title):
        return
    line = nodes.paragraph(classes=["slm-time"])
    line += nodes.emphasis(text=time_line(reading_minutes(doctree), run_all_seconds(path)))
    section.insert(1, line)


def setup(app):
    app.connect("doctree-read", add_time_line)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
