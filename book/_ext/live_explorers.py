"""Sphinx extension: ``{live-explorer} KIND`` puts a live explorer (``shakespeare_lm.site.live``)
on a Markdown page, the same HTML a notebook cell shows with ``live.explorer(KIND)``.

    ```{live-explorer} truncation
    :seed: 0
    ```

Every page that has a live explorer (from the directive or from a notebook's output) gets
the scripts that run it, in this order: ``live/rules.js`` (the registry of the decoding rules,
``window.SlmRules``, which ``make book`` writes: ``shakespeare_lm.site.browser_rules``),
the browser's algorithms, DOM-free modules of ``shakespeare_lm/site/static`` that ``make book``
copies beside it (``live/decoding.js``, the rules, the sampler and the token loop;
``live/beam.js`` and ``live/speculative.js``, which need it), ``slm_vega.js`` (Vega, and the
site's one script loader), ``slm_runtime.js`` (the model),
``slm_explorers.js`` (which mounts the explorers) and the explorers that have a file of their
own (``slm_beam.js``, ``slm_builder.js``, ``slm_race.js``), which register with it. Each of
them runs once however often it is added.
"""

from docutils import nodes
from docutils.parsers.rst import Directive, directives

MARK = 'class="slm-live"'
SCRIPTS = ("live/rules.js", "live/decoding.js", "live/beam.js", "live/speculative.js",
           "slm_vega.js", "slm_runtime.js", "slm_explorers.js", "slm_beam.js", "slm_builder.js",
           "slm_race.js")


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


def add_scripts(app, pagename, templatename, context, doctree):
    """html-page-context: the explorers' scripts on the pages that have one."""
    if doctree is None:
        return
    if any(MARK in node.astext() for node in doctree.findall(nodes.raw)):
        for script in SCRIPTS:
            app.add_js_file(script)


def setup(app):
    app.add_directive("live-explorer", LiveExplorer)
    app.connect("html-page-context", add_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
