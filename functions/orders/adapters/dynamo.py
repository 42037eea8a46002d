"""DynamoDB adapters for the business tables but the orders table (`orders.adapters.order_store`):
inventory, ledger, notifications, daily aggregates (all keyed `pk` + `sk`; the layout is `orders.items`;
a step's status is its record, where `orders.items.record_at` puts it: the fence table, or the
reservation / ledger entry written here, which `orders.saga` marks to carry it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from orders.adapters._dynamo import from_item, now_iso, to_item
from orders.domain import CatalogItem, OrderTerms
from orders.errors import OutOfStock
from orders.items import (
    AGGREGATE_SK,
    CATALOG_SK,
    COUNTED,
    ENTRY,
    MARKER_SK,
    NOTIFICATION,
    RESERVATION,
    SENDS,
    day_pk,
    event_pk,
    key,
    order_pk,
    sku_pk,
)
from reliability import Write
from reliability.errors import transient_errors

_BATCH_GET_LIMIT = 100


class DynamoCatalog:
    """The catalog and stock, on the inventory table. Implements `Catalog` and `Inventory`."""

    def __init__(self, *, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def lookup(self, skus: Sequence[str]) -> dict[str, CatalogItem]:
        found: dict[str, CatalogItem] = {}
        unique = list(dict.fromkeys(skus))
        for start in range(0, len(unique), _BATCH_GET_LIMIT):
            pending: dict[str, Any] = {
                self._table: {
                    "Keys": [
                        key(sku_pk(sku), CATALOG_SK) for sku in unique[start : start + _BATCH_GET_LIMIT]
                    ],
                    "ConsistentRead": True,
                }
            }
            while pending:
                with transient_errors("catalog lookup"):
                    page = self._client.batch_get_item(RequestItems=pending)
                for raw in page.get("Responses", {}).get(self._table, []):
                    item = from_item(raw)
                    found[item["sku"]] = CatalogItem(
                        sku=item["sku"], price_cents=item["price_cents"], stock=item["stock"]
                    )
                pending = page.get("UnprocessedKeys") or {}
        return found

    def reserve_writes(self, order: OrderTerms, *, token: str) -> list[Write]:
        writes = [
            Write(
                entry={
                    "Update": {
                        "TableName": self._table,
                        "Key": key(sku_pk(line.sku), CATALOG_SK),
                        "UpdateExpression": "SET stock = stock - :q",
                        "ConditionExpression": "attribute_exists(pk) AND stock >= :q",
                        "ExpressionAttributeValues": {":q": {"N": str(line.quantity)}},
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                },
                on_condition_failed=OutOfStock(f"sku {line.sku} has less stock than {line.quantity}"),
            )
            for line in order.lines
        ]
        writes.append(self._movement("reservation", order, token))
        return writes

    def release_writes(self, order: OrderTerms, *, token: str) -> list[Write]:
        writes = [
            Write(
                entry={
                    "Update": {
                        "TableName": self._table,
                        "Key": key(sku_pk(line.sku), CATALOG_SK),
                        "UpdateExpression": "SET stock = stock + :q",
                        "ConditionExpression": "attribute_exists(pk)",
                        "ExpressionAttributeValues": {":q": {"N": str(line.quantity)}},
                    }
                },
                # A sku an operator removed meanwhile gets no stock back (it would come back as a
                # catalog item without price); the release completes for the others.
                optional=True,
            )
            for line in order.lines
        ]
        # Only what this token reserved can be released: the reservation must exist (its `kind`:
        # a record-only item at its key is ReserveInventory's FAILED record, orders.items).
        writes.append(
            Write(
                entry={
                    "ConditionCheck": {
                        "TableName": self._table,
                        "Key": key(order_pk(order.order_id), f"{RESERVATION}{token}"),
                        "ConditionExpression": "attribute_exists(kind)",
                    }
                }
            )
        )
        writes.append(self._movement("release", order, token))
        return writes

    def _movement(self, kind: str, order: OrderTerms, token: str) -> Write:
        return Write(
            entry={
                "Put": {
                    "TableName": self._table,
                    "Item": to_item(
                        {
                            "pk": order_pk(order.order_id),
                            "sk": f"{kind}#{token}",
                            "kind": kind,
                            "order_id": order.order_id,
                            "token": token,
                            "lines": {line.sku: line.quantity for line in order.lines},
                            "at": now_iso(),
                        }
                    ),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
        )


class DynamoLedger:
    def __init__(self, *, table_name: str) -> None:
        self._table = table_name

    def entry_writes(self, order: OrderTerms, *, token: str, charge_id: str) -> list[Write]:
        return [
            Write(
                entry={
                    "Put": {
                        "TableName": self._table,
                        "Item": to_item(
                            {
                                "pk": order_pk(order.order_id),
                                "sk": f"{ENTRY}{token}",
                                "order_id": order.order_id,
                                "kind": "charge",
                                "charge_id": charge_id,
                                "amount_cents": order.total_cents,
                                "currency": order.currency,
                                "at": now_iso(),
                            }
                        ),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                }
            )
        ]


def counted_write(table: str, item_key: dict[str, Any], fields: Mapping[str, Any], *, count: str) -> Write:
    """One item per event that carries the consumer's dedup record (``carries_record``) and counts
    how often it was written (ADD ``count``), so an event applied twice is visible."""
    names = {f"#n{i}": name for i, name in enumerate(fields)}
    return Write(
        entry={
            "Update": {
                "TableName": table,
                "Key": item_key,
                "UpdateExpression": f"SET {', '.join(f'{n} = :{n[1:]}' for n in names)} ADD #count :one",
                "ExpressionAttributeNames": {**names, "#count": count},
                "ExpressionAttributeValues": to_item(
                    {
                        ":one": 1,
                        **{f":{n[1:]}": value for n, value in zip(names, fields.values(), strict=True)},
                    }
                ),
            }
        },
        carries_record=True,
    )


class DynamoNotifications:
    """The fake notification channel: one item per event, whose ``sends`` counts the sends, so a
    duplicate send is visible; the item carries the consumer's dedup record."""

    def __init__(self, *, table_name: str) -> None:
        self._table = table_name

    def notification_writes(self, event: Mapping[str, Any]) -> list[Write]:
        fields = {
            "order_id": event["order_id"],
            "event_id": event["event_id"],
            "customer_id": event["customer_id"],
            "channel": "email",
            "template": event["type"],
            "sent_at": now_iso(),
        }
        item_key = key(order_pk(event["order_id"]), f"{NOTIFICATION}{event['event_id']}")
        return [counted_write(self._table, item_key, fields, count=SENDS)]


def event_day(event: Mapping[str, Any]) -> str:
    return datetime.fromisoformat(str(event["occurred_at"])).astimezone(UTC).date().isoformat()


class DynamoAggregates:
    """A daily counter with the classic non-idempotent ADD, plus one marker per counted event that
    carries the consumer's dedup record and counts how often it was counted (``counted``)."""

    def __init__(self, *, table_name: str) -> None:
        self._table = table_name

    def count_writes(self, event: Mapping[str, Any]) -> list[Write]:
        day = event_day(event)
        return [
            Write(
                entry={
                    "Update": {
                        "TableName": self._table,
                        "Key": key(day_pk(day), AGGREGATE_SK),
                        "UpdateExpression": "ADD orders :one, revenue_cents :total SET #d = :day",
                        "ExpressionAttributeNames": {"#d": "day"},
                        "ExpressionAttributeValues": to_item(
                            {":one": 1, ":total": int(event["total_cents"]), ":day": day}
                        ),
                    }
                }
            ),
            counted_write(
                self._table,
                key(event_pk(event["event_id"]), MARKER_SK),
                {
                    "day": day,
                    "event_id": event["event_id"],
                    "order_id": event["order_id"],
                    "total_cents": int(event["total_cents"]),
                },
                count=COUNTED,
            ),
        ]
