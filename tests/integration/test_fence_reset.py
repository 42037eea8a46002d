"""An operator's fence reset, then a restart (same token, first state): that step runs again, only it."""

from __future__ import annotations

import io

import pytest

from ops.idem import Idem, describe_fence, fence_record_id
from ops.invariants import check
from ops.redrive import Method, redrive_execution
from ops.story.collect import record_location
from reliability.testing.crashpoints import CrashPlan
from simulator.cloud import Clock, InProcessCloud, running_cloud

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

STAGE = "local"
# PublishEvents dies after sending, on its attempt and on every retry that took over, until the
# retries are used up: the execution fails with the three steps before it COMPLETED on their fences.
CRASHES = 3
ORDER = {"customer_id": "customer-reset", "currency": "EUR", "items": [{"sku": "sku-9", "quantity": 1}]}
COMPLETED_BEFORE = ("ReserveInventory", "ChargePayment", "RecordLedger")


def _fence_writes(cloud: InProcessCloud, order_id: str) -> dict[str, str]:
    """When each step's record was last written, wherever orders.items.record_at puts it (a fence
    skip writes nothing)."""
    written = {}
    for step in (*COMPLETED_BEFORE, "PublishEvents"):
        _, token = fence_record_id(order_id, step, stage=STAGE)
        table, key = record_location(cloud.outputs, entity_id=order_id, token=token, step=step)
        item = cloud.dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True)
        written[step] = item["Item"]["updated_at"]["N"]
    return written


def test_a_fence_reset_then_a_restart_reruns_that_step_and_only_that_step(assembly):
    clock = Clock()
    plan = CrashPlan.parse(f"fence:after-effect:PublishEvents={CRASHES}", mode="raise")
    with running_cloud(assembly, crash_plan=plan, clock=clock) as cloud:
        # Given an order whose execution failed in PublishEvents, after three steps completed
        response = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "fence-reset-1"})
        order_id = str(response.body["order_id"])
        cloud.settle()
        (listed,) = cloud.executions()
        first = cloud.wait(listed["executionArn"])
        assert first["status"] == "FAILED"
        status = cloud.api("GET", f"/orders/{order_id}").body
        assert status["steps"] == dict.fromkeys(COMPLETED_BEFORE, "DONE")
        before = _fence_writes(cloud, order_id)

        # When an operator resets ChargePayment's fence (fence-reset, confirmed) and restarts
        record_id, _ = fence_record_id(order_id, "ChargePayment", stage=STAGE)
        console = io.StringIO()
        idem = Idem(
            dynamodb=cloud.dynamodb,
            table=cloud.outputs["FenceTableName"],
            console=console,
            confirm=lambda _question: True,
            clock=clock,
        )
        assert idem.forget(record_id, lambda item: describe_fence(item, now=clock()), what="fence")
        assert "state    COMPLETED" in console.getvalue()  # it printed what it deleted
        clock.advance(cloud.functions[cloud.function("PublishEvents")].timeout + 1)  # the dead lease
        # (a plain redrive resumes at PublishEvents, as AWS's does, and never enters ChargePayment
        # again: an earlier step runs again only from the first state, under the same token)
        restart = redrive_execution(cloud.sfn, execution_arn=first["executionArn"], restart=True)
        assert restart.method == Method.RESTART
        second = cloud.wait(restart.execution_arn)
        cloud.settle()

        # Then ChargePayment ran again (a new fence record, a second call to the provider); the other
        # completed steps were skipped by their fences (their records untouched since)
        assert second["status"] == "SUCCEEDED"
        after = _fence_writes(cloud, order_id)
        assert after["ChargePayment"] != before["ChargePayment"]
        assert {step: after[step] for step in ("ReserveInventory", "RecordLedger")} == {
            step: before[step] for step in ("ReserveInventory", "RecordLedger")
        }
        # And re-running the charge is safe: the provider saw the same key and charged once
        status = cloud.api("GET", f"/orders/{order_id}").body
        assert len(status["provider_calls"]) == 2
        assert len(status["charges"]) == 1
        assert len({call["idempotency_key"] for call in status["provider_calls"]}) == 1
        report = check(cloud.stores())
        assert report.ok, report.to_text()
