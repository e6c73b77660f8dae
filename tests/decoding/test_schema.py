import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shakespeare_lm as slm
from shakespeare_lm.decoding.constrained import ConstraintError, RegexConstraint, completions
from shakespeare_lm.decoding.schema import from_text, schema_to_regex, to_text

VERDICT = {"type": "object", "properties": {"label": {"enum": ["FRAUD", "OK"]}},
           "required": ["label"]}
TABLE = {'"': "'", "{": "&", "}": ";"}
RECORD = {"type": "object",
          "properties": {"name": {"type": "string"},
                         "scores": {"type": "array", "items": {"type": "integer"}},
                         "ok": {"type": "boolean"}, "note": {"type": "null"},
                         "kind": {"const": "play"},
                         "inner": {"type": "object",
                                   "properties": {"act": {"enum": [1, 2, 3]}},
                                   "required": ["act"]}},
          "required": ["name", "scores", "ok", "note", "kind", "inner"]}
JSON_TOK = slm.CharTokenizer('{}[]",: -0123456789abcdefghijklmnopqrstuvwxyz'
                             'ABCDEFGHIJKLMNOPQRSTUVWXYZ')


def test_the_verdict_schema_is_a_choice_between_two_json_texts():
    pattern = schema_to_regex(VERDICT)
    assert pattern == r'\{"label": ("FRAUD"|"OK")\}'
    for label in ("FRAUD", "OK"):
        assert re.fullmatch(pattern, json.dumps({"label": label}))
    for bad in ('{"label": "MAYBE"}', '{"label":"OK"}', '{"label": "OK", "x": 1}',
                '{"Label": "OK"}', '"OK"'):
        assert not re.fullmatch(pattern, bad), bad


def test_after_the_key_only_the_two_labels_can_start():
    c = RegexConstraint(schema_to_regex(VERDICT), JSON_TOK)
    assert c.allowed_chars(c.walk('{"label": "')) == "FO"
    assert sorted(completions(c, JSON_TOK)) == ['{"label": "FRAUD"}', '{"label": "OK"}']


def test_our_model_lacks_json_punctuation_and_the_table_carries_it(tok):
    plain = RegexConstraint(schema_to_regex(VERDICT), tok)
    assert not set('{}"') & set(tok.chars)
    assert plain.allowed_chars(plain.start()) == ""          # nothing can be generated
    with pytest.raises(ConstraintError):
        slm.generate(slm.make_model("tiny", seed=0, vocab_size=tok.vocab_size), tok,
                     "ROMEO:\n", 20, constraint=plain)
    mapped = RegexConstraint(schema_to_regex(VERDICT, TABLE), tok)
    assert mapped.allowed_chars(mapped.walk("&'label': '")) == "FO"
    texts = completions(mapped, tok)
    assert sorted(texts) == ["&'label': 'FRAUD';", "&'label': 'OK';"]
    assert sorted(from_text(t, TABLE)["label"] for t in texts) == ["FRAUD", "OK"]


def test_generated_texts_parse_and_validate(tok, tiny):
    c = RegexConstraint(schema_to_regex(VERDICT, TABLE), tok)
    for g in slm.generate(tiny, tok, ["ROMEO:\n"] * 4, 30, seed=1, constraint=c):
        assert g.stop_reason == "constraint"
        assert from_text(g.text, TABLE)["label"] in ("FRAUD", "OK")


values = st.fixed_dictionaries({
    "name": st.text(st.characters(min_codepoint=32, max_codepoint=126,
                                  exclude_characters='"\\&;\'{}'), max_size=8),
    "scores": st.lists(st.integers(-1000, 1000), max_size=4),
    "ok": st.booleans(), "note": st.none(), "kind": st.just("play"),
    "inner": st.fixed_dictionaries({"act": st.sampled_from([1, 2, 3])})})


@settings(max_examples=60, deadline=None)
@given(values)
def test_every_valid_value_matches_and_reads_back(value):
    value = {k: value[k] for k in RECORD["properties"]}    # the text keeps the schema's order
    for table in (None, TABLE):
        text = to_text(value, table)
        assert re.fullmatch(schema_to_regex(RECORD, table), text), text
        assert from_text(text, table) == value


@pytest.mark.parametrize("change", [
    {"ok": 1}, {"note": 0}, {"kind": "poem"}, {"inner": {"act": 4}}, {"scores": [1.5]},
    {"scores": ["1"]}, {"name": 3}])
def test_invalid_values_do_not_match(change):
    value = {"name": "x", "scores": [1], "ok": True, "note": None, "kind": "play",
             "inner": {"act": 1}}
    text = json.dumps({**value, **change})
    assert not re.fullmatch(schema_to_regex(RECORD), text), text


def test_integers_have_no_leading_zeros_and_arrays_may_be_empty():
    pattern = schema_to_regex({"type": "array", "items": {"type": "integer"}})
    assert re.fullmatch(pattern, "[]") and re.fullmatch(pattern, "[0, -7, 10]")
    assert not re.fullmatch(pattern, "[01]") and not re.fullmatch(pattern, "[1,2]")


@pytest.mark.parametrize("schema, message", [
    ({"type": "object", "properties": {"a": {"type": "string"}}}, "optional"),
    ({"type": "object", "properties": {}, "required": ["a"]}, "every property"),
    ({"type": "number"}, "not supported"),
    ({"type": "string", "pattern": "[a-z]+"}, "does not support"),
    ({"enum": []}, "non-empty"),
    ({"enum": [1.5]}, "not supported"),
    ({"type": "array"}, "needs items"),
])
def test_unsupported_schemas_are_refused_by_name(schema, message):
    with pytest.raises(ValueError, match=message):
        schema_to_regex(schema)


@pytest.mark.parametrize("table, message", [
    ({'"': "'", "{": "'"}, "one to one"), ({"{": "a"}, "never writes"),
    ({"{": ":"}, "never writes"), ({"x": "&"}, "JSON punctuation"), ({"{": "&&"}, "one character"),
])
def test_bad_tables_are_refused(table, message):
    with pytest.raises(ValueError, match=message):
        schema_to_regex(VERDICT, table)


def test_a_value_that_contains_a_substitute_is_refused():
    with pytest.raises(ValueError, match="substitutes"):
        schema_to_regex({"enum": ["R&D"]}, TABLE)
    with pytest.raises(ValueError, match="substitutes"):
        to_text({"label": "it's"}, TABLE)
