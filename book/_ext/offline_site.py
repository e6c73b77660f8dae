"""Sphinx extension: keep the static book free of scripts it cannot run offline.

Jupyter Book 1 always loads sphinx-thebe, which injects a launcher pointing at a CDN and, in
this version, declares its settings twice (a console error on every page). The book has no
live-kernel buttons, so the thebe scripts are dropped from every page.
"""


def _drop_thebe(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if scripts:
        context["script_files"] = [
            s for s in scripts
            if "sphinx-thebe" not in str(s)
            and "THEBE_JS_URL" not in str(getattr(s, "attributes", {}).get("body", ""))
        ]


def setup(app):
    app.connect("html-page-context", _drop_thebe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
