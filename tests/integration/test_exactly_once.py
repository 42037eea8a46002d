"""Exactly once past the crash (issue 10): five schedules outside a frozen clock, each of which
produced a duplicate effect, a stranded order or a needless failure before its fix.

Time moves with `cloud.advance`, which also applies DynamoDB TTL deletion as AWS does, so a record
whose TTL is shorter than the window it must outlive is really gone when the key comes back.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ops.invariants import EntityRow, check
from ops.redrive import redrive_execution
from orders.adapters.aws import SqsQueue
from orders.adapters.order_store import DynamoOrderStore
from orders.runs import Reruns
from orders.workflow import SERVICE
from reliability.testing.crashpoints import CrashPlan
from simulator.cloud import InProcessCloud, LambdaError, running_cloud

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

DAY = 86400
# A leased step that dies 3 times uses up its FenceBusy retries: the execution fails (test_saga.py).
CRASHES_TO_FAIL = 3
ORDER = {"customer_id": "customer-10", "currency": "EUR", "items": [{"sku": "sku-9", "quantity": 2}]}


def _place(cloud: InProcessCloud, key: str, body: dict[str, Any] = ORDER) -> str:
    response = cloud.api("POST", "/orders", body=body, headers={"Idempotency-Key": key})
    assert response.status == 202, response.body
    return str(response.body["order_id"])


def _row(cloud: InProcessCloud, order_id: str) -> EntityRow:
    report = check(cloud.stores())
    assert report.ok, report.to_text()
    return report.row(order_id)


def _failed_execution(cloud: InProcessCloud) -> dict[str, Any]:
    cloud.settle()
    (listed,) = cloud.executions()
    execution = cloud.wait(listed["executionArn"])
    assert execution["status"] == "FAILED"
    return execution


def _redrive(cloud: InProcessCloud, execution: dict[str, Any]) -> None:
    restart = redrive_execution(cloud.sfn, execution_arn=execution["executionArn"])
    assert cloud.wait(restart.execution_arn)["status"] == "SUCCEEDED"
    cloud.settle()


def test_a_late_redrive_of_publish_events_notifies_and_counts_once(assembly):
    # Given PublishEvents sends to notify, then dies before the analytics send, until its retries
    # run out: the execution FAILS with the notification sent and the event not counted
    plan = CrashPlan.parse(f"after:SQS.SendMessage@publish-events={CRASHES_TO_FAIL}", mode="raise")
    with running_cloud(assembly, crash_plan=plan) as cloud:
        order_id = _place(cloud, "late-redrive")
        failed = _failed_execution(cloud)
        # When an operator redrives it two days later, as the alarm says (TTL has run meanwhile)
        assert cloud.advance(2 * DAY) > 0
        _redrive(cloud, failed)
        # Then the consumers still remembered the event id: one notification, one count
        row = _row(cloud, order_id)
        assert (row.status, row.effects["notify"], row.effects["analytics"]) == ("COMPLETED", 1, 1)


def test_a_redrive_past_the_providers_key_lifetime_charges_once(assembly):
    # Given ChargePayment charges and dies before completing, until its retries run out
    plan = CrashPlan.parse(f"fence:after-effect:ChargePayment@charge-payment={CRASHES_TO_FAIL}", mode="raise")
    with running_cloud(assembly, crash_plan=plan) as cloud:
        order_id = _place(cloud, "key-expired")
        failed = _failed_execution(cloud)
        # When the execution is redriven two days later, after the provider forgot the key
        lifetime = int(
            cloud.functions[cloud.function("ChargePayment")].environment["PROVIDER_KEY_LIFETIME_SECONDS"]
        )
        cloud.advance(lifetime + DAY)
        _redrive(cloud, failed)
        # Then the takeover found the charge by order and token and recorded it: one charge
        row = _row(cloud, order_id)
        assert (row.status, row.effects["ChargePayment"], row.effects["RecordLedger"]) == ("COMPLETED", 1, 1)
        assert row.effects["provider calls"] == 1


def test_an_sqs_5xx_in_publish_events_is_retried_to_completed(assembly):
    plan = CrashPlan.parse("error:SQS.SendMessage:InternalError@publish-events=1", mode="raise")
    with running_cloud(assembly, crash_plan=plan) as cloud:
        # Given the first send of PublishEvents fails with SQS's InternalError (500)
        order_id = _place(cloud, "sqs-5xx")
        cloud.settle()
        # Then the state machine retried it (TransientError) and the order completed, once
        (execution,) = cloud.wait_all()
        assert execution["status"] == "SUCCEEDED"
        publishes = [i.error_type for i in cloud.invocations if i.function == cloud.function("PublishEvents")]
        assert publishes == ["TransientError", None]
        row = _row(cloud, order_id)
        assert (
            row.status,
            row.effects["ChargePayment"],
            row.effects["notify"],
            row.effects["analytics"],
        ) == ("COMPLETED", 1, 1, 1)


def _set_price(cloud: InProcessCloud, sku: str, cents: int) -> None:
    cloud.dynamodb.update_item(
        TableName=cloud.outputs["InventoryTableName"],
        Key={"pk": {"S": f"sku#{sku}"}, "sk": {"S": "catalog"}},
        UpdateExpression="SET price_cents = :p",
        ExpressionAttributeValues={":p": {"N": str(cents)}},
    )


@pytest.mark.parametrize("side", ["before", "after"])
def test_a_crash_beside_the_enqueue_then_a_price_change_then_a_retry_gets_the_order(assembly, side: str):
    plan = CrashPlan.parse(f"{side}:SQS.SendMessage@api=1", mode="raise")
    with running_cloud(assembly, crash_plan=plan) as cloud:
        # Given the api dies just before (or just after) sending the order's message
        with pytest.raises(LambdaError, match=r"Runtime\.ExitError"):
            cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": f"crash-{side}"})
        if side == "after":
            cloud.settle()  # the message went out: the order completes while the client saw an error
        # And the catalog price changes before the client retries (past the in-progress window)
        _set_price(cloud, "sku-9", 12_345)
        cloud.advance(cloud.functions[cloud.function("Api")].timeout + 1)
        # When the client retries with the same key and body
        retry = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": f"crash-{side}"})
        # Then it gets its order (never a 409), which completes once at the price it was accepted at
        assert retry.status == 202, retry.body
        cloud.settle()
        order_id = retry.body["order_id"]
        row = _row(cloud, order_id)
        assert (row.status, row.effects["ChargePayment"], row.effects["ReserveInventory"]) == (
            "COMPLETED",
            1,
            1,
        )
        view = cloud.api("GET", f"/orders/{order_id}").body
        assert view["total_cents"] == 2 * 999 == view["charges"][0]["amount_cents"]
        assert len(cloud.executions()) == 1


def _run_message(cloud: InProcessCloud, order_id: str, run: int) -> dict[str, Any]:
    (stored,) = [
        item
        for item in cloud.dynamodb.scan(TableName=cloud.outputs["OrdersTableName"])["Items"]
        if item["sk"]["S"] == "order" and item["order_id"]["S"] == order_id
    ]
    return {"order_id": order_id, "run": run, "idempotency_key": stored["idempotency_key"]["S"]}


@pytest.mark.parametrize("state", ["completed", "running"])
def test_run_2_of_a_completed_or_running_order_charges_nothing(cloud: InProcessCloud, state: str):
    # Given an order whose run 1 completed, or is about to start
    order_id = _place(cloud, f"run-2-{state}")
    if state == "completed":
        cloud.settle()
    # When a run-2 message arrives that no operator decided on
    cloud.send("OrdersQueueUrl", _run_message(cloud, order_id, 2))
    cloud.settle()
    # Then it is dead-lettered with the reason, and run 1 is the only run: one charge
    (dead,) = cloud.messages("OrdersDlqUrl")
    assert "message run 2 is not order" in json.dumps(dead)
    assert [e["name"] for e in cloud.executions()] == [f"{order_id}-r1"]
    row = _row(cloud, order_id)
    assert (row.status, row.effects["ChargePayment"]) == ("COMPLETED", 1)


def test_run_2_starts_only_through_the_guarded_rerun_of_a_failed_order(cloud: InProcessCloud):
    # Given an order whose run 1 ended FAILED (declined, compensated)
    order_id = _place(cloud, "rerun", {**ORDER, "customer_id": "declined-10"})
    cloud.settle()
    reruns = Reruns(
        entity=SERVICE.entity,
        store=DynamoOrderStore(client=cloud.dynamodb, table_name=cloud.outputs["OrdersTableName"]),
        queue=SqsQueue(client=cloud.sqs, queue_url=cloud.outputs["OrdersQueueUrl"]),
    )
    # When the operator starts run 2
    assert reruns.start_next_run(order_id).run == 2
    cloud.settle()
    # Then run 2 ran under its own name and keys, declined again and compensated: nothing charged,
    # each run's reservation released (asserted on the stores: ops.invariants counts one
    # reservation per order, not per run)
    assert sorted(e["name"] for e in cloud.executions()) == [f"{order_id}-r1", f"{order_id}-r2"]
    assert cloud.api("GET", f"/orders/{order_id}").body["status"] == "FAILED"
    payments = cloud.dynamodb.query(
        TableName=cloud.outputs["PaymentsTableName"],
        KeyConditionExpression="pk = :pk AND begins_with(sk, :charge)",
        ExpressionAttributeValues={":pk": {"S": f"order#{order_id}"}, ":charge": {"S": "charge#"}},
    )["Items"]
    assert sorted(item["status"]["S"] for item in payments) == ["DECLINED", "DECLINED"]
    movements = cloud.dynamodb.query(
        TableName=cloud.outputs["InventoryTableName"],
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"order#{order_id}"}},
    )["Items"]
    assert (
        sorted(item["sk"]["S"].split("#")[0] for item in movements) == ["release"] * 2 + ["reservation"] * 2
    )


def test_a_late_copy_of_run_1s_message_after_a_rerun_is_acknowledged_not_dead_lettered(cloud: InProcessCloud):
    # Given an order whose run 1 ended FAILED (declined) and whose run 2 an operator started
    order_id = _place(cloud, "late-run-1", {**ORDER, "customer_id": "declined-11"})
    cloud.settle()
    assert cloud.rerun(order_id).run == 2
    cloud.settle()
    # When a straggling copy of run 1's message reaches the worker
    cloud.send("OrdersQueueUrl", _run_message(cloud, order_id, 1))
    cloud.settle()
    # Then it is a duplicate, acknowledged: nothing in the orders DLQ (no alarm, nobody paged),
    # no run started again, and the invariants hold for both runs
    assert cloud.messages("OrdersDlqUrl") == []
    assert sorted(e["name"] for e in cloud.executions()) == [f"{order_id}-r1", f"{order_id}-r2"]
    row = _row(cloud, order_id)
    assert (row.status, row.run, row.dead_letters) == ("FAILED", 2, [])
