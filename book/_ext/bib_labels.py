"""References labelled as the text cites them: "[Holtzman et al., 2020]", not "[1]".

The prose cites author and year (``shakespeare_lm.site.citations.author_year``, which both
JupyterLab and the site use), so the list of references carries the same label, made by the
same function, and is sorted by it: alphabetically as a reader reads the labels, so that an
organisation written in braces (``{OpenAI}``) sorts under O, not after Z. The entries keep
pybtex's plain style, which links a ``doi``, an arXiv ``eprint`` and a ``url``. Under each
entry, "Cited in" links back to the first place each page cites it. Each entry is a list
item of the citation list (``role="listitem"``, not the deprecated ``doc-biblioentry``).
"""

from __future__ import annotations

from docutils import nodes
from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting import BaseSortingStyle
from sphinxcontrib.bibtex.domain import get_docnames

from shakespeare_lm.site.citations import author_year


class AuthorYearLabels(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            yield author_year(entry)


class AuthorYearSorting(BaseSortingStyle):
    def sorting_key(self, entry):
        return (author_year(entry).lower(), entry.fields.get("title", "").lower())


class AuthorYearStyle(PlainStyle):
    default_label_style = "author_year_labels"
    default_sorting_style = "author_year_labels"


def first_citations(env) -> dict[str, list[tuple[str, str]]]:
    """For each cited key, (page, id of its first citation there), pages in the book's order."""
    order = {name: i for i, name in enumerate(get_docnames(env))}
    found: dict[str, dict[str, str]] = {}
    for ref in env.get_domain("cite").citation_refs:
        for target in ref.targets:
            found.setdefault(target.key, {}).setdefault(ref.docname, ref.citation_ref_id)
    return {key: sorted(pages.items(), key=lambda page: order.get(page[0], len(order)))
            for key, pages in found.items()}


def add_cited_in(app, doctree, docname):
    """Append "Cited in: <page>, <page>" to every entry of a bibliography on this page."""
    entries = doctree.findall(nodes.citation)
    keys = {c.citation_id: c.key for c in app.env.get_domain("cite").citations}
    cited = first_citations(app.env)
    for entry in entries:
        places = cited.get(keys.get(entry["ids"][0], ""), [])
        if not places:
            continue
        line = nodes.paragraph(classes=["cited-in"])
        line += nodes.Text("Cited in: ")
        for i, (page, ref_id) in enumerate(places):
            if i:
                line += nodes.Text(", ")
            uri = f"{app.builder.get_relative_uri(docname, page)}#{ref_id}"
            line += nodes.reference("", app.env.titles[page].astext(), refuri=uri,
                                    internal=True)
        line += nodes.Text(".")
        entry += line


def list_roles(app, pagename, templatename, context, doctree):
    """Each entry of a citation list is a list item: docutils marks it ``doc-biblioentry``,
    a role ARIA 1.3 deprecates, and a ``role="list"`` may hold only list items."""
    body = context.get("body")
    if body and 'role="doc-biblioentry"' in body:
        context["body"] = body.replace('role="doc-biblioentry"', 'role="listitem"')


def setup(app):
    register_plugin("pybtex.style.labels", "author_year_labels", AuthorYearLabels)
    register_plugin("pybtex.style.sorting", "author_year_labels", AuthorYearSorting)
    register_plugin("pybtex.style.formatting", "author_year_plain", AuthorYearStyle)
    app.connect("doctree-resolved", add_cited_in)
    app.connect("html-page-context", list_roles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
