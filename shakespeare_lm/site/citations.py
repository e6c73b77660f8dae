"""Citations in the prose, in JupyterLab and on the static site alike.

A chapter cites with MyST's inline expression role,
``{eval}`cite("holtzman2020curious")``` (several papers:
``cite("leviathan2023fast", "chen2023accelerating")``), keys from
``book/references.bib``. Two readers see it:

* **JupyterLab** (jupyterlab-myst 2.7) has no bibliography, so its own ``{cite}`` role
  shows the bare key as an unresolved reference. ``{eval}`` is evaluated in the reader's
  kernel (and shown from the cell's stored ``user_expressions`` until then, like a glued
  number): it reads "[Holtzman et al., 2020]", author and year as the site prints them.
* **The static site** hands the same keys to sphinxcontrib-bibtex's ``{cite}`` role
  (``book/_ext/inline_values.py``), which links each to its entry in the references.

Like a glued value, a citation can only appear below the first code cell, which imports
``cite``: the kernel evaluates the prose in order.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from ..paths import BIB_FILE


class Citation:
    """Citations as the prose shows them: the repr is the text itself."""

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


@functools.lru_cache(maxsize=4)
def bibliography(path: Path = BIB_FILE) -> dict:
    """key -> pybtex entry, for every entry of the BibTeX file ``path``."""
    from pybtex.database import parse_file  # sphinxcontrib-bibtex's parser

    return dict(parse_file(str(path)).entries)


def _surname(person) -> str:
    return re.sub(r"[{}]", "", " ".join(person.prelast_names + person.last_names))


def author_year(entry) -> str:
    """"Vaswani et al., 2017": one or two surnames, else the first and "et al."."""
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_surname(p) for p in people]
    if not names:
        raise ValueError(f"bibliography entry {entry.key!r} names no author or editor")
    who = " and ".join(names) if len(names) <= 2 else f"{names[0]} et al."
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


def cite(*keys: str, path: Path = BIB_FILE) -> Citation:
    """"[Chen et al., 2023, Leviathan et al., 2023]": the papers ``keys`` by author and
    year, in alphabetical order, as the site prints them."""
    entries = bibliography(path)
    missing = [k for k in keys if k not in entries]
    if not keys or missing:
        call = f"cite({', '.join(map(repr, keys))})"
        what = f"no entry {', '.join(missing)} in" if missing else "no key from"
        raise ValueError(f"{call}: {what} {path.name}; give keys from it, such as "
                         "cite('holtzman2020curious')")
    labels = sorted(author_year(entries[k]) for k in dict.fromkeys(keys))
    return Citation("[" + ", ".join(labels) + "]")


def citation_keys(expression: str) -> list[str] | None:
    """The keys of an inline expression ``cite("a", "b")``; None for any other."""
    try:
        node = ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "cite" and not node.keywords and node.args):
        return None
    if not all(isinstance(a, ast.Constant) and isinstance(a.value, str)
               for a in node.args):
        return None
    return [a.value for a in node.args]


# --- from ``{cite}`key``` (the site only) to ``{eval}`cite("key")``` (both) -----------
CITE_ROLE = re.compile(r"\{cite(?::p)?\}`([^`]+)`")
IMPORT = "from shakespeare_lm.site.citations import cite"


def _eval_form(match: re.Match) -> str:
    keys = [k.strip() for k in match.group(1).split(",") if k.strip()]
    return "{eval}`cite(" + ", ".join(f'"{k}"' for k in keys) + ")`"


def convert_citations(nb) -> list[str]:
    """Rewrite a notebook's (an nbformat node's) ``{cite}`` roles as
    ``{eval}`cite(...)``` and import ``cite`` in its first code cell; return the roles
    left as they were, and why."""
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    first_code = code_cells[0] if code_cells else len(nb.cells)
    left, converted = [], 0
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown" or not CITE_ROLE.search(cell.source):
            continue
        if i < first_code:
            left.append(f"cell {i}: {CITE_ROLE.findall(cell.source)} stays a {{cite}} "
                        "role: it is above the first code cell, where the kernel "
                        "cannot evaluate it yet; move the citation below that cell")
            continue
        cell.source, n = CITE_ROLE.subn(_eval_form, cell.source)
        converted += n
    if converted and IMPORT not in nb.cells[first_code].source:
        lines = nb.cells[first_code].source.split("\n")
        at = next((j + 1 for j, line in enumerate(lines)
                   if line.startswith("from shakespeare_lm.site.rounding import")), 0)
        nb.cells[first_code].source = "\n".join(lines[:at] + [IMPORT] + lines[at:])
    return left
