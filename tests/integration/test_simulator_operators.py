"""Operator actions as simulator primitives, through the ops tools' own code: run N+1, a stop while
an invocation runs, a redrive days later (refused past Step Functions' 14-day window), a DLQ redrive."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from ops.invariants import check
from ops.redrive import RESTART_SAFE_SECONDS, Method, redrive_execution
from orders.errors import RerunRefused
from simulator.cloud import InProcessCloud
from simulator.observe import Write

DAY = 86_400
COMPLETED = {"customer_id": "customer-3", "currency": "EUR", "items": [{"sku": "sku-4", "quantity": 1}]}
DECLINED = {"customer_id": "declined-3", "currency": "EUR", "items": [{"sku": "sku-8", "quantity": 1}]}


def _order(cloud: InProcessCloud, key: str, body: dict) -> str:
    response = cloud.api("POST", "/orders", body=body, headers={"Idempotency-Key": key})
    assert response.status == 202
    return str(response.body["order_id"])


def _stopped_after_the_charge(cloud: InProcessCloud) -> tuple[str, str]:
    """An order whose execution an operator stops while ChargePayment runs (after its effect)."""
    stop = cloud.stop_during("ChargePayment", when="after")
    order_id = _order(cloud, "stopped-1", COMPLETED)
    cloud.settle()
    (arn,) = stop.stopped
    assert cloud.sfn.describe_execution(executionArn=arn)["status"] == "ABORTED"
    row = check(cloud.stores()).row(order_id)
    assert (row.status, row.effects["ChargePayment"]) == ("RUNNING", 1)  # the invocation's effect landed
    return order_id, arn


def test_a_stop_during_an_invocation_then_a_redrive_days_later_completes_once(cloud: InProcessCloud) -> None:
    # Given an execution stopped while ChargePayment ran
    order_id, arn = _stopped_after_the_charge(cloud)

    # When an operator redrives it 13 days later
    cloud.advance(13 * DAY)
    redriven = cloud.redrive(arn)
    cloud.settle()

    # Then the same execution resumes at the state it was stopped in, as RedriveExecution does
    assert (redriven.method, redriven.execution_arn) == (Method.REDRIVE_EXECUTION, arn)
    events = cloud.sfn.get_execution_history(executionArn=arn)["events"]
    entered = [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]
    assert entered[0] == "ChargePayment"
    assert cloud.sfn.describe_execution(executionArn=arn)["status"] == "SUCCEEDED"
    # And the order completes with the one charge (the fence skips ChargePayment)
    report = check(cloud.stores())
    row = report.row(order_id)
    assert (row.status, row.effects["ChargePayment"]) == ("COMPLETED", 1)
    assert not report.violations


def test_past_the_14_day_window_the_redrive_restarts_under_the_same_token(cloud: InProcessCloud) -> None:
    # Given an execution stopped while ChargePayment ran, 15 days ago
    order_id, arn = _stopped_after_the_charge(cloud)
    cloud.advance(15 * DAY)

    # When an operator redrives it: Step Functions refuses, as on AWS
    with pytest.raises(ClientError, match="ExecutionNotRedrivable"):
        cloud.sfn.redrive_execution(executionArn=arn)
    redriven = cloud.redrive(arn)
    cloud.settle()

    # Then ops.redrive restarted it under the same token (its fences still live): one charge
    assert redriven.method == Method.RESTART
    row = check(cloud.stores()).row(order_id)
    assert (row.status, row.effects["ChargePayment"]) == ("COMPLETED", 1)


def test_a_redrive_asked_again_with_its_client_token_redrives_once(cloud: InProcessCloud) -> None:
    # Given an execution stopped while ChargePayment ran, redriven by an operator
    _, arn = _stopped_after_the_charge(cloud)
    first = cloud.sfn.redrive_execution(executionArn=arn, clientToken="redrive-1")

    # When the same request comes again (the SDK's resend after a lost answer), as on AWS
    again = cloud.sfn.redrive_execution(executionArn=arn, clientToken="redrive-1")

    # Then it gets the first answer and nothing more is redriven; another token is refused
    assert again["redriveDate"] == first["redriveDate"]
    with pytest.raises(ClientError, match="ExecutionNotRedrivable"):
        cloud.sfn.redrive_execution(executionArn=arn, clientToken="redrive-2")
    cloud.settle()
    assert cloud.sfn.describe_execution(executionArn=arn)["status"] == "SUCCEEDED"


def test_once_its_fences_may_be_gone_an_asked_for_restart_is_refused(cloud: InProcessCloud) -> None:
    # Given an execution stopped after ChargePayment charged, longer ago than its fences surely live
    _order_id, arn = _stopped_after_the_charge(cloud)
    cloud.advance(RESTART_SAFE_SECONDS + DAY)

    # When an operator asks for a restart (`make redrive-workflow RESTART=1`), it is refused too
    sfn = cloud.operator_client("ops.redrive", "stepfunctions")
    assert redrive_execution(sfn, execution_arn=arn, restart=True, now=cloud.clock()).method == Method.REFUSED

    # Then nothing ran again (a restart would have charged a second time)
    assert len(cloud.executions()) == 1


def test_once_its_fences_may_be_gone_the_redrive_is_refused(cloud: InProcessCloud) -> None:
    # Given an execution stopped while ChargePayment ran, longer ago than its fences surely live
    order_id, arn = _stopped_after_the_charge(cloud)
    cloud.advance(RESTART_SAFE_SECONDS + DAY)

    # When an operator redrives it, it is refused: a restart could repeat effects
    assert cloud.redrive(arn).method == Method.REFUSED

    # Then nothing ran again
    assert len(cloud.executions()) == 1
    assert check(cloud.stores()).row(order_id).status == "RUNNING"


def test_a_stop_before_the_handler_runs_still_lets_the_invocation_finish(cloud: InProcessCloud) -> None:
    stop = cloud.stop_during("ReserveInventory", when="before")
    order_id = _order(cloud, "stopped-2", COMPLETED)
    cloud.settle()
    (arn,) = stop.stopped
    assert cloud.sfn.describe_execution(executionArn=arn)["status"] == "ABORTED"
    row = check(cloud.stores()).row(order_id)
    assert (row.status, row.effects["ReserveInventory"], row.effects["ChargePayment"]) == ("RUNNING", 1, 0)


def test_a_stopped_execution_is_aborted_at_once_while_its_invocation_runs_on(cloud: InProcessCloud) -> None:
    # Given an operator's StopExecution just as ChargePayment's invocation starts
    stop = cloud.stop_during("ChargePayment", when="before")
    seen: list[tuple[str, object]] = []
    charger = cloud.function("ChargePayment")

    def during_the_invocation(write: Write) -> None:  # each DynamoDB write, as it lands
        if write.caller is not None and write.caller.function == charger and not seen:
            described = cloud.sfn.describe_execution(executionArn=stop.stopped[0])
            seen.append((described["status"], described.get("stopDate")))

    cloud.write_observers.append(during_the_invocation)
    order_id = _order(cloud, "stopped-3", COMPLETED)
    cloud.settle()

    # Then, as on AWS, the execution was ABORTED from the stop on, while the invocation still ran
    assert [status for status, _ in seen] == ["ABORTED"]
    # and that invocation ran to its end (the charge landed), and no later state ran
    (arn,) = stop.stopped
    described = cloud.sfn.describe_execution(executionArn=arn)
    assert (described["status"], described["stopDate"]) == ("ABORTED", seen[0][1])
    row = check(cloud.stores()).row(order_id)
    assert (row.status, row.effects["ChargePayment"], row.effects["RecordLedger"]) == ("RUNNING", 1, 0)


def test_rerun_starts_run_2_of_a_failed_order_and_refuses_a_completed_one(cloud: InProcessCloud) -> None:
    # Given a declined order (FAILED on run 1) and a completed one
    declined = _order(cloud, "rerun-1", DECLINED)
    completed = _order(cloud, "rerun-2", COMPLETED)
    cloud.settle()

    # When an operator starts run 2 of each
    order = cloud.rerun(declined)
    with pytest.raises(RerunRefused):
        cloud.rerun(completed)
    cloud.settle()

    # Then the failed one ran again under run 2 (declined again), the completed one did not
    assert order.run == 2
    names = sorted(e["name"] for e in cloud.executions())
    assert names == sorted([f"{declined}-r1", f"{declined}-r2", f"{completed}-r1"])
    assert check(cloud.stores()).row(declined).status == "FAILED"


def test_redrive_dlq_sends_a_throttled_out_message_back_and_the_order_completes(
    cloud: InProcessCloud,
) -> None:
    # Given an order's message moved to the DLQ by throttled polls (its worker never ran)
    order_id = _order(cloud, "dlq-1", COMPLETED)
    while cloud.throttled_poll("OrdersQueueUrl").message_ids:
        pass
    assert len(cloud.messages("OrdersDlqUrl")) == 1

    # When an operator redrives the DLQ a day later
    cloud.advance(DAY)
    moved = cloud.redrive_dlq("OrdersDlqUrl")
    cloud.settle()

    # Then it was moved and the order completed once
    assert moved.moved == 1
    row = check(cloud.stores()).row(order_id)
    assert (row.status, row.effects["ChargePayment"]) == ("COMPLETED", 1)
