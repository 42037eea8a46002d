"""Messages the app did not send itself, on its queues.

- `foreign-event`: an OrderCompleted event on a consumer's queue from another producer: the same
  order's fact under another event id (a hand-made redrive), another stage's event for the same
  order, an event naming an order that does not exist, or one whose `occurred_at` is no instant.
  Oracle: each effect at most once (`ops.invariants`, which also refuses effects of an order that
  does not exist), and each event a consumer cannot verify or parse is dead-lettered WITH a reason
  (`violations`), never applied, never crash-looped into the DLQ without one.
- `late-copy`: `make rerun` of a FAILED order (run N+1), then a late copy of run N's message on
  the orders queue (a straggling delivery). Oracle: a message for a run behind the order's
  current one is provably a duplicate (run N+1 began only once run N had ended): it is never
  dead-lettered (no DLQ alarm pages a person for it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ops.invariants import peek_dead_letters
from orders.adapters.order_store import DynamoOrderStore
from orders.domain import Order, OrderStatus, completed_event, completed_fact

if TYPE_CHECKING:
    from chaos.cloud import ChaosCloud
    from chaos.scenarios import PlacedOrder
    from chaos.schedules import Action

VARIANTS = ("other-id", "other-stage", "no-order", "bad-time")
POISON = frozenset({"other-stage", "no-order", "bad-time"})  # what a consumer must refuse
OTHER_STAGE = "elsewhere"
UNKNOWN_ORDER = "o-" + "0" * 32  # an order id no key derives here


@dataclass(frozen=True)
class Sent:
    queue: str  # the queue's URL output
    variant: str
    body: str
    at: float  # when it was sent (the world's clock)


@dataclass
class ForeignLog:
    events: list[Sent] = field(default_factory=list)
    # (order id, run) of each late copy, and the orders DLQ's letters already there when it was sent
    late_copies: list[tuple[str, int]] = field(default_factory=list)
    letters_before: set[str] = field(default_factory=set)


def _orders(cloud: ChaosCloud) -> DynamoOrderStore:
    return DynamoOrderStore(client=cloud.dynamodb, table_name=cloud.outputs["OrdersTableName"])


def foreign_event(cloud: ChaosCloud, action: Action, placed: Sequence[PlacedOrder]) -> None:
    """Send the event `action.variant` names to `action.queue`, once the platform is at rest (it
    arrives from outside, later). An event about order i needs order i COMPLETED (a fact that
    happened); otherwise the event names an order that does not exist."""
    cloud.rest()
    stage = cloud.functions[cloud.function("Api")].environment["STAGE"]
    order_id = placed[action.order % len(placed)].order_id
    order = _orders(cloud).get(order_id) if order_id else None
    variant = action.variant
    if order is None or order.status is not OrderStatus.COMPLETED:
        variant = "no-order" if variant in ("other-id", "other-stage") else variant
    event: dict[str, Any] = dict(
        completed_event(
            stage=stage, order=order or _stranger(), run=order.run if order else 1, occurred_at=_now(cloud)
        )
    )
    if variant == "other-id":
        event["event_id"] = f"{event['event_id']}-redriven-by-hand"
    elif variant == "other-stage":
        event["stage"] = OTHER_STAGE
        event["event_id"] = completed_fact(event["order_id"], event["run"]).id(stage=OTHER_STAGE)
    elif variant == "no-order":
        event["order_id"] = UNKNOWN_ORDER
        event["event_id"] = completed_fact(UNKNOWN_ORDER, event["run"]).id(stage=stage)
    elif variant == "bad-time":
        event["occurred_at"] = "yesterday at noon"
    body = json.dumps(event)
    cloud.sqs.send_message(QueueUrl=cloud.outputs[action.queue], MessageBody=body)
    cloud.foreign.events.append(Sent(action.queue, variant, body, cloud.clock()))


def _stranger() -> Order:
    from orders.domain import Line  # noqa: PLC0415

    return Order(
        order_id=UNKNOWN_ORDER,
        customer_id="customer-9",
        currency="EUR",
        lines=(Line(sku="sku-5", quantity=1, unit_price_cents=100),),
        idempotency_key="none",
        created_at="2026-11-01T00:00:00+00:00",
        owner="",
        run=1,
        status=OrderStatus.COMPLETED,
        execution_arn=None,
    )


def _now(cloud: ChaosCloud) -> datetime:
    return datetime.fromtimestamp(cloud.clock(), tz=UTC)


def late_copy(cloud: ChaosCloud, action: Action, placed: Sequence[PlacedOrder]) -> None:
    """`make rerun` of order i (the first FAILED-kind order from i on), then run N's message again."""
    from chaos.scenarios import HAPPY  # noqa: PLC0415 - scenarios imports this module

    failing = [p for p in placed if p.kind != HAPPY and p.order_id] or list(placed)
    order_id = failing[action.order % len(failing)].order_id
    if order_id is None:
        return
    cloud.rerun_order(order_id)
    order = _orders(cloud).get(order_id)
    if order is None or order.run < 2:
        return
    run = order.run - 1
    dlq = cloud.outputs["OrdersDlqUrl"]
    cloud.foreign.letters_before |= {d.message_id for d in peek_dead_letters(cloud.sqs, dlq, "orders")}
    message = {"order_id": order_id, "run": run, "idempotency_key": order.idempotency_key}
    cloud.sqs.send_message(QueueUrl=cloud.outputs["OrdersQueueUrl"], MessageBody=json.dumps(message))
    cloud.foreign.late_copies.append((order_id, run))


def _retention(cloud: ChaosCloud, dlq: str) -> int:
    attributes = cloud.sqs.get_queue_attributes(
        QueueUrl=cloud.outputs[dlq], AttributeNames=["MessageRetentionPeriod"]
    )["Attributes"]
    return int(attributes["MessageRetentionPeriod"])


def violations(cloud: ChaosCloud) -> list[str]:
    found = []
    letters = {
        queue: peek_dead_letters(cloud.sqs, cloud.outputs[dlq], queue) for dlq, queue in cloud.dlqs.items()
    }
    dlq_of = {queue: dlq for dlq, queue in cloud.dlqs.items()}
    for sent in cloud.foreign.events:
        if sent.variant not in POISON or cloud.clock() - sent.at >= _retention(cloud, dlq_of[sent.queue]):
            continue  # SQS deleted it: a DLQ keeps a message its retention period from its first send
        mine = [letter for letter in letters[sent.queue] if letter.body == sent.body]
        if not mine:
            found.append(
                f"{sent.queue}: a foreign event ({sent.variant}) was not dead-lettered: {sent.body[:120]}"
            )
        elif not all(letter.reason for letter in mine):
            found.append(f"{sent.queue}: a foreign event ({sent.variant}) was dead-lettered without a reason")
    copies = set(cloud.foreign.late_copies)
    for letter in letters.get("OrdersQueueUrl", []):
        try:
            run = int(json.loads(letter.body).get("run", 0))
        except (ValueError, TypeError, AttributeError):
            continue
        if (letter.entity_id, run) in copies and letter.message_id not in cloud.foreign.letters_before:
            found.append(
                f"{letter.entity_id}: a late copy of run {run}'s message, behind the order's rerun, was "
                f"dead-lettered ({letter.reason}): a provable duplicate pages a person"
            )
    return found
