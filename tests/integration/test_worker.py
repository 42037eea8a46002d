"""The orders-queue worker: duplicates, ExecutionAlreadyExists, poison."""

from __future__ import annotations

import json

import pytest

from ops.invariants import check
from orders.adapters.order_store import DynamoOrderStore
from orders.domain import WorkflowInput
from simulator.cloud import InProcessCloud

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

ORDER = {"customer_id": "customer-2", "currency": "USD", "items": [{"sku": "sku-2", "quantity": 1}]}


def _accept(cloud: InProcessCloud, key: str) -> dict:
    response = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": key})
    assert response.status == 202
    return response.body


def _queued(cloud: InProcessCloud) -> dict:
    """Take the api's message off the orders queue (so a test can deliver it as it likes)."""
    url = cloud.outputs["OrdersQueueUrl"]
    (message,) = cloud.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    cloud.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return json.loads(message["Body"])


def test_one_message_delivered_three_times_starts_one_execution(cloud: InProcessCloud):
    # Given an accepted order whose message SQS delivers three times (at-least-once)
    order = _accept(cloud, "three-deliveries")
    message = _queued(cloud)
    assert message == {"order_id": order["order_id"], "run": 1, "idempotency_key": message["idempotency_key"]}

    # When each delivery reaches the worker (one per batch, as separate pollers would)
    for _ in range(3):
        cloud.send("OrdersQueueUrl", message)
        result = cloud.pump("OrdersQueueUrl", "Worker")
        assert (result.received, result.failed) == (1, [])

    # Then there is one execution, named after the order and run, with the token in its input
    executions = cloud.executions()
    assert [e["name"] for e in executions] == [f"{order['order_id']}-r1"]
    described = cloud.sfn.describe_execution(executionArn=executions[0]["executionArn"])
    assert json.loads(described["input"]) == {
        "order_id": order["order_id"],
        "run": 1,
        "token": f"local.{order['order_id']}.r1",
        "customer_id": "customer-2",
        "currency": "USD",
        "lines": [{"sku": "sku-2", "quantity": 1, "unit_price_cents": 299}],
    }
    cloud.settle()
    report = check(cloud.stores())
    assert report.ok, report.to_text()


def test_duplicates_in_one_batch_start_one_execution(cloud: InProcessCloud):
    _accept(cloud, "batch-duplicates")
    message = _queued(cloud)
    for _ in range(3):
        cloud.send("OrdersQueueUrl", message)

    result = cloud.pump("OrdersQueueUrl", "Worker")

    assert (result.received, result.failed) == (3, [])
    assert len(cloud.executions()) == 1


def test_an_execution_that_already_exists_with_the_same_input_counts_as_success(cloud: InProcessCloud):
    # Given the execution was started before the order recorded it (a worker that died in between)
    order = _accept(cloud, "already-exists")
    message = _queued(cloud)
    name = f"{order['order_id']}-r1"
    stored = DynamoOrderStore(client=cloud.dynamodb, table_name=cloud.outputs["OrdersTableName"]).get(
        order["order_id"]
    )
    assert stored is not None
    payload = WorkflowInput(terms=stored, run=1, token=f"local.{order['order_id']}.r1").as_dict()
    started = cloud.sfn.start_execution(
        stateMachineArn=cloud.outputs["StateMachineArn"], name=name, input=json.dumps(payload)
    )
    cloud.wait(started["executionArn"])

    # When the message arrives
    cloud.send("OrdersQueueUrl", message)
    result = cloud.pump("OrdersQueueUrl", "Worker")

    # Then it is acknowledged, no second execution starts, and the order knows its execution
    assert (result.received, result.failed) == (1, [])
    assert len(cloud.executions()) == 1
    status = cloud.api("GET", f"/orders/{order['order_id']}")
    assert status.body["execution_arn"] == started["executionArn"]
    assert status.body["status"] == "COMPLETED"  # the saga finished first; RUNNING never overwrites it
    assert cloud.messages("OrdersDlqUrl") == []


def test_the_same_name_with_another_input_is_poison(cloud: InProcessCloud):
    # Given someone started the order's execution name with a different input (one naming no
    # order, so that execution itself fails without touching anything)
    order = _accept(cloud, "conflicting-execution")
    message = _queued(cloud)
    name = f"{order['order_id']}-r1"
    foreign = {"order_id": "o-someone-else", "run": 1, "token": "local.o-someone-else.r1"}
    cloud.sfn.start_execution(
        stateMachineArn=cloud.outputs["StateMachineArn"], name=name, input=json.dumps(foreign)
    )
    cloud.wait_all()

    # When the worker gets the order's message
    cloud.send("OrdersQueueUrl", message)
    result = cloud.pump("OrdersQueueUrl", "Worker")

    # Then the message is acknowledged and dead-lettered with a reason, and nothing else moved
    assert (result.received, result.failed) == (1, [])
    (letter,) = cloud.messages("OrdersDlqUrl")
    assert letter["entity_id"] == order["order_id"]
    assert "different input" in letter["reason"]
    assert letter["source"] == "worker"
    assert len(cloud.executions()) == 1
    status = cloud.api("GET", f"/orders/{order['order_id']}")
    assert status.body["status"] == "ACCEPTED"
    assert status.body["execution_arn"] is None


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("{not json", "unparseable body"),
        (json.dumps({"order_id": "o-1"}), "wrong shape"),
        (json.dumps({"order_id": "o-missing", "run": 1, "idempotency_key": "k"}), "no order"),
    ],
)
def test_a_poison_message_is_dead_lettered_with_a_reason_and_nothing_is_half_applied(
    cloud: InProcessCloud, body: str, reason: str
):
    # Given a good order and a poison message in the same batch
    order = _accept(cloud, f"with-poison-{reason}")
    cloud.send("OrdersQueueUrl", body)

    # When the worker takes the batch
    result = cloud.pump("OrdersQueueUrl", "Worker")

    # Then the good record succeeds, the poison one is acknowledged and dead-lettered with a reason
    assert (result.received, result.failed) == (2, [])
    (letter,) = cloud.messages("OrdersDlqUrl")
    assert reason in letter["reason"]
    assert letter["body"] == body
    assert (
        cloud.sqs.get_queue_attributes(
            QueueUrl=cloud.outputs["OrdersQueueUrl"], AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]["ApproximateNumberOfMessages"]
        == "0"
    )
    # And nothing half-applied: one execution (the good order's), invariants hold
    assert [e["name"] for e in cloud.executions()] == [f"{order['order_id']}-r1"]
    cloud.settle()
    report = check(cloud.stores())
    assert report.ok, report.to_text()
