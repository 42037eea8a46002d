"""DynamoDB attribute values on the low-level client, both ways, for the plain types a service's
items hold (strings, integers, booleans, lists, maps).

Not boto3.dynamodb.types: importing it loads boto3 and, through it, s3transfer and
multiprocessing, which no function uses (CPU at every cold start). Powertools ships the
deserializer for the same reason; the serializer below covers what the items hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from aws_lambda_powertools.shared.dynamodb_deserializer import TypeDeserializer

_deserializer = TypeDeserializer()

CONDITION_FAILED = "ConditionalCheckFailedException"


def now_iso() -> str:
    """The time an item records (`at`, `created_at`, ...): ISO 8601, UTC."""
    return datetime.now(UTC).isoformat()


def to_item(values: Mapping[str, Any]) -> dict[str, Any]:
    """Attribute values of `values`, leaving out those that are None."""
    return {name: attribute_value(value) for name, value in values.items() if value is not None}


def attribute_value(value: Any) -> dict[str, Any]:
    """A DynamoDB attribute value, as boto3's TypeSerializer writes it for these types (a float is
    refused, as there: items store integers)."""
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int | Decimal):
        return {"N": str(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, list | tuple):
        return {"L": [attribute_value(item) for item in value]}
    if isinstance(value, Mapping):
        return {"M": {str(name): attribute_value(item) for name, item in value.items()}}
    raise TypeError(f"no DynamoDB attribute value for {type(value).__name__}: {value!r}")


def from_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """Plain values of a low-level item; numbers as int (items store only integers)."""
    return {name: _plain(_deserializer.deserialize(value)) for name, value in item.items()}


def _plain(value: Any) -> Any:
    """Decimal -> int, recursively."""
    if hasattr(value, "as_integer_ratio") and not isinstance(value, bool | int | float):
        return int(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
