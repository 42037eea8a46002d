"""The queue-fed handlers as a service's queue drives them: an event consumer's batch (each fact
applied once, another stage's event and a wrong shape dead-lettered with their reasons, a failure
left in `batchItemFailures` for SQS to redeliver), and the worker's backoff, the SQS calls it
makes exactly (the queue named by the record's ARN, the receipt handle, the schedule's delay)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from pydantic import BaseModel
from two_step_service import SERVICE, audit

from reliability.batch import DeadLetters
from reliability.consumers import EventConsumer
from reliability.dedup import ConsumerDedup
from reliability.errors import ExecutionFailed, TransientError
from reliability.keys import Fact
from reliability.queue_handlers import StartExecutionThrottled, backoff_seconds, consumer_handler, start_run
from reliability.runs import FenceStore
from reliability.telemetry import Telemetry
from reliability.workflow_runs import ExecutionEnd, RunMessage, RunMessages
from reliability_helpers import ENTRIES, FENCES, REGION, FakeClock, make_telemetry

STAGE = "dev"
ACCOUNT = "123456789012"
QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:audit"
QUEUE_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/audit"


class VisitPaid(BaseModel):
    event_id: str
    visit_id: str
    run: int = 1
    stage: str | None = STAGE

    def fact(self) -> Fact:
        return Fact(kind="VisitPaid", subject=self.visit_id, run=self.run)


class Context:
    function_name = "visits-audit"
    memory_limit_in_mb = 256
    invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:visits-audit"
    aws_request_id = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 20_000


def _flaky_audit(ports: Any, event: Any) -> list[Any]:
    """The audit effect, except that visit v-down's table is failing for now."""
    if event["visit_id"] == "v-down":
        raise TransientError("dynamodb: ProvisionedThroughputExceededException")
    return audit(ports, event)


@dataclass
class ConsumerRuntime:
    event_consumer: EventConsumer[None, VisitPaid]
    sqs: Any
    dlq_url: str
    telemetry: Telemetry = field(default_factory=make_telemetry)

    def dead_letters(self) -> DeadLetters:
        return DeadLetters(client=self.sqs, queue_url=self.dlq_url, source="audit")


def _record(message_id: str, body: Any, receive_count: int = 1) -> dict[str, Any]:
    return {
        "messageId": message_id,
        "receiptHandle": f"rh-{message_id}",
        "body": json.dumps(body),
        "attributes": {"ApproximateReceiveCount": str(receive_count)},
        "eventSourceARN": QUEUE_ARN,
    }


def _paid(event_id: str, visit_id: str, stage: str = STAGE) -> dict[str, Any]:
    return {"event_id": event_id, "visit_id": visit_id, "run": 1, "stage": stage}


def test_an_event_consumers_batch_applies_each_fact_once_and_dead_letters_with_reasons(ddb: Any) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    dlq = sqs.create_queue(QueueName="audit-dlq")["QueueUrl"]
    telemetry = make_telemetry()
    fences = FenceStore(
        client=ddb,
        table_name=FENCES,
        ttl_seconds=3600,
        telemetry=telemetry,
        namespace="audit",
        clock=FakeClock(),
        stage=STAGE,
    )
    consumer: EventConsumer[None, VisitPaid] = EventConsumer(
        name="audit",
        effect=_flaky_audit,
        ports=None,
        dedup=ConsumerDedup(fences=fences, consumer="audit", telemetry=telemetry),
    )
    runtime = ConsumerRuntime(event_consumer=consumer, sqs=sqs, dlq_url=dlq, telemetry=telemetry)
    handler = consumer_handler(runtime=lambda: runtime, events=VisitPaid)
    event = {
        "Records": [
            _record("m-1", _paid("e-1", "v-1")),
            _record("m-2", _paid("e-2", "v-1")),  # the same fact under another id
            _record("m-3", _paid("e-3", "v-2", stage="prod")),
            _record("m-4", {"event_id": "e-4", "run": 1}),
            _record("m-5", _paid("e-5", "v-down")),
            _record("m-6", _paid("e-6", "v-3")),
        ]
    }

    assert handler(event, Context()) == {"batchItemFailures": [{"itemIdentifier": "m-5"}]}  # type: ignore[arg-type]

    entries = ddb.scan(TableName=ENTRIES)["Items"]
    assert sorted(entry["pk"]["S"] for entry in entries) == ["visit#v-1", "visit#v-3"]
    letters = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, MessageAttributeNames=["All"])[
        "Messages"
    ]
    reasons = {
        letter["MessageAttributes"]["message_id"]["StringValue"]: (
            letter["MessageAttributes"]["source"]["StringValue"],
            letter["MessageAttributes"]["reason"]["StringValue"],
        )
        for letter in letters
    }
    assert reasons == {
        "m-3": ("audit", "an event of stage 'prod'; this consumer is stage 'dev'"),
        "m-4": ("audit", "wrong shape: visit_id (Field required)"),
    }
    assert handler.__name__ == "consumer"


# --- the worker's backoff ---------------------------------------------------------------------
VISIT_MESSAGES = RunMessages(SERVICE.entity)
WORKER_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:visits"
WORKER_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/visits"


@dataclass
class Starter:
    error: Exception

    def start_once(self, message: RunMessage) -> str:
        raise self.error


@dataclass
class Settings:
    throttle_backoff_seconds: tuple[int, ...] = (10, 20, 40)
    max_receive_count: int = 5


@dataclass
class WorkerRuntime:
    workflow_starter: Starter
    sqs: Any
    settings: Settings = field(default_factory=Settings)


def _run_record(receive_count: int) -> SQSRecord:
    body = {"visit_id": "v-1", "run": 1, "idempotency_key": "k"}
    return SQSRecord({**_record("m-1", body, receive_count), "eventSourceARN": WORKER_ARN})


def _throttled() -> Exception:
    error = TransientError("start execution")
    error.__cause__ = ClientError(
        {"Error": {"Code": "ExecutionLimitExceeded", "Message": "x"}}, "StartExecution"
    )
    return error


def _expect_back_off(stubber: Stubber, delay: int) -> None:
    stubber.add_response(
        "get_queue_url", {"QueueUrl": WORKER_URL}, {"QueueName": "visits", "QueueOwnerAWSAccountId": ACCOUNT}
    )
    stubber.add_response(
        "change_message_visibility",
        {},
        {"QueueUrl": WORKER_URL, "ReceiptHandle": "rh-m-1", "VisibilityTimeout": delay},
    )


@pytest.mark.parametrize(("receive_count", "delay"), [(1, 10), (2, 20), (3, 40), (4, 40)])
def test_a_throttled_start_hides_its_message_for_the_schedules_delay(receive_count: int, delay: int) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    runtime = WorkerRuntime(workflow_starter=Starter(_throttled()), sqs=sqs)
    with Stubber(sqs) as stubber:
        _expect_back_off(stubber, delay)
        with pytest.raises(StartExecutionThrottled, match="start execution: ExecutionLimitExceeded"):
            start_run(runtime, _run_record(receive_count), VISIT_MESSAGES)  # type: ignore[arg-type]
        stubber.assert_no_pending_responses()


def test_a_failed_express_run_before_its_last_receive_waits_out_the_same_backoff() -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    end = ExecutionEnd(arn="arn:x", status="TIMED_OUT", started=1.0, stopped=2.0, error="States.Timeout")
    runtime = WorkerRuntime(workflow_starter=Starter(ExecutionFailed(end)), sqs=sqs)
    with Stubber(sqs) as stubber:
        _expect_back_off(stubber, 20)
        with pytest.raises(ExecutionFailed):
            start_run(runtime, _run_record(2), VISIT_MESSAGES)  # type: ignore[arg-type]
        stubber.assert_no_pending_responses()


def test_a_refused_visibility_change_leaves_the_queues_own_timeout() -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    runtime = WorkerRuntime(workflow_starter=Starter(_throttled()), sqs=sqs)
    with Stubber(sqs) as stubber:
        stubber.add_client_error("get_queue_url", "AWS.SimpleQueueService.NonExistentQueue")
        with pytest.raises(StartExecutionThrottled):
            start_run(runtime, _run_record(1), VISIT_MESSAGES)  # type: ignore[arg-type]
        stubber.assert_no_pending_responses()


def test_the_schedule_starts_at_the_first_receive() -> None:
    assert [backoff_seconds((10, 20, 40), count) for count in (1, 2, 3, 9)] == [10, 20, 40, 40]
    assert backoff_seconds((5,), 1) == 5
