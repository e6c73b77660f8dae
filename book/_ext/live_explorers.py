"""Sphinx extension: ``{live-explorer} KIND`` puts a live explorer (``shakespeare_lm.site.live``)
on a Markdown page, the same HTML a notebook cell shows with ``live.explorer(KIND)``.

    ```{live-explorer} truncation
    :seed: 0
    ```

Every page that has a live explorer (from the directive or from a notebook's output) gets
the scripts that run the kinds on it (``scripts_for``), in this order: the shared ones
(``SCRIPTS``): ``live/rules.js`` (the registry of the decoding rules, ``window.SlmRules``,
which ``make book`` writes: ``shakespeare_lm.site.browser_rules``), ``live/style.js`` (the
colours and symbols of ``shakespeare_lm.site.style``, ``window.SlmStyle``), the browser's
algorithms, DOM-free modules of ``shakespeare_lm/site/static`` that ``make book`` copies beside
them (``live/decoding.js``, the rules, the sampler and the token loop; ``live/beam.js`` and
``live/speculative.js``, which need it and which the runtime exposes), ``slm_vega.js`` (Vega,
and the site's one script loader), ``live/manifest.js`` (the sizes of the model's files and
its config, known before any of them loads), ``slm_runtime.js`` (the model, loaded when the
reader reaches an explorer), ``slm_explorers.js`` (which mounts the explorers and draws the
kinds it holds: truncation, step, speculative); then the file of each kind on the page that
has one of its own (``OWN_SCRIPT``: ``slm_beam.js``, ``slm_builder.js``, ``slm_race.js``),
which registers with ``slm_explorers.js``. Each of them runs once however often it is added.
"""

import re

from docutils import nodes
from docutils.parsers.rst import Directive, directives

KIND = re.compile(r'class="slm-live" data-kind="([a-z_]+)"')  # live.explorer_html's root
SCRIPTS = ("live/rules.js", "live/style.js", "live/decoding.js", "live/beam.js",
           "live/speculative.js", "slm_vega.js", "live/manifest.js", "slm_runtime.js",
           "slm_explorers.js")
OWN_SCRIPT = {"beam": "slm_beam.js", "builder": "slm_builder.js", "race": "slm_race.js"}


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


def kinds_in(html: str) -> set[str]:
    """The kinds of the live explorers in ``html``."""
    return set(KIND.findall(html))


def scripts_for(kinds) -> list[str]:
    """The scripts a page with explorers of ``kinds`` loads, in order: none without one."""
    if not kinds:
        return []
    return list(SCRIPTS) + [OWN_SCRIPT[k] for k in sorted(kinds) if k in OWN_SCRIPT]


def add_scripts(app, pagename, templatename, context, doctree):
    """html-page-context: on a page with explorers, the scripts of their kinds."""
    if doctree is None:
        return
    kinds = set().union(*(kinds_in(node.astext()) for node in doctree.findall(nodes.raw)))
    for script in scripts_for(kinds):
        app.add_js_file(script)


def setup(app):
    app.add_directive("live-explorer", LiveExplorer)
    app.connect("html-page-context", add_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
