"""The orders consumers of `orders.workflow.CONSUMERS`, on the library's `EventConsumer`
(`reliability.consumers`: each fact applied once, only when verified). What is the sample's is
the check: the event's run and terms must be its order's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orders import workflow as declared
from orders.effects import ConsumerPorts
from orders.errors import UnknownOrder, UnverifiedEvent
from orders.events import OrderCompletedEvent
from reliability.consumers import ConsumerEffect
from reliability.consumers import EventConsumer as _EventConsumer
from reliability.consumers import effect_of as _effect_of

if TYPE_CHECKING:  # Protocols and types: annotations only
    from orders.domain import Order
    from orders.ports import OrderStore


def effect_of(name: str) -> ConsumerEffect:
    """The declared consumer's effect, resolved from its dotted path."""
    return _effect_of(declared.SERVICE, name)


def contradictions(event: OrderCompletedEvent, order: Order) -> list[str]:
    """Where the event's run or terms are not its order's. An order completes on its current run
    (a rerun begins only after a FAILED one), and its terms never change once accepted."""
    found = [
        f"{name} {stated!r} (the order's is {actual!r})"
        for name, stated, actual in (
            ("run", event.run, order.run),
            ("customer_id", event.customer_id, order.customer_id),
            ("currency", event.currency, order.currency),
            ("total_cents", event.total_cents, order.total_cents),
        )
        if stated != actual
    ]
    items = {item.sku: item.quantity for item in event.items}
    if len(items) != len(event.items) or items != order.quantities:
        found.append(f"items {items} (the order's are {order.quantities})")
    return found


@dataclass
class EventConsumer(_EventConsumer[ConsumerPorts, OrderCompletedEvent]):
    """Applies each OrderCompleted fact exactly once, after checking it against its order: one
    read of the order per delivery (`OrderStore.get`, a strongly consistent GetItem), a replay's
    included. An event whose order does not exist, or whose run or terms are not the order's, is
    refused (dead-lettered with the reason)."""

    refusals = (UnverifiedEvent, UnknownOrder)

    orders: OrderStore

    def verify(self, event: OrderCompletedEvent) -> None:
        """UnverifiedEvent or UnknownOrder when the event is not a fact of this stage's orders."""
        order = self.orders.get(event.order_id)
        if order is None:
            raise UnknownOrder(f"no order {event.order_id!r} in stage {self.dedup.stage!r}")
        if found := contradictions(event, order):
            raise UnverifiedEvent(f"the event contradicts order {order.order_id}: {'; '.join(found)}")

    def result(self, event: OrderCompletedEvent) -> dict[str, Any]:
        return {"order_id": event.order_id}
