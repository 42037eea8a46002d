"""An event consumer of `orders.workflow.CONSUMERS`: its effect, applied once per event id."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from orders import workflow as declared
from orders.effects import ConsumerPorts
from orders.events import OrderCompletedEvent
from reliability import AtomicEffect, Write
from reliability.dedup import ConsumerDedup

ConsumerEffect = Callable[[ConsumerPorts, Mapping[str, Any]], list[Write]]


def effect_of(name: str) -> ConsumerEffect:
    """The declared consumer's effect, resolved from its dotted path."""
    module, _, attribute = declared.consumer(name).effect.partition(":")
    effect: ConsumerEffect = getattr(importlib.import_module(module), attribute)
    return effect


@dataclass
class EventConsumer:
    """Applies each OrderCompleted event exactly once: the effect's writes commit with the dedup
    record on (event id, consumer) in one transaction."""

    name: str
    effect: ConsumerEffect
    ports: ConsumerPorts
    dedup: ConsumerDedup

    def apply(self, event: OrderCompletedEvent) -> bool:
        """True when applied now, False on a dedup hit."""
        body = event.model_dump(mode="json")
        outcome = self.dedup.apply_atomic(
            event.event_id,
            lambda: AtomicEffect(result={"order_id": event.order_id}, writes=self.effect(self.ports, body)),
        )
        return not outcome.skipped
