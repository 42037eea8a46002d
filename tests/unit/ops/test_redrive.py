"""Redrive tools: native APIs where the endpoint has them, the documented fallbacks where not."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber
from moto import mock_aws

from ops.redrive import (
    Method,
    RedriveError,
    redrive_dlq,
    redrive_execution,
    redrive_failed_executions,
)
from reliability_helpers import lose_answer

REGION = "us-east-1"
FAILING = {"StartAt": "Boom", "States": {"Boom": {"Type": "Fail", "Error": "Crash", "Cause": "test"}}}
PASSING = {"StartAt": "Ok", "States": {"Ok": {"Type": "Pass", "End": True}}}


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        yield


def _queue_with_dlq(sqs: Any, name: str) -> tuple[str, str]:
    dlq = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    policy = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3})
    source = sqs.create_queue(QueueName=name, Attributes={"RedrivePolicy": policy})["QueueUrl"]
    return source, dlq


def _drain(sqs: Any, url: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    while batch := sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], VisibilityTimeout=60
    ).get("Messages"):
        messages.extend(batch)
    return messages


def _wait_closed(sfn: Any, arn: str) -> str:
    for _ in range(100):
        status = sfn.describe_execution(executionArn=arn)["status"]
        if status != "RUNNING":
            return str(status)
        time.sleep(0.05)
    raise AssertionError(f"{arn} still running")


def _state_machine(sfn: Any, definition: dict[str, Any]) -> str:
    return str(
        sfn.create_state_machine(
            name="wf", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/sfn"
        )["stateMachineArn"]
    )


def test_dlq_fallback_moves_every_message_with_its_attributes(aws: None) -> None:
    # Given a DLQ holding 13 messages, one with a poison reason attribute
    sqs = boto3.client("sqs", region_name=REGION)
    source, dlq = _queue_with_dlq(sqs, "orders")
    for i in range(12):
        sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps({"n": i}))
    reason = {"reason": {"DataType": "String", "StringValue": "conflicting execution"}}
    sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps({"n": 12}), MessageAttributes=reason)

    # When it is redriven on an endpoint without StartMessageMoveTask
    result = redrive_dlq(sqs, dlq_url=dlq)

    # Then the fallback moved all of them to the source queue, attributes intact, and says so
    assert result.method is Method.RECEIVE_SEND_DELETE
    assert (result.moved, result.destination_url) == (13, source)
    moved = _drain(sqs, source)
    assert sorted(json.loads(m["Body"])["n"] for m in moved) == list(range(13))
    assert [m["MessageAttributes"]["reason"]["StringValue"] for m in moved if "MessageAttributes" in m] == [
        "conflicting execution"
    ]
    assert _drain(sqs, dlq) == []


def test_dlq_fallback_refuses_to_guess_between_several_sources(aws: None) -> None:
    # Given one DLQ shared by two source queues
    sqs = boto3.client("sqs", region_name=REGION)
    _, dlq = _queue_with_dlq(sqs, "a")
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sqs.create_queue(
        QueueName="b",
        Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3})},
    )
    sqs.send_message(QueueUrl=dlq, MessageBody="{}")

    # When / Then: without a destination the tool stops and loses nothing
    with pytest.raises(RedriveError, match="2 queues"):
        redrive_dlq(sqs, dlq_url=dlq)
    assert len(_drain(sqs, dlq)) == 1


def test_dlq_uses_start_message_move_task_where_the_endpoint_has_it() -> None:
    # Given an endpoint that implements StartMessageMoveTask
    sqs = boto3.client("sqs", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    url, arn = "https://sqs/123/orders-dlq", "arn:aws:sqs:us-east-1:123:orders-dlq"
    with Stubber(sqs) as stub:
        stub.add_response("get_queue_attributes", {"Attributes": {"QueueArn": arn}})
        stub.add_response("start_message_move_task", {"TaskHandle": "task-1"}, {"SourceArn": arn})
        # When
        result = redrive_dlq(sqs, dlq_url=url)
    # Then the native task was started, back to the source queue(s)
    assert (result.method, result.task_handle, result.moved) == (
        Method.START_MESSAGE_MOVE_TASK,
        "task-1",
        None,
    )


def test_dlq_redrive_propagates_real_failures() -> None:
    # Given an endpoint that has the API but refuses the call
    sqs = boto3.client("sqs", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(sqs) as stub:
        stub.add_response("get_queue_attributes", {"Attributes": {"QueueArn": "arn:aws:sqs:us-east-1:1:q"}})
        stub.add_client_error("start_message_move_task", "AccessDeniedException", http_status_code=403)
        stub.add_client_error("list_message_move_tasks", "AccessDeniedException", http_status_code=403)
        # When / Then: no silent fallback on an authorization error
        with pytest.raises(Exception, match="AccessDenied"):
            redrive_dlq(sqs, dlq_url="https://sqs/1/q")


@pytest.mark.parametrize(
    ("status", "started_ago_ms", "moved"),
    [("RUNNING", 0, True), ("COMPLETED", 0, False), ("RUNNING", 3_600_000, False)],
)
def test_a_move_task_whose_start_landed_but_whose_answer_was_lost_is_that_task(
    status: str, started_ago_ms: int, moved: bool
) -> None:
    # Given an endpoint with StartMessageMoveTask where the start landed, its answer was lost, and
    # SQS refused the SDK's resend (one active task per queue; moto has no such API, so stubbed)
    sqs = boto3.client("sqs", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    url, arn = "https://sqs/123/orders-dlq", "arn:aws:sqs:us-east-1:123:orders-dlq"
    task = {
        "TaskHandle": "task-1",
        "Status": status,
        "SourceArn": arn,
        "StartedTimestamp": int(time.time() * 1000) - started_ago_ms,
    }
    with Stubber(sqs) as stub:
        stub.add_response("get_queue_attributes", {"Attributes": {"QueueArn": arn}})
        stub.add_client_error("start_message_move_task", "UnsupportedOperation", http_status_code=400)
        stub.add_response("list_message_move_tasks", {"Results": [task]}, {"SourceArn": arn, "MaxResults": 1})
        # When the operator moves the DLQ
        if not moved:
            # Then a task that is not running, or began before this call, is not this call's
            with pytest.raises(Exception, match="UnsupportedOperation"):
                redrive_dlq(sqs, dlq_url=url)
            return
        result = redrive_dlq(sqs, dlq_url=url)
    # Then it is the task this call started (not the refusal of its resend)
    assert (result.method, result.task_handle) == (Method.START_MESSAGE_MOVE_TASK, "task-1")


def test_workflow_fallback_restarts_with_the_same_input_and_a_new_name(aws: None) -> None:
    # Given a failed execution carrying an execution token
    sfn = boto3.client("stepfunctions", region_name=REGION)
    machine = _state_machine(sfn, FAILING)
    payload = json.dumps({"order_id": "o-1", "run": 1, "token": "tok-1"})
    failed = sfn.start_execution(stateMachineArn=machine, name="o-1-r1", input=payload)["executionArn"]
    assert _wait_closed(sfn, failed) == "FAILED"

    # When it is redriven on an endpoint without RedriveExecution
    result = redrive_execution(sfn, execution_arn=failed)

    # Then a restart with the same input (the same token) ran, and the result says which method
    assert result.method is Method.RESTART
    restarted = sfn.describe_execution(executionArn=result.execution_arn)
    assert (restarted["name"], restarted["input"]) == ("o-1-r1-restart-1", payload)


def test_redrive_failed_executions_redrives_only_the_latest_failed_attempt(aws: None) -> None:
    # Given one order whose execution and first restart failed, and one that succeeded
    sfn = boto3.client("stepfunctions", region_name=REGION)
    machine = _state_machine(sfn, FAILING)
    first = sfn.start_execution(stateMachineArn=machine, name="o-1-r1", input="{}")["executionArn"]
    _wait_closed(sfn, first)
    _wait_closed(sfn, redrive_execution(sfn, execution_arn=first).execution_arn)

    # When every failed execution is redriven
    results = redrive_failed_executions(sfn, state_machine_arn=machine)

    # Then only the latest attempt is redriven, under the next free name
    assert [r.failed_execution_arn.rsplit(":", 1)[1] for r in results] == ["o-1-r1-restart-1"]
    assert results[0].execution_arn.endswith(":o-1-r1-restart-2")


def test_a_succeeded_execution_is_not_redriven(aws: None) -> None:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    machine = _state_machine(sfn, PASSING)
    done = sfn.start_execution(stateMachineArn=machine, name="o-2-r1", input="{}")["executionArn"]
    assert _wait_closed(sfn, done) == "SUCCEEDED"
    with pytest.raises(RedriveError, match="SUCCEEDED"):
        redrive_execution(sfn, execution_arn=done)
    assert redrive_failed_executions(sfn, state_machine_arn=machine) == []


def test_workflow_uses_redrive_execution_where_the_endpoint_has_it() -> None:
    sfn = boto3.client("stepfunctions", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    arn = "arn:aws:states:us-east-1:123:execution:wf:o-1-r1"
    described = {
        "executionArn": arn,
        "stateMachineArn": "arn:aws:states:us-east-1:123:stateMachine:wf",
        "name": "o-1-r1",
        "status": "FAILED",
        "startDate": "2026-11-22T00:00:00Z",
        "input": "{}",
    }
    with Stubber(sfn) as stub:
        stub.add_response("describe_execution", described)
        stub.add_response("redrive_execution", {"redriveDate": "2026-11-22T00:01:00Z"}, {"executionArn": arn})
        result = redrive_execution(sfn, execution_arn=arn)
    assert (result.method, result.execution_arn) == (Method.REDRIVE_EXECUTION, arn)


def test_a_poison_message_dead_lettered_again_during_the_move_is_not_moved_twice(aws: None) -> None:
    # Given a DLQ with one message, and a consumer that dead-letters it again at once (poison)
    sqs = boto3.client("sqs", region_name=REGION)
    source, dlq = _queue_with_dlq(sqs, "notify")
    sqs.send_message(QueueUrl=dlq, MessageBody="poison")
    time.sleep(0.01)  # its SentTimestamp is before the move starts
    original_send = sqs.send_message

    def consumer_rejects(**kwargs: Any) -> Any:
        response = original_send(**kwargs)
        if kwargs["QueueUrl"] == source:
            time.sleep(0.01)
            original_send(QueueUrl=dlq, MessageBody=kwargs["MessageBody"])  # the handler's own DLQ send
        return response

    sqs.send_message = consumer_rejects

    # When the DLQ is redriven with the fallback
    result = redrive_dlq(sqs, dlq_url=dlq)

    # Then the move ends after the one message that was there; the new copy waits in the DLQ
    assert result.moved == 1
    assert [m["Body"] for m in _drain(sqs, dlq)] == ["poison"]


def test_an_execution_redriven_already_is_not_restarted_again() -> None:
    # Given an aborted execution whose restart (same token) succeeded
    sfn = boto3.client("stepfunctions", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    machine = "arn:aws:states:us-east-1:123:stateMachine:wf"
    arn = "arn:aws:states:us-east-1:123:execution:wf:o-1-r1"
    first = {"executionArn": arn, "stateMachineArn": machine, "name": "o-1-r1", "status": "ABORTED"}
    restart = {**first, "executionArn": arn + "-restart-1", "name": "o-1-r1-restart-1", "status": "SUCCEEDED"}
    with Stubber(sfn) as stub:
        stub.add_response("describe_execution", {**first, "startDate": "2026-11-22T00:00:00Z", "input": "{}"})
        stub.add_client_error("redrive_execution", "500", http_status_code=500)
        stub.add_response(
            "list_executions",
            {
                "executions": [
                    {**restart, "startDate": "2026-11-22T00:01:00Z"},
                    {**first, "startDate": "2026-11-22T00:00:00Z"},
                ]
            },
        )
        # When it is redriven by its ARN again / Then the tool refuses and says where the work went
        with pytest.raises(RedriveError, match="o-1-r1-restart-1 is SUCCEEDED"):
            redrive_execution(sfn, execution_arn=arn)


def test_a_restart_whose_start_landed_but_whose_answer_was_lost_is_that_restart(aws: None) -> None:
    # Given a failed execution, and an operator's client that retries as botocore's standard mode
    # does (ops.target's)
    sfn = boto3.client("stepfunctions", region_name=REGION, config=Config(retries={"mode": "standard"}))
    machine = _state_machine(sfn, FAILING)
    payload = json.dumps({"order_id": "o-1", "run": 1, "token": "tok-1"})
    failed = sfn.start_execution(stateMachineArn=machine, name="o-1-r1", input=payload)["executionArn"]
    assert _wait_closed(sfn, failed) == "FAILED"
    # And the restart's StartExecution lands but its answer is lost; the SDK sends it again once
    # the restart has ended (Step Functions answers a resend as the start only while it runs)
    attempts = lose_answer(sfn, "StartExecution")
    restart_arn = failed.replace(":o-1-r1", ":o-1-r1-restart-1")
    observer = boto3.client("stepfunctions", region_name=REGION)

    def the_restart_ends_before_the_resend(**_: Any) -> None:
        if len(attempts) == 2:
            _wait_closed(observer, restart_arn)

    sfn.meta.events.register("before-send.sfn.StartExecution", the_restart_ends_before_the_resend)
    # When it is redriven (restarted: the endpoint has no RedriveExecution)
    result = redrive_execution(sfn, execution_arn=failed)
    # Then the result is that restart (not ExecutionAlreadyExists), and no second one was started
    assert len(attempts) == 2
    assert (result.method, result.execution_arn) == (Method.RESTART, restart_arn)
    names = [e["name"] for e in sfn.list_executions(stateMachineArn=machine)["executions"]]
    assert sorted(names) == ["o-1-r1", "o-1-r1-restart-1"]
