"""Sphinx extension: draw the notebooks' Vega-Lite outputs (the kernel-free figures of
``shakespeare_lm.site.figures``) on the static site, offline.

myst-nb 1.4 has no renderer for ``application/vnd.vegalite.v5+json``: it warns
"skipping unknown output mime type" and shows the ``text/plain`` fallback, unless a
plugin registered under the ``myst_nb.mime_renderers`` entry point handles it (a package
install). Instead, when Sphinx reads a notebook (``source-read``), each Vega-Lite output
is replaced by a ``text/html`` one: the spec as inert JSON in a ``<script type=...>``
data block and an empty element to draw in; no code runs from the notebook. Pages that
have one load ``_static/slm_vega.js``, which draws each figure as it nears the screen,
loading the vendored vega, vega-lite and vega-embed (``_static/vega/``, copied from npm by
``make book``, 0.83 MB) when the first one does: a page opened and not scrolled to a figure
does not load them.
"""

import json

from docutils import nodes

MIME = "application/vnd.vegalite.v5+json"
MARK = "slm-vega-figure"


def figure_html(spec: dict) -> str:
    """The HTML that stands for one Vega-Lite output on the page."""
    data = json.dumps(spec, separators=(",", ":"), ensure_ascii=False)
    data = data.replace("</", "<\\/")  # no "</script>" inside the data block
    return (f'<div class="{MARK}"><script type="{MIME}">{data}</script>'
            f'<div class="slm-vega-view"></div></div>')


def _outputs_as_html(notebook: dict) -> bool:
    changed = False
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if MIME in data:
                spec = data.pop(MIME)
                spec = json.loads(spec) if isinstance(spec, str) else spec
                data["text/html"] = figure_html(spec)
                output.get("metadata", {}).pop(MIME, None)
                changed = True
    return changed


def rewrite_vega_outputs(app, docname, source):
    """source-read: a notebook's Vega-Lite outputs become HTML the page script draws."""
    if not str(app.env.doc2path(docname)).endswith(".ipynb"):
        return
    notebook = json.loads(source[0])
    if _outputs_as_html(notebook):
        source[0] = json.dumps(notebook)


def add_scripts(app, pagename, templatename, context, doctree):
    """html-page-context: on pages that have a figure, the figure script and its styles.
    Vega is not among them: slm_vega.js loads it when a figure nears the screen (hiding
    RequireJS's define.amd while it does, so that Vega's UMD builds define their globals)."""
    if doctree is None:
        return
    if any(MARK in node.astext() for node in doctree.findall(nodes.raw)):
        app.add_js_file("slm_vega.js")
        app.add_css_file("slm_vega.css")


def setup(app):
    app.connect("source-read", rewrite_vega_outputs)
    app.connect("html-page-context", add_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
