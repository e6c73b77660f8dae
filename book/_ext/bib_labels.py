"""References labelled as the text cites them: "[Holtzman et al., 2020]", not "[1]".

The prose cites author and year (``shakespeare_lm.site.citations.author_year``, which both
JupyterLab and the site use), so the list of references carries the same label, made by the
same function. The entries keep pybtex's plain style, which links a ``doi`` and an arXiv
``eprint``.
"""

from __future__ import annotations

from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle

from shakespeare_lm.site.citations import author_year


class AuthorYearLabels(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            yield author_year(entry)


class AuthorYearStyle(PlainStyle):
    default_label_style = "author_year_labels"


def setup(app):
    register_plugin("pybtex.style.labels", "author_year_labels", AuthorYearLabels)
    register_plugin("pybtex.style.formatting", "author_year_plain", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
