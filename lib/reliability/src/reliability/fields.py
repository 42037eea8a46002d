"""The field checks of queue bodies (a run's message, a service's event): plain Python.

The SQS functions parse their bodies without pydantic, whose import and first model cost a worker
or consumer ~75 ms of CPU on its cold start; a service's API, whose contract is richer, may keep
pydantic. A check that fails raises `ShapeError`, a `ValueError` naming the field and why, never
the input: `reliability.batch.parse_body` turns it into the dead-letter reason
`wrong shape: <field> (<why>)`, the form pydantic's errors take there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any


class ShapeError(ValueError):
    """A body that is not the shape its receiver accepts; `field` is its path (`items.0.sku`)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field} ({problem})")
        self.field = field


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def record(data: Any, where: str = "body", *, allowed: frozenset[str] | None = None) -> Mapping[str, Any]:
    """`data` as a JSON object; with `allowed`, one holding no other key."""
    if not isinstance(data, dict):
        raise ShapeError(where, "not a JSON object")
    if allowed is not None:
        for key in data:
            if key not in allowed:
                raise ShapeError(key if where == "body" else f"{where}.{key}", "not a field of this message")
    return data


def text(
    data: Mapping[str, Any], field: str, *, pattern: str, max_length: int | None = None, where: str = ""
) -> str:
    """A string field of at least one character matching `pattern` whole (anchored as written)."""
    name = f"{where}.{field}" if where else field
    if field not in data:
        raise ShapeError(name, "missing")
    value = data[field]
    if not isinstance(value, str):
        raise ShapeError(name, "not a string")
    if not value:
        raise ShapeError(name, "empty")
    if max_length is not None and len(value) > max_length:
        raise ShapeError(name, f"longer than {max_length} characters")
    if not _compiled(pattern).fullmatch(value):
        raise ShapeError(name, f"does not match {pattern}")
    return value


def integer(data: Mapping[str, Any], field: str, *, minimum: int, where: str = "") -> int:
    """A JSON integer (never a string, a float or a boolean) of at least `minimum`."""
    name = f"{where}.{field}" if where else field
    if field not in data:
        raise ShapeError(name, "missing")
    value = data[field]
    if type(value) is not int:  # bool is an int subclass; "1" and 1.0 are not integers on the wire
        raise ShapeError(name, "not an integer")
    if value < minimum:
        raise ShapeError(name, f"below {minimum}")
    return value
