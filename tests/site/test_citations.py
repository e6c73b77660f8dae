import nbformat
import pytest

from shakespeare_lm.site.citations import IMPORT, citation_keys, cite, convert_citations


def test_cite_reads_author_and_year_as_the_site_prints_them():
    assert repr(cite("saxena2023prompt")) == "[Saxena, 2023]"
    assert repr(cite("koehn2017six")) == "[Koehn and Knowles, 2017]"
    assert repr(cite("vaswani2017attention")) == "[Vaswani et al., 2017]"
    # several papers in alphabetical order, as sphinxcontrib-bibtex sorts them
    assert str(cite("leviathan2023fast", "chen2023accelerating")) == (
        "[Chen et al., 2023, Leviathan et al., 2023]")


def test_cite_names_a_key_missing_from_the_bibliography():
    with pytest.raises(ValueError, match="no entry holtzman2021 in references.bib"):
        cite("holtzman2021")
    with pytest.raises(ValueError, match="no key"):
        cite()


@pytest.mark.parametrize("expression, keys", [
    ('cite("holtzman2020curious")', ["holtzman2020curious"]),
    ("cite('a', 'b')", ["a", "b"]),
    ("glued.ch3_tail_count", None), ("cite(key)", None), ("cite()", None),
    ("cite(", None),
])
def test_citation_keys_recognises_only_a_cite_call_on_string_literals(expression, keys):
    assert citation_keys(expression) == keys


def test_convert_citations_rewrites_roles_below_the_first_code_cell_and_imports_cite():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[
        md("Objectives, after {cite}`vaswani2017attention`."),
        code("import torch\nfrom shakespeare_lm.site.rounding import glue\nx = 1"),
        md("Drafts {cite}`leviathan2023fast,chen2023accelerating`."),
    ])
    left = convert_citations(nb)
    assert nb.cells[2].source == (
        'Drafts {eval}`cite("leviathan2023fast", "chen2023accelerating")`.')
    assert nb.cells[1].source.split("\n") == [
        "import torch", "from shakespeare_lm.site.rounding import glue", IMPORT, "x = 1"]
    assert nb.cells[0].source.endswith("{cite}`vaswani2017attention`.")
    assert len(left) == 1 and "cell 0" in left[0] and "move the citation" in left[0]
    assert convert_citations(nb) == left and nb.cells[1].source.count(IMPORT) == 1
