"""End to end: the orders API over HTTP, the queues and the workflow through AWS APIs only."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.e2e.conftest import E2ETarget, wait_for

pytestmark = pytest.mark.e2e

FINAL = {"COMPLETED", "FAILED"}


def _key() -> str:
    return f"e2e-{uuid.uuid4().hex[:12]}"


def _order(customer: str = "customer-e2e", sku: str = "sku-2", quantity: int = 1) -> dict[str, Any]:
    return {"customer_id": customer, "currency": "EUR", "items": [{"sku": sku, "quantity": quantity}]}


def _finished(e2e: E2ETarget, order_id: str) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        response = e2e.api.read(order_id)
        assert response.status == 200, response.text
        return response.json if response.json["status"] in FINAL else None

    return wait_for(f"order {order_id} to finish", probe)


def _stock(e2e: E2ETarget, sku: str) -> int:
    item = e2e.client("dynamodb").get_item(
        TableName=e2e.output("InventoryTableName"),
        Key={"pk": {"S": f"sku#{sku}"}, "sk": {"S": "catalog"}},
        ConsistentRead=True,
    )["Item"]
    return int(item["stock"]["N"])


def _executions(e2e: E2ETarget, order_id: str) -> list[dict[str, Any]]:
    sfn = e2e.client("stepfunctions")
    return [
        execution
        for page in sfn.get_paginator("list_executions").paginate(
            stateMachineArn=e2e.output("StateMachineArn")
        )
        for execution in page["executions"]
        if execution["name"].startswith(order_id)
    ]


def _queue_drained(e2e: E2ETarget, queue_url: str) -> bool | None:
    attributes = e2e.client("sqs").get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return True if all(value == "0" for value in attributes.values()) else None


def test_an_order_completes_with_one_charge(e2e: E2ETarget):
    # Given a catalog sku, When a client places an order
    created = e2e.api.create(_order(), key=_key())

    # Then it is accepted with a status URL that answers, and the workflow completes it
    assert created.status == 202, created.text
    assert created.json["status"] == "ACCEPTED"
    status_url = created.json["status_url"]
    assert status_url.startswith(("http://", "https://"))
    assert e2e.api.request("GET", status_url).status == 200
    view = _finished(e2e, created.json["order_id"])
    assert view["status"] == "COMPLETED"
    assert len(view["charges"]) == 1
    assert set(view["steps"].values()) == {"DONE"}


def test_the_same_request_five_times_is_one_order_with_identical_replays(e2e: E2ETarget):
    key, body = _key(), _order(quantity=2)

    # When the same request is sent five times
    responses = [e2e.api.create(body, key=key) for _ in range(5)]

    # Then one answer, four replays of it, one order, one charge
    assert {r.status for r in responses} == {202}
    assert all(r.text == responses[0].text for r in responses)
    assert [r.header("Idempotent-Replayed") for r in responses[1:]] == ["true"] * 4
    order_id = responses[0].json["order_id"]
    assert len(_finished(e2e, order_id)["charges"]) == 1
    assert len(_executions(e2e, order_id)) == 1


def test_the_same_key_with_another_body_is_422(e2e: E2ETarget):
    key = _key()
    assert e2e.api.create(_order(quantity=1), key=key).status == 202

    conflict = e2e.api.create(_order(quantity=3), key=key)

    assert conflict.status == 422
    assert conflict.json["error"] == "IdempotencyKeyReused"
    assert conflict.json["message"]


@pytest.mark.parametrize(
    ("body", "key"),
    [
        pytest.param(json.dumps(_order()), None, id="missing-key"),
        pytest.param('{"customer_id": "c", "items": [', "malformed", id="malformed-body"),
    ],
)
def test_bad_requests_are_400_with_a_json_error_body(e2e: E2ETarget, body: str, key: str | None):
    response = e2e.api.create(body, key=f"{_key()}-{key}" if key else None)

    assert response.status == 400, response.text
    assert "json" in (response.header("Content-Type") or "")
    assert set(response.json) == {"error", "message"}
    expected = {"IdempotencyKeyMissing"} if key is None else {"InvalidRequest", "MalformedBody"}
    assert response.json["error"] in expected


def test_an_unknown_order_is_404(e2e: E2ETarget):
    response = e2e.api.read(f"o-{uuid.uuid4().hex}")

    assert response.status == 404
    assert response.json["error"] == "OrderNotFound"


def test_duplicate_deliveries_of_one_orders_message_start_one_execution(e2e: E2ETarget):
    # Given a completed order and the message the API queued for it
    order_id = e2e.api.create(_order(), key=_key()).json["order_id"]
    assert _finished(e2e, order_id)["status"] == "COMPLETED"
    item = e2e.client("dynamodb").get_item(
        TableName=e2e.output("OrdersTableName"),
        Key={"pk": {"S": f"order#{order_id}"}, "sk": {"S": "order"}},
        ConsistentRead=True,
    )["Item"]
    message = {
        "order_id": order_id,
        "run": int(item["run"]["N"]),
        "idempotency_key": item["idempotency_key"]["S"],
    }

    # When SQS delivers it three more times
    queue = e2e.output("OrdersQueueUrl")
    for _ in range(3):
        e2e.client("sqs").send_message(QueueUrl=queue, MessageBody=json.dumps(message))
    wait_for("the worker to consume the copies", lambda: _queue_drained(e2e, queue))

    # Then there is still one execution and one charge
    assert len(_executions(e2e, order_id)) == 1
    assert len(_finished(e2e, order_id)["charges"]) == 1


def test_a_declined_payment_fails_the_order_and_releases_its_stock(e2e: E2ETarget):
    sku = "sku-13"  # only this test orders it
    before = _stock(e2e, sku)

    created = e2e.api.create(_order(customer="declined-e2e", sku=sku, quantity=4), key=_key())
    view = _finished(e2e, created.json["order_id"])

    assert view["status"] == "FAILED"
    assert view["steps"]["ChargePayment"] == "FAILED"
    assert view["steps"]["ReserveInventory"] == "COMPENSATED"
    assert view["charges"] == [] or all(c["status"] != "SUCCEEDED" for c in view["charges"])
    assert _stock(e2e, sku) == before


def test_a_poison_message_lands_in_the_dlq_with_a_reason(e2e: E2ETarget):
    marker = uuid.uuid4().hex
    sqs = e2e.client("sqs")
    sqs.send_message(QueueUrl=e2e.output("OrdersQueueUrl"), MessageBody=f"not an order {marker}")

    def dead_letter() -> dict[str, Any] | None:
        for message in sqs.receive_message(
            QueueUrl=e2e.output("OrdersDlqUrl"),
            MaxNumberOfMessages=10,
            VisibilityTimeout=0,
            MessageAttributeNames=["All"],
        ).get("Messages", []):
            if marker in message["Body"]:
                return message
        return None

    letter = wait_for("the poison message in the orders DLQ", dead_letter)
    attributes = letter.get("MessageAttributes", {})
    assert attributes["reason"]["StringValue"]
    assert attributes["source"]["StringValue"] == "worker"
