"""A consumer trusts nothing an event says about itself: it dedupes on the fact the event states
(type, order, run) in its own stage, never on the event's own id, and dead-letters what it cannot
verify against the order (another stage's event, an order that does not exist, other terms) or
parse (a malformed field), with the reason, on the first receive."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from orders.adapters.dynamo import DynamoAggregates, DynamoNotifications
from orders.adapters.order_store import DynamoOrderStore
from orders.consumers import EventConsumer, effect_of
from orders.contract import CreateOrderRequest, OrderItem
from orders.domain import CatalogItem, Order, completed_event, new_order
from orders.events import OrderCompletedEvent
from reliability import FenceStore
from reliability.batch import parse_body
from reliability.dedup import ConsumerDedup
from reliability.errors import PoisonMessage
from reliability.telemetry import Telemetry

TELEMETRY = Telemetry(logger=Logger(service="test"), metrics=Metrics(namespace="test", service="test"))
STAGE = "dev"
CONSUMERS = ("notify", "analytics")
CATALOG = {"sku-1": CatalogItem(sku="sku-1", price_cents=199, stock=10)}
OCCURRED = datetime(2026, 11, 22, 5, tzinfo=UTC)


def _consumer(ddb: Any, name: str) -> EventConsumer:
    fences = FenceStore(
        client=ddb,
        table_name="fences",
        ttl_seconds=3600,
        telemetry=TELEMETRY,
        namespace=name,
        clock=time.time,
        stage=STAGE,
    )
    return EventConsumer(
        name=name,
        effect=effect_of(name),
        ports=SimpleNamespace(
            notifications=DynamoNotifications(table_name="notifications"),
            aggregates=DynamoAggregates(table_name="aggregates"),
        ),
        orders=DynamoOrderStore(client=ddb, table_name="orders"),
        dedup=ConsumerDedup(fences=fences, consumer=name, telemetry=TELEMETRY),
    )


def _order(ddb: Any | None = None, *, key: str = "k") -> Order:
    """An accepted order (stored when `ddb` is given)."""
    request = CreateOrderRequest(customer_id="c", currency="EUR", items=[OrderItem(sku="sku-1", quantity=2)])
    order = new_order(
        request=request, catalog=CATALOG, stored_idempotency_key=key, owner="caller-a", now=OCCURRED
    )
    return DynamoOrderStore(client=ddb, table_name="orders").create(order) if ddb is not None else order


def _event(order: Order, **changes: Any) -> dict[str, Any]:
    return {**completed_event(stage=STAGE, order=order, run=1, occurred_at=OCCURRED), **changes}


def _counted(ddb: Any) -> tuple[int, int, int]:
    """(notifications, aggregate orders, aggregate revenue)."""
    total = ddb.get_item(TableName="aggregates", Key={"pk": {"S": "day#2026-11-22"}, "sk": {"S": "total"}})
    item = total.get("Item", {})
    return (
        ddb.scan(TableName="notifications")["Count"],
        int(item.get("orders", {"N": "0"})["N"]),
        int(item.get("revenue_cents", {"N": "0"})["N"]),
    )


def test_the_same_fact_under_other_event_ids_is_applied_once_per_consumer(ddb: Any):
    # Given an order's OrderCompleted as the publisher sent it, and the same fact under another
    # stage's id and under a hand-made redrive's id
    order = _order(ddb)
    published = _event(order)
    copies = [
        published,
        {**published, "event_id": published["event_id"].replace("#dev#", "#prod#")},
        {**published, "event_id": "redrive-by-hand-1", "occurred_at": "2026-11-22T09:00:00+00:00"},
    ]
    # When each consumer gets all three
    for name in CONSUMERS:
        consumer = _consumer(ddb, name)
        applied = [consumer.apply(OrderCompletedEvent.model_validate(copy)) for copy in copies]
        # Then it applied the first and knew the others for the same fact
        assert applied == [True, False, False], name
    # One notification, counted once, keyed by the publisher's id (the consumers derive the same)
    assert _counted(ddb) == (1, 1, 398)
    (notification,) = ddb.scan(TableName="notifications")["Items"]
    assert notification["event_id"]["S"] == published["event_id"]


@pytest.mark.parametrize("name", CONSUMERS)
def test_an_event_for_an_order_that_does_not_exist_is_poison(ddb: Any, name: str):
    # Given an event naming an order this stage does not have
    event = OrderCompletedEvent.model_validate(_event(_order()))
    # When the consumer gets it, Then it refuses it with the reason, and applied nothing
    with pytest.raises(PoisonMessage, match=f"no order '{event.order_id}'"):
        _consumer(ddb, name).apply(event)
    assert _counted(ddb) == (0, 0, 0)


@pytest.mark.parametrize("name", CONSUMERS)
def test_another_stages_event_is_poison(ddb: Any, name: str):
    # Given an event stamped by another stage, for an order this stage does have
    event = OrderCompletedEvent.model_validate(_event(_order(ddb), stage="prod"))
    with pytest.raises(PoisonMessage, match="an event of stage 'prod'; this consumer is stage 'dev'"):
        _consumer(ddb, name).apply(event)
    assert _counted(ddb) == (0, 0, 0)


def test_an_event_stamped_with_no_stage_is_judged_by_its_order(ddb: Any):
    # Events published before the stage was stamped carry none: their order decides
    event = _event(_order(ddb))
    del event["stage"]
    assert _consumer(ddb, "notify").apply(OrderCompletedEvent.model_validate(event)) is True


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"run": 2}, "run 2 (the order's is 1)"),
        ({"total_cents": 1}, "total_cents 1 (the order's is 398)"),
        ({"customer_id": "someone-else"}, "customer_id 'someone-else'"),
        ({"currency": "USD"}, "currency 'USD'"),
        ({"items": [{"sku": "sku-1", "quantity": 3}]}, "items {'sku-1': 3}"),
        ({"items": [{"sku": "sku-1", "quantity": 1}, {"sku": "sku-1", "quantity": 1}]}, "items"),
    ],
)
def test_an_event_that_contradicts_its_order_is_poison(ddb: Any, changes: dict[str, Any], reason: str):
    event = OrderCompletedEvent.model_validate(_event(_order(ddb), **changes))
    for name in CONSUMERS:
        with pytest.raises(PoisonMessage, match="the event contradicts order") as refused:
            _consumer(ddb, name).apply(event)
        assert reason in refused.value.reason
    assert _counted(ddb) == (0, 0, 0)


def _record(body: dict[str, Any]) -> SQSRecord:
    return SQSRecord({"messageId": "m-1", "body": json.dumps(body), "attributes": {}})


# An OrderCompleted as it arrives on a queue (the wire format: orders.domain.OrderCompleted).
WIRE = {
    "event_id": "OrderCompleted#dev#r1#v:o-1",
    "stage": "dev",
    "type": "OrderCompleted",
    "order_id": "o-1",
    "run": 1,
    "customer_id": "c",
    "currency": "EUR",
    "total_cents": 398,
    "items": [{"sku": "sku-1", "quantity": 2}],
    "occurred_at": "2026-11-22T05:00:00+00:00",
}


MALFORMED = [
    ("occurred_at", "yesterday"),
    ("occurred_at", "2026-11-22T05:00:00"),  # no offset: which day is it?
    ("occurred_at", "2026-13-01T00:00:00+00:00"),
    ("occurred_at", ""),
    ("occurred_at", 1795323600),
    ("occurred_at", None),
    ("event_id", ""),
    ("event_id", "has spaces"),
    ("stage", "has#hash"),
    ("type", "OrderShipped"),
    ("order_id", "o 1"),
    ("run", 0),
    ("run", "1"),
    ("run", True),
    ("customer_id", ""),
    ("currency", "euro"),
    ("total_cents", -1),
    ("total_cents", 1.5),
    ("total_cents", "398"),
    ("items", []),
    ("items", [{"sku": "sku-1", "quantity": 0}]),
    ("items", [{"sku": "", "quantity": 1}]),
]


@pytest.mark.parametrize(("field", "value"), MALFORMED)
def test_a_malformed_event_is_poison_when_parsed_naming_the_field(field: str, value: Any):
    with pytest.raises(PoisonMessage) as refused:
        parse_body(_record({**WIRE, field: value}), OrderCompletedEvent)
    assert refused.value.reason.startswith(f"wrong shape: {field}")


@pytest.mark.parametrize(
    "occurred_at", ["2026-11-22T05:00:00+00:00", "2026-11-22T05:00:00Z", "2026-11-22T07:30:00.5+02:30"]
)
def test_an_aware_iso_instant_parses_unchanged(occurred_at: str):
    event = parse_body(_record({**WIRE, "occurred_at": occurred_at}), OrderCompletedEvent)
    assert event.occurred_at == occurred_at
