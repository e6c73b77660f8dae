"""The page check: what a reader sees on each page of the built site, in headless Chromium at
1280 px, after MathJax has typeset it. Six checks, each a count of offenders:

=================  ===========================================================================
``raw_tex``        TeX left as text (``$x$``, ``\\frac``, ``^{``) in prose or in a rich output
                   (HTML, SVG labels, widgets), outside rendered math and code
``python_repr``    a Python repr in prose (``np.float64(0.58)``, ``tensor([``, ``<function``,
                   ``Config(x=``, a glued string shown with its quotes): paragraphs, lists,
                   tables, admonitions, captions; not code cells or their outputs
``check_code``     a visible code-cell input line that is part of an ``assert``, a ``glue(``
                   call, or carries ``NBVAL``
``long_code_line`` a visible code-cell input line over 88 characters
``small_image``    an image or inline SVG shown under 70% of its natural width (its labels
                   shrink with it); icons under 120 x 40 px are ignored
``column_overflow`` the page column (``article``) or the page is wider than its box; a wide
                   table or code block that scrolls inside its own container is fine
=================  ===========================================================================

"Visible" code is a code cell's input rendered when the page opens (``hide-input`` puts it
in a closed ``<details>``; ``remove-input`` and ``remove-cell`` drop it). Prose inside a
closed dropdown counts: the reader opens it. The browser collects the text, the code, the
image sizes and the column widths (``page_check.js``); the functions below judge them. The
site test, the unit tests (``tests/test_page_check.py``) and this command line all go
through ``inspect``:

    python -m tests.page_check [SITE] [PAGE ...] [--show N]

prints, per page, the count of each check and the page's height in px at 1280 px wide, and
with ``--show N`` the first N offenders of each (SITE defaults to ``_build/html``, the pages
to those of ``_toc.yml``).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .test_site import SITE, PageVisit, launch, serve, toc_pages, typeset_math

VIEWPORT = {"width": 1280, "height": 900}
MAX_LINE = 88
MIN_SCALE = 0.70
ICON_MAX = (120, 40)  # an image narrower or lower than this (natural px) is an icon,
ICON_SHOWN = 48       # and so is one shown narrower than this
CHECKS = ("raw_tex", "python_repr", "check_code", "long_code_line", "small_image",
          "column_overflow")

TEX = re.compile("|".join([
    r"\$\$",                      # display-math delimiters left as text
    r"\$[^$\s][^$\n]{0,200}?\$",  # $...$
    r"\$(?=\s*⟨math⟩)|(?<=⟨math⟩)\s*\$",  # a $ beside a formula: dollar maths that broke
    r"\\[A-Za-z]{2,}",            # \min, \frac, \mathrm, \tfrac
    r"\\[()\[\]]",                # \( \) \[ \] that MathJax did not take
    r"[\^_]\{",                   # ^{ and _{
]))
REPR = re.compile("|".join([
    r"\b(?:np|numpy)\.(?:float|int|uint|bool|complex|str)\w*\(",
    r"\b(?:tensor|array)\((?:\s*[-\[\d.]|True|False|nan|inf)",
    r"<(?:function|bound method|built-in \w+|module|class|generator object) ",
    r"\bobject at 0x[0-9a-fA-F]+",
    r"\bdict_(?:keys|values|items)\(",
    r"\btorch\.Size\(",
    r"\bdevice\(type=",
    r"\bdtype=(?:torch|np|numpy)\.",
    r"\bParameter containing",
    r"\b(?:defaultdict|OrderedDict|Counter|deque|Decimal|Fraction)\(",
    r"\b[A-Z][A-Za-z0-9_]*\([a-z_]\w*=",           # a dataclass: DecodingConfig(top_p=
    r"(?<![\w'\u2019])'[^'\n]{1,80}'(?![\w'])",    # a straight-quoted string (prose gets curly)
]))
# TeX commands that begin like the string escapes \\n, \\t, \\r
TEX_N_T_R = {"ne", "neq", "nabla", "not", "nu", "ni", "neg", "nolimits", "newline", "nmid",
             "tau", "theta", "times", "text", "textbf", "textit", "textrm", "texttt", "tfrac",
             "tilde", "to", "top", "triangle", "tanh", "tan", "rho", "right", "rangle",
             "rightarrow", "rfloor", "rceil", "rvert", "rVert", "rm"}
MARKER = re.compile("⟨(?:math|code)⟩")  # where EXTRACT_JS left out rendered math or code
QUOTED = re.compile(r"""^\s*(['"]).*\1\s*$""", re.S)  # a glued str shown as its repr
NBVAL = re.compile(r"NBVAL")
MAGIC = re.compile(r"^\s*[%!]")


@dataclass
class PageReport:
    """One page's offenders per check (the text a writer needs to find each) and its height."""

    path: str
    height: int
    offenders: dict[str, list[str]] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {check: len(self.offenders.get(check, [])) for check in CHECKS}


def snippet(text: str, start: int, end: int, context: int = 30) -> str:
    """The match in text[start:end] with some context either side, on one line."""
    left = ("…" if start > context else "") + text[max(0, start - context):start]
    right = text[end:end + context] + ("…" if end + context < len(text) else "")
    return " ".join(f"{left}«{text[start:end]}»{right}".split())


def matches(pattern: re.Pattern, blocks: list[str], where: str) -> list[str]:
    return [f"{where}: {snippet(text, m.start(), m.end())}"
            for text in blocks for m in pattern.finditer(text)]


def raw_tex(prose: list[str], rich_output: list[str]) -> list[str]:
    """TeX source a reader sees as text: in prose, or in an HTML/SVG/widget output."""
    out = []
    for where, texts in (("prose", prose), ("output", rich_output)):
        for text in texts:
            out += [f"{where}: {snippet(text, *span)}" for span in _tex_fragments(text)]
    return out


def _tex_fragments(text: str) -> list[tuple[int, int]]:
    """Spans of raw TeX, one per stretch of text between rendered math or code (so that
    ``x_{i-1}, \\dots`` left over from one broken formula counts once)."""
    spans: dict[int, tuple[int, int]] = {}
    for m in TEX.finditer(text):
        if _string_escape(m.group()):
            continue
        stretch = len(MARKER.findall(text, 0, m.start()))
        start, _ = spans.get(stretch, (m.start(), 0))
        spans[stretch] = (start, m.end())
    return list(spans.values())


def _string_escape(match: str) -> bool:
    """\\nRemove in a shown string is a newline before "Remove", not a TeX command."""
    escape = re.match(r"\\[ntr]([A-Za-z]+)$", match)
    return bool(escape) and match[1:] not in TEX_N_T_R


def python_reprs(prose: list[str], pasted: list[str]) -> list[str]:
    """Python reprs in prose, and glued values shown as a string's repr (with quotes)."""
    seen = {m.group() for text in prose for m in REPR.finditer(text)}
    quoted = [f"glued: «{' '.join(text.split())}»" for text in pasted
              if QUOTED.match(text) and text.strip() not in seen]
    return matches(REPR, prose, "prose") + quoted


def _statement_lines(source: str) -> set[int]:
    """0-based lines of source inside an assert statement or a glue(...) call."""
    lines = [("#" if MAGIC.match(line) else line) for line in source.split("\n")]
    tree = ast.parse("\n".join(lines))
    found = set()
    for node in ast.walk(tree):
        func = getattr(node, "func", None)
        is_glue = isinstance(node, ast.Call) and (
            getattr(func, "id", None) == "glue" or getattr(func, "attr", None) == "glue")
        if isinstance(node, ast.Assert) or is_glue:
            found.update(range(node.lineno - 1, node.end_lineno))
    return found


def check_code_lines(cells: list[str]) -> list[str]:
    """Visible input lines that are part of an assert or a glue( call, or carry NBVAL."""
    out = []
    for source in cells:
        lines = source.split("\n")
        try:
            flagged = _statement_lines(source)
        except SyntaxError:  # not Python as a whole: judge line by line
            flagged = {i for i, line in enumerate(lines)
                       if re.match(r"\s*assert\b", line) or re.search(r"\bglue\(", line)}
        flagged |= {i for i, line in enumerate(lines) if NBVAL.search(line)}
        out += [lines[i].strip()[:100] for i in sorted(flagged)]
    return out


def long_code_lines(cells: list[str], limit: int = MAX_LINE) -> list[str]:
    """Visible input lines longer than limit characters, with their length."""
    return [f"{len(line)} chars: {line.strip()[:100]}" for source in cells
            for line in (raw.rstrip() for raw in source.split("\n")) if len(line) > limit]


def small_images(images: list[dict], min_scale: float = MIN_SCALE) -> list[str]:
    """Images (natural/shown widths in CSS px) shown under min_scale of their natural width."""
    out = []
    for im in images:
        natural, shown = im["natural"], im["shown"]
        if natural < ICON_MAX[0] or im["natural_height"] < ICON_MAX[1] or shown < ICON_SHOWN:
            continue  # an icon, or an icon-sized drawing (a FontAwesome glyph: 512 -> 13 px)
        if shown < min_scale * natural:
            out.append(f"{im['name']}: shown {shown:.0f} px of {natural:.0f} px natural "
                       f"({shown / natural:.1%})")
    return out


def column_overflow(columns: list[dict]) -> list[str]:
    """The elements that make a column (the article, then the whole page) wider than its box;
    the page is judged only when the article is not (else both would name one culprit)."""
    for col in columns:
        if col["scroll"] > col["client"] + 1:
            head = f"{col['name']} scrollWidth {col['scroll']} > clientWidth {col['client']}"
            return [f"{head}: {c}" for c in col["culprits"]] or [head]
    return []


def judge(data: dict) -> dict[str, list[str]]:
    """Every check's offenders from what EXTRACT_JS collected on one page."""
    return {"raw_tex": raw_tex(data["prose"], data["rich_output"]),
            "python_repr": python_reprs(data["prose"], data["pasted"]),
            "check_code": check_code_lines(data["code"]),
            "long_code_line": long_code_lines(data["code"]),
            "small_image": small_images(data["images"]),
            "column_overflow": column_overflow(data["columns"])}


EXTRACT_JS = (Path(__file__).with_name("page_check.js")).read_text()


def settle(page) -> None:
    """Wait for what changes the page after load: MathJax, widget views, web fonts."""
    page.wait_for_load_state("networkidle")
    typeset_math(page)
    if page.locator("script[type='application/vnd.jupyter.widget-view+json']").count():
        try:
            page.wait_for_selector(".jupyter-widgets", timeout=15000)
        except Exception:  # noqa: BLE001  (no widget: the checks still run; test_site fails it)
            pass
    page.evaluate("document.fonts.ready.then(() => true)")


def inspect(page, path: str = "") -> PageReport:
    """Settle the open page and run every check on it."""
    settle(page)
    data = page.evaluate(EXTRACT_JS)
    return PageReport(path, data["height"], judge(data))


def inspect_url(browser, url: str, path: str) -> PageReport:
    """Open url at 1280 px (nothing may leave the machine) and run every check on it."""
    visit = PageVisit(browser, url, viewport=VIEWPORT)
    try:
        return inspect(visit.page, path)
    finally:
        visit.close()


def describe(report: PageReport, show: int) -> str:
    """The offenders of every failing check, the first `show` of each."""
    lines = []
    for check in CHECKS:
        found = report.offenders.get(check, [])
        if found:
            lines.append(f"{report.path}: {check}: {len(found)} offender(s), first {show}:")
            lines += [f"    {item}" for item in found[:show]]
    return "\n".join(lines)


def table(reports: list[PageReport]) -> str:
    heads = ["page", *CHECKS, "height_px"]
    rows = [[r.path, *map(str, r.counts().values()), str(r.height)] for r in reports]
    totals = [sum(r.counts()[c] for r in reports) for c in CHECKS]
    rows.append(["total", *map(str, totals), str(sum(r.height for r in reports))])
    widths = [max(len(row[i]) for row in [heads, *rows]) for i in range(len(heads))]
    fmt = lambda row: "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |"  # noqa: E731
    return "\n".join([fmt(heads), fmt(["-" * w for w in widths]), *map(fmt, rows)])


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(prog="python -m tests.page_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("site", nargs="?", type=Path, default=SITE, help="the built site")
    parser.add_argument("pages", nargs="*", help="pages relative to the site (default: the TOC)")
    parser.add_argument("--show", type=int, default=0, help="print the first N offenders")
    args = parser.parse_args(argv)
    pages = args.pages or [p for p in toc_pages() if (args.site / p).exists()]
    missing = sorted(set(toc_pages()) - set(pages)) if not args.pages else []
    with serve(args.site) as url, sync_playwright() as p:
        browser = launch(p)
        reports = [inspect_url(browser, f"{url}/{path}", path) for path in pages]
        browser.close()
    print(table(reports))
    if missing:
        print(f"not in {args.site}: {', '.join(missing)}")
    details = [describe(report, args.show) for report in reports] if args.show else []
    print("\n".join(text for text in details if text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
