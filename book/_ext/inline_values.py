"""Sphinx extension: the static site shows the values of MyST's ``{eval}`` role.

A chapter writes ``{eval}`glued.ch3_tail_count``` in its prose. JupyterLab (jupyterlab-myst)
evaluates that in the reader's kernel. The site has no kernel, so this role shows the value
that ``python -m shakespeare_lm.site.book execute`` stored in the Markdown cell's
``user_expressions`` metadata (see ``shakespeare_lm/site/inline.py``). It replaces myst-nb's own
``eval`` role, which would need the notebook executed during the build.

A citation, ``{eval}`cite("holtzman2020curious")```, is not looked up in the stored
values: the role hands its keys to sphinxcontrib-bibtex's ``{cite}``, so the page links
to the references as a ``{cite}`` role would (see ``shakespeare_lm/site/citations.py``).

An expression with no stored value fails the build (``-W``): re-execute the chapter.
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxRole
from sphinxcontrib.bibtex.roles import CiteRole

from shakespeare_lm.site.citations import citation_keys
from shakespeare_lm.site.inline import stored_text

LOG = logging.getLogger(__name__)


def _stored_values(path: Path) -> dict[str, tuple[str, str]]:
    """expression -> (mime, text) over the notebook's Markdown cells (one value each)."""
    values: dict[str, tuple[str, str]] = {}
    for i, cell in enumerate(json.loads(path.read_text("utf-8"))["cells"]):
        for entry in cell.get("metadata", {}).get("user_expressions", []):
            shown = stored_text(entry["result"])
            expr = entry["expression"]
            if values.setdefault(expr, shown) != shown:
                raise ValueError(f"{path.name}, cell {i}: {{eval}}`{expr}` shows {shown[1]!r} "
                                 f"here and {values[expr][1]!r} earlier; glue two names")
    return values


class StoredEvalRole(SphinxRole):
    """``{eval}`expr```: the text the stored execution showed for ``expr``, or for
    ``cite("key", ...)`` sphinxcontrib-bibtex's citation of those keys."""

    def run(self):
        keys = citation_keys(self.text)
        if keys is not None:
            return CiteRole()("cite", self.rawtext, ",".join(keys), self.lineno,
                              self.inliner, self.options, self.content)
        env = self.env
        cache = env.temp_data.setdefault("inline_values", {})
        docname = env.docname
        if docname not in cache:
            path = Path(env.doc2path(docname))
            cache[docname] = _stored_values(path) if path.suffix == ".ipynb" else {}
        found = cache[docname].get(self.text)
        if found is None:
            msg = (f"no stored value for {{eval}}`{self.text}` in {docname}: re-execute the "
                   "chapter with `make execute NB=...` so its prose values are stored")
            LOG.warning(msg, location=self.get_location())
            return [nodes.problematic(self.rawtext, self.rawtext)], []
        mime, text = found
        if mime == "text/markdown":
            return _markdown_nodes(self, text)
        return [nodes.inline(self.rawtext, text, classes=["inline-value"])], []


def _markdown_nodes(role: SphinxRole, text: str):
    """Inline Markdown (emphasis, code, links) parsed by the page's own MyST parser."""
    parsed, messages = role.inliner.parse(text, role.lineno, None, nodes.inline())
    container = nodes.inline(role.rawtext, "", *parsed, classes=["inline-value"])
    return [container], messages


def setup(app):
    app.add_role("eval", StoredEvalRole(), override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
