"""Regression tests for gaps found in the integration harness (lab/src/simulator/cloud.py) while
building lab/src/chaos/ on it (chaos.cloud.ChaosCloud worked around each). They were pinned here as
xfail(strict) and are now fixed at the root in the harness: a crash comes back as
`Runtime.ExitError`, `pump()` leaves a dead consumer's batch in the queue, and the harness `Clock`
drives Powertools' idempotency time."""

from __future__ import annotations

import json
from unittest import mock

import pytest

from orders.consumers import EventConsumer
from reliability.testing.crashpoints import CrashPlan, SimulatedCrash
from simulator.cloud import EVENTS_DIR as EVENTS
from simulator.cloud import LambdaError, running_cloud

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")

ORDER = {"customer_id": "customer-9", "currency": "EUR", "items": [{"sku": "sku-9", "quantity": 1}]}


def test_a_crash_in_raise_mode_is_retried_by_the_state_machine_like_a_dead_sandbox(assembly):
    # Given ReserveInventory (the first TransactWriteItems of the flow) dies after committing
    plan = CrashPlan.parse("after:DynamoDB.TransactWriteItems=1", mode="raise")
    with running_cloud(assembly, crash_plan=plan) as cloud:
        response = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "gap-exit"})
        assert response.status == 202
        cloud.settle()
        # Then Step Functions retries it (Runtime.ExitError is in every task's Retry) and succeeds
        (execution,) = cloud.executions()
        assert execution["status"] == "SUCCEEDED"


def test_pump_leaves_a_crashed_batch_in_the_queue(assembly):
    with running_cloud(assembly) as cloud:
        cloud.send(
            "NotifyQueueUrl", json.loads((EVENTS / "notify" / "batch.json").read_text())["Records"][0]["body"]
        )
        with mock.patch.object(EventConsumer, "apply", side_effect=SimulatedCrash("notify")):
            try:
                result = cloud.pump("NotifyQueueUrl", "Notify")
            except LambdaError:
                pytest.fail("pump() raised instead of returning the batch to the queue")
        assert result.received == 1
        assert result.failed  # back in the queue, as after the visibility timeout


def test_moving_the_clock_past_the_api_timeout_lets_the_client_retry_a_dead_request(assembly):
    # Given the api dies right after Powertools stored the request as in progress (its first PutItem)
    plan = CrashPlan.parse("after:DynamoDB.PutItem=1", mode="raise")
    with running_cloud(assembly, crash_plan=plan) as cloud:
        with pytest.raises(LambdaError):
            cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "gap-clock"})
        # When the in-progress window (the function's timeout) has passed on the harness clock
        cloud.clock.advance(cloud.functions[cloud.function("Api")].timeout + 1)
        retry = cloud.api("POST", "/orders", body=ORDER, headers={"Idempotency-Key": "gap-clock"})
        # Then the retry runs the request instead of answering "still in progress"
        assert retry.status == 202, retry.body
