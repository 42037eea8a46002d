"""The field checks of bodies (a run's message, a service's event, an API request): plain Python.

The functions parse their bodies without pydantic, whose import and first model cost a worker or
consumer ~75 ms of CPU on its cold start, and an API function about a fifth of its floor
(bench/coldstart.py). Queue bodies are checked field by field (`record`, `text`, `integer`); an
API request against its published JSON Schema (`conform`: the sample's API), so the schema a
service publishes and API Gateway validates at the edge is the very rule its function applies (a
service may keep pydantic for its contract instead, at that cost); its bodies are then frozen
dataclasses on `Body`. A check that fails raises `ShapeError`, a `ValueError` naming the field
and why, never the input: `reliability.batch.parse_body` turns it into the dead-letter reason
`wrong shape: <field> (<why>)`, and an API answers it 422.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict
from enum import Enum
from functools import cache
from typing import Any, ClassVar


class Body:
    """The base of a contract's bodies written as dataclasses: their JSON form under the name
    `reliability.api` calls (pydantic's), and no field beyond the class's in the schemas a
    service derives from them at build time (pydantic reads `__pydantic_config__`)."""

    __pydantic_config__: ClassVar[dict[str, str]] = {"extra": "forbid"}

    def model_dump(self, mode: str = "json") -> dict[str, Any]:
        """The body as JSON values (an enum field is its value); JSON is the only form."""
        del mode
        body: dict[str, Any] = asdict(self, dict_factory=_json_values)  # type: ignore[call-overload]
        return body


def _json_values(fields: list[tuple[str, Any]]) -> dict[str, Any]:
    return {name: value.value if isinstance(value, Enum) else value for name, value in fields}


class ShapeError(ValueError):
    """A body that is not the shape its receiver accepts; `field` is its path (`items.0.name`)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field} ({problem})")
        self.field = field
        self.problem = problem


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


# What `conform` checks of JSON Schema 2020-12: enough for a request body of objects, arrays,
# strings and integers. Annotations are read by people and tools only.
_CHECKED = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
}
_ANNOTATIONS = {"title", "description", "examples"}
# The problem `conform` names when an array with `uniqueItems` holds an item twice (checked once
# every item conforms, so a caller may word it better from the items).
REPEATED_ITEM = "an item appears twice"
_TYPES = {"object", "array", "string", "integer"}


def checkable(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """`schema`, once it is known that `conform` checks every keyword it uses (else ValueError):
    a service calls this where it defines the schema, so a keyword `conform` would skip fails its
    import and its tests, never a request."""
    unknown = set(schema) - _CHECKED - _ANNOTATIONS
    if unknown:
        raise ValueError(f"conform does not check {', '.join(sorted(unknown))}")
    if schema.get("type") not in _TYPES:
        raise ValueError(f"conform checks the types {', '.join(sorted(_TYPES))}, not {schema.get('type')!r}")
    if schema.get("additionalProperties", False) is not False:
        raise ValueError("conform checks additionalProperties: false only")
    for child in schema.get("properties", {}).values():
        checkable(child)
    if "items" in schema:
        checkable(schema["items"])
    return schema


def conform(schema: Mapping[str, Any], data: Any, where: str = "body") -> Any:
    """`data` (parsed JSON) as `schema` (`checkable`) admits it, or `ShapeError` naming the first
    field that is not. An integer written with a zero fraction (`65.0`) is that integer, as JSON
    Schema 2020-12 says, and comes back as an int; a string must match its pattern whole
    (`fullmatch`: a trailing newline is not matched by `$`, as in the edge's regex engines)."""
    kind = schema["type"]
    if kind == "object":
        return _object(schema, data, where)
    if kind == "array":
        return _array(schema, data, where)
    if kind == "string":
        return _string(schema, data, where)
    return _integer(schema, data, where)


def _path(where: str, name: object) -> str:
    return str(name) if where == "body" else f"{where}.{name}"


def _object(schema: Mapping[str, Any], data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ShapeError(where, "not a JSON object")
    properties: Mapping[str, Any] = schema.get("properties", {})
    for name in data:
        if name not in properties:
            raise ShapeError(_path(where, name), "not a field of this body")
    for name in schema.get("required", ()):
        if name not in data:
            raise ShapeError(_path(where, name), "missing")
    return {name: conform(properties[name], value, _path(where, name)) for name, value in data.items()}


def _array(schema: Mapping[str, Any], data: Any, where: str) -> list[Any]:
    if not isinstance(data, list):
        raise ShapeError(where, "not a JSON array")
    if len(data) < schema.get("minItems", 0):
        raise ShapeError(where, f"fewer than {schema['minItems']} items")
    if "maxItems" in schema and len(data) > schema["maxItems"]:
        raise ShapeError(where, f"more than {schema['maxItems']} items")
    items = schema.get("items")
    values = (
        data if items is None else [conform(items, value, _path(where, i)) for i, value in enumerate(data)]
    )
    if schema.get("uniqueItems", False):
        seen = [json.dumps(value, sort_keys=True) for value in values]
        if len(set(seen)) != len(seen):
            raise ShapeError(where, REPEATED_ITEM)
    return values


def _string(schema: Mapping[str, Any], data: Any, where: str) -> str:
    if not isinstance(data, str):
        raise ShapeError(where, "not a string")
    if len(data) < schema.get("minLength", 0):
        raise ShapeError(where, f"shorter than {schema['minLength']} characters")
    if "maxLength" in schema and len(data) > schema["maxLength"]:
        raise ShapeError(where, f"longer than {schema['maxLength']} characters")
    if "pattern" in schema and not _compiled(schema["pattern"]).fullmatch(data):
        raise ShapeError(where, f"does not match {schema['pattern']}")
    return data


def _integer(schema: Mapping[str, Any], data: Any, where: str) -> int:
    if type(data) is float and data.is_integer():
        data = int(data)
    if type(data) is not int:  # bool is an int subclass; "1" is a string on the wire
        raise ShapeError(where, "not an integer")
    if "minimum" in schema and data < schema["minimum"]:
        raise ShapeError(where, f"below {schema['minimum']}")
    if "maximum" in schema and data > schema["maximum"]:
        raise ShapeError(where, f"above {schema['maximum']}")
    return data
