"""The orders table's adapter (`order#<id>` / `order`, `orders.items`): the library's run store
(`reliability.run_store.DynamoRunStore`: read, the run's transitions, the accepted orders the
sweeper re-sends) over the order's attributes, and the order's own rule on a second create."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orders.domain import Line, Order, OrderStatus
from orders.errors import OrderConflict
from orders.workflow import SERVICE
from reliability.run_store import DynamoRunStore


def _order_item(order: Order) -> dict[str, Any]:
    return {
        "order_id": order.order_id,
        "customer_id": order.customer_id,
        "currency": order.currency,
        "lines": order.lines_as_dicts(),
        "total_cents": order.total_cents,
        "idempotency_key": order.idempotency_key,
        "created_at": order.created_at,
        "owner": order.owner,
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
        owner=item.get("owner", ""),
        run=item.get("run", 1),
        status=OrderStatus(item["status"]),
        execution_arn=item.get("execution_arn"),
    )


class DynamoOrderStore(DynamoRunStore[Order]):
    """Orders on the orders table. Implements `OrderStore`."""

    def __init__(self, *, client: Any, table_name: str) -> None:
        super().__init__(
            client=client,
            table_name=table_name,
            entity=SERVICE.entity,
            encode=_order_item,
            decode=_order_from,
        )

    def create(self, order: Order) -> Order:
        stored = super().create(order)
        if stored is not order and not stored.same_order_as(order):
            raise OrderConflict(f"order {order.order_id} already holds a different order")
        return stored
