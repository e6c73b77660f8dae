"""Sphinx extension: ``{live-explorer} KIND`` puts a live explorer (``shakespeare_lm.site.live``)
on a Markdown page, the same HTML a notebook cell shows with ``live.explorer(KIND)``.

    ```{live-explorer} truncation
    :seed: 0
    ```
"""

from docutils import nodes
from docutils.parsers.rst import Directive, directives


class LiveExplorer(Directive):
    required_arguments = 1
    option_spec = {"seed": directives.nonnegative_int, "title": directives.unchanged}

    def run(self):
        from shakespeare_lm.site.live import explorer_html

        try:
            fragment = explorer_html(self.arguments[0], seed=self.options.get("seed", 0),
                                     title=self.options.get("title"))
        except ValueError as e:
            raise self.error(str(e)) from None
        return [nodes.raw("", fragment, format="html")]


def setup(app):
    app.add_directive("live-explorer", LiveExplorer)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
