"""The orders-queue worker: one workflow execution per (order, run).

A throttled StartExecution (``ThrottlingException``; ``ExecutionLimitExceeded`` while the
account's open executions are at their quota) is a retry, not a failure: the message is kept,
made visible again after a backoff that grows with its receive count, and counted as a retry with
reason ``StartExecutionThrottled``. The backoff schedule comes from infra/capacity.py
(``THROTTLE_BACKOFF_SECONDS``), which sizes maxReceiveCount to ride it out.

On Express the worker waits for the run's execution (StartSyncExecution). One that ended FAILED or
TIMED_OUT (``ExecutionFailed``) keeps the message on the same backoff, so the queue runs the
order again under the same token; on its last receive (``MAX_RECEIVE_COUNT``) the worker sends it
to the DLQ itself, with the execution's error as the reason, where SQS's own move would give none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# First, before anything that might load pydantic (this function's own model is plain,
# orders.fields): Powertools' batch utility (reliability.batch, through _sqs) builds its own
# pydantic parser models when it finds pydantic already imported
# (aws_lambda_powertools/utilities/batch/types.py), which this function never uses.
from orders.handlers._sqs import sqs_handler

# isort: split
from botocore.exceptions import ClientError

# Every message goes to the workflow starter; orders.runtime imports it only where it builds it,
# so this function imports it here, at init: its cold start.
import orders.runs  # noqa: F401
import reliability.workflow_runs  # noqa: F401
from orders.config import WorkerSettings
from orders.errors import ExecutionFailed
from orders.handlers import init_done
from orders.messages import ORDER_MESSAGES
from reliability.batch import parse_body
from reliability.errors import PoisonMessage, TransientError, error_code

if TYPE_CHECKING:  # annotations only: the module is not loaded at run time
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from orders.runtime import Runtime

SETTINGS = WorkerSettings
THROTTLED_START_CODES = frozenset({"ThrottlingException", "ExecutionLimitExceeded"})


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


def _back_off(runtime: Runtime[WorkerSettings], record: SQSRecord) -> None:
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


def _start(runtime: Runtime[WorkerSettings], record: SQSRecord, _context: LambdaContext) -> None:
    message = parse_body(record, ORDER_MESSAGES)
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


handler = sqs_handler(settings=SETTINGS, record_handler=_start)


init_done()  # the end of init (orders.handlers)
