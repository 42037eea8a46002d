"""Every consumer, through its real handler on the in-process chain: an event is applied once per
fact whatever id it carries, and what a consumer cannot verify or parse is dead-lettered with the
reason on its first receive (never applied, never left to crash until maxReceiveCount)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ops.invariants import check
from orders import workflow
from orders.adapters.order_store import DynamoOrderStore
from simulator.cloud import InProcessCloud

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

ORDER = {"customer_id": "customer-5", "currency": "EUR", "items": [{"sku": "sku-5", "quantity": 1}]}
STAGE = "local"


def _prefix(consumer: str) -> str:
    return "".join(part.capitalize() for part in consumer.split("-"))


def _completed(cloud: InProcessCloud, key: str) -> dict[str, Any]:
    """A completed order's OrderCompleted, as its PublishEvents built it (the chain has applied it)."""
    response = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": key})
    assert response.status == 202, response.body
    cloud.settle()
    order = DynamoOrderStore(client=cloud.dynamodb, table_name=cloud.outputs["OrdersTableName"]).get(
        response.body["order_id"]
    )
    assert order is not None
    assert order.status == "COMPLETED"
    return {  # orders.domain.OrderCompleted, spelled out: the wire format, as a consumer receives it
        "event_id": f"OrderCompleted#{STAGE}#r1#v:{order.order_id}",
        "stage": STAGE,
        "type": "OrderCompleted",
        "order_id": order.order_id,
        "run": 1,
        "customer_id": order.customer_id,
        "currency": order.currency,
        "total_cents": order.total_cents,
        "items": [{"sku": line.sku, "quantity": line.quantity} for line in order.lines],
        "occurred_at": datetime.now(UTC).isoformat(),
    }


def test_each_consumer_applies_a_fact_once_and_dead_letters_what_it_cannot_verify_on_first_receive(
    cloud: InProcessCloud,
):
    event = _completed(cloud, "consumer-verify")
    order_id = event["order_id"]
    deliveries = {
        # the same fact under other ids: applied already, so nothing more
        "other stage's id": {**event, "event_id": event["event_id"].replace(f"#{STAGE}#", "#prod#")},
        "redrive by hand": {**event, "event_id": "redrive-by-hand-1"},
        # what no consumer may apply
        "no order": {**event, "order_id": "o-" + "0" * 32, "event_id": "x-1"},
        "another stage": {**event, "stage": "prod"},
        "naive occurred_at": {**event, "occurred_at": "2026-11-22T05:00:00"},
        "not a date": {**event, "occurred_at": "yesterday"},
        "other total": {**event, "total_cents": event["total_cents"] + 1},
    }
    reasons = {
        "no order": "no order 'o-000",
        "another stage": "an event of stage 'prod'",
        "naive occurred_at": "wrong shape: occurred_at",
        "not a date": "wrong shape: occurred_at",
        "other total": "the event contradicts order",
    }
    for consumer in (c.name for c in workflow.CONSUMERS):
        queue, dlq = f"{_prefix(consumer)}QueueUrl", f"{_prefix(consumer)}DlqUrl"
        for body in deliveries.values():
            cloud.send(queue, body)

        # One receive of the whole batch: nothing to retry, nothing left in the queue
        result = cloud.pump(queue, _prefix(consumer))
        assert (result.received, result.failed, result.error) == (len(deliveries), [], None), consumer
        assert cloud.pump(queue, _prefix(consumer)).received == 0

        letters = cloud.messages(dlq)
        assert len(letters) == len(reasons), (consumer, letters)
        for expected in reasons.values():
            assert any(letter["reason"].startswith(expected) for letter in letters), (consumer, expected)
        assert {letter["source"] for letter in letters} == {consumer}

    # The order was notified and counted once; the invariants hold (the refused events are
    # dead-lettered with their reasons)
    report = check(cloud.stores())
    assert report.ok, report.to_text()
    row = report.row(order_id)
    assert (row.effects["notify"], row.effects["analytics"]) == (1, 1)
