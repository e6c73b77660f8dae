"""A JSON Schema compiled to a regular expression over characters.

Structured output (the JSON mode of serving engines, Outlines' ``json_schema``; Willard and
Louf 2023) is constrained decoding in two compilation steps: the schema becomes a regular
expression for the JSON texts that satisfy it, and the expression becomes a character
automaton (``shakespeare_lm.decoding.automata.RegexConstraint``). This module does the first
step, for the part of JSON Schema that is regular:

* ``{"type": "object", "properties": {...}, "required": [...]}``: every property must be
  listed in ``required`` (optional properties are not supported); the text writes them in
  the order of ``properties``, and never adds other properties;
* ``{"enum": [...]}`` and ``{"const": ...}`` of strings, integers, booleans and null;
* ``{"type": "string"}`` (characters other than the quote, the backslash and control
  characters: no escapes), ``"integer"``, ``"boolean"``, ``"null"``;
* ``{"type": "array", "items": {...}}``.

Texts are written the way ``json.dumps`` writes them: ``", "`` between items, ``": "``
after a key, no other whitespace. So after ``{"label": "`` under
``{"type": "object", "properties": {"label": {"enum": ["FRAUD", "OK"]}},
"required": ["label"]}`` the automaton allows exactly ``F`` and ``O``.

A vocabulary without JSON's punctuation (our Shakespeare model has no braces, brackets or
double quotes) can still carry the structure: ``table`` maps each JSON character it names
to a character the vocabulary has (``{'"': "'", "{": "&", "}": ";"}``), one to one, and
``to_text`` / ``from_text`` translate a value both ways.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

__all__ = ["JSON_CHARS", "from_text", "schema_to_regex", "to_text"]

JSON_CHARS = '{}[]",:'                      # the punctuation a table may replace
_INTEGER = "-?(0|[1-9][0-9]*)"
_SPECIAL = set("\\.^$*+?{}[]|()")              # characters a regex must escape
_KEYWORDS = {"type", "properties", "required", "enum", "const", "items", "title",
             "description", "$schema", "additionalProperties"}


def _check_table(table: Mapping[str, str] | None) -> dict[str, str]:
    """The table as a dict, after checking that it can be undone: single characters, JSON
    punctuation mapped one to one onto characters JSON itself never writes."""
    if table is None:
        return {}
    if not isinstance(table, Mapping):
        raise TypeError(f"table={table!r:.80} is invalid: it must be a dict such as "
                        "{'\"': \"'\"}, from JSON characters to substitutes")
    for k, v in table.items():
        if not (isinstance(k, str) and len(k) == 1 and k in JSON_CHARS):
            raise ValueError(f"table key {k!r} is invalid: keys are single JSON punctuation "
                             f"characters, from {JSON_CHARS!r}")
        if not (isinstance(v, str) and len(v) == 1):
            raise ValueError(f"table[{k!r}] = {v!r} is invalid: it must be one character")
        if v.isalnum() or v in JSON_CHARS or v in " -.\\" or not v.isprintable():
            raise ValueError(f"table[{k!r}] = {v!r} is invalid: a substitute must be a "
                             "printable character that JSON never writes itself (not a "
                             "letter, digit, space, '-', '.', '\\\\' or JSON punctuation)")
    if len(set(table.values())) != len(table):
        raise ValueError(f"table={dict(table)!r} is not one to one: two JSON characters "
                         "share a substitute, so a text could not be read back")
    return dict(table)


def _escape(text: str) -> str:
    """``text`` as a regex that matches it literally."""
    return "".join("\\" + ch if ch in _SPECIAL else ch for ch in text)


def to_text(value, table: Mapping[str, str] | None = None) -> str:
    """``value`` as JSON written by ``json.dumps`` (default separators), with the
    characters of ``table`` replaced. Raises ValueError if the value itself contains a
    substitute character, which would make the text ambiguous."""
    table = _check_table(table)
    text = json.dumps(value, ensure_ascii=False)
    clash = sorted(set(text) & set(table.values()))
    if clash:
        raise ValueError(f"{value!r:.80} contains {clash}, which the table uses as "
                         "substitutes: its text could not be read back")
    return text.translate(str.maketrans(table))


def from_text(text: str, table: Mapping[str, str] | None = None):
    """The value of a JSON ``text`` written with ``table``'s substitutes (``to_text``'s
    inverse)."""
    table = _check_table(table)
    return json.loads(text.translate(str.maketrans({v: k for k, v in table.items()})))


def schema_to_regex(schema: Mapping, table: Mapping[str, str] | None = None) -> str:
    """A regular expression (Python ``re.fullmatch`` syntax, compilable by ``interegular``)
    whose matches are the JSON texts of values valid under ``schema``, written as
    ``to_text`` writes them. See the module docstring for the supported keywords."""
    table = _check_table(table)
    return _compile(schema, table, "schema")


def _literal(value, table: dict[str, str], where: str) -> str:
    if not (value is None or isinstance(value, (str, bool, int))) or isinstance(value, float):
        raise ValueError(f"{where}: {value!r} is not supported: enum and const values must "
                         "be strings, integers, booleans or null")
    try:
        return _escape(to_text(value, table))
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def _compile(schema, table: dict[str, str], where: str) -> str:
    if not isinstance(schema, Mapping):
        raise TypeError(f"{where} must be a dict (a JSON Schema), got {schema!r:.80}")
    unknown = sorted(set(schema) - _KEYWORDS)
    if unknown:
        raise ValueError(f"{where} uses {unknown}, which schema_to_regex does not support; "
                         f"it knows {sorted(_KEYWORDS)}")
    lit = lambda s: _escape(s.translate(str.maketrans(table)))  # JSON punctuation
    if "const" in schema:
        return _literal(schema["const"], table, f"{where}.const")
    if "enum" in schema:
        values = schema["enum"]
        if not isinstance(values, list) or not values:
            raise ValueError(f"{where}.enum must be a non-empty list, got {values!r:.80}")
        return "(" + "|".join(_literal(v, table, f"{where}.enum") for v in values) + ")"
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        required = schema.get("required", [])
        if not isinstance(props, Mapping) or not isinstance(required, list):
            raise ValueError(f"{where}: properties must be a dict and required a list")
        optional = [k for k in props if k not in required]
        stray = [k for k in required if k not in props]
        if optional or stray:
            raise ValueError(f"{where}: every property must be required, and every required "
                             f"name a property (optional {optional}, not properties {stray}): "
                             "optional properties are not supported")
        fields = [_literal(k, table, f"{where}.properties") + lit(": ")
                  + _compile(sub, table, f"{where}.properties.{k}")
                  for k, sub in props.items()]
        return lit("{") + lit(", ").join(fields) + lit("}")
    if kind == "array":
        if "items" not in schema:
            raise ValueError(f"{where}: an array needs items (the schema of its elements)")
        item = _compile(schema["items"], table, f"{where}.items")
        return lit("[") + f"({item}({lit(', ')}{item})*)?" + lit("]")
    if kind == "string":
        quote = table.get('"', '"')
        banned = {quote, "\\"} | set(table) | set(table.values())
        body = "".join("\\" + ch if ch in "\\]^-[" else ch for ch in sorted(banned))
        return f"{_escape(quote)}[^{body}\\x00-\\x1f]*{_escape(quote)}"
    if kind == "integer":
        return _INTEGER
    if kind == "boolean":
        return "(true|false)"
    if kind == "null":
        return "null"
    raise ValueError(f"{where}: type {kind!r} is not supported: use object, array, string, "
                     "integer, boolean or null, or an enum / const")
