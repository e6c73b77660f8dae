"""One meaning per symbol: every maths symbol a page of the built site uses is listed on the
notation page.

A page's symbols are read from its maths (the TeX that MathJax typesets, as the built HTML
holds it): single Latin letters, Greek letters, ``\\ell``, ``\\Pr``, and the decorated forms
``\\mathbf{q}``, ``\\mathcal{V}``, ``\\mathbb{E}``, ``\\hat\\theta``, ``\\tilde p``. A symbol
whose subscript is a word (``n_\\text{ctx}``, ``p_{\\min}``) is a symbol of its own,
``n_ctx`` and ``p_min``; a subscript that is itself a symbol (``y_t``) counts as two. Words
in ``\\text{}``, ``\\mathrm{}`` and ``\\operatorname{}`` (softmax, lp, FLOPs) are not symbols.
The notation page lists a symbol when it appears in the first column of one of its tables.
This test cannot see meanings: that each symbol keeps the one the notation page gives it is
the editors' job.
"""

from __future__ import annotations

import html
import re
from collections import defaultdict

import pytest

from .test_site import SITE, missing, toc_pages

NOTATION = "book/notation.html"
MATH = re.compile(r'<(span|div) class="math[^"]*">(.*?)</\1>', re.S)
GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota",
         "kappa", "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "upsilon", "phi",
         "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma",
         "Upsilon", "Phi", "Psi", "Omega", "ell", "Pr"}
DECORATION = r"(mathbf|mathcal|mathbb|boldsymbol|hat|tilde|bar)"
ALIASES = {"varepsilon": "epsilon", "varphi": "phi", "vartheta": "theta", "varrho": "rho",
           "varsigma": "sigma", "varpi": "pi"}
BASE = r"(\\(?:mathbf|mathcal|mathbb|boldsymbol|hat|tilde|bar)\s*\{\s*\\?[A-Za-z]+\s*\}" \
       r"|\\(?:hat|tilde|bar)\s*\\?[A-Za-z]+|\\[A-Za-z]+|[A-Za-z])"
WORD_SUB = re.compile(BASE + r"\s*_\s*(?:\{\s*)?\\(?:text|mathrm|textrm|rm)\s*\{\s*([^{}]*?)\s*\}"
                      r"(?:\s*\})?|" + BASE + r"\s*_\s*(?:\{\s*)?\\(min|max)\b(?:\s*\})?")
DECORATED = re.compile(r"\\" + DECORATION + r"\s*(?:\{\s*(\\?[A-Za-z]+)\s*\}"
                       r"|(\\[A-Za-z]+|[A-Za-z]))")
WORDS = re.compile(r"\\(?:text|mathrm|operatorname\*?|textrm|textsf|texttt|textit|textbf|"
                   r"mbox|rm)\s*\{[^{}]*\}")


def _name(base: str) -> str:
    """One spelling per symbol: \\tilde{p} and \\tilde p, \\varepsilon and \\epsilon."""
    base = re.sub(r"\s+", "", base)
    m = re.fullmatch(r"\\" + DECORATION + r"\{?(\\?[A-Za-z]+)\}?", base)
    if m:
        inner = m.group(2)
        inner = "\\" + ALIASES.get(inner[1:], inner[1:]) if inner.startswith("\\") else inner
        kind = "mathbf" if m.group(1) == "boldsymbol" else m.group(1)
        return f"\\{kind}{{{inner}}}"
    if base.startswith("\\"):
        return "\\" + ALIASES.get(base[1:], base[1:])
    return base


def symbols(tex: str) -> list[str]:
    """The symbols of one formula, in order of appearance (see the module doc)."""
    tex = html.unescape(tex)
    found = []

    def word_subscript(m):
        base, word = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        found.append(f"{_name(base)}_{word.strip()}")
        return " "

    def decorated(m):
        found.append(_name(m.group(0)))
        return " "

    tex = WORD_SUB.sub(word_subscript, tex)
    tex = WORDS.sub(" ", tex)
    tex = DECORATED.sub(decorated, tex)
    for command in re.findall(r"\\([A-Za-z]+)", tex):
        command = ALIASES.get(command, command)
        if command in GREEK:
            found.append("\\" + command)
    tex = re.sub(r"\\[A-Za-z]+", " ", tex)
    found += re.findall(r"[A-Za-z]", tex)
    return found


def page_symbols(page_html: str) -> dict[str, str]:
    """symbol -> the first formula that uses it, on one built page."""
    out = {}
    for m in MATH.finditer(page_html):
        tex = html.unescape(re.sub(r"<[^>]+>", "", m.group(2))).strip()
        for sym in symbols(tex):
            out.setdefault(sym, tex)
    return out


def listed_symbols(notation_html: str) -> set[str]:
    """Symbols in the first column of the notation page's tables."""
    listed = set()
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", notation_html, re.S):
        first = re.search(r"<td[^>]*>(.*?)</td>", row, re.S)
        if first:
            listed |= set(page_symbols(first.group(1)))
    return listed


def test_symbols_reads_letters_words_and_decorations():
    tex = (r"\tilde p(v) = p(v) / \sum_{v' \in S} p(v'), \quad n_\text{ctx}, p_{\min}, "
           r"\mathbf{q}_t^\top \mathbf{k}_j, \operatorname{softmax}(z_t), \hat\theta, "
           r"\mathcal{V}, \mathbb{E}[X], \varepsilon, \log_2 e, \text{FLOPs}, \mathrm{lp}(y)")
    assert symbols(tex) == [
        "n_ctx", "p_min", "\\tilde{p}", "\\mathbf{q}", "\\mathbf{k}", "\\hat{\\theta}",
        "\\mathcal{V}", "\\mathbb{E}", "\\epsilon", "v", "p", "v", "v", "S", "p", "v", "t",
        "j", "z", "t", "X", "e", "y"]


def test_listed_symbols_reads_the_first_column_only():
    table = ('<table><tr><th>symbol</th><th>meaning</th></tr>'
             '<tr><td><span class="math notranslate nohighlight">\\(z_t\\)</span></td>'
             '<td>logits in <span class="math notranslate nohighlight">\\(\\mathbb{R}^n\\)'
             '</span></td></tr></table>')
    assert listed_symbols(table) == {"z", "t"}


@pytest.fixture(scope="module")
def listed():
    if not (SITE / NOTATION).exists():
        missing(f"{SITE / NOTATION} is not built: run `make book`")
    return listed_symbols((SITE / NOTATION).read_text("utf-8"))


@pytest.mark.parametrize("path", [p for p in toc_pages() if p != NOTATION])
def test_every_symbol_is_on_the_notation_page(listed, path):
    page = SITE / path
    if not page.exists():
        missing(f"{page} is not built: run `make book`")
    unlisted = defaultdict(str)
    for sym, tex in page_symbols(page.read_text("utf-8")).items():
        if sym not in listed:
            unlisted[sym] = tex
    assert not unlisted, (f"{path} uses symbols the notation page does not list:\n  "
                          + "\n  ".join(f"{s}   in  {t[:90]}" for s, t in unlisted.items()))
