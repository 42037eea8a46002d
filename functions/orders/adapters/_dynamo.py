"""Small helpers shared by the DynamoDB adapters (low-level client, typed attribute values)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from aws_lambda_powertools.shared.dynamodb_deserializer import TypeDeserializer

# Not boto3.dynamodb.types: importing it loads boto3 and, through it, s3transfer and
# multiprocessing, which no function uses (CPU at every cold start; docs/costs.md, "Cold start").
# Powertools ships the deserializer for the same reason; the serializer below covers what the
# domain writes.
_deserializer = TypeDeserializer()

CONDITION_FAILED = "ConditionalCheckFailedException"


def now_iso() -> str:
    """The time an item records (`at`, `created_at`, ...): ISO 8601, UTC."""
    return datetime.now(UTC).isoformat()


def to_item(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: attribute_value(value) for name, value in values.items() if value is not None}


def attribute_value(value: Any) -> dict[str, Any]:
    """A DynamoDB attribute value, as boto3's TypeSerializer writes it for these types (a float is
    refused, as there: the domain stores integers)."""
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
    return {name: _plain(_deserializer.deserialize(value)) for name, value in item.items()}


def _plain(value: Any) -> Any:
    """Decimal -> int (the domain stores only integers: cents, counts), recursively."""
    if hasattr(value, "as_integer_ratio") and not isinstance(value, bool | int | float):
        return int(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def query_all(client: Any, *, table: str, pk: str, sk_prefix: str | None = None) -> list[dict[str, Any]]:
    """Every item of one partition (optionally with a sort-key prefix), strongly consistent."""
    expression = "pk = :pk"
    values: dict[str, Any] = {":pk": {"S": pk}}
    if sk_prefix is not None:
        expression += " AND begins_with(sk, :prefix)"
        values[":prefix"] = {"S": sk_prefix}
    kwargs: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": expression,
        "ExpressionAttributeValues": values,
        "ConsistentRead": True,
    }
    items: list[dict[str, Any]] = []
    while True:
        page = client.query(**kwargs)
        items.extend(from_item(item) for item in page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
