import numpy as np
import pytest
import torch

from shakespeare_lm.site.rounding import below, rounded


def test_rounded_keeps_four_significant_digits_and_returns_plain_python_numbers():
    assert rounded(0.5322336554527283) == 0.5322
    assert rounded(-47.74797707072139) == -47.75
    assert rounded(np.float64(0.58)) == 0.58 and type(rounded(np.float64(0.58))) is float
    assert repr(rounded(np.float32(0.1))) == "0.1"
    assert rounded(123456.0) == 123500.0
    assert rounded(4.3e-06, 2) == 4.3e-06


def test_rounded_walks_containers_arrays_and_tensors_and_leaves_integers_exact():
    value = {"a": [0.123456, (1.0e-9 / 3, 7)], "b": np.array([2.0 / 3]), "c": torch.tensor([1 / 3])}
    assert rounded(value) == {"a": [0.1235, (3.333e-10, 7)], "b": [0.6667], "c": [0.3333]}
    assert rounded(1_841_088) == 1_841_088 and rounded(np.int64(5)) == 5
    assert rounded(True) is True and rounded("0.123456") == "0.123456"
    assert rounded(float("nan")) != rounded(float("nan")) and rounded(float("inf")) == float("inf")


def test_rounded_rejects_a_bad_digit_count():
    with pytest.raises(ValueError, match="digits=0 is invalid"):
        rounded(1.0, 0)


def test_below_shows_a_noise_value_as_its_bound_and_refuses_a_false_bound():
    assert below(4.3e-06, 1e-4) == "below 1e-04"
    with pytest.raises(ValueError, match="not below"):
        below(2e-4, 1e-4)


def test_rounded_rounds_every_float_cell_of_a_dataframe():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"x": [1.23456, 2.0 / 3], "n": [1, 2], "s": ["a", "b"]})
    out = rounded(df)
    assert out["x"].tolist() == [1.235, 0.6667] and out["n"].tolist() == [1, 2]
    assert out["s"].tolist() == ["a", "b"]


def test_a_markdown_glue_is_offered_as_markdown_only_when_it_has_markup():
    from IPython.core.formatters import DisplayFormatter

    from shakespeare_lm.site.rounding import glue, glued

    glue("test_plain_verdict", "the cache makes it 12.7 times faster", markdown=True)
    glue("test_marked_verdict", "it is *twice* as fast", markdown=True)
    plain, _ = DisplayFormatter().format(glued.test_plain_verdict)
    marked, _ = DisplayFormatter().format(glued.test_marked_verdict)
    assert plain == {"text/plain": "the cache makes it 12.7 times faster"}
    assert marked == {"text/plain": "it is *twice* as fast",
                      "text/markdown": "it is *twice* as fast"}
