"""An event consumer of `orders.workflow.CONSUMERS`: its effect, applied once per fact, and only to a
fact it could verify. Every consumer is an `EventConsumer`, so a new one gets all of it."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orders import workflow as declared
from orders.effects import ConsumerPorts
from orders.errors import UnknownOrder, UnverifiedEvent
from orders.events import OrderCompletedEvent
from reliability import AtomicEffect, Write
from reliability.dedup import ConsumerDedup
from reliability.errors import PoisonMessage

if TYPE_CHECKING:  # Protocols and types: annotations only
    from orders.domain import Order
    from orders.ports import OrderStore

ConsumerEffect = Callable[[ConsumerPorts, Mapping[str, Any]], list[Write]]


def effect_of(name: str) -> ConsumerEffect:
    """The declared consumer's effect, resolved from its dotted path."""
    module, _, attribute = declared.consumer(name).effect.partition(":")
    effect: ConsumerEffect = getattr(importlib.import_module(module), attribute)
    return effect


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
class EventConsumer:
    """Applies each OrderCompleted fact exactly once: the effect's writes commit with the dedup
    record on (fact, consumer) in one transaction.

    The fact is the event's business identity (type, order, run) in this consumer's stage, never
    the `event_id` the event declares: the same fact under another id (another stage's, a
    hand-made redrive) is the same record. The effect sees that derived id as `event_id`, so the
    items it keys by event are the fact's too. Before that, the event is checked against what it
    names, and refused (dead-lettered with the reason, `PoisonMessage`) when it is another stage's,
    its order does not exist, or its run or terms are not the order's: one read of the order per
    delivery (`OrderStore.get`, a strongly consistent GetItem), a replay's included."""

    name: str
    effect: ConsumerEffect
    ports: ConsumerPorts
    orders: OrderStore
    dedup: ConsumerDedup

    def verify(self, event: OrderCompletedEvent) -> None:
        """UnverifiedEvent or UnknownOrder when the event is not a fact of this stage's orders."""
        stage = self.dedup.stage
        if event.stage is not None and event.stage != stage:
            raise UnverifiedEvent(f"an event of stage {event.stage!r}; this consumer is stage {stage!r}")
        order = self.orders.get(event.order_id)
        if order is None:
            raise UnknownOrder(f"no order {event.order_id!r} in stage {stage!r}")
        if found := contradictions(event, order):
            raise UnverifiedEvent(f"the event contradicts order {order.order_id}: {'; '.join(found)}")

    def apply(self, event: OrderCompletedEvent) -> bool:
        """True when applied now, False on a dedup hit; PoisonMessage when it cannot be verified."""
        try:
            self.verify(event)
        except (UnverifiedEvent, UnknownOrder) as error:
            raise PoisonMessage(str(error)) from error
        fact = event.fact()
        body = {
            **event.model_dump(mode="json"),
            "event_id": self.dedup.fact_id(fact),
            "stage": self.dedup.stage,
        }
        outcome = self.dedup.apply_atomic(
            fact,
            lambda: AtomicEffect(result={"order_id": event.order_id}, writes=self.effect(self.ports, body)),
        )
        return not outcome.skipped
