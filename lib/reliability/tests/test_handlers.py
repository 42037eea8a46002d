"""The handler factories over a service's own runtime: the worker's batch (a run message started,
a malformed one dead-lettered naming its field), its backoff on a throttled start and its
dead-letter on the last receive of a failed Express run, a saga step's lines, and the sweep of
stranded entities."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
import two_step_service
from aws_lambda_powertools import Metrics
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from botocore.exceptions import ClientError

from reliability.batch import DeadLetters
from reliability.declaration import Entity
from reliability.effects import AtomicEffect
from reliability.errors import ExecutionFailed, PoisonMessage, TransientError
from reliability.handlers import step_handler, sweep_handler
from reliability.observability import logger
from reliability.queue_handlers import StartExecutionThrottled, backoff_seconds, start_run, worker_handler
from reliability.saga import Saga, StepRequest
from reliability.telemetry import Telemetry
from reliability.workflow_runs import ExecutionEnd, Reruns, RunMessage, RunMessages, RunStatus
from reliability_helpers import FakeClock, aws_client, fence_store, make_telemetry, read_emitted

VISIT = Entity(name="visit", id_prefix="v-", table="visits")
MESSAGES = RunMessages(VISIT)
QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:visits"


@dataclass
class Context:
    function_name: str = "visits-worker"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:visits-worker"
    aws_request_id: str = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 20_000


@dataclass
class Starter:
    error: Exception | None = None
    started: list[RunMessage] = field(default_factory=list)

    def start_once(self, message: RunMessage) -> str:
        if self.error is not None:
            raise self.error
        self.started.append(message)
        return f"arn:{message.entity_id}-r{message.run}"


@dataclass
class Sqs:
    calls: list[str] = field(default_factory=list)

    def get_queue_url(self, **_: Any) -> dict[str, str]:
        self.calls.append("get_queue_url")
        return {"QueueUrl": "https://queue"}

    def change_message_visibility(self, **kwargs: Any) -> None:
        self.calls.append(f"visibility {kwargs['VisibilityTimeout']}")


@dataclass
class Settings:
    throttle_backoff_seconds: tuple[int, ...] = (10, 20, 40)
    max_receive_count: int = 3
    stranded_after_seconds: int = 300


@dataclass
class WorkerRuntime:
    workflow_starter: Starter
    sqs: Any = field(default_factory=Sqs)
    settings: Settings = field(default_factory=Settings)
    telemetry: Telemetry = field(default_factory=make_telemetry)
    dlq_url: str = ""

    def dead_letters(self) -> DeadLetters:
        return DeadLetters(client=self.sqs, queue_url=self.dlq_url, source="worker")


def _record(body: Any, receive_count: int = 1, message_id: str = "m-1") -> dict[str, Any]:
    return {
        "messageId": message_id,
        "receiptHandle": f"rh-{message_id}",
        "body": json.dumps(body),
        "attributes": {"ApproximateReceiveCount": str(receive_count)},
        "eventSourceARN": QUEUE_ARN,
    }


def test_the_worker_starts_a_run_message_and_dead_letters_a_malformed_one(aws: None) -> None:
    sqs = aws_client("sqs")
    dlq = sqs.create_queue(QueueName="visits-dlq")["QueueUrl"]
    starter = Starter()
    runtime = WorkerRuntime(workflow_starter=starter, sqs=sqs, dlq_url=dlq)
    handler = worker_handler(runtime=lambda: runtime, messages=MESSAGES)
    event = {
        "Records": [
            _record({"visit_id": "v-1", "run": 1, "idempotency_key": "k"}, message_id="m-1"),
            _record({"order_id": "v-1", "run": 1, "idempotency_key": "k"}, message_id="m-2"),
        ]
    }
    assert handler(event, Context()) == {"batchItemFailures": []}  # type: ignore[arg-type]
    assert starter.started == [RunMessage("v-1", 1, "k")]
    (dead,) = sqs.receive_message(QueueUrl=dlq, MessageAttributeNames=["All"])["Messages"]
    assert dead["MessageAttributes"]["reason"]["StringValue"].startswith("wrong shape: order_id")
    assert handler.__name__ == "worker"


def _throttled() -> TransientError:
    error = TransientError("start execution: ThrottlingException")
    error.__cause__ = ClientError(
        {"Error": {"Code": "ThrottlingException", "Message": "x"}}, "StartExecution"
    )
    return error


def test_a_throttled_start_keeps_the_message_for_the_schedules_backoff() -> None:
    runtime = WorkerRuntime(workflow_starter=Starter(error=_throttled()))
    body = {"visit_id": "v-1", "run": 1, "idempotency_key": "k"}
    with pytest.raises(StartExecutionThrottled, match="ThrottlingException"):
        start_run(runtime, SQSRecord(_record(body, receive_count=2)), MESSAGES)
    assert runtime.sqs.calls == ["get_queue_url", "visibility 20"]
    assert backoff_seconds((10, 20, 40), 9) == 40


def test_a_failed_express_run_is_retried_then_dead_lettered_on_its_last_receive() -> None:
    end = ExecutionEnd(arn="arn:x", status="FAILED", started=1.0, stopped=2.0, error="Boom")
    runtime = WorkerRuntime(workflow_starter=Starter(error=ExecutionFailed(end)))
    body = {"visit_id": "v-1", "run": 1, "idempotency_key": "k"}
    with pytest.raises(ExecutionFailed):
        start_run(runtime, SQSRecord(_record(body, receive_count=1)), MESSAGES)
    with pytest.raises(PoisonMessage, match="execution FAILED: Boom"):
        start_run(runtime, SQSRecord(_record(body, receive_count=3)), MESSAGES)


# --- the sweep --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Visit:
    visit_id: str
    idempotency_key: str = "k"
    run: int = 1
    status: RunStatus = RunStatus.ACCEPTED
    execution_arn: str | None = None

    @property
    def entity_id(self) -> str:
        return self.visit_id


@dataclass
class Store:
    stranded: list[Visit]
    asked: list[str] = field(default_factory=list)

    def accepted_before(self, created_before: str) -> list[Visit]:
        self.asked.append(created_before)
        return self.stranded


@dataclass
class Queue:
    sent: list[Mapping[str, Any]] = field(default_factory=list)

    def send(self, body: Mapping[str, Any]) -> str:
        self.sent.append(body)
        return "id"


@dataclass
class SweepRuntime:
    reruns: Reruns[Any]
    telemetry: Telemetry
    settings: Settings = field(default_factory=Settings)

    def now(self) -> datetime:
        return datetime(2026, 1, 1, 0, 10, tzinfo=UTC)


def test_the_sweep_resends_each_stranded_run_and_logs_one_decision_with_the_entity_id(
    capsys: pytest.CaptureFixture[str],
) -> None:
    store, queue = Store(stranded=[Visit("v-1"), Visit("v-2", run=2)]), Queue()
    runtime = SweepRuntime(reruns=Reruns(entity=VISIT, store=store, queue=queue), telemetry=make_telemetry())  # type: ignore[arg-type]
    capsys.readouterr()
    answer = sweep_handler(runtime=lambda: runtime)({}, Context())  # type: ignore[arg-type]
    assert answer == {"resent": ["v-1", "v-2"]}
    assert store.asked == ["2026-01-01T00:05:00+00:00"]
    assert [body["visit_id"] for body in queue.sent] == ["v-1", "v-2"]
    lines = read_emitted(capsys.readouterr().out).decisions()
    # A visit's id under the entity-neutral key, whatever the entity is called
    assert [(line["decision"], line["entity_id"], line["run"]) for line in lines] == [
        ("StrandedRun", "v-1", 1),
        ("StrandedRun", "v-2", 2),
    ]


@dataclass
class StepSettings:
    step_name: str


@dataclass
class StepRuntime:
    settings: StepSettings
    fence_store: Any
    saga: two_step_service.Desk = field(default_factory=two_step_service.Desk)

    def fences(self, namespace: str) -> Any:
        return self.fence_store


def test_a_step_names_its_entity_once_on_each_line_by_the_telemetry_key(ddb: Any) -> None:
    # The step's own logger and its fences' telemetry share the service's Powertools logger, as in
    # a deployed function: what the handler appends is on the decision lines too.
    stream = io.StringIO()
    # swapped by hand: setStream flushes the old stream, which an earlier test's capture may have
    # closed (mutmut's clean run does)
    handler: Any = logger.registered_handler
    previous, handler.stream = handler.stream, stream
    try:
        telemetry = Telemetry(logger=logger, metrics=Metrics(namespace="visits", service="visits"))
        fences = fence_store(ddb, telemetry, FakeClock(), ttl_seconds=3600)
        runtime = StepRuntime(StepSettings("Hold"), fences)
        saga: Saga[two_step_service.Desk, two_step_service.Terms] = Saga(
            two_step_service.SERVICE, two_step_service.run_of, tables=lambda desk: desk.tables
        )
        step = step_handler(runtime=lambda: runtime, saga=saga)
        step({"visit_id": "v-1", "token": "dev.v-1.r1", "seats": 2, "results": {}}, Context())  # type: ignore[arg-type]
    finally:
        handler.stream = previous
        logger.remove_keys(["step", "entity_id", "visit_id"])
    lines = read_emitted(stream.getvalue()).decisions()
    assert [(line["decision"], line["step"], line["entity_id"]) for line in lines] == [
        ("FenceCompleted", "Hold", "v-1")
    ]
    assert not [line for line in lines if "visit_id" in line]  # not again under the entity's field


def logged_hold(
    ctx: two_step_service.Desk, terms: two_step_service.Terms, request: StepRequest
) -> AtomicEffect:
    """The service's hold, saying what it holds on the service's logger, as an effect may."""
    logger.info("holding seats", extra={"seats": terms.seats})
    return two_step_service.hold(ctx, terms, request)


LOGGING_SERVICE = dataclasses.replace(
    two_step_service.SERVICE,
    steps=tuple(
        dataclasses.replace(step, effect=f"{__name__}:logged_hold") if step.name == "Hold" else step
        for step in two_step_service.SERVICE.steps
    ),
)


def test_the_effects_own_line_names_the_step_and_the_entity(ddb: Any) -> None:
    stream = io.StringIO()
    handler: Any = logger.registered_handler  # swapped by hand, as above
    previous, handler.stream = handler.stream, stream
    try:
        telemetry = Telemetry(logger=logger, metrics=Metrics(namespace="visits", service="visits"))
        runtime = StepRuntime(
            StepSettings("Hold"), fence_store(ddb, telemetry, FakeClock(), ttl_seconds=3600)
        )
        saga: Saga[two_step_service.Desk, two_step_service.Terms] = Saga(
            LOGGING_SERVICE, two_step_service.run_of, tables=lambda desk: desk.tables
        )
        step = step_handler(runtime=lambda: runtime, saga=saga)
        step({"visit_id": "v-7", "token": "dev.v-7.r1", "seats": 2, "results": {}}, Context())  # type: ignore[arg-type]
    finally:
        handler.stream = previous
        logger.remove_keys(["step", "entity_id"])
    [line] = [line for line in read_emitted(stream.getvalue()).logs if line["message"] == "holding seats"]
    assert (line["step"], line["entity_id"], line["seats"]) == ("Hold", "v-7", 2)
