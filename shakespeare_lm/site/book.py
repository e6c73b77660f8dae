"""Book maintenance.

``python -m shakespeare_lm.site.book execute [NOTEBOOK ...]`` re-executes notebooks in place with
nbclient and prints how long each took. It runs only under the pinned numerics of
``numerics.env`` (``make execute`` sets them) and records them in each notebook's metadata.
It stores no ipywidgets view and no widget state: a live panel is stored as its one-line
note (:func:`shakespeare_lm.site.lab.without_widget_views`), which JupyterLab shows until
the cell runs, instead of a restored panel that looks live and is not.

``python -m shakespeare_lm.site.book compare [NOTEBOOK ...]`` re-executes notebooks in memory
under the environment it is started in and checks that their stored outputs agree up to
the last digit each number shows (:mod:`shakespeare_lm.site.outputs`); the test suite starts it
under kernels that differ from the pinned ones.

``python -m shakespeare_lm.site.book cite [NOTEBOOK ...]`` rewrites the ``{cite}`key```
roles of notebooks as ``{eval}`cite("key")```, which JupyterLab renders too
(:mod:`shakespeare_lm.site.citations`); re-execute them afterwards to store the citations.

``python -m shakespeare_lm.site.book vendor`` copies the JavaScript the static site needs
offline (MathJax, require.js, the ipywidgets HTML manager, and Vega: vega, vega-lite and
vega-embed, which draw the kernel-free figures) from ``node_modules`` (filled by
``npm ci`` from ``package-lock.json``) into ``book/_vendor``, which Sphinx publishes as
static files. Nothing is fetched from a CDN and nothing vendored is committed.

It also vendors the live model (``book/_vendor/live``): ONNX Runtime Web's classic script,
its WebAssembly binary and the ONNX graphs that ``python -m shakespeare_lm.interop.export``
wrote, each twice. A served page fetches them as binary files, gzipped (``.wasm.gz``,
``.onnx.gz``: the binary is 14 MB, 3.7 MB gzipped); a page opened from ``file://`` may not
``fetch``, but it may run a ``<script src>``, so there the same bytes come as generated
``.js`` files (gzip, then base64, a third larger). ``manifest.js`` holds what the page knows
before it loads any of them: the models' characters and configs, and every file's size.
``book/_js/slm_runtime.js`` loads them when the reader reaches an explorer. The
live explorers' charts are Vega-Lite specs made in Python (``shakespeare_lm.site.live``),
written there as ``charts.js``, what the browser needs of the registry of the decoding
rules as ``rules.js`` (``shakespeare_lm.site.browser_rules``), and the explorers' colours and
symbols as ``style.js`` (``style.browser_style()``: ``book/_js`` types no colour of its own).

Two of the theme's assets are trimmed: pydata-sphinx-theme's ``scripts/fontawesome.js``
(every Font Awesome icon as SVG and JavaScript, 1.5 MB on every page) is replaced by a note,
since the theme's icons are drawn by the Font Awesome webfont its stylesheet already
carries; and MathJax is loaded as its components (``startup.js`` with ``loader.load`` in
``_config.yml``) without its 0.4 MB contextual menu.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import shutil
import sys
import time
from pathlib import Path

from ..paths import NOTEBOOKS_DIR as NOTEBOOKS
from ..paths import ONNX_DIR, ROOT
from . import browser_rules, style
from .figures import STATIC_DIR as STATIC
from .lab import without_widget_views
from .live import chart_specs
from .outputs import compare_notebook, pinned_numerics, unpinned

NODE_MODULES = ROOT / "node_modules"
VENDOR = ROOT / "book" / "_vendor"
_FONT_SUFFIXES = {".woff", ".woff2", ".ttf", ".eot", ".svg"}
ORT_FILES = ("ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm")
# the kernel-free figures: Vega's browser builds, in load order (book/_js/slm_vega.js)
VEGA_FILES = ("vega/build/vega.min.js", "vega-lite/build/vega-lite.min.js",
              "vega-embed/build/vega-embed.min.js")


def vendor(src: Path = NODE_MODULES, dest: Path = VENDOR) -> None:
    """Copy MathJax, require.js, the widget HTML manager and Vega into ``dest``."""
    manager = src / "@jupyter-widgets" / "html-manager" / "dist"
    needed = [src / "mathjax" / "es5" / "startup.js", src / "requirejs" / "require.js",
              manager / "embed-amd.js"] + [src / f for f in VEGA_FILES]
    missing = [str(p) for p in needed if not p.exists()]
    if missing:
        raise SystemExit(f"missing {missing}: run `npm ci` first (make book does)")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copytree(src / "mathjax" / "es5", dest / "mathjax",
                    ignore=shutil.ignore_patterns("*.map", "node-main.js"))
    shutil.copy2(src / "requirejs" / "require.js", dest / "require.js")
    (dest / "html-manager").mkdir()
    for f in manager.iterdir():
        if f.name == "embed-amd.js" or f.suffix in _FONT_SUFFIXES:
            shutil.copy2(f, dest / "html-manager" / f.name)
    (dest / "vega").mkdir()
    for f in VEGA_FILES:
        text = _without_source_map((src / f).read_text("utf-8"))
        (dest / "vega" / Path(f).name).write_text(text, "utf-8")
    (dest / "scripts").mkdir()
    (dest / "scripts" / "fontawesome.js").write_text(FONTAWESOME_NOTE, "utf-8")
    size = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())
    print(f"vendored MathJax, require.js, the widget HTML manager and Vega into {dest} "
          f"({size / 1e6:.1f} MB)")
    vendor_live(src, dest / "live")


# In the place of the theme's _static/scripts/fontawesome.js (html_static_path's files are
# copied after the theme's, over them).
FONTAWESOME_NOTE = """/* pydata-sphinx-theme loads this file on every page: Font Awesome's SVG +
   JavaScript build of every icon (1.5 MB), so that a site can add icons of its own. This
   book adds none, and the theme's icons are drawn by the Font Awesome webfont that its
   stylesheet already carries, so `make book` writes this note in its place
   (shakespeare_lm.site.book.vendor). */
"""


def _gzipped(data: bytes) -> bytes:
    """gzip at level 9 with mtime 0, so that a rebuild writes the same bytes."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def _packed(data: bytes) -> str:
    """bytes -> base64 of their gzip, for a script that a page opened from file:// can run."""
    return base64.b64encode(_gzipped(data)).decode("ascii")


def _asset_script(key: str, value) -> str:
    """A classic script that stores ``value`` (JSON) under ``window.SLM_ASSETS[key]``."""
    return ("window.SLM_ASSETS = window.SLM_ASSETS || {};\n"
            f"window.SLM_ASSETS[{json.dumps(key)}] = {json.dumps(value, separators=(',', ':'))};\n")


def style_script() -> str:
    """``style.js``: a classic script that defines ``SlmStyle``, the explorers' colours and
    symbols (``style.browser_style()``), loaded before ``slm_explorers.js``."""
    return ("/* Written by make book from shakespeare_lm/site/style.py "
            "(shakespeare_lm/site/book.py): do not edit. */\n"
            f"var SlmStyle = {json.dumps(style.browser_style(), indent=1)};\n"
            'if (typeof module !== "undefined" && module.exports) module.exports = SlmStyle;\n')


def _without_source_map(text: str) -> str:
    return "\n".join(line for line in text.splitlines()
                     if not line.startswith("//# sourceMappingURL"))


# The race explorer's draft: an n-gram of the training text, counted as chapter 6 counts
# it. As measured when it was chosen: the 5-gram's arrays hold 2.6 MB (0.8 MB gzipped, a
# 1.0 MB script), the chapter's 6-gram's 8.0 MB; in Chromium the 5-gram ran 1.55-1.64x
# plain decoding at gamma 3, the 4-gram 1.44x at its best gamma.
LIVE_NGRAM_ORDER = 5


def ngram_asset(chars: str, order: int = LIVE_NGRAM_ORDER) -> dict:
    """``NGramDraft(tok, order)``'s counts for the page, ids numbered as in ``chars`` (the
    exported models' characters): per context length k, the sorted contexts' codes, where
    each one's followers start (both uint32), the followers (uint8) and their counts
    (uint32), each array gzipped and in base64 (``slm_runtime.js`` reads them back)."""
    import numpy as np

    from ..speculative import NGramDraft
    from ..tokenizer import CharTokenizer

    draft = NGramDraft(CharTokenizer(chars), order)
    levels = []
    for contexts, starts, nexts, counts in draft.counts_by_order():
        arrays = {"contexts": contexts.astype("<u4"), "starts": starts.astype("<u4"),
                  "nexts": nexts.astype("u1"), "counts": counts.astype("<u4")}
        for name, original in zip(arrays, (contexts, starts, nexts, counts)):
            if not np.array_equal(arrays[name], original):
                raise ValueError(f"the {order}-gram's {name} do not fit in "
                                 f"{8 * arrays[name].itemsize} bits")
        levels.append({name: _packed(a.tobytes()) for name, a in arrays.items()})
    return {"name": draft.name, "chars": chars, "order": order, "smoothing": draft.smoothing,
            "vocab_size": draft.vocab_size, "levels": levels}


def vendor_live(src: Path = NODE_MODULES, dest: Path = VENDOR / "live",
                onnx_dir: Path = ONNX_DIR) -> None:
    """ONNX Runtime Web (its single-file classic build, the ES module that loads the
    WebAssembly, the binary) and the exported models, as binary files for a served page and
    as scripts for a page opened from ``file://`` (``_live_binaries``); ``decoding.js``, the
    JavaScript copy of ``shakespeare_lm.decoding`` that the runtime decides every character
    with (and ``beam.js`` and ``speculative.js``, the copies of beam search and speculative
    decoding), and ``rules.js``, the registry's rules that it and the explorers read; the
    explorers' charts, colours (``style.js``) and the race's n-gram draft (``ngram_asset``);
    last ``manifest.js``: the models' characters and configs and the size of every file
    here, which the page shows before it loads them."""
    ort = src / "onnxruntime-web" / "dist"
    vocab = onnx_dir / "vocab.json"
    needed = [ort / f for f in ORT_FILES] + [vocab]
    missing = [str(p) for p in needed if not p.exists()]
    if missing:
        raise SystemExit(f"missing {missing}: run `npm ci` and "
                         "`python -m shakespeare_lm.interop.export` first (make book does)")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    meta = json.loads(vocab.read_text())
    _live_binaries(ort, onnx_dir, sorted(meta["models"]), dest)
    (dest / "ngram.js").write_text(_asset_script("ngram", ngram_asset(meta["chars"])))
    for module in sorted(STATIC.glob("*.js")):  # decoding.js, beam.js, speculative.js
        shutil.copy2(module, dest / module.name)
    (dest / "charts.js").write_text(_asset_script("charts", chart_specs()), "utf-8")
    browser_rules.write(dest)  # rules.js, which decoding.js and the explorers read
    (dest / "style.js").write_text(style_script(), "utf-8")  # the explorers' colours
    sizes = {f.name: f.stat().st_size for f in sorted(dest.iterdir())}
    (dest / "manifest.js").write_text(_asset_script("manifest", {
        "ort_version": json.loads((ort.parent / "package.json").read_text())["version"],
        "chars": meta["chars"], "models": meta["models"], "sizes": sizes}))
    print(f"vendored ONNX Runtime Web and the models {sorted(meta['models'])} into {dest} "
          f"({sum(sizes.values()) / 1e6:.1f} MB)")


def _live_binaries(ort: Path, onnx_dir: Path, models: list[str], dest: Path) -> None:
    """ONNX Runtime's classic script; its module, its binary (gzipped) and each model's graph
    (gzipped), which a served page fetches; and the same bytes as scripts for a page opened
    from ``file://``: ``ort_wasm.js`` (the module's text and the binary), ``model_<name>.js``."""
    (dest / ORT_FILES[0]).write_text(_without_source_map((ort / ORT_FILES[0]).read_text()))
    glue = _without_source_map((ort / ORT_FILES[1]).read_text())
    wasm = (ort / ORT_FILES[2]).read_bytes()
    (dest / ORT_FILES[1]).write_text(glue)
    (dest / (ORT_FILES[2] + ".gz")).write_bytes(_gzipped(wasm))
    (dest / "ort_wasm.js").write_text(_asset_script("ort", {"glue": glue,
                                                            "wasm_gz_b64": _packed(wasm)}))
    for name in models:
        graph = (onnx_dir / f"{name}.onnx").read_bytes()
        (dest / f"model_{name}.onnx.gz").write_bytes(_gzipped(graph))
        (dest / f"model_{name}.js").write_text(_asset_script("model_" + name,
                                                             {"onnx_gz_b64": _packed(graph)}))


def execute(path: Path, timeout: int = 600) -> float:
    """Run every cell of ``path`` top to bottom and save it with outputs; return seconds."""
    import nbformat

    from .inline import InlineClient

    pinned = pinned_numerics()
    wrong = unpinned(pinned)
    if wrong:
        raise SystemExit("refusing to execute under unpinned numerics: " + ", ".join(wrong)
                         + ". Run `make execute`, which sets numerics.env, so that the stored "
                         "outputs reproduce on other machines")
    nb = nbformat.read(path, as_version=4)
    nb.metadata["shakespeare_lm"] = {"numerics": pinned}
    # nbclient keeps the widget state while it runs (an Output widget's capture writes into
    # it, and fails without it); without_widget_views then drops it with the views
    client = InlineClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=True,
                          resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    nb.metadata["shakespeare_lm"]["run_all_seconds"] = round(seconds)  # shown under the title
    without_widget_views(nb)
    as_jupyterlab_keeps_it(nb)
    nbformat.write(nb, path)
    return seconds


def as_jupyterlab_keeps_it(nb) -> None:
    """The metadata JupyterLab would write when a reader opens the chapter, written now, so
    that opening and closing a chapter leaves it unchanged (no "Save your work?", no
    checkout made dirty by autosave): the kernel's display name as the Jupyter server
    gives it, and the check cells (``remove-cell``) folded, input and output, as they are
    removed from the site."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    nb.metadata["kernelspec"] = {"display_name": spec.display_name,
                                 "language": spec.language, "name": "python3"}
    for cell in nb.cells:
        if cell.cell_type == "code" and "remove-cell" in cell.metadata.get("tags", []):
            cell.metadata["jupyter"] = {"source_hidden": True, "outputs_hidden": True}
            cell.metadata["collapsed"] = True  # what JupyterLab writes beside outputs_hidden


def compare(paths: list[Path]) -> int:
    """Re-execute each notebook and report every output that moved; 1 if any did."""
    failed = 0
    for path in paths:
        start = time.perf_counter()
        mismatches, kernel = compare_notebook(Path(path))
        print(f"{path}: {len(mismatches)} mismatch(es) in {time.perf_counter() - start:.1f} s "
              f"(kernel: ATen capability, threads, MKL_CBWR = {kernel})", flush=True)
        for m in mismatches:
            print(f"  {m}", flush=True)
        failed += bool(mismatches)
    return 1 if failed else 0


def cite(paths: list[Path]) -> None:
    """Rewrite each notebook's ``{cite}`` roles in the form JupyterLab renders too."""
    import nbformat

    from .citations import convert_citations

    for path in paths:
        nb = nbformat.read(path, as_version=4)
        left = convert_citations(nb)
        nbformat.write(nb, path)
        notes = "".join(f"\n  {x}" for x in left)
        print(f"{path}: citations rewritten{notes}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("execute", help="re-execute notebooks in place")
    ex.add_argument("notebooks", nargs="*", type=Path)
    cmp = sub.add_parser("compare", help="re-execute in memory and compare the stored outputs")
    cmp.add_argument("notebooks", nargs="*", type=Path)
    ct = sub.add_parser("cite", help="rewrite {cite} roles as {eval}`cite(...)`")
    ct.add_argument("notebooks", nargs="*", type=Path)
    sub.add_parser("vendor", help="copy the site's JavaScript from node_modules")
    args = parser.parse_args(argv)
    if args.cmd == "vendor":
        vendor()
        return
    paths = args.notebooks or sorted(NOTEBOOKS.glob("[0-9]*.ipynb"))
    if args.cmd == "compare":
        sys.exit(compare(paths))
    if args.cmd == "cite":
        cite(paths)
        return
    total = 0.0
    for path in paths:
        print(f"executing {path} ...", flush=True)
        seconds = execute(Path(path))
        total += seconds
        print(f"  {seconds:.1f} s", flush=True)
    print(f"executed {len(paths)} notebook(s) in {total:.1f} s")
    sys.exit(0)


if __name__ == "__main__":
    main()
