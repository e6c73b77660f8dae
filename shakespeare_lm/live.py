"""Live explorers: the real model, running in the reader's browser on the static site.

    import shakespeare_lm as slm
    slm.live.explorer("truncation")    # chapter 3: every rule on your own context, and samples
    slm.live.explorer("step")          # chapter 1: one character at a time, the KV cache filling
    slm.live.explorer("speculative")   # chapter 6: draft proposals kept or rejected, acceptance

Each returns an HTML fragment (an ``IPython.display.HTML``): a text box for the reader's
context, Sample and Continue buttons and a view. On the built site its small script loads
``_static/slm_explorers.js``, which loads ``_static/slm_runtime.js``: ONNX Runtime Web
running the graphs of ``python -m shakespeare_lm.export`` (``make book`` vendors them). No
kernel and no network: it works from ``file://`` and when served. Outside the site (in
JupyterLab) there is no ``_static`` folder, so the fragment says where the live version
runs; the chapters' ipywidgets explorers are bound to the Python model there.
"""

from __future__ import annotations

import html
import json

from .explorer import START_OF_WORD as DEFAULT_CONTEXT  # the explorers' usual context

KINDS = {
    "truncation": "Your context, every truncation rule, and continuations under them",
    "step": "Generation one character at a time, and the KV cache filling",
    "speculative": "Speculative decoding live: the draft model proposes, the main model verifies",
}

# Finds the site's _static folder (Sphinx writes data-content_root on <html>) and loads the
# explorers once per page; they mount every .slm-live element.
_LOADER = """(function () {
  var root = document.documentElement.getAttribute("data-content_root");
  var box = document.currentScript.parentNode;
  if (root === null) {
    box.querySelector(".slm-fallback").textContent = "The live model runs on the book's static " +
      "site (make book, then open _build/html/index.html); in JupyterLab, use the chapter's ipywidgets explorer.";
    return;
  }
  if (window.slmExplorers) { window.slmExplorers.mountAll(); return; }
  if (document.querySelector("script[data-slm-explorers]")) return;
  var s = document.createElement("script");
  s.src = root + "_static/slm_explorers.js";
  s.setAttribute("data-slm-explorers", "1");
  document.head.appendChild(s);
})();"""


def explorer_html(kind: str = "truncation", context: str = DEFAULT_CONTEXT, seed: int = 0,
                  title: str | None = None) -> str:
    """The HTML fragment of one live explorer (see the module docstring)."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is invalid: kind must be one of {sorted(KINDS)}")
    if not context:
        raise ValueError("context is empty: the model needs at least one character")
    config = {"kind": kind, "context": context, "seed": int(seed), "title": title or KINDS[kind]}
    payload = json.dumps(config).replace("</", "<\\/")
    # no random ids: a notebook's stored output must be the same on every run (nbval)
    return (f'<div class="slm-live" data-kind="{kind}" style="font-family:sans-serif;'
            f'font-size:13px;margin:.5em 0;max-width:900px">'
            f'<script type="application/json">{payload}</script>'
            f'<div class="slm-fallback" style="color:#555">{html.escape(config["title"])}: '
            f'loading the live model\u2026</div>'
            f'<script>{_LOADER}</script></div>')


def explorer(kind: str = "truncation", context: str = DEFAULT_CONTEXT, seed: int = 0,
             title: str | None = None):
    """A live explorer for a notebook cell: an ``IPython.display.HTML`` object."""
    from IPython.display import HTML

    return HTML(explorer_html(kind, context, seed, title))
