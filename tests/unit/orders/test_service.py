"""Use cases over moto-backed adapters: placing, viewing, the saga steps and the consumers."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from aws_lambda_powertools import Logger, Metrics

from orders import items
from orders.adapters.dynamo import DynamoAggregates, DynamoCatalog, DynamoLedger, DynamoNotifications
from orders.adapters.order_store import DynamoOrderStore
from orders.adapters.payments import FakePaymentProvider
from orders.consumers import EventConsumer, effect_of
from orders.contract import CreateOrderRequest, OrderItem
from orders.domain import WorkflowInput, completed_event
from orders.errors import OrderConflict, OrderNotFound, OutOfStock, UnknownOrder, UnknownSku
from orders.events import OrderCompletedEvent
from orders.saga import SagaContext, StepRequest, run_step
from orders.service import OrderService
from reliability import FenceStore
from reliability.dedup import ConsumerDedup
from reliability.errors import EffectConditionFailed
from reliability.keys import execution_token
from reliability.telemetry import Telemetry

TELEMETRY = Telemetry(logger=Logger(service="test"), metrics=Metrics(namespace="test", service="test"))
OWNER = "arn:aws:iam::123456789012:user/alice"
OTHER = "arn:aws:iam::123456789012:user/mallory"


class ListQueue:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, body: Any) -> str:
        self.sent.append(dict(body))
        return str(len(self.sent))


def _service(ddb: Any, queue: ListQueue) -> OrderService:
    return OrderService(
        catalog=DynamoCatalog(client=ddb, table_name="inventory"),
        orders=DynamoOrderStore(client=ddb, table_name="orders"),
        payments=FakePaymentProvider(client=ddb, table_name="payments", key_lifetime_seconds=86400),
        queue=queue,
        clock=lambda: datetime.now(UTC),
        stage="dev",
        fences=lambda: _fences(ddb),
    )


def _state(ddb: Any, order_id: str, token: str) -> dict[str, Any]:
    """The workflow input the worker would start the order's run with."""
    order = DynamoOrderStore(client=ddb, table_name="orders").get(order_id)
    assert order is not None
    return WorkflowInput(terms=order, run=1, token=token).as_dict()


def _fences(ddb: Any, namespace: str = "saga") -> FenceStore:
    return FenceStore(
        client=ddb,
        table_name="fences",
        ttl_seconds=3600,
        telemetry=TELEMETRY,
        namespace=namespace,
        clock=time.time,
    )


def _request(customer: str = "c", sku: str = "sku-1", quantity: int = 2) -> CreateOrderRequest:
    return CreateOrderRequest(
        customer_id=customer, currency="EUR", items=[OrderItem(sku=sku, quantity=quantity)]
    )


def test_placing_twice_with_one_key_is_one_order_and_two_messages(ddb: Any):
    queue = ListQueue()
    service = _service(ddb, queue)

    first = service.place(_request(), stored_key="key-1", owner=OWNER, status_base="https://api/dev")
    second = service.place(_request(), stored_key="key-1", owner=OWNER)

    assert first.order_id == second.order_id
    assert first.status_url == f"https://api/dev/orders/{first.order_id}"
    # The message is re-sent (healing a crash between write and send); the worker dedupes it
    assert queue.sent == [{"order_id": first.order_id, "run": 1, "idempotency_key": "key-1"}] * 2
    view = service.view(first.order_id, caller=OWNER)
    assert (view.status, view.total_cents, view.steps, view.charges) == ("ACCEPTED", 398, {}, [])


def test_placing_an_unknown_sku_stores_and_sends_nothing(ddb: Any):
    queue = ListQueue()
    with pytest.raises(UnknownSku):
        _service(ddb, queue).place(_request(sku="sku-0"), stored_key="k", owner=OWNER)
    assert queue.sent == []
    assert ddb.scan(TableName="orders")["Count"] == 0


def test_another_callers_order_is_not_found(ddb: Any):
    # Given an order placed by one caller
    service = _service(ddb, ListQueue())
    order = service.place(_request(), stored_key="key-1", owner=OWNER)
    # When another caller asks for it by id, then it does not exist for them (404, as an unknown id)
    with pytest.raises(OrderNotFound):
        service.view(order.order_id, caller=OTHER)
    assert service.view(order.order_id, caller=OWNER).order_id == order.order_id


def test_an_order_stored_before_owners_is_not_found_by_anyone(ddb: Any):
    # Given an order item written before orders recorded their owner
    service = _service(ddb, ListQueue())
    order = service.place(_request(), stored_key="key-1", owner=OWNER)
    ddb.update_item(
        TableName="orders",
        Key=items.key(items.order_pk(order.order_id), items.ORDER_SK),
        UpdateExpression="REMOVE #owner",
        ExpressionAttributeNames={"#owner": "owner"},
    )
    # Then no caller reads it through the API (operators still have `make story`)
    with pytest.raises(OrderNotFound):
        service.view(order.order_id, caller=OWNER)


def test_a_retry_after_its_sku_left_the_catalog_gets_its_order(ddb: Any):
    # Given an order placed with a key, and then its sku removed from the catalog
    queue = ListQueue()
    service = _service(ddb, queue)
    first = service.place(_request(), stored_key="key-1", owner=OWNER)
    ddb.delete_item(TableName="inventory", Key=items.key(items.sku_pk("sku-1"), items.CATALOG_SK))
    # When the client retries with the same key and body (its HTTP record lost or expired)
    again = service.place(_request(), stored_key="key-1", owner=OWNER)
    # Then it gets its order back, not 422 UnknownSku; a new order with that sku is still refused
    assert again.order_id == first.order_id
    with pytest.raises(UnknownSku):
        service.place(_request(), stored_key="key-2", owner=OWNER)


def test_a_key_reused_with_another_body_after_its_record_expired_is_422(ddb: Any):
    service = _service(ddb, ListQueue())
    service.place(_request(quantity=2), stored_key="key-1", owner=OWNER)
    with pytest.raises(OrderConflict) as refused:
        service.place(_request(quantity=3), stored_key="key-1", owner=OWNER)
    assert (refused.value.status, refused.value.code) == (422, "IdempotencyKeyReused")
    ddb.delete_item(TableName="inventory", Key=items.key(items.sku_pk("sku-1"), items.CATALOG_SK))
    with pytest.raises(OrderConflict):
        service.place(_request(quantity=3), stored_key="key-1", owner=OWNER)


def test_viewing_an_unknown_order_is_not_found(ddb: Any):
    with pytest.raises(OrderNotFound):
        _service(ddb, ListQueue()).view("o-none", caller=OWNER)


def _saga(ddb: Any) -> SagaContext:
    return SagaContext(
        stage="dev",
        orders=DynamoOrderStore(client=ddb, table_name="orders"),
        clock=lambda: datetime.now(UTC),
        inventory=DynamoCatalog(client=ddb, table_name="inventory"),
        payments=FakePaymentProvider(client=ddb, table_name="payments", key_lifetime_seconds=86400),
        ledger=DynamoLedger(table_name="ledger"),
        event_queues=[ListQueue(), ListQueue()],
        tables={"inventory": "inventory", "ledger": "ledger", "payments": "payments", "orders": "orders"},
    )


def _stock(ddb: Any, sku: str) -> int:
    return int(
        ddb.get_item(TableName="inventory", Key={"pk": {"S": f"sku#{sku}"}, "sk": {"S": "catalog"}})["Item"][
            "stock"
        ]["N"]
    )


def test_a_step_runs_once_and_its_fence_is_its_status(ddb: Any):
    service = _service(ddb, ListQueue())
    order = service.place(_request(quantity=3), stored_key="k", owner=OWNER)
    state = _state(ddb, order.order_id, execution_token(stage="dev", business_id=order.order_id, run=1))
    ctx, fences = _saga(ddb), _fences(ddb)
    before = _stock(ddb, "sku-1")

    first = run_step(ctx, fences, "ReserveInventory", StepRequest(state, "a-1", 10))
    replay = run_step(ctx, fences, "ReserveInventory", StepRequest(state, "a-2", 10))

    assert first == replay == {"reserved": {"sku-1": 3}}
    assert _stock(ddb, "sku-1") == before - 3
    assert service.view(order.order_id, caller=OWNER).steps == {"ReserveInventory": "DONE"}
    # its record is on the reservation its effect wrote (orders.items.record_at), not in the fences
    token = state["token"]
    reservation = ddb.get_item(
        TableName="inventory", Key=items.CARRIERS["reservation"].key(order.order_id, token)
    )
    assert (reservation["Item"]["kind"]["S"], reservation["Item"]["state"]["S"]) == (
        "reservation",
        "COMPLETED",
    )
    assert "expiration" not in reservation["Item"]
    assert ddb.scan(TableName="fences")["Count"] == 0


def test_a_completed_compensation_marks_the_step_it_undid_compensated(ddb: Any):
    service = _service(ddb, ListQueue())
    order = service.place(_request(quantity=1), stored_key="k", owner=OWNER)
    state = _state(ddb, order.order_id, execution_token(stage="dev", business_id=order.order_id, run=1))
    ctx, fences = _saga(ddb), _fences(ddb)
    before = _stock(ddb, "sku-1")

    run_step(ctx, fences, "ReserveInventory", StepRequest(state, "a-1", 10))
    run_step(ctx, fences, "ReleaseInventory", StepRequest(state, "a-2", 10))

    assert _stock(ddb, "sku-1") == before
    steps = service.view(order.order_id, caller=OWNER).steps
    assert steps == {"ReserveInventory": "COMPENSATED", "ReleaseInventory": "DONE"}


def test_out_of_stock_marks_the_step_failed_and_replays_the_same_error(ddb: Any):
    ddb.update_item(
        TableName="inventory",
        Key={"pk": {"S": "sku#sku-2"}, "sk": {"S": "catalog"}},
        UpdateExpression="SET stock = :s",
        ExpressionAttributeValues={":s": {"N": "1"}},
    )
    service = _service(ddb, ListQueue())
    order = service.place(_request(sku="sku-2", quantity=2), stored_key="k", owner=OWNER)
    state = _state(ddb, order.order_id, execution_token(stage="dev", business_id=order.order_id, run=1))
    ctx, fences = _saga(ddb), _fences(ddb)

    for attempt in ("a-1", "a-2"):
        with pytest.raises(OutOfStock):
            run_step(ctx, fences, "ReserveInventory", StepRequest(state, attempt, 10))

    assert _stock(ddb, "sku-2") == 1
    assert service.view(order.order_id, caller=OWNER).steps == {"ReserveInventory": "FAILED"}
    # a late duplicate after a restock still gets the stored failure: the FAILED record is at the
    # reservation's key, so the write that would reserve is refused by it
    ddb.update_item(
        TableName="inventory",
        Key={"pk": {"S": "sku#sku-2"}, "sk": {"S": "catalog"}},
        UpdateExpression="SET stock = :s",
        ExpressionAttributeValues={":s": {"N": "5"}},
    )
    with pytest.raises(OutOfStock):
        run_step(ctx, fences, "ReserveInventory", StepRequest(state, "a-3", 10))
    assert _stock(ddb, "sku-2") == 5
    failed = ddb.get_item(
        TableName="inventory", Key=items.CARRIERS["reservation"].key(order.order_id, state["token"])
    )["Item"]
    assert failed["state"]["S"] == "FAILED"
    assert "kind" not in failed


def test_publish_sends_one_event_per_queue_with_a_stable_id(ddb: Any):
    order = _service(ddb, ListQueue()).place(_request(), stored_key="k", owner=OWNER)
    state = _state(ddb, order.order_id, "dev.t.r1")
    ctx = _saga(ddb)

    result = run_step(ctx, _fences(ddb), "PublishEvents", StepRequest(state, "a-1", 10))

    notify, analytics = (queue.sent for queue in ctx.event_queues)  # type: ignore[attr-defined]
    assert len(notify) == len(analytics) == 1
    assert notify[0] == analytics[0]
    assert notify[0]["event_id"] == result["event_id"]
    OrderCompletedEvent.model_validate(notify[0])


_LINE = {"sku": "sku-1", "quantity": 1, "unit_price_cents": 199}
_INPUT = {"order_id": "o", "run": 1, "token": "t", "customer_id": "c", "currency": "EUR", "lines": [_LINE]}


@pytest.mark.parametrize(
    "state",
    [
        {},
        {"order_id": "o", "run": 1, "token": "t"},  # the input before the order's terms were carried
        {**_INPUT, "run": "x"},
        {**_INPUT, "lines": []},
        {**_INPUT, "lines": [{"sku": "sku-1"}]},
    ],
)
def test_a_step_input_that_is_not_a_workflow_input_is_rejected(ddb: Any, state: dict):
    with pytest.raises(UnknownOrder):
        run_step(_saga(ddb), _fences(ddb), "MarkCompleted", StepRequest(state, "a", 10))


def test_finishing_an_order_that_does_not_exist_writes_nothing(ddb: Any):
    with pytest.raises(EffectConditionFailed):
        run_step(_saga(ddb), _fences(ddb), "MarkCompleted", StepRequest(_INPUT, "a", 10))
    assert ddb.scan(TableName="orders")["Count"] == 0


def test_consumers_apply_each_event_once(ddb: Any):
    ports = SimpleNamespace(
        notifications=DynamoNotifications(table_name="notifications"),
        aggregates=DynamoAggregates(table_name="aggregates"),
    )
    notify, analytics = (
        EventConsumer(
            name=name,
            effect=effect_of(name),
            ports=ports,
            orders=DynamoOrderStore(client=ddb, table_name="orders"),
            dedup=ConsumerDedup(fences=_fences(ddb, name), consumer=name, telemetry=TELEMETRY),
        )
        for name in ("notify", "analytics")
    )
    accepted = _service(ddb, ListQueue()).place(_request(quantity=1), stored_key="k", owner=OWNER)
    order = DynamoOrderStore(client=ddb, table_name="orders").get(accepted.order_id)
    assert order is not None
    event = OrderCompletedEvent.model_validate(
        completed_event(stage="-", order=order, run=1, occurred_at=datetime(2026, 11, 22, 5, tzinfo=UTC))
    )

    assert [notify.apply(event) for _ in range(3)] == [True, False, False]
    assert [analytics.apply(event) for _ in range(3)] == [True, False, False]

    assert ddb.scan(TableName="notifications")["Count"] == 1
    total = ddb.get_item(TableName="aggregates", Key={"pk": {"S": "day#2026-11-22"}, "sk": {"S": "total"}})[
        "Item"
    ]
    assert (total["orders"]["N"], total["revenue_cents"]["N"]) == ("1", "199")
