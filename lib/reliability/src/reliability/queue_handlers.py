"""The Lambda handlers an SQS queue feeds, as factories a service's handler module calls: one for
any record handler (`sqs_handler`: Powertools batch processing with partial failures, poison
records dead-lettered with a reason, the usual decorators), the worker (`worker_handler`: one
workflow start per run message) and an event consumer (`consumer_handler`).

Each takes `runtime`, how the handler gets this invocation's composition root (built once per cold
start by the service); the protocols below say what each kind of function needs of it.

The worker: a throttled StartExecution (``ThrottlingException``; ``ExecutionLimitExceeded`` while
the account's open executions are at their quota) is a retry, not a failure: the message is kept,
made visible again after a backoff that grows with its receive count (the settings' schedule,
sized by the service's capacity plan), and counted as a retry with reason
``StartExecutionThrottled``. On Express the worker waits for the run's execution; one that ended
FAILED or TIMED_OUT (``ExecutionFailed``) keeps the message on the same backoff, so the queue runs
the entity again under the same token; on its last receive the worker sends it to the DLQ itself,
with the execution's error as the reason, where SQS's own move would give none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from botocore.exceptions import ClientError

from reliability.batch import parse_body, process_batch
from reliability.errors import ExecutionFailed, PoisonMessage, TransientError, error_code
from reliability.observability import logger, tracer
from reliability.telemetry import metrics_per_invocation

if TYPE_CHECKING:  # annotations only: the modules are not loaded at run time
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from reliability.batch import BodyModel, DeadLetters
    from reliability.consumers import EventConsumer
    from reliability.telemetry import Telemetry
    from reliability.workflow_runs import RunMessage

THROTTLED_START_CODES = frozenset({"ThrottlingException", "ExecutionLimitExceeded"})

BatchHandler = Callable[[dict[str, Any], "LambdaContext"], dict[str, Any]]


class QueueFedRuntime(Protocol):
    """What every queue-fed function needs: where its poison records go, its telemetry."""

    @property
    def telemetry(self) -> Telemetry: ...

    def dead_letters(self) -> DeadLetters: ...


class WorkerSettings(Protocol):
    @property
    def throttle_backoff_seconds(self) -> tuple[int, ...]: ...
    @property
    def max_receive_count(self) -> int: ...


class RunStarter(Protocol):
    """What the worker calls (`reliability.workflow_runs.WorkflowStarter` is one)."""

    def start_once(self, message: RunMessage) -> str: ...


class WorkerRuntime(QueueFedRuntime, Protocol):
    @property
    def settings(self) -> WorkerSettings: ...
    @property
    def sqs(self) -> Any: ...
    @property
    def workflow_starter(self) -> RunStarter: ...


class ConsumerRuntime(QueueFedRuntime, Protocol):
    @property
    def event_consumer(self) -> EventConsumer[Any, Any]: ...


R = TypeVar("R", bound=QueueFedRuntime)
RecordHandler = Callable[[R, "SQSRecord", "LambdaContext"], Any]


def sqs_handler(*, runtime: Callable[[], R], record_handler: RecordHandler[R], name: str) -> BatchHandler:
    """A batch handler named `name` whose records go to `record_handler`, with this
    invocation's runtime; the runtime names the dead-letter queue and the source its reasons carry."""

    @logger.inject_lambda_context
    @metrics_per_invocation
    @tracer.capture_lambda_handler(capture_response=False)
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        current = runtime()
        return process_batch(
            event,
            handler=lambda record: record_handler(current, record, context),
            dead_letters=current.dead_letters(),
            telemetry=current.telemetry,
            context=context,
        )

    handler.__name__ = handler.__qualname__ = name
    batch_handler: BatchHandler = handler  # Powertools' handler decorators are annotated `-> Any`
    return batch_handler


# --- the worker -------------------------------------------------------------------------------
class StartExecutionThrottled(TransientError):
    """Step Functions refused the start for now; the message waits out a backoff and comes back."""


def throttle_code(error: BaseException | None) -> str | None:
    """The Step Functions throttle code behind ``error`` (adapters wrap it), if any."""
    while error is not None:
        if isinstance(error, ClientError) and error_code(error) in THROTTLED_START_CODES:
            return error_code(error)
        error = error.__cause__ or error.__context__
    return None


def backoff_seconds(schedule: tuple[int, ...], receive_count: int) -> int:
    """The schedule's entry for this receive (1-based); its last entry once past the end."""
    return schedule[min(max(receive_count, 1), len(schedule)) - 1]


def _back_off(runtime: WorkerRuntime, record: SQSRecord) -> None:
    """Keep the message invisible for the backoff; if that fails, the queue's own visibility
    timeout brings it back later, which is also safe."""
    account, queue = record.event_source_arn.split(":")[4:6]
    delay = backoff_seconds(
        runtime.settings.throttle_backoff_seconds, int(record.attributes.approximate_receive_count)
    )
    try:
        url = runtime.sqs.get_queue_url(QueueName=queue, QueueOwnerAWSAccountId=account)["QueueUrl"]
        runtime.sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=record.receipt_handle, VisibilityTimeout=delay
        )
    except ClientError:
        return


def start_run(runtime: WorkerRuntime, record: SQSRecord, messages: BodyModel[RunMessage]) -> None:
    """The worker's record: its run message to the workflow starter, with the backoff above."""
    message = parse_body(record, messages)
    try:
        runtime.workflow_starter.start_once(message)
    except ExecutionFailed as failed:
        if int(record.attributes.approximate_receive_count) >= runtime.settings.max_receive_count:
            raise PoisonMessage(failed.end.reason) from failed
        _back_off(runtime, record)
        raise
    except Exception as error:
        code = throttle_code(error)
        if code is None:
            raise
        _back_off(runtime, record)
        raise StartExecutionThrottled(f"start execution: {code}") from error


def worker_handler(*, runtime: Callable[[], WorkerRuntime], messages: BodyModel[RunMessage]) -> BatchHandler:
    """The worker: each record a run message (`messages` parses it), one start per run."""
    return sqs_handler(
        runtime=runtime,
        record_handler=lambda current, record, _context: start_run(current, record, messages),
        name="worker",
    )


# --- an event consumer ------------------------------------------------------------------------
def consumer_handler(*, runtime: Callable[[], ConsumerRuntime], events: BodyModel[Any]) -> BatchHandler:
    """An event consumer: each record an event (`events` parses it), applied once by the
    runtime's consumer."""
    return sqs_handler(
        runtime=runtime,
        record_handler=lambda current, record, _context: current.event_consumer.apply(
            parse_body(record, events)
        ),
        name="consumer",
    )
