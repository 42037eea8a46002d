"""`reliability.fields.conform`: a request body checked against its JSON Schema by plain Python,
agreeing with a full JSON Schema 2020-12 validator (jsonschema) on every body."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any

import jsonschema
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from reliability.fields import REPEATED_ITEM, Body, ShapeError, checkable, conform

LINE = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^[a-z]+$"},
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
    },
    "required": ["name", "count"],
}
SCHEMA = checkable(
    {
        "title": "Body",
        "description": "every keyword conform checks",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "label": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "lines": {"type": "array", "items": LINE, "minItems": 1, "maxItems": 3, "uniqueItems": True},
        },
        "required": ["lines"],
    }
)
ORACLE = jsonschema.Draft202012Validator(SCHEMA)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 12) | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
# Mostly near the bounds, so that most bodies are one detail away from valid.
names = st.sampled_from(["a", "ab", "abcdefgh", "abcdefghi", "", "A", "a b"]) | st.text(max_size=9)
counts = st.integers(-1, 11) | st.sampled_from([1.0, 2.5, True, "1"])
lines = st.fixed_dictionaries(
    {"name": names | names | json_values, "count": counts | counts | json_values},
    optional={"other": json_values},
)
bodies = st.fixed_dictionaries(
    {"lines": st.lists(lines, max_size=4) | json_values},
    optional={"label": st.sampled_from(["EUR", "eur", "EURO"]) | json_values, "extra": json_values},
)


def _no_trailing_newline(value: object) -> bool:
    """`$` matches before a final newline in Python's `re.search` (jsonschema's), not in a whole
    match (conform's, as pydantic's): the one place the two are known to differ."""
    if isinstance(value, str):
        return not value.endswith("\n")
    if isinstance(value, dict):
        return all(_no_trailing_newline(v) for v in value.values())
    if isinstance(value, list):
        return all(_no_trailing_newline(v) for v in value)
    return True


@settings(deadline=None, max_examples=400)
@given((bodies | json_values).filter(_no_trailing_newline))
@example({"lines": [{"name": "a", "count": 2.0}]})
@example({"lines": [{"name": "a", "count": 10}], "label": "EUR"})
@example({"lines": [{"name": "a", "count": 11}]})
@example({"lines": [{"name": "a", "count": 1}]})
@example({"lines": [{"name": "a", "count": 0}]})
@example({"lines": [{"name": "abcdefgh", "count": 1}]})
@example({"lines": [{"name": "abcdefghi", "count": 1}]})
@example({"lines": [{"name": "a", "count": 1}, {"name": "b", "count": 1}, {"name": "c", "count": 1}]})
@example({"lines": [{"name": "a", "count": 1}, {"name": "b", "count": 1}, {"name": "c", "count": 1}] * 2})
@example({"lines": [{"name": "a", "count": 2.0}, {"name": "a", "count": 2}]})
@example({"lines": [{"name": "a", "count": True}]})
@example({"lines": []})
def test_conform_accepts_exactly_what_a_json_schema_validator_accepts(body: object) -> None:
    try:
        conform(SCHEMA, body)
    except ShapeError:
        assert not ORACLE.is_valid(body), body
    else:
        assert ORACLE.is_valid(body), body


def test_an_integer_with_a_zero_fraction_comes_back_as_that_int() -> None:
    body = conform(SCHEMA, {"lines": [{"name": "a", "count": 2.0}]})
    assert body == {"lines": [{"name": "a", "count": 2}]}
    assert type(body["lines"][0]["count"]) is int


@pytest.mark.parametrize(
    ("body", "field", "problem"),
    [
        ([], "body", "not a JSON object"),
        ({"lines": [], "label": "EUR"}, "lines", "fewer than 1 items"),
        ({"lines": [{"name": "a", "count": 1}] * 4}, "lines", "more than 3 items"),
        ({"lines": [{"name": "a", "count": 1}] * 2}, "lines", REPEATED_ITEM),
        ({"lines": [{"name": "a", "count": 0}]}, "lines.0.count", "below 1"),
        ({"lines": [{"name": "a", "count": 11}]}, "lines.0.count", "above 10"),
        ({"lines": [{"name": "a", "count": "1"}]}, "lines.0.count", "not an integer"),
        ({"lines": [{"name": "a", "count": True}]}, "lines.0.count", "not an integer"),
        ({"lines": [{"name": "", "count": 1}]}, "lines.0.name", "shorter than 1 characters"),
        ({"lines": [{"name": "a" * 9, "count": 1}]}, "lines.0.name", "longer than 8 characters"),
        ({"lines": [{"name": "a\n", "count": 1}]}, "lines.0.name", "does not match ^[a-z]+$"),
        ({"lines": [{"name": "a"}]}, "lines.0.count", "missing"),
        ({"lines": [{"name": "a", "count": 1}], "other": 1}, "other", "not a field of this body"),
        ({"label": "EUR"}, "lines", "missing"),
    ],
)
def test_a_refusal_names_the_field_and_the_problem_never_the_input(
    body: object, field: str, problem: str
) -> None:
    with pytest.raises(ShapeError) as refused:
        conform(SCHEMA, body)
    assert (refused.value.field, refused.value.problem) == (field, problem)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "oneOf": []},
        {"type": "number"},
        {"type": "object", "additionalProperties": True},
        {"type": "object", "properties": {"a": {"type": "string", "format": "email"}}},
        {"type": "array", "items": {"type": "integer", "exclusiveMinimum": 0}},
    ],
)
def test_a_schema_with_a_keyword_conform_does_not_check_is_refused_where_it_is_defined(
    schema: dict[str, object],
) -> None:
    with pytest.raises(ValueError, match="conform"):
        checkable(schema)


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "object", "oneOf": [], "if": {}}, "conform does not check if, oneOf"),
        ({"type": "number"}, "conform checks the types array, integer, object, string, not 'number'"),
        ({"properties": {}}, "conform checks the types array, integer, object, string, not None"),
        ({"type": "object", "additionalProperties": True}, "conform checks additionalProperties: false only"),
        ({"type": "object", "additionalProperties": {}}, "conform checks additionalProperties: false only"),
    ],
)
def test_a_refused_schema_says_what_conform_would_not_check(schema: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=r"^conform ") as refused:
        checkable(schema)

    assert str(refused.value) == message


def test_a_checkable_schema_is_returned_as_it_is() -> None:
    # called here, not at import: a schema defined at import is checked before any test runs
    schema = {"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}}}

    assert checkable(schema) is schema
    assert checkable(LINE) is LINE
    assert checkable({"type": "array", "items": LINE}) is not None


class _Colour(Enum):  # a plain Enum: json.dumps could not write the member itself
    RED = "red"


@dataclass(frozen=True)
class _Part(Body):
    name: str
    count: int


@dataclass(frozen=True)
class _Kit(Body):
    colour: _Colour
    parts: list[_Part]


def test_a_body_is_its_json_values_nested_bodies_and_enums_included() -> None:
    dumped = _Kit(colour=_Colour.RED, parts=[_Part("a", 1)]).model_dump(mode="json")
    assert dumped == {"colour": "red", "parts": [{"name": "a", "count": 1}]}
    assert type(dumped["colour"]) is str
    assert json.loads(json.dumps(dumped)) == dumped


def test_a_bodys_derived_schema_admits_no_other_field() -> None:
    from pydantic import TypeAdapter  # noqa: PLC0415 - build time only, as in a service

    schema = TypeAdapter(_Kit).json_schema()
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["_Part"]["additionalProperties"] is False


@pytest.mark.parametrize(
    ("schema", "data"),
    [
        ({"type": "object", "additionalProperties": False}, {}),  # no properties, no required
        ({"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}}}, {}),
        ({"type": "array"}, []),  # no items, no minItems: any array, as it is
        ({"type": "array"}, [1, "a", {"b": [2]}]),
        ({"type": "array", "items": {"type": "integer"}}, [1, 1]),  # no uniqueItems: repeats allowed
        ({"type": "string"}, ""),  # no minLength: the empty string
    ],
)
def test_a_keyword_a_schema_leaves_out_admits_everything(schema: dict[str, Any], data: Any) -> None:
    assert conform(checkable(schema), data) == data
    assert oracle(schema).is_valid(data)


@pytest.mark.parametrize(
    ("schema", "data", "field", "problem"),
    [
        ({"type": "array"}, {"a": 1}, "items", "not a JSON array"),
        ({"type": "string"}, 5, "items", "not a string"),
        ({"type": "object", "additionalProperties": False}, [], "items", "not a JSON object"),
        ({"type": "object", "additionalProperties": False}, {"a": 1}, "items.a", "not a field of this body"),
        (
            {"type": "array", "uniqueItems": True},
            [{"a": 1, "b": 2}, {"b": 2, "a": 1}],  # the same object, its keys in another order
            "items",
            REPEATED_ITEM,
        ),
    ],
)
def test_a_refusal_names_the_field_and_what_is_wrong(
    schema: dict[str, Any], data: Any, field: str, problem: str
) -> None:
    with pytest.raises(ShapeError) as refused:
        conform(checkable(schema), data, "items")

    assert (refused.value.field, refused.value.problem) == (field, problem)
    assert not oracle(schema).is_valid(data)


def oracle(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema)
