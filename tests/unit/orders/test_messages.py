"""The queue messages are defined once: the run message in the library (reliability.workflow_runs,
orders.messages parses it), the event in orders.domain; the receivers' models must validate exactly
those fields, with the same types, and refuse the rest."""

from __future__ import annotations

import dataclasses
import json
import typing
from datetime import UTC, datetime
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from pydantic import BaseModel

from orders.contract import CreateOrderRequest, OrderItem
from orders.domain import CatalogItem, OrderCompleted, OrderMessage, completed_event, new_order
from orders.events import OrderCompletedEvent
from orders.messages import ORDER_MESSAGES
from reliability.batch import parse_body
from reliability.errors import PoisonMessage
from reliability.workflow_runs import RunMessage


def _shape(annotation: Any) -> Any:
    """A comparable form of a type: records become {field: shape}, list[X] becomes [shape(X)]."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {name: _shape(field.annotation) for name, field in annotation.model_fields.items()}
    if typing.is_typeddict(annotation) or dataclasses.is_dataclass(annotation):
        return {name: _shape(hint) for name, hint in typing.get_type_hints(annotation).items()}
    if typing.get_origin(annotation) is list:
        (item,) = typing.get_args(annotation)
        return [_shape(item)]
    return annotation


def test_the_completed_event_model_has_the_domain_shape_field_for_field():
    assert _shape(OrderCompletedEvent) == _shape(OrderCompleted)


def test_the_orders_queue_message_the_api_sends_is_the_one_the_worker_parses():
    message = OrderMessage("o-1", 2, "http#dev#r1#v:k")
    assert message.as_dict() == {"order_id": "o-1", "run": 2, "idempotency_key": "http#dev#r1#v:k"}
    assert ORDER_MESSAGES.model_validate(message.as_dict()) == RunMessage("o-1", 2, "http#dev#r1#v:k")


def test_the_event_a_step_builds_validates_unchanged():
    request = CreateOrderRequest(customer_id="c", currency="EUR", items=[OrderItem(sku="sku-1", quantity=2)])
    order = new_order(
        request=request,
        catalog={"sku-1": CatalogItem(sku="sku-1", price_cents=300, stock=5)},
        stored_idempotency_key="k",
        owner="caller-a",
        now=datetime(2026, 1, 1, tzinfo=UTC),
    )
    event = completed_event(stage="dev", order=order, run=1, occurred_at=datetime(2026, 1, 1, tzinfo=UTC))
    assert OrderCompletedEvent.model_validate(event).model_dump(mode="json") == event


def _record(body: Any) -> SQSRecord:
    return SQSRecord({"messageId": "m-1", "body": json.dumps(body), "attributes": {}})


MESSAGE: dict[str, Any] = {"order_id": "o-1", "run": 1, "idempotency_key": "http#dev#r1#v:k"}


def test_an_orders_message_parses_field_for_field():
    assert parse_body(_record(MESSAGE), ORDER_MESSAGES) == RunMessage("o-1", 1, "http#dev#r1#v:k")


# Every bound the worker held with pydantic, now checked by hand (reliability.fields): each is poison
# naming its field.
MALFORMED_MESSAGES = [
    ("order_id", {**MESSAGE, "order_id": ""}),
    ("order_id", {**MESSAGE, "order_id": "o 1"}),
    ("order_id", {**MESSAGE, "order_id": "o-1\n"}),
    ("order_id", {**MESSAGE, "order_id": "o" * 65}),
    ("order_id", {**MESSAGE, "order_id": 1}),
    ("order_id", {"run": 1, "idempotency_key": "k"}),
    ("run", {**MESSAGE, "run": 0}),
    ("run", {**MESSAGE, "run": "1"}),
    ("run", {**MESSAGE, "run": True}),
    ("run", {**MESSAGE, "run": 1.0}),
    ("idempotency_key", {**MESSAGE, "idempotency_key": ""}),
    ("idempotency_key", {**MESSAGE, "idempotency_key": None}),
    ("extra", {**MESSAGE, "extra": 1}),
    ("body", [MESSAGE]),
    ("body", "o-1"),
]


@pytest.mark.parametrize(("field", "body"), MALFORMED_MESSAGES)
def test_a_malformed_orders_message_is_poison_naming_the_field(field: str, body: Any):
    with pytest.raises(PoisonMessage) as refused:
        parse_body(_record(body), ORDER_MESSAGES)
    assert refused.value.reason.startswith(f"wrong shape: {field}")


def test_an_event_without_a_stage_or_with_a_field_more_still_parses():
    """Events published before the stage was stamped carry none (a consumer judges them by their
    order alone); a field a later publisher adds is ignored, never poison."""
    request = CreateOrderRequest(customer_id="c", currency="EUR", items=[OrderItem(sku="sku-1", quantity=1)])
    order = new_order(
        request=request,
        catalog={"sku-1": CatalogItem(sku="sku-1", price_cents=300, stock=5)},
        stored_idempotency_key="k",
        owner="caller-a",
        now=datetime(2026, 1, 1, tzinfo=UTC),
    )
    event: dict[str, Any] = dict(
        completed_event(stage="dev", order=order, run=1, occurred_at=datetime(2026, 1, 1, tzinfo=UTC))
    )
    del event["stage"]
    parsed = parse_body(_record({**event, "channel": "web"}), OrderCompletedEvent)
    assert parsed.stage is None
    assert parsed.model_dump(mode="json") == {**event, "stage": None}
