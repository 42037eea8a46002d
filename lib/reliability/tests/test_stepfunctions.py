"""The Step Functions adapters: the request each sends, what it answers, how its errors map.

`StepFunctionsWorkflow` (Standard) starts one execution per name and answers a second start of the
same input with the first's ARN; `ExpressStepFunctionsWorkflow` runs an execution and answers how
it ended, a failed Lambda task's cause read as its error message. Requests are checked exactly with
botocore's Stubber; the Standard dedup runs on moto too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from reliability.errors import ExecutionConflict, TransientError
from reliability.stepfunctions import ExpressStepFunctionsWorkflow, StepFunctionsWorkflow, execution_arn
from reliability.workflow_runs import ExecutionEnd
from reliability_helpers import REGION

MACHINE = "arn:aws:states:eu-west-1:111122223333:stateMachine:retrysafe-dev-visit-workflow"
EXECUTION = "arn:aws:states:eu-west-1:111122223333:execution:retrysafe-dev-visit-workflow:v-1-r1"
EXPRESS = "arn:aws:states:eu-west-1:111122223333:stateMachine:retrysafe-dev-visit-express"
# Keys out of order: the input the adapters send has them sorted (the same payload, the same bytes).
PAYLOAD = {"visit_id": "v-1", "run": 1, "token": "t-1", "seats": 2}
SORTED_INPUT = '{"run": 1, "seats": 2, "token": "t-1", "visit_id": "v-1"}'
STARTED = datetime(2026, 1, 1, 0, 0, 0, 250000, tzinfo=UTC)
STOPPED = datetime(2026, 1, 1, 0, 0, 3, 500000, tzinfo=UTC)


@pytest.fixture
def sfn() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("stepfunctions", region_name=REGION)
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def _start_params(name: str = "v-1-r1") -> dict[str, Any]:
    return {"stateMachineArn": MACHINE, "name": name, "input": SORTED_INPUT}


# --- the execution's ARN ----------------------------------------------------------------------


def test_an_execution_arn_is_the_state_machines_with_execution_and_its_name() -> None:
    assert execution_arn(MACHINE, "v-1-r1") == EXECUTION
    assert StepFunctionsWorkflow(client=None, state_machine_arn=MACHINE).execution_arn("v-1-r1") == EXECUTION


# --- Standard: one execution per name ---------------------------------------------------------


def test_a_start_sends_the_name_and_the_sorted_input_and_answers_the_executions_arn(
    sfn: tuple[Any, Stubber],
) -> None:
    client, stubber = sfn
    answer = {"executionArn": EXECUTION, "startDate": STARTED}
    stubber.add_response("start_execution", answer, _start_params())
    workflow = StepFunctionsWorkflow(client=client, state_machine_arn=MACHINE)
    assert workflow.start(name="v-1-r1", payload=PAYLOAD) == EXECUTION


def test_a_name_started_before_with_the_same_input_is_answered_with_its_arn(sfn: tuple[Any, Stubber]) -> None:
    client, stubber = sfn
    stubber.add_client_error("start_execution", "ExecutionAlreadyExists", expected_params=_start_params())
    stubber.add_response(
        "describe_execution",
        {
            "executionArn": EXECUTION,
            "stateMachineArn": MACHINE,
            "status": "RUNNING",
            "startDate": STARTED,
            "input": SORTED_INPUT,
        },
        {"executionArn": EXECUTION},
    )
    workflow = StepFunctionsWorkflow(client=client, state_machine_arn=MACHINE)
    assert workflow.start(name="v-1-r1", payload=PAYLOAD) == EXECUTION


@pytest.mark.parametrize(
    "described",
    [
        {"input": json.dumps({**PAYLOAD, "token": "t-2"})},  # another input
        {},  # its input withheld (not readable): never taken for ours
    ],
)
def test_a_name_started_before_with_another_input_is_a_conflict(
    sfn: tuple[Any, Stubber], described: dict[str, Any]
) -> None:
    client, stubber = sfn
    stubber.add_client_error("start_execution", "ExecutionAlreadyExists", expected_params=_start_params())
    stubber.add_response(
        "describe_execution",
        {"executionArn": EXECUTION, "stateMachineArn": MACHINE, "status": "SUCCEEDED", "startDate": STARTED}
        | described,
        {"executionArn": EXECUTION},
    )
    workflow = StepFunctionsWorkflow(client=client, state_machine_arn=MACHINE)
    with pytest.raises(ExecutionConflict) as conflict:
        workflow.start(name="v-1-r1", payload=PAYLOAD)
    assert str(conflict.value) == "execution v-1-r1 exists with a different input"


def test_another_refusal_of_the_start_propagates_as_it_is(sfn: tuple[Any, Stubber]) -> None:
    client, stubber = sfn
    stubber.add_client_error("start_execution", "InvalidName", expected_params=_start_params())
    with pytest.raises(ClientError) as refused:
        StepFunctionsWorkflow(client=client, state_machine_arn=MACHINE).start(name="v-1-r1", payload=PAYLOAD)
    assert not isinstance(refused.value, TransientError)
    assert refused.value.response["Error"]["Code"] == "InvalidName"


def test_a_throttled_start_is_a_transient_error_naming_the_call(sfn: tuple[Any, Stubber]) -> None:
    client, stubber = sfn
    stubber.add_client_error("start_execution", "ThrottlingException", expected_params=_start_params())
    with pytest.raises(TransientError) as throttled:
        StepFunctionsWorkflow(client=client, state_machine_arn=MACHINE).start(name="v-1-r1", payload=PAYLOAD)
    assert str(throttled.value) == "start execution: ThrottlingException"


def test_a_throttled_read_of_the_existing_execution_is_a_transient_error_naming_the_call(
    sfn: tuple[Any, Stubber],
) -> None:
    client, stubber = sfn
    stubber.add_client_error("start_execution", "ExecutionAlreadyExists", expected_params=_start_params())
    stubber.add_client_error(
        "describe_execution",
        "InternalFailure",
        http_status_code=500,
        expected_params={"executionArn": EXECUTION},
    )
    with pytest.raises(TransientError) as failed:
        StepFunctionsWorkflow(client=client, state_machine_arn=MACHINE).start(name="v-1-r1", payload=PAYLOAD)
    assert str(failed.value) == "describe execution: InternalFailure"


def test_on_moto_a_second_start_of_the_same_input_is_the_same_execution(aws: None) -> None:
    client = boto3.client("stepfunctions", region_name=REGION)
    machine = client.create_state_machine(
        name="m",
        definition=json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}),
        roleArn="arn:aws:iam::123456789012:role/r",
    )["stateMachineArn"]
    workflow = StepFunctionsWorkflow(client=client, state_machine_arn=machine)

    first = workflow.start(name="v-1-r1", payload=PAYLOAD)
    again = workflow.start(name="v-1-r1", payload=dict(reversed(PAYLOAD.items())))

    assert first == again == execution_arn(machine, "v-1-r1")
    [execution] = client.list_executions(stateMachineArn=machine)["executions"]
    assert client.describe_execution(executionArn=execution["executionArn"])["input"] == SORTED_INPUT
    with pytest.raises(ExecutionConflict):
        workflow.start(name="v-1-r1", payload={**PAYLOAD, "token": "t-2"})


# --- Express: the execution's end -------------------------------------------------------------


def _sync_params() -> dict[str, Any]:
    return {"stateMachineArn": EXPRESS, "name": "v-1-r1", "input": SORTED_INPUT}


def _run(client: Any) -> ExecutionEnd:
    return ExpressStepFunctionsWorkflow(client=client, state_machine_arn=EXPRESS).run(
        name="v-1-r1", payload=PAYLOAD
    )


def _ended(status: str, **answer: Any) -> dict[str, Any]:
    return {
        "executionArn": f"{EXPRESS}:v-1-r1:8d2c",
        "startDate": STARTED,
        "stopDate": STOPPED,
        "status": status,
        **answer,
    }


def test_an_express_run_sends_the_name_and_the_sorted_input_and_answers_its_end(
    sfn: tuple[Any, Stubber],
) -> None:
    client, stubber = sfn
    stubber.add_response("start_sync_execution", _ended("SUCCEEDED", output="{}"), _sync_params())
    end = _run(client)
    assert end == ExecutionEnd(
        arn=f"{EXPRESS}:v-1-r1:8d2c",
        status="SUCCEEDED",
        started=STARTED.timestamp(),
        stopped=STOPPED.timestamp(),
        error=None,
        cause=None,
    )
    assert (end.started, end.stopped) == (1767225600.25, 1767225603.5)


LAMBDA_CAUSE = json.dumps(
    {"errorType": "PaymentDeclined", "errorMessage": "card declined", "stackTrace": ["  File x, line 1"]}
)


@pytest.mark.parametrize(
    ("cause", "read"),
    [
        (LAMBDA_CAUSE, "card declined"),  # a Lambda task's error document: its message
        (json.dumps({"errorType": "Timeout", "errorMessage": 42}), "42"),
        (json.dumps({"errorType": "Boom"}), json.dumps({"errorType": "Boom"})),  # no message: as it is
        ("Task timed out after 30.00 seconds", "Task timed out after 30.00 seconds"),  # not JSON
        ('"a JSON string"', '"a JSON string"'),  # JSON, not a document
        ("[1, 2]", "[1, 2]"),
        ("", ""),
    ],
)
def test_a_failed_express_run_answers_its_error_and_its_cause_as_an_operator_reads_it(
    sfn: tuple[Any, Stubber], cause: str, read: str
) -> None:
    client, stubber = sfn
    stubber.add_response(
        "start_sync_execution", _ended("FAILED", error="PaymentDeclined", cause=cause), _sync_params()
    )
    end = _run(client)
    assert (end.status, end.error, end.cause) == ("FAILED", "PaymentDeclined", read)


def test_a_timed_out_express_run_without_a_cause_answers_none(sfn: tuple[Any, Stubber]) -> None:
    client, stubber = sfn
    stubber.add_response("start_sync_execution", _ended("TIMED_OUT", error="States.Timeout"), _sync_params())
    end = _run(client)
    assert (end.status, end.error, end.cause, end.succeeded) == ("TIMED_OUT", "States.Timeout", None, False)


def test_a_throttled_express_run_is_a_transient_error_naming_the_call(sfn: tuple[Any, Stubber]) -> None:
    client, stubber = sfn
    stubber.add_client_error("start_sync_execution", "ThrottlingException", expected_params=_sync_params())
    with pytest.raises(TransientError) as throttled:
        _run(client)
    assert str(throttled.value) == "start sync execution: ThrottlingException"
