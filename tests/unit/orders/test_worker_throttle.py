"""The worker treats a throttled StartExecution as a retry: the message is kept with a visibility
backoff from the capacity plan's schedule, and the record fails as StartExecutionThrottled."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from botocore.exceptions import ClientError

from infra.capacity import MAX_RECEIVE_COUNT, THROTTLE_BACKOFF_SCHEDULE
from orders.messages import ORDER_MESSAGES
from reliability.errors import TransientError
from reliability.queue_handlers import StartExecutionThrottled, backoff_seconds, start_run, throttle_code

QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:retrysafe-dev-orders"


def _client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "Rate exceeded"}}, "StartExecution")


def _wrapped(code: str) -> TransientError:
    """What the Step Functions adapter raises: its transient error, the ClientError as cause."""
    transient = TransientError(f"start execution: {code}")
    transient.__cause__ = _client_error(code)
    return transient


@dataclass
class _Sqs:
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def get_queue_url(self, **kwargs: Any) -> dict[str, str]:
        self.calls.append(("get_queue_url", kwargs))
        return {"QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/retrysafe-dev-orders"}

    def change_message_visibility(self, **kwargs: Any) -> None:
        self.calls.append(("change_message_visibility", kwargs))


@dataclass
class _Starter:
    error: Exception

    def start_once(self, *_: Any, **__: Any) -> None:
        raise self.error


@dataclass
class _Settings:
    throttle_backoff_seconds: tuple[int, ...] = THROTTLE_BACKOFF_SCHEDULE


@dataclass
class _Runtime:
    workflow_starter: _Starter
    sqs: _Sqs = field(default_factory=_Sqs)
    settings: _Settings = field(default_factory=_Settings)


class _Context:
    def get_remaining_time_in_millis(self) -> int:
        return 20_000


def _record(receive_count: int) -> SQSRecord:
    return SQSRecord(
        {
            "messageId": "m-1",
            "receiptHandle": "rh-1",
            "body": '{"order_id": "o-1", "run": 1, "idempotency_key": "k"}',
            "attributes": {"ApproximateReceiveCount": str(receive_count)},
            "eventSourceARN": QUEUE_ARN,
        }
    )


@pytest.mark.parametrize("code", ["ThrottlingException", "ExecutionLimitExceeded"])
@pytest.mark.parametrize("receive_count", [1, 3, MAX_RECEIVE_COUNT])
def test_a_throttled_start_keeps_the_message_with_the_planned_backoff(code: str, receive_count: int) -> None:
    # Given a start that Step Functions throttles
    runtime = _Runtime(workflow_starter=_Starter(_wrapped(code)))
    # When the worker handles the record
    with pytest.raises(StartExecutionThrottled, match=code):
        start_run(runtime, _record(receive_count), ORDER_MESSAGES)  # type: ignore[arg-type]
    # Then the message stays invisible for the schedule's backoff for this receive
    (_, lookup), (_, change) = runtime.sqs.calls
    assert lookup == {"QueueName": "retrysafe-dev-orders", "QueueOwnerAWSAccountId": "123456789012"}
    assert change["ReceiptHandle"] == "rh-1"
    assert change["VisibilityTimeout"] == THROTTLE_BACKOFF_SCHEDULE[receive_count - 1]


def test_any_other_failure_is_reported_as_it_was_without_touching_visibility() -> None:
    runtime = _Runtime(workflow_starter=_Starter(_wrapped("ServiceUnavailable")))
    with pytest.raises(TransientError) as raised:
        start_run(runtime, _record(1), ORDER_MESSAGES)  # type: ignore[arg-type]
    assert not isinstance(raised.value, StartExecutionThrottled)
    assert runtime.sqs.calls == []


def test_throttle_code_reads_through_the_adapters_wrapping() -> None:
    assert throttle_code(_client_error("ThrottlingException")) == "ThrottlingException"
    assert throttle_code(_wrapped("ExecutionLimitExceeded")) == "ExecutionLimitExceeded"
    assert throttle_code(_wrapped("ExecutionAlreadyExists")) is None
    assert throttle_code(ValueError("x")) is None


def test_the_backoff_past_the_schedule_keeps_its_last_entry() -> None:
    assert backoff_seconds((10, 20, 40), 0) == 10
    assert backoff_seconds((10, 20, 40), 2) == 20
    assert backoff_seconds((10, 20, 40), 9) == 40
