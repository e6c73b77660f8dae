"""The page check (tests/browser/page_check.py): every page of the built site reads cleanly at
1280 px, and each of the checks finds the defect it is for.

Three layers make sure no check passes by accident: the rules on plain data; the whole
check in Chromium on small synthetic pages (one with each defect, one with look-alikes
that are fine); the same defects planted in a real page of the built site, with its
theme, MathJax and column width. Then the site: one test per page and check, so that a
failure names both and lists the offenders.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest

from . import page_check as pc
from .test_site import SITE, PageVisit, browser, missing, site_url, toc_pages  # noqa: F401

FIX = "python -m tests.browser.page_check _build/html {path} --show 50"


# --- the rules, on plain data ----------------------------------------------------
def test_raw_tex_finds_tex_left_as_text_once_per_stretch():
    prose = ["the chance is $\\min(1, p/q)$ here",
             "so $ ⟨math⟩ x_{i-1} and \\dots ⟨math⟩ ok",
             'against :eval:`glued.ch4_high_ref(".1%")` and {eval}`glued.x` here']
    found = pc.raw_tex(prose, ["label \\tau_{0}"])
    # $...$; the $ beside a formula; x_{ with \dots; two roles; \tau_{ in an output
    assert len(found) == 6, found
    assert found[0] == "prose: the chance is «$\\min(1, p/q)$» here"
    assert "«:eval:`glued.ch4_high_ref(\".1%\")`»" in found[3] and "«{eval}" in found[4]
    assert found[5].startswith("output: ")


def test_raw_tex_passes_rendered_prose_and_shown_string_escapes():
    prose = ["the chance is ⟨math⟩ and the cost ⟨code⟩ is linear",
             "it’s 3 ^ 2 = 9, a_b", "costs 5 dollars"]
    assert pc.raw_tex(prose, ["'ither\\nRemove you hence:\\tThe'"]) == []


def test_python_reprs_finds_reprs_and_quoted_values_in_prose():
    prose = ["CAT falls to np.float64(0.58)", "keys dict_keys([1])",
             "x is tensor([1, 2])", "f is <function f at 0x7f>",
             "cfg DecodingConfig(top_p=0.9)", "rule 'top_p' wins"]
    found = pc.python_reprs(prose, ["'top_p'", '"min_p"'])
    assert len(found) == 7, found  # 'top_p' once, though prose and its value show it
    assert found[0] == "prose: CAT falls to «np.float64(»0.58)"
    assert found[-1] == 'glued: «"min_p"»'


def test_python_reprs_passes_english():
    prose = ["it’s the model’s ‘greedy’ choice",
             "the players' turn and the kings' crowns",
             "an array of 3 numbers, a tensor (B, T), see Holtzman (2020)",
             "Figure 2 (left)"]
    assert pc.python_reprs(prose, ["0.58", "KATHARINA:"]) == []


def test_check_code_lines_flags_every_line_of_asserts_glue_calls_and_nbval():
    cell = ("x = 1\nassert x == 1\nglue('ch1_x', x)\ny = 2  # NBVAL_IGNORE_OUTPUT\n"
            "assert (x\n        == 1), 'msg'\nslm.rounding.glue('ch1_y', y)")
    assert pc.check_code_lines([cell]) == [
        "assert x == 1", "glue('ch1_x', x)", "y = 2  # NBVAL_IGNORE_OUTPUT",
        "assert (x", "== 1), 'msg'", "slm.rounding.glue('ch1_y', y)"]
    assert pc.check_code_lines(["%timeit f()\nassert f()"]) == ["assert f()"]
    assert pc.check_code_lines(["def f(:\n    assert x"]) == ["assert x"]  # not Python


def test_check_code_lines_passes_code_that_only_mentions_them():
    cell = ('from shakespeare_lm.site.rounding import glue\n'
            'message = "assert that it glue(s)"\n'
            "asserted = glued = 1  # nbval compares the outputs")
    assert pc.check_code_lines([cell]) == []


def test_long_code_lines_counts_characters_of_each_line():
    assert pc.long_code_lines(["x" * 88 + "\n" + "y" * 88 + "   "]) == []
    assert pc.long_code_lines(["x = 1\n" + "z" * 89]) == ["89 chars: " + "z" * 89]


def test_leaks_finds_talk_of_how_the_pages_are_made():
    prose = ["A hidden cell checks that the sums agree.", "as tests/interop/test_hf.py shows",
             "the tests check that both agree", "under numerics.env, one thread",
             "the machine was busy. Run the chapter again on a quiet one.",
             "to fit the chapter's time budget", "git clone <this repository> && cd <it>",
             "faster than the trigram? no: 0.9x", "keep only 1 and 1 characters"]
    found = pc.leaks(prose, ["x = 1  # nbval compares this"])
    assert len(found) == 13, found
    assert found[-1] == "code: x = 1 # «nbval» compares this"


def test_leaks_passes_ordinary_english():
    prose = ["The hidden state of the model", "a test of the hypothesis that α = 0.6",
             "the chi-square check rejects the broken verifier", "1 and 2 characters",
             "3 and 3 times", "Is it faster? Not at batch 1.", "one thread of a 2-core CPU",
             "the machine copies 28.6 GB/s", "a quiet night in Padua"]
    assert pc.leaks(prose, ["tests = [1, 2]", "best_n = 4"]) == []


def image(natural, shown, height=300):
    return {"name": "img a.png", "natural": natural, "natural_height": height,
            "shown": shown}


def test_small_images_flags_shrunk_figures_only():
    found = pc.small_images([image(1090, 688), image(1000, 700), image(24, 12, 24),
                             image(512, 13, 512), image(1000, 699.9)])
    assert found == ["img a.png: shown 688 px of 1090 px natural (63.1%)",
                     "img a.png: shown 700 px of 1000 px natural (70.0%)"]


def figure(caption=None, after=None, natural=680, shown=680.0, height=320):
    return {"name": "img a.png in «Beams»", "natural": natural, "natural_height": height,
            "shown": shown, "caption": caption, "after": after}


def test_uncaptioned_figures_flags_figures_without_a_caption_that_says_what_to_see():
    found = pc.uncaptioned_figures([
        figure(),                                             # nothing near it
        figure(after="The mean log-probability per character is -0.3 nats."),  # prose
        figure(caption="\nFig. 3 \nThe loss.#\n"),           # says what it is, no more
        figure(after="Fig. 4"),                               # a number alone
        figure(shown=None),                                   # in a closed dropdown
    ])
    assert found == [
        f"img a.png in «Beams»: {what}, where at least 8 words say what to see "
        "({figure} directive, or the code cell's metadata mystnb.figure.caption)"
        for what in ["no caption", "no caption", "a caption of 2 word(s)", "no caption",
                     "no caption"]]


def test_uncaptioned_figures_passes_captions_and_icons():
    see = "Each bar is one character: see how the kept ones hold most of it."
    assert pc.uncaptioned_figures([
        figure(caption=f"\nFig. 12 {see}#\n"),                # Sphinx's figcaption
        figure(after=f"Fig. 2: {see}"), figure(after=f"Figure 2 {see}"),
        figure(caption=see, after="Prose."),                  # the figcaption wins
        figure(natural=24, shown=24, height=24),              # an icon
        figure(natural=512, shown=13, height=512),            # a glyph at icon size
        figure(natural=20, shown=None, height=20),            # an icon in a dropdown
    ]) == []


def test_column_overflow_names_culprits_and_judges_the_page_after_the_article():
    wide = {"name": "article", "scroll": 2032, "client": 752,
            "culprits": ["<div> WIDE"]}
    page = {"name": "page", "scroll": 2288, "client": 1280, "culprits": ["<div> WIDE"]}
    fine = {"name": "article", "scroll": 753, "client": 752, "culprits": []}
    assert pc.column_overflow([wide, page]) == [
        "article scrollWidth 2032 > clientWidth 752: <div> WIDE"]
    assert pc.column_overflow([fine, page]) == [
        "page scrollWidth 2288 > clientWidth 1280: <div> WIDE"]
    assert pc.column_overflow([fine, {**page, "scroll": 1280}]) == []


# --- the whole check in Chromium, on synthetic pages -----------------------------
def svg_uri(width: int, height: int) -> str:
    svg = (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}'>"
           f"<rect width='{width}' height='{height}' fill='teal'/></svg>")
    return "data:image/svg+xml," + quote(svg)


def code_cell(source: str, hidden: bool = False, output: str = "") -> str:
    """A code cell as myst-nb renders it (hidden=True: tagged hide-input)."""
    block = ('<div class="cell_input"><div class="highlight">'
             f"<pre>{source}</pre></div></div>")
    if hidden:
        block = ('<details class="hide above-input"><summary>Show code cell source'
                 f"</summary>{block}</details>")
    return f'<div class="cell">{block}<div class="cell_output">{output}</div></div>'


def output(html: str) -> str:
    return f'<div class="cell"><div class="cell_output">{html}</div></div>'


def captioned(html: str, number: int = 1) -> str:
    """A figure as Sphinx numbers it (a {figure} directive, or a code cell's
    mystnb.figure.caption): in a <figure>, its caption under it."""
    return (f'<figure>{html}<figcaption><p><span class="caption-number">Fig. {number} '
            '</span><span class="caption-text">A teal box, the width of the column: see '
            'how it fills it.</span><a class="headerlink" href="#">#</a></p></figcaption>'
            "</figure>")


LONG = "x = " + "1 + " * 30 + "1"  # 126 characters
DEFECTS = {
    "raw_tex": "<p>The chance is $\\min(1, p/q)$.</p>"
               + output(captioned('<svg width="400" height="40"><text y="9">$\\tau$'
                                  "</text></svg>")),
    "python_repr": "<ul><li>CAT falls to np.float64(0.58)</li></ul>"
                   "<table><tr><td>tensor([1])</td></tr></table>"
                   '<figcaption>rule <span class="inline-value">"top_p"</span>'
                   "</figcaption>"
                   "<details><summary>Solution</summary><p>dict_keys(</p></details>",
    "check_code": code_cell("x = 1\nassert x == 1\nglue('ch1_x', x)"),
    "long_code_line": code_cell(LONG),
    "small_image": captioned(f'<img src="{svg_uri(1000, 400)}" style="width: 600px">')
                   + captioned('<svg viewBox="0 0 900 300" style="width: 500px"></svg>'),
    "uncaptioned_figure": output(f'<img src="{svg_uri(700, 300)}">')
                          + "<p>The box is teal.</p>"  # prose, not a caption
                          + output('<div class="slm-vega-figure" style="height: 300px">'
                                   '<div class="slm-vega-view"></div></div>')
                          + '<figure><svg width="600" height="300"></svg>'
                            "<figcaption>Fig. 3 The box.</figcaption></figure>",
    "column_overflow": '<div style="width: 1500px">a figure wider than the column</div>'
                       f'<div style="white-space: nowrap">{LONG * 3}</div>',  # spills
    "leak": "<p>A hidden check confirms it.</p>"
            + code_cell("y = 2  # see tests/site/test_x.py")
            + output(f'<figure><img src="{svg_uri(700, 300)}"><figcaption>Fig. 4 A teal '
                     "box; the tests check that it fills the column.</figcaption>"
                     "</figure>"),  # a code cell's caption is prose
}
LOOK_ALIKES = {
    "raw_tex": "<p>The chance is <mjx-container>\\min(1, p/q)</mjx-container>, see "
               "<code>x_{i}</code>.</p><pre>\\frac{a}{b}</pre>",
    "python_repr": code_cell("np.float64(0.58)", output="<pre>tensor([1, 2])</pre>")
                   + "<p>It’s the model’s ‘greedy’ choice; <code>np.int64(3)</code>"
                   "</p>",
    "check_code": code_cell("assert x == 1\nglue('ch1_x', x)", hidden=True)
                  + code_cell("from shakespeare_lm.site.rounding import glue")
                  + output("<pre>assert</pre>"),
    "long_code_line": code_cell(LONG, hidden=True) + code_cell("x" * 88)
                      + output(f"<pre>{LONG}</pre>"),
    "small_image": captioned(f'<img src="{svg_uri(900, 360)}" style="width: 100%">')
                   + captioned(f'<img src="{svg_uri(1000, 400)}" width="500">')  # HiDPI
                   + f'<img src="{svg_uri(24, 24)}" style="width: 12px">'
                   '<svg viewBox="0 0 512 512" style="width: 13px"></svg>',  # a glyph
    "uncaptioned_figure": output(captioned(  # a Vega chart drawn, its SVG inside
                              '<div class="slm-vega-figure"><div class="slm-vega-view">'
                              '<svg width="600" height="300"></svg></div></div>'))
                          + output(f'<img src="{svg_uri(700, 300)}">')
                          + "<p>Fig. 2 The same box again: see that it is teal too.</p>"
                          + output('<div class="slm-live"><svg width="600" height="300">'
                                   "</svg></div>")  # a live explorer: controls
                          + output('<div class="jupyter-widgets">'
                                   f'<img src="{svg_uri(700, 300)}"></div>')  # a widget
                          + code_cell("x = 1")  # its copy button's icon
                          .replace("<pre>", '<button class="copybtn"><svg width="20" '
                                   'height="20"></svg></button><pre>'),
    "column_overflow": '<div style="overflow-x: auto"><table style="width: 1500px"><tr>'
                       "<td>wide</td></tr></table></div>"
                       f'<pre style="overflow-x: auto">{LONG * 3}</pre>',
    "leak": "<p>The hidden state is a vector; 2 and 3 characters.</p>"
            + code_cell("tests = 3"),
}
PLANTED = {"raw_tex": 2, "python_repr": 4, "check_code": 2, "long_code_line": 1,
           "small_image": 2, "uncaptioned_figure": 3, "column_overflow": 2, "leak": 3}


def synthetic(browser, body: str) -> pc.PageReport:  # noqa: F811
    page = browser.new_page(viewport=pc.VIEWPORT)
    try:
        page.set_content("<html><style>pre { overflow-x: auto }</style>"  # the theme's
                         "<body style='margin: 0'><main><article class='bd-article' "
                         f"style='width: 752px; margin-left: 280px'>{body}</article>"
                         "</main><div style='height: 3000px'></div></body></html>")
        return pc.inspect(page, "synthetic.html")
    finally:
        page.close()


@pytest.mark.parametrize("check", pc.CHECKS)
def test_each_check_finds_its_defect_on_a_synthetic_page(browser, check):  # noqa
    report = synthetic(browser, DEFECTS[check])
    expected = {c: PLANTED[check] if c == check else 0 for c in pc.CHECKS}
    assert report.counts() == expected, pc.describe(report, 10)


@pytest.mark.parametrize("check", pc.CHECKS)
def test_each_check_passes_look_alikes_on_a_synthetic_page(browser, check):  # noqa
    report = synthetic(browser, LOOK_ALIKES[check])
    assert report.counts() == dict.fromkeys(pc.CHECKS, 0), pc.describe(report, 10)
    assert report.height >= 3000


# --- the same defects planted in a real page of the built site -------------------
PLANT_JS = """(defects) => {
  const section = document.querySelector("article.bd-article section");
  for (const html of defects) section.insertAdjacentHTML("beforeend", html);
}"""


def site_page(path: str) -> str:
    if not (SITE / path).exists():
        missing(f"no {SITE / path}: run `make book` first")
    return path


def test_each_check_finds_its_defect_in_a_real_page(browser, site_url):  # noqa: F811
    """With the theme, MathJax and the real column: the defects and look-alikes, planted
    at the end of a chapter, raise each check's count by what was planted, no more."""
    path = site_page(next(p for p in toc_pages() if p.startswith("notebooks/")))
    visit = PageVisit(browser, f"{site_url}/{path}", viewport=pc.VIEWPORT)
    try:
        before = pc.inspect(visit.page, path).counts()
        visit.page.evaluate(PLANT_JS, [*DEFECTS.values(), *LOOK_ALIKES.values()])
        after = pc.inspect(visit.page, path).counts()
    finally:
        visit.close()
    assert {c: after[c] - before[c] for c in pc.CHECKS} == PLANTED


def test_without_mathjax_formulas_fail_raw_tex(browser, site_url):  # noqa: F811
    """The check reads the page after MathJax: with MathJax blocked, the notation page's
    formulas stay TeX and raw_tex finds them (typeset, they pass: the site test)."""
    path = site_page("book/notation.html")
    page = browser.new_page(viewport=pc.VIEWPORT)
    try:
        page.route("**/mathjax/**", lambda route: route.abort())
        page.goto(f"{site_url}/{path}", wait_until="load")
        formulas = page.locator(".math").count()
        assert formulas > 0 and page.locator("mjx-container").count() == 0
        found = pc.judge(page.evaluate(pc.EXTRACT_JS))["raw_tex"]
    finally:
        page.close()
    # formulas in one paragraph, with no typeset maths between them, are one stretch
    assert len(found) >= formulas // 2, (formulas, found[:5])


# --- the site -------------------------------------------------------------------
@pytest.fixture(scope="module")
def reports(browser, site_url):  # noqa: F811
    """Each page inspected once, in its one visit at 1280 px (tests/browser/site_visits.py)."""
    from .site_visits import laptop

    def report(path: str) -> pc.PageReport:
        record = laptop(browser, site_url, site_page(path))
        assert record.report is not None, f"{path}: the page check did not run: {record.load}"
        return record.report

    return report


@pytest.mark.parametrize("check", pc.CHECKS)
@pytest.mark.parametrize("path", toc_pages())
def test_page_reads_cleanly(reports, path, check):
    report = reports(path)
    only = pc.PageReport(path, report.height, report.words,
                         {check: report.offenders[check]})
    assert not only.offenders[check], (
        f"{pc.describe(only, 10)}\n(all of them: {FIX.format(path=path)})")


@pytest.mark.parametrize("path", toc_pages())
def test_page_fits_its_budget(reports, path):
    main = path in toc_pages(main_only=True)
    report = reports(path)
    over = pc.over_budget(report, main)
    kind = "a main page" if main else "a page under a chapter"
    assert not over, f"{path}, {kind}: {'; '.join(over)}"


def test_budgets_tell_main_pages_from_the_pages_under_them():
    tall = pc.PageReport("x", pc.MAIN_HEIGHT + 1, pc.MAIN_WORDS + 1)
    assert pc.over_budget(tall, main=False) == []
    assert pc.over_budget(tall, main=True) == [
        f"{pc.MAIN_HEIGHT + 1:,} px tall, over {pc.MAIN_HEIGHT:,}",
        f"{pc.MAIN_WORDS + 1:,} words, over {pc.MAIN_WORDS:,}"]
    taller = pc.PageReport("x", pc.PAGE_HEIGHT + 1, 10)
    assert pc.over_budget(taller, main=False) == [
        f"{pc.PAGE_HEIGHT + 1:,} px tall, over {pc.PAGE_HEIGHT:,}"]
