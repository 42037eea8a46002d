"""DynamoDB adapters for the business tables (all keyed `pk` + `sk`; the layout is `orders.items`;
a step's status is its record, where `orders.items.record_at` puts it: the fence table, or the
reservation / ledger entry written here, which `orders.saga` marks to carry it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from orders.adapters._dynamo import CONDITION_FAILED, from_item, to_item
from orders.domain import CatalogItem, Line, Order, OrderStatus, OrderTerms
from orders.errors import OrderConflict, OutOfStock, RerunRefused
from orders.items import (
    AGGREGATE_SK,
    CATALOG_SK,
    COUNTED,
    ENTRY,
    MARKER_SK,
    NOTIFICATION,
    ORDER_SK,
    RESERVATION,
    SENDS,
    day_pk,
    event_pk,
    key,
    order_pk,
    sku_pk,
)
from reliability import Write
from reliability.errors import error_code, transient_errors

_BATCH_GET_LIMIT = 100


def _now() -> str:
    return datetime.now(UTC).isoformat()


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
                            "at": _now(),
                        }
                    ),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
        )


def _order_item(order: Order) -> dict[str, Any]:
    return {
        "pk": order_pk(order.order_id),
        "sk": ORDER_SK,
        "order_id": order.order_id,
        "customer_id": order.customer_id,
        "currency": order.currency,
        "lines": order.lines_as_dicts(),
        "total_cents": order.total_cents,
        "idempotency_key": order.idempotency_key,
        "created_at": order.created_at,
        "run": order.run,
        "status": order.status.value,
        "execution_arn": order.execution_arn,
    }


def _order_from(item: Mapping[str, Any]) -> Order:
    return Order(
        order_id=item["order_id"],
        customer_id=item["customer_id"],
        currency=item["currency"],
        lines=tuple(
            Line(sku=line["sku"], quantity=line["quantity"], unit_price_cents=line["unit_price_cents"])
            for line in item["lines"]
        ),
        idempotency_key=item["idempotency_key"],
        created_at=item["created_at"],
        run=item.get("run", 1),
        status=OrderStatus(item["status"]),
        execution_arn=item.get("execution_arn"),
    )


class DynamoOrderStore:
    """Orders on the orders table. Implements `OrderStore`."""

    def __init__(self, *, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def create(self, order: Order) -> Order:
        try:
            with transient_errors("create order"):
                self._client.put_item(
                    TableName=self._table,
                    Item=to_item(_order_item(order)),
                    ConditionExpression="attribute_not_exists(pk)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
            existing = _order_from(from_item(error.response.get("Item", {})))
            if not existing.same_order_as(order):
                raise OrderConflict(f"order {order.order_id} already holds a different order") from error
            return existing
        return order

    def get(self, order_id: str) -> Order | None:
        with transient_errors("get order"):
            item = self._client.get_item(
                TableName=self._table, Key=key(order_pk(order_id), ORDER_SK), ConsistentRead=True
            ).get("Item")
        return _order_from(from_item(item)) if item else None

    def accepted_before(self, created_before: str) -> list[Order]:
        # A paginated Scan with a filter: it reads the whole table on every sweep, which is fine
        # for a template's volumes. Next step at scale: a sparse GSI (an attribute present only
        # while ACCEPTED, sorted by time) so the sweep is a Query.
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "FilterExpression": "sk = :order AND #status = :accepted AND created_at < :before",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":order": {"S": ORDER_SK},
                ":accepted": {"S": OrderStatus.ACCEPTED.value},
                ":before": {"S": created_before},
            },
            "ConsistentRead": True,
        }
        found: list[Order] = []
        while True:
            with transient_errors("scan accepted orders"):
                page = self._client.scan(**kwargs)
            found.extend(_order_from(from_item(item)) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return found
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def mark_running(self, order_id: str, *, run: int, execution_arn: str) -> None:
        """RUNNING + execution ARN for the order's current run; never moves a finished order back
        (the saga may be quicker than this write), never touches another run."""
        try:
            with transient_errors("mark running"):
                self._client.update_item(
                    TableName=self._table,
                    Key=key(order_pk(order_id), ORDER_SK),
                    UpdateExpression="SET #s = :running, execution_arn = :arn",
                    ConditionExpression="attribute_exists(pk) AND #r = :run AND #s IN (:accepted, :running)",
                    ExpressionAttributeNames={"#s": "status", "#r": "run"},
                    ExpressionAttributeValues=to_item(
                        {
                            ":running": OrderStatus.RUNNING.value,
                            ":accepted": OrderStatus.ACCEPTED.value,
                            ":arn": execution_arn,
                            ":run": run,
                        }
                    ),
                )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
            try:
                with transient_errors("record execution arn"):
                    self._client.update_item(
                        TableName=self._table,
                        Key=key(order_pk(order_id), ORDER_SK),
                        UpdateExpression="SET execution_arn = :arn",
                        ConditionExpression="attribute_exists(pk) AND #r = :run",
                        ExpressionAttributeNames={"#r": "run"},
                        ExpressionAttributeValues=to_item({":arn": execution_arn, ":run": run}),
                    )
            except ClientError as stale:
                if error_code(stale) != CONDITION_FAILED:
                    raise
                # The order moved on to a later run meanwhile: this run's ARN is history.

    def start_next_run(self, order_id: str, *, run: int) -> Order:
        try:
            with transient_errors("start next run"):
                response = self._client.update_item(
                    TableName=self._table,
                    Key=key(order_pk(order_id), ORDER_SK),
                    UpdateExpression="SET #r = :next, #s = :accepted, accepted_at = :at "
                    "REMOVE execution_arn, finished_at",
                    ConditionExpression="attribute_exists(pk) AND #r = :run AND #s = :failed",
                    ExpressionAttributeNames={"#s": "status", "#r": "run"},
                    ExpressionAttributeValues=to_item(
                        {
                            ":next": run + 1,
                            ":run": run,
                            ":accepted": OrderStatus.ACCEPTED.value,
                            ":failed": OrderStatus.FAILED.value,
                            ":at": _now(),
                        }
                    ),
                    ReturnValues="ALL_NEW",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
            old = error.response.get("Item")
            if not old:
                raise RerunRefused(f"no order {order_id!r}") from error
            current = from_item(old)
            raise RerunRefused(
                f"order {order_id} is {current['status']} on run {current.get('run', 1)}; run "
                f"{run + 1} may start only after run {run} ended FAILED"
            ) from error
        return _order_from(from_item(response["Attributes"]))

    def status_write(self, order_id: str, status: OrderStatus) -> Write:
        return Write(
            entry={
                "Update": {
                    "TableName": self._table,
                    "Key": key(order_pk(order_id), ORDER_SK),
                    "UpdateExpression": "SET #s = :status, finished_at = :at",
                    "ConditionExpression": "attribute_exists(pk)",
                    "ExpressionAttributeNames": {"#s": "status"},
                    "ExpressionAttributeValues": to_item({":status": status.value, ":at": _now()}),
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
                                "at": _now(),
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
            "sent_at": _now(),
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
