"""Sphinx extension: names that a screen reader reads, where myst-nb and the theme give wrong
ones (axe-core's WCAG rules label-content-name-mismatch and summary-name), and scroll boxes
that a keyboard can reach.

* A hidden code cell's toggle (``hide-input``, ``hide-cell``): myst-nb writes
  ``<summary aria-label="Toggle hidden content">`` around the visible words "Show code cell
  source", so speech-input users who say what they see ("click Show code cell source") miss
  it. Here the summary has no aria-label: its name is its visible text.
* The sidebar's chevrons that open a chapter's pages (pydata-sphinx-theme's ``<summary>`` with
  only an icon in it) have no name at all; here each is named "Pages under <chapter>".
* ``slm_scrollers.js`` (every page) makes a box that scrolls sideways (a long formula or a
  wide table on a phone) a Tab stop, as the theme does for code blocks; and it keeps each
  figure image at 10/12 of its own width or more, in a box that scrolls, so that its 12 px
  labels read at 10 px or more on a phone.

The theme's Search and colour-mode buttons get their names from the templates in
``book/_templates`` (``templates_path`` in ``_config.yml``), which replace the theme's.
"""

from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput, visit_HideCellInput

MYST_SUMMARY = '<summary aria-label="Toggle hidden content">\n'
SCRIPT = "slm_scrollers.js"


def visit_hidden_cell(self, node):
    """myst-nb's toggle of a hidden cell, its ``<summary>`` named by its own text."""
    visit_HideCellInput(self, node)
    try:
        at = len(self.body) - 1 - self.body[::-1].index(MYST_SUMMARY)
    except ValueError:
        raise RuntimeError(f"myst-nb no longer writes {MYST_SUMMARY.strip()!r} for a hidden "
                           "cell: update book/_ext/accessible_names.py to the HTML it "
                           "writes now") from None
    self.body[at] = "<summary>\n"


def _named_toggles(generate):
    """pydata-sphinx-theme's ``generate_toctree_html``, its chevrons named."""
    def generate_named(*args, **kwargs):
        soup = generate(*args, **kwargs)
        if isinstance(soup, str):  # only the sidebar's soup has chevrons
            return soup
        for summary in soup.select("li.has-children > details > summary"):
            link = summary.find_parent("li").find("a", recursive=False)
            title = link.get_text(" ", strip=True) if link else "this part"
            summary["aria-label"] = f"Pages under {title}"
        return soup
    return generate_named


def name_sidebar_toggles(app, pagename, templatename, context, doctree):
    """html-page-context (after the theme's): the sidebar's chevrons named."""
    generate = context.get("generate_toctree_html")
    if generate is not None:
        context["generate_toctree_html"] = _named_toggles(generate)


def setup(app):
    app.setup_extension("myst_nb")  # registers the node whose HTML is replaced here
    app.add_node(HideCodeCellNode, override=True,
                 html=(visit_hidden_cell, depart_HideCellInput))
    app.connect("html-page-context", name_sidebar_toggles, priority=900)
    app.add_js_file(SCRIPT)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
