"""Step Functions executions run one at a time, in start order, where a caller waits for them
(`simulator.executions`): what makes one schedule of actions have one outcome."""

from __future__ import annotations

import json
from typing import Any

from simulator.cloud import InProcessCloud

BODY = {"customer_id": "customer-5", "currency": "EUR", "items": [{"sku": "sku-2", "quantity": 1}]}


def _two_started(cloud: InProcessCloud) -> list[str]:
    """Two orders whose executions the worker has started (and nobody has waited for yet)."""
    for key in ("queued-1", "queued-2"):
        assert cloud.api("POST", "/orders", body=BODY, headers={"Idempotency-Key": key}).status == 202
    cloud.drain("OrdersQueueUrl", "Worker")
    return [e["executionArn"] for e in sorted(cloud.executions(), key=lambda e: e["startDate"])]


def _order_of(cloud: InProcessCloud, execution_arn: str) -> str:
    return str(json.loads(cloud.sfn.describe_execution(executionArn=execution_arn)["input"])["order_id"])


def _is_step(event: Any) -> bool:
    """A workflow step's event (it carries the run's fencing token)."""
    return isinstance(event, dict) and "token" in event and "order_id" in event


def test_a_started_execution_is_running_and_no_step_runs_until_someone_waits(cloud: InProcessCloud) -> None:
    # Given two orders whose workflows the worker started
    arns = _two_started(cloud)

    # Then both are RUNNING, queued, and no step function has been invoked yet
    assert [cloud.sfn.describe_execution(executionArn=a)["status"] for a in arns] == ["RUNNING"] * 2
    assert len(cloud.queued_executions) == 2
    steps = {cloud.function("ReserveInventory"), cloud.function("MarkCompleted")}
    assert not [i for i in cloud.invocations if i.function in steps]


def test_waiting_runs_the_queued_executions_one_after_the_other_in_start_order(cloud: InProcessCloud) -> None:
    # Given two started executions
    arns = _two_started(cloud)
    before = len(cloud.invocations)

    # When a caller waits for them
    ended = cloud.wait_all()

    # Then both succeeded, and every step of the first ran before any step of the second
    assert {e["status"] for e in ended} == {"SUCCEEDED"}
    first, second = (_order_of(cloud, a) for a in arns)
    runs = [i.event["order_id"] for i in cloud.invocations[before:] if _is_step(i.event)]
    assert runs == [first] * runs.count(first) + [second] * runs.count(second)
    assert runs.count(first) >= 5
    assert runs.count(second) >= 5
    assert len(cloud.queued_executions) == 0


def test_an_execution_stopped_before_it_ran_ends_aborted_without_running_a_step(
    cloud: InProcessCloud,
) -> None:
    # Given a started execution nobody has waited for yet
    first, second = _two_started(cloud)
    before = len(cloud.invocations)

    # When an operator stops it, then somebody waits
    cloud.sfn.stop_execution(executionArn=first, error="OperatorStop")
    cloud.wait_all()

    # Then it ended ABORTED at its first state, and only the other execution's steps ran
    assert cloud.sfn.describe_execution(executionArn=first)["status"] == "ABORTED"
    history = cloud.sfn.get_execution_history(executionArn=first)["events"]
    assert [e["type"] for e in history] == ["ExecutionStarted", "ExecutionAborted"]
    ran = {i.event["order_id"] for i in cloud.invocations[before:] if _is_step(i.event)}
    assert ran == {_order_of(cloud, second)}
