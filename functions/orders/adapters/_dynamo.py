"""Small helpers shared by the DynamoDB adapters (low-level client, typed attribute values: the
library's `reliability.attribute_values`)."""

from __future__ import annotations

from typing import Any

from reliability.attribute_values import CONDITION_FAILED, attribute_value, from_item, now_iso, to_item

__all__ = ["CONDITION_FAILED", "attribute_value", "from_item", "now_iso", "query_all", "to_item"]


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
