"""The infrastructure half synthesized: a tiny stack with a two-step fenced workflow (and its
compensation), one consumed queue with its DLQ, and a record table. What the runtime half relies on
must be in the template: the Retry/Catch error names are its exception classes' names, the waits
follow the lease, partial batch responses are on, the DLQ and the executions are alarmed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from reliability.cdk.queue import QueueWithDlq, consume
from reliability.cdk.table import RECORD_KEY, RECORD_TTL_ATTRIBUTE, ServiceTable
from reliability.cdk.windows import (
    FENCE_WAIT_BACKOFF_RATE,
    FENCE_WAIT_MAX_ATTEMPTS,
    VISIBILITY_TIMEOUT_FACTOR,
    fence_wait_interval_seconds,
)
from reliability.cdk.workflow import LAMBDA_TRANSIENT_ERRORS, FencedWorkflow, StepSpec
from reliability.errors import BusinessError, FenceBusy, StaleFence, TransientError

pytestmark = pytest.mark.slow

LEASES = {"Hold": 20, "Pay": 40, "Release": 8}
CONSUMER_TIMEOUT = 30
MAX_RECEIVES = 7


class Declined(BusinessError):
    """A business error the workflow catches by its class name."""


def _function(stack: Stack, name: str, timeout: int) -> lambda_.Function:
    return lambda_.Function(
        stack,
        name,
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context): return event"),
        timeout=Duration.seconds(timeout),
    )


def _stack(workflow_type: sfn.StateMachineType = sfn.StateMachineType.STANDARD) -> Stack:
    stack = Stack(App(), "Tiny")
    functions = {name: _function(stack, name, lease) for name, lease in LEASES.items()}
    FencedWorkflow(
        stack,
        "Flow",
        state_machine_name="tiny-dev-flow",
        workflow_type=workflow_type,
        retain_logs=False,
        log_key=None,
        steps=[
            StepSpec(
                name="Hold",
                function=functions["Hold"],
                next="Pay",
            ),
            StepSpec(
                name="Pay",
                function=functions["Pay"],
                next=None,
                catch={"Release": [Declined.__name__]},
            ),
            StepSpec(name="Release", function=functions["Release"], next=None),
        ],
    )
    pair = QueueWithDlq(
        stack,
        "Events",
        queue_name="tiny-dev-events",
        consumer_timeout=Duration.seconds(CONSUMER_TIMEOUT),
        max_receive_count=MAX_RECEIVES,
        retention=Duration.days(4),
        retain=False,
        key=None,
    )
    consumer = _function(stack, "Consumer", CONSUMER_TIMEOUT)
    consume(consumer, pair.queue, batch_size=10, max_batching_window=Duration.seconds(0), max_concurrency=2)
    ServiceTable(
        stack,
        "Fences",
        table_name="tiny-dev-fences",
        partition_key=RECORD_KEY,
        ttl_attribute=RECORD_TTL_ATTRIBUTE,
        retain=False,
        key=None,
    )
    return stack


@pytest.fixture(scope="module")
def template() -> Template:
    return Template.from_stack(_stack())


@pytest.fixture(scope="module")
def states(template: Template) -> dict[str, Any]:
    (machine,) = template.find_resources("AWS::StepFunctions::StateMachine").values()
    definition = machine["Properties"]["DefinitionString"]
    # Fn::Join of literal strings and the functions' ARNs: the literal parts are the JSON.
    text = "".join(part if isinstance(part, str) else "arn" for part in definition["Fn::Join"][1])
    return dict(json.loads(text)["States"])


def test_every_task_waits_out_fence_busy_and_stale_fence_by_their_class_names_paced_by_its_lease(
    states: dict[str, Any],
) -> None:
    for name, lease in LEASES.items():
        fence_wait = states[name]["Retry"][0]
        assert fence_wait["ErrorEquals"] == [FenceBusy.__name__, StaleFence.__name__]
        assert fence_wait["IntervalSeconds"] == fence_wait_interval_seconds(lease) == max(1, lease // 4)
        assert fence_wait["BackoffRate"] == FENCE_WAIT_BACKOFF_RATE
        assert fence_wait["MaxAttempts"] == FENCE_WAIT_MAX_ATTEMPTS
        assert fence_wait.get("JitterStrategy", "NONE") == "NONE"


def test_every_task_retries_transient_error_by_its_class_name_and_the_lambda_service_errors(
    states: dict[str, Any],
) -> None:
    for name in LEASES:
        transport = states[name]["Retry"][1]
        assert transport["ErrorEquals"] == [*LAMBDA_TRANSIENT_ERRORS, TransientError.__name__]
        assert transport["JitterStrategy"] == "FULL"
        assert len(states[name]["Retry"]) == 2


def test_a_business_error_is_caught_by_its_class_name_into_the_compensation(states: dict[str, Any]) -> None:
    assert states["Pay"]["Catch"] == [
        {"ErrorEquals": ["Declined"], "ResultPath": "$.error", "Next": "Release"}
    ]
    assert "Catch" not in states["Hold"]
    assert states["Hold"]["Next"] == "Pay"
    assert states["Pay"]["Next"] == states["Release"]["Next"] == "Done"


def test_failed_executions_are_alarmed(template: Template) -> None:
    alarms = template.find_resources("AWS::CloudWatch::Alarm")
    names = {alarm["Properties"]["AlarmName"] for alarm in alarms.values()}
    assert {"tiny-dev-flow-executions-failed", "tiny-dev-events-dlq-not-empty"} <= names


def test_the_queue_redrives_to_its_dlq_and_its_visibility_follows_the_consumer(template: Template) -> None:
    found = template.find_resources("AWS::SQS::Queue").values()
    queues = {q["Properties"]["QueueName"]: q["Properties"] for q in found}
    queue = queues["tiny-dev-events"]
    assert queue["RedrivePolicy"]["maxReceiveCount"] == MAX_RECEIVES
    assert queue["VisibilityTimeout"] == VISIBILITY_TIMEOUT_FACTOR * CONSUMER_TIMEOUT
    assert queues["tiny-dev-events-dlq"]["MessageRetentionPeriod"] == 14 * 24 * 3600


def test_the_consumer_reports_partial_batch_failures(template: Template) -> None:
    (mapping,) = template.find_resources("AWS::Lambda::EventSourceMapping").values()
    assert mapping["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["Properties"]["ScalingConfig"] == {"MaximumConcurrency": 2}


def test_express_states_its_time_limit_and_refuses_a_longer_one() -> None:
    template = Template.from_stack(_stack(sfn.StateMachineType.EXPRESS))
    (machine,) = template.find_resources("AWS::StepFunctions::StateMachine").values()
    assert machine["Properties"]["StateMachineType"] == "EXPRESS"
    assert machine["Properties"]["LoggingConfiguration"]["Level"] == "ERROR"
    assert '"TimeoutSeconds":300' in "".join(
        p for p in machine["Properties"]["DefinitionString"]["Fn::Join"][1] if isinstance(p, str)
    )
    stack = Stack(App(), "TooLong")
    with pytest.raises(ValueError, match=r"TimeoutSeconds must be 1\.\.300"):
        FencedWorkflow(
            stack,
            "Flow",
            state_machine_name="s",
            workflow_type=sfn.StateMachineType.EXPRESS,
            express_timeout_seconds=301,
            retain_logs=False,
            log_key=None,
            steps=[StepSpec(name="A", function=_function(stack, "A", 10), next=None)],
        )
