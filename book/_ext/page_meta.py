"""Every page's ``<meta name="description">``: its first paragraph, cut at a word to at most
160 characters, so that a search result or a shared link says what the page is about.
(The reading-time line under a chapter's title is skipped: it says how long, not what.)"""

from __future__ import annotations

import html
import re

from docutils import nodes

TEX_WORD = re.compile(r"\\(?:text|mathrm|mathbf|mathcal|operatorname)\s*\{([^{}]*)\}")

LIMIT = 160


def description(doctree) -> str:
    """The first paragraph of prose (not a cell's output, not the reading-time line)."""
    for para in doctree.findall(nodes.paragraph):
        if "slm-time" in para.get("classes", []):
            continue
        parent, inside_cell = para.parent, False
        while parent is not None:
            inside_cell = inside_cell or "cell" in parent.get("classes", [])
            parent = parent.parent
        text = " ".join(_plain(para).split())
        if text and not inside_cell:
            return text if len(text) <= LIMIT else text[:LIMIT - 1].rsplit(" ", 1)[0] + "…"
    return ""


def _plain(para) -> str:
    """The paragraph's text, its formulas as plain letters (n_\\text{ctx} as n_ctx)."""
    parts = []
    for node in para.findall(nodes.Text):
        text = node.astext()
        if isinstance(node.parent, nodes.math):
            text = re.sub(r"\\[A-Za-z]+|[{}$]", "", TEX_WORD.sub(r"\1", text))
        parts.append(text)
    return "".join(parts)


def add_description(app, pagename, templatename, context, doctree):
    if doctree is None or not (text := description(doctree)):
        return
    tag = f'<meta name="description" content="{html.escape(text, quote=True)}" />\n'
    context["metatags"] = context.get("metatags", "") + tag


def setup(app):
    app.connect("html-page-context", add_description)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
