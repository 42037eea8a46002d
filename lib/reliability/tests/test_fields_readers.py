"""`reliability.fields` readers (`record`, `text`, `integer`): what a message's field must be, and
the path and problem each refusal names (the DLQ reason and the 400's `field` are built from them)."""

from __future__ import annotations

from typing import Any

import pytest

from reliability.fields import ShapeError, integer, record, text

SLUG = r"[a-z]+"


def refusal(read: Any, *args: Any, **kwargs: Any) -> tuple[str, str, str]:
    with pytest.raises(ShapeError) as refused:
        read(*args, **kwargs)
    return refused.value.field, refused.value.problem, str(refused.value)


def test_record_answers_the_object_itself() -> None:
    data = {"a": 1}

    assert record(data) is data
    assert record(data, "line", allowed=frozenset({"a", "b"})) is data


@pytest.mark.parametrize(
    ("data", "where", "allowed", "expected"),
    [
        ([1], "body", None, ("body", "not a JSON object", "body (not a JSON object)")),
        ("x", "items.0", None, ("items.0", "not a JSON object", "items.0 (not a JSON object)")),
        (
            {"a": 1, "z": 2},
            "body",
            frozenset({"a"}),
            ("z", "not a field of this message", "z (not a field of this message)"),
        ),
        (
            {"a": 1, "z": 2},
            "items.1",
            frozenset({"a"}),
            ("items.1.z", "not a field of this message", "items.1.z (not a field of this message)"),
        ),
    ],
)
def test_record_refuses_what_is_not_an_object_of_its_fields(
    data: Any, where: str, allowed: frozenset[str] | None, expected: tuple[str, str, str]
) -> None:
    assert refusal(record, data, where, allowed=allowed) == expected


def test_text_answers_a_matching_string() -> None:
    assert text({"name": "abc"}, "name", pattern=SLUG) == "abc"
    assert text({"name": "abcd"}, "name", pattern=SLUG, max_length=4) == "abcd"


@pytest.mark.parametrize(
    ("data", "max_length", "where", "expected"),
    [
        ({}, None, "", ("name", "missing")),
        ({}, None, "items.0", ("items.0.name", "missing")),
        ({"name": 1}, None, "items.2", ("items.2.name", "not a string")),
        ({"name": ""}, None, "", ("name", "empty")),
        ({"name": "abcde"}, 4, "", ("name", "longer than 4 characters")),
        ({"name": "abc1"}, None, "", ("name", f"does not match {SLUG}")),
        ({"name": "1abc"}, None, "", ("name", f"does not match {SLUG}")),
    ],
)
def test_text_refuses_with_the_fields_path_and_problem(
    data: dict[str, Any], max_length: int | None, where: str, expected: tuple[str, str]
) -> None:
    field, problem, message = refusal(text, data, "name", pattern=SLUG, max_length=max_length, where=where)

    assert (field, problem) == expected
    assert message == f"{field} ({problem})"


def test_integer_answers_an_integer_at_its_minimum_or_above() -> None:
    assert integer({"qty": 1}, "qty", minimum=1) == 1
    assert integer({"qty": 7}, "qty", minimum=1, where="items.0") == 7
    assert integer({"qty": 0}, "qty", minimum=0) == 0


@pytest.mark.parametrize(
    ("data", "where", "expected"),
    [
        ({}, "", ("qty", "missing")),
        ({}, "items.3", ("items.3.qty", "missing")),
        ({"qty": "1"}, "items.0", ("items.0.qty", "not an integer")),
        ({"qty": 1.0}, "", ("qty", "not an integer")),
        ({"qty": True}, "", ("qty", "not an integer")),
        ({"qty": 0}, "items.1", ("items.1.qty", "below 1")),
        ({"qty": -5}, "", ("qty", "below 1")),
    ],
)
def test_integer_refuses_with_the_fields_path_and_problem(
    data: dict[str, Any], where: str, expected: tuple[str, str]
) -> None:
    field, problem, message = refusal(integer, data, "qty", minimum=1, where=where)

    assert (field, problem) == expected
    assert message == f"{field} ({problem})"


def test_by_default_a_field_is_named_from_the_bodys_top() -> None:
    assert refusal(record, [1]) == ("body", "not a JSON object", "body (not a JSON object)")
    assert refusal(record, {"z": 1}, allowed=frozenset({"a"}))[0] == "z"
    assert refusal(text, {}, "name", pattern=SLUG)[0] == "name"
    assert refusal(integer, {}, "qty", minimum=1)[0] == "qty"
