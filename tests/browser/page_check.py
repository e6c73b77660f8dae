"""The page check: what a reader sees on each page of the built site, in headless
Chromium at 1280 px, after MathJax has typeset it. Eight checks, each a count of
offenders:

- ``raw_tex``: TeX left as text (``$x$``, ``\\frac``, ``^{``), or a MyST role that did
  not render (``:eval:`glued.x```), in prose or in a rich output (HTML, SVG labels,
  widgets), outside rendered maths and code.
- ``python_repr``: a Python repr in prose (``np.float64(0.58)``, ``tensor([``,
  ``<function``, ``Config(x=``, a glued or ``{eval}`` string shown with its quotes).
  Prose is paragraphs, lists, tables, admonitions and captions (a figure's caption in a
  code cell's output too); code cells and their outputs, where reprs are legitimate, are
  not prose.
- ``check_code``: a visible code-cell input line that is part of an ``assert`` statement
  or a ``glue(...)`` call, or carries ``NBVAL``.
- ``long_code_line``: a visible code-cell input line over 88 characters.
- ``small_image``: an image or inline SVG shown under 70% of its natural width, so that
  its labels shrink with it (icons are ignored).
- ``uncaptioned_figure``: a figure with no caption that says what it shows: an image, a
  kernel-free Vega chart or an inline SVG or canvas (not an icon, as for ``small_image``)
  that is neither in a ``<figure>`` with a ``<figcaption>`` of at least
  MIN_CAPTION_WORDS words (what the book's figures have: a ``{figure}`` directive, or a
  code cell's ``mystnb.figure.caption`` metadata, numbered "Fig. N" by Sphinx) nor
  followed at once by a paragraph that starts "Fig. N" or "Figure N". The live explorers
  and ipywidgets are controls, not figures: each carries its own title and live caption.
- ``column_overflow``: the page column (``article``), or the page, is wider than its
  box; a wide table or code block that scrolls inside its own container is fine.
- ``leak``: talk of how the pages are made, in prose or in a visible code line: hidden
  cells and checks, test files and "the tests check", configuration files
  (``numerics.env``, ``_config.yml``, nbval), the state of the machine that built the page
  ("the machine was busy", "a quiet one"), time budgets, placeholders (``<this
  repository>``), and templated phrases that do not read as English ("faster? no:",
  "1 and 1 characters").

"Visible" code is a code cell's input rendered when the page opens (``hide-input``
puts it in a closed ``<details>``; ``remove-input`` and ``remove-cell`` drop it). Prose
inside a closed dropdown counts: the reader opens it. The browser collects the text, the
code, the image sizes and the column widths (``page_check.js``); the functions below
judge them. The site test, the unit tests (``tests/browser/test_page_check.py``) and this
command line all go through ``inspect``:

    python -m tests.browser.page_check [SITE] [PAGE ...] [--show N]

prints, per page, the count of each check, the page's height in px at 1280 px wide and its
words (prose and visible code); then the pages over their size budget (a chapter's main
page at most MAIN_WORDS words and MAIN_HEIGHT px, any page at most PAGE_HEIGHT px); and with
``--show N`` the first N offenders of each (SITE defaults to ``_build/html``, the pages to
those of ``_toc.yml``).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .test_site import (FIGURE, SITE, PageVisit, launch, reach_figure, serve, toc_pages,
                        typeset_math)

VIEWPORT = {"width": 1280, "height": 720}
MAX_LINE = 88
MIN_SCALE = 0.70
ICON_MAX = (120, 40)  # an image narrower or lower than this (natural px) is an icon,
ICON_SHOWN = 48       # and so is one shown narrower than this
MIN_CAPTION_WORDS = 8  # "Fig. 3" alone, or "The loss.", does not say what to see
# a page's size at 1280 px: a chapter's main page is read in half an hour; the evidence goes
# on the pages under it (_toc.yml's sections), each still a page a reader scrolls through
MAIN_WORDS, MAIN_HEIGHT, PAGE_HEIGHT = 5_000, 15_000, 20_000
CHECKS = ("raw_tex", "python_repr", "check_code", "long_code_line", "small_image",
          "uncaptioned_figure", "column_overflow", "leak")

TEX = re.compile("|".join([
    r"\$\$",                      # display-maths delimiters left as text
    r"\$[^$\s][^$\n]{0,200}?\$",  # $...$
    r"\$(?=\s*⟨math⟩)|(?<=⟨math⟩)\s*\$",  # a $ beside a formula: dollar maths broke
    r"\\[A-Za-z]{2,}",            # \min, \frac, \mathrm, \tfrac
    r"\\[()\[\]]",                # \( \) \[ \] that MathJax did not take
    r"[\^_]\{",                   # ^{ and _{
]))
ROLE = re.compile(r"(?::[a-z][\w:-]*:|\{[a-z][\w:-]*\})`[^`]*`")  # shown: :eval:`x`
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
    r"\b[A-Z][A-Za-z0-9_]*\([a-z_]\w*=",         # a dataclass: DecodingConfig(top_p=
    r"(?<![\w'\u2019])'[^'\n]{1,80}'(?![\w'])",  # a 'string' (prose quotes are curly)
]))
# TeX commands that begin like the string escapes \\n, \\t, \\r
TEX_N_T_R = {"ne", "neq", "nabla", "not", "nu", "ni", "neg", "nolimits", "newline",
             "nmid", "tau", "theta", "times", "text", "textbf", "textit", "textrm",
             "texttt", "tfrac", "tilde", "to", "top", "triangle", "tanh", "tan", "rho",
             "right", "rangle", "rightarrow", "rfloor", "rceil", "rvert", "rVert", "rm"}
LEAK = re.compile("|".join([
    r"\bhidden (?:cells?|checks?|tests?|code)\b",             # how a value was checked
    r"\b(?:the|our|these|a) (?:unit )?tests? (?:checks?|confirms?|pins?|asserts?|verif)",
    r"\btests?/[\w./-]+|\btest_\w+\.py\b",                  # test files
    r"\b(?:numerics\.env|_config\.yml|_toc\.yml|pyproject\.toml|conftest\.py|"
    r"sanitize\.cfg|nbval)\b|\bpinned numerics\b",              # configuration
    r"\b(?:the|this) machine (?:was|is) (?:busy|loaded|noisy|quiet|slow)\b",
    r"\b(?:on|a) (?:quiet|busy|noisy) (?:one|machine)\b",       # the builder's machine
    r"\btime budget\b|\bto fit (?:the|this|its) chapter\b",     # how long a page may run
    r"<(?:this repository|it|repository|your fork)>",         # a placeholder address
    r"\?\s+(?:no|yes):",                                       # "faster? no:"
    r"(?<![\w.,])(\d[\d,.]*) and \1 (?!times)\w",               # "1 and 1 characters"
]), re.I)
FIG_NUMBER = re.compile(r"^\s*(?:Fig\.|Figure)\s*\d+[.:]?(?:\s|$)")  # "Fig. 3 " opens
MARKER = re.compile("⟨(?:math|code)⟩")  # where page_check.js left out maths or code
QUOTED = re.compile(r"""^\s*(['"]).*\1\s*$""", re.S)  # a glued str shown as its repr
NBVAL = re.compile(r"NBVAL")
MAGIC = re.compile(r"^\s*[%!]")


@dataclass
class PageReport:
    """One page's offenders per check (text to find each by), its height in px and its
    words (prose, dropdowns included, and visible code)."""

    path: str
    height: int
    words: int = 0
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
    """Spans of raw TeX, one per stretch of text between rendered maths or code (so that
    ``x_{i-1}, \\dots`` left over from one broken formula counts once), and one per role
    left as text."""
    spans: dict[object, tuple[int, int]] = {}
    roles = [m.span() for m in ROLE.finditer(text)]
    for m in TEX.finditer(text):
        if _string_escape(m.group()) or any(a <= m.start() < b for a, b in roles):
            continue
        stretch = len(MARKER.findall(text, 0, m.start()))
        start, _ = spans.get(stretch, (m.start(), 0))
        spans[stretch] = (start, m.end())
    return sorted([*spans.values(), *roles])


def _string_escape(match: str) -> bool:
    """\\nRemove in a shown string is a newline before "Remove", not a TeX command."""
    escape = re.match(r"\\[ntr]([A-Za-z]+)$", match)
    return bool(escape) and match[1:] not in TEX_N_T_R


def python_reprs(prose: list[str], pasted: list[str]) -> list[str]:
    """Python reprs in prose, and glued values shown as a string's repr (quoted)."""
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
        name = getattr(func, "id", None) or getattr(func, "attr", None)
        is_glue = isinstance(node, ast.Call) and name == "glue"
        if isinstance(node, ast.Assert) or is_glue:
            found.update(range(node.lineno - 1, node.end_lineno))
    return found


def check_code_lines(cells: list[str]) -> list[str]:
    """Visible input lines inside an assert or a glue( call, or that carry NBVAL."""
    out = []
    for source in cells:
        lines = source.split("\n")
        try:
            flagged = _statement_lines(source)
        except SyntaxError:  # not Python as a whole: judge line by line
            flagged = {i for i, line in enumerate(lines)
                       if re.match(r"\s*assert\b|.*\bglue\(", line)}
        flagged |= {i for i, line in enumerate(lines) if NBVAL.search(line)}
        out += [lines[i].strip()[:100] for i in sorted(flagged)]
    return out


def long_code_lines(cells: list[str], limit: int = MAX_LINE) -> list[str]:
    """Visible input lines longer than limit characters, with their length."""
    lines = (raw.rstrip() for source in cells for raw in source.split("\n"))
    return [f"{len(line)} chars: {line.strip()[:100]}" for line in lines
            if len(line) > limit]


def is_icon(im: dict) -> bool:
    """Small by nature, or drawn at icon size (a glyph: 512 -> 13 px); ``shown`` is None
    for an image in a closed dropdown, which only its natural size can judge."""
    small = im["natural"] < ICON_MAX[0] or im["natural_height"] < ICON_MAX[1]
    return small or (im["shown"] is not None and im["shown"] < ICON_SHOWN)


def small_images(images: list[dict], min_scale: float = MIN_SCALE) -> list[str]:
    """Images shown under min_scale of their natural width (both in CSS px)."""
    out = []
    for im in images:
        natural, shown = im["natural"], im["shown"]
        if is_icon(im):
            continue
        if shown < min_scale * natural:
            out.append(f"{im['name']}: shown {shown:.0f} px of {natural:.0f} px "
                       f"natural ({shown / natural:.1%})")
    return out


def caption_words(figure: dict) -> int:
    """The words of a figure's caption, its number left out: its ``<figcaption>``'s, or
    else those of the paragraph right after it if that starts "Fig. N" (0: no caption)."""
    after = figure["after"] or ""
    text = figure["caption"] or (after if FIG_NUMBER.match(after) else "")
    text = FIG_NUMBER.sub(" ", text).replace("#", " ")  # the number and headerlink
    return len(text.split())


def uncaptioned_figures(figures: list[dict],
                        min_words: int = MIN_CAPTION_WORDS) -> list[str]:
    """Figures (not icons) whose caption is missing or under min_words words long."""
    out = []
    for fig in figures:
        if is_icon(fig):
            continue
        n = caption_words(fig)
        if n < min_words:
            what = "no caption" if n == 0 else f"a caption of {n} word(s)"
            out.append(f"{fig['name']}: {what}, where at least {min_words} words say "
                       "what to see ({figure} directive, or the code cell's metadata "
                       "mystnb.figure.caption)")
    return out


def column_overflow(columns: list[dict]) -> list[str]:
    """The elements that make a column (the article, then the page) wider than its box.
    The page is judged only if the article is fine: both would name the same culprit."""
    for col in columns:
        if col["scroll"] > col["client"] + 1:
            head = (f"{col['name']} scrollWidth {col['scroll']} > "
                    f"clientWidth {col['client']}")
            return [f"{head}: {c}" for c in col["culprits"]] or [head]
    return []


def leaks(prose: list[str], code: list[str], literal: list[str] = ()) -> list[str]:
    """Talk of how the pages are made (see LEAK): in prose, in visible code cells, and in
    the code the prose shows (inline code, literal blocks)."""
    return (matches(LEAK, prose, "prose") + matches(LEAK, code, "code")
            + matches(LEAK, list(literal), "literal"))


def words(data: dict) -> int:
    """The words a reader reads: prose (a closed dropdown's too) and visible code lines;
    rendered maths and outputs are not counted."""
    prose = sum(len(MARKER.sub(" ", text).split()) for text in data["prose"])
    return prose + sum(len(cell.split()) for cell in data["code"])


def over_budget(report: PageReport, main: bool) -> list[str]:
    """What of the page's size is over its budget: a main page (one of ``_toc.yml``'s
    chapters, or its root) at most MAIN_WORDS words and MAIN_HEIGHT px, any page at most
    PAGE_HEIGHT px."""
    height = MAIN_HEIGHT if main else PAGE_HEIGHT
    over = [f"{report.height:,} px tall, over {height:,}"] if report.height > height else []
    if main and report.words > MAIN_WORDS:
        over.append(f"{report.words:,} words, over {MAIN_WORDS:,}")
    return over


def judge(data: dict) -> dict[str, list[str]]:
    """Every check's offenders, from what page_check.js collected on one page."""
    return {"raw_tex": raw_tex(data["prose"], data["rich_output"]),
            "python_repr": python_reprs(data["prose"], data["pasted"]),
            "check_code": check_code_lines(data["code"]),
            "long_code_line": long_code_lines(data["code"]),
            "small_image": small_images(data["images"]),
            "uncaptioned_figure": uncaptioned_figures(data["figures"]),
            "column_overflow": column_overflow(data["columns"]),
            "leak": leaks(data["prose"], data["code"], data["literal"])}


EXTRACT_JS = (Path(__file__).with_name("page_check.js")).read_text()


def settle(page) -> None:
    """Wait for what changes the page after load: MathJax, widget views, web fonts, and the
    kernel-free figures, each scrolled into view (they draw as they near the screen)."""
    from playwright.sync_api import TimeoutError as Timeout

    page.wait_for_load_state("networkidle")
    typeset_math(page)
    # the figures slm_vega.js took on (it marks each at once; a synthetic page's are not):
    # one that fails to draw, test_site fails
    for fig in page.locator(f"{FIGURE}[data-state]").all():
        with contextlib.suppress(Timeout):
            reach_figure(page, fig)
    page.evaluate("window.scrollTo(0, 0)")
    if page.locator("script[type='application/vnd.jupyter.widget-view+json']").count():
        # no widget drew: the checks still run (test_site fails that)
        with contextlib.suppress(Timeout):
            page.wait_for_selector(".jupyter-widgets", timeout=15000)
    page.evaluate("document.fonts.ready.then(() => true)")


def inspect(page, path: str = "") -> PageReport:
    """Settle the open page and run every check on it."""
    settle(page)
    data = page.evaluate(EXTRACT_JS)
    return PageReport(path, data["height"], words(data), judge(data))


def inspect_url(browser, url: str, path: str) -> PageReport:
    """Open url at 1280 px (nothing may leave the machine) and run every check."""
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
            head = f"{report.path}: {check}: {len(found)} offender(s), first {show}:"
            lines.append(head)
            lines += [f"    {item}" for item in found[:show]]
    return "\n".join(lines)


def table(reports: list[PageReport]) -> str:
    """A Markdown table: per page, each check's count, the height and the words; the
    totals."""
    heads = ["page", *CHECKS, "height_px", "words"]
    rows = [[r.path, *map(str, r.counts().values()), str(r.height), str(r.words)]
            for r in reports]
    totals = [sum(r.counts()[c] for r in reports) for c in CHECKS]
    rows.append(["total", *map(str, totals), str(sum(r.height for r in reports)),
                 str(sum(r.words for r in reports))])
    widths = [max(len(row[i]) for row in [heads, *rows]) for i in range(len(heads))]
    lines = [[c.ljust(w) for c, w in zip(row, widths)]
             for row in [heads, ["-" * w for w in widths], *rows]]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(
        prog="python -m tests.browser.page_check", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("site", nargs="?", type=Path, default=SITE, help="built site")
    parser.add_argument("pages", nargs="*", help="pages in it (default: the TOC's)")
    parser.add_argument("--show", type=int, default=0, help="N offenders per check")
    args = parser.parse_args(argv)
    pages = args.pages or [p for p in toc_pages() if (args.site / p).exists()]
    missing = sorted(set(toc_pages()) - set(pages)) if not args.pages else []
    with serve(args.site) as url, sync_playwright() as p:
        browser = launch(p)
        reports = [inspect_url(browser, f"{url}/{path}", path) for path in pages]
        browser.close()
    print(table(reports))
    mains = set(toc_pages(main_only=True))
    for report in reports:  # a page not in _toc.yml (a private build's) counts as under one
        for over in over_budget(report, report.path in mains):
            print(f"over budget: {report.path}: {over}")
    if missing:
        print(f"not in {args.site}: {', '.join(missing)}")
    details = [describe(report, args.show) for report in reports] if args.show else []
    print("\n".join(text for text in details if text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
