"""The simulator's changes to moto's behaviour, each one patch naming what moto does and why.

Applied together by `InProcessCloud.installed()` (`on_the_clock(clock)`), for the life of one cloud:

1. SQS on the simulated clock: moto stamps sends, receives and visibility with the wall clock
   (`moto.sqs.models.unix_time`/`unix_time_millis`), so a message would never age past its
   queue's retention however far the simulation jumps. Here they read the `Clock`; a receive
   first drops what is past retention (`drop_expired`: moto's own check marks the expired message
   received and stops the receive instead). The operator tool that compares SentTimestamp with
   its own start (`ops.redrive.redrive_dlq`) reads the same clock.
2. Step Functions start and stop dates on the simulated clock (moto: `datetime.now()` in the
   parser's backend), so "ended 15 days ago" means simulated days.
3. RedriveExecution: moto has none (NotImplementedError). The simulator answers it with AWS's
   refusal of an execution that is not failed, or that ended more than the redrive window
   (`infra.config.REDRIVE_WINDOW_DAYS`) ago (`ExecutionNotRedrivable`); within the window it
   stays unsupported, so `ops.redrive` restarts it with the same token, as it does on moto.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from moto.core.exceptions import JsonRESTError
from moto.sqs.models import Queue, SQSBackend
from moto.stepfunctions.responses import StepFunctionResponse

from infra.config import REDRIVE_WINDOW_DAYS
from simulator.clock import Clock, clocked_datetime_module

DAY = 86_400
REDRIVE_WINDOW_SECONDS = REDRIVE_WINDOW_DAYS * DAY
_REDRIVABLE = frozenset({"FAILED", "TIMED_OUT", "ABORTED"})
_SFN_DATES = ("moto.stepfunctions.parser.models", "moto.stepfunctions.parser.backend.execution")


class ExecutionNotRedrivable(JsonRESTError):
    code = 400

    def __init__(self, message: str) -> None:
        super().__init__("ExecutionNotRedrivable", message)


def drop_expired(queue: Queue, now: float) -> int:
    """Delete the messages of `queue` older than its MessageRetentionPeriod (in flight or not);
    returns how many. A message moved to a DLQ keeps its original send time, as on AWS (the DLQ's
    retention counts from the first enqueue of a standard queue's message)."""
    retention = int(queue.message_retention_period)  # type: ignore[attr-defined]
    with queue._messages_lock:
        expired = [m for m in queue._messages if (m.sent_timestamp or 0) / 1000 + retention <= now]
        for message in expired:
            queue._messages.remove(message)
            queue.pending_messages.discard(message)
    return len(expired)


def _redrive_execution(clock: Clock) -> Any:
    def redrive_execution(self: StepFunctionResponse) -> Any:
        arn = self._get_param("executionArn")
        execution: Any = self.stepfunction_backend.describe_execution(arn)  # the parser's Execution
        status = str(getattr(execution.exec_status, "value", execution.exec_status))
        if status not in _REDRIVABLE:
            raise ExecutionNotRedrivable(f"{arn} is {status}: only a failed execution can be redriven")
        ended = execution.stop_date.timestamp() if execution.stop_date else clock()
        if clock() - ended > REDRIVE_WINDOW_SECONDS:
            raise ExecutionNotRedrivable(
                f"{arn} ended more than {REDRIVE_WINDOW_DAYS} days ago: it can no longer be redriven"
            )
        raise NotImplementedError("RedriveExecution: moto cannot resume an execution")

    return redrive_execution


@contextmanager
def on_the_clock(clock: Clock) -> Iterator[None]:
    """Patches 1-3 on `clock`."""
    original_receive = SQSBackend.receive_message

    def receive_message(self: SQSBackend, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        drop_expired(self.get_queue(queue_name), clock())
        return original_receive(self, queue_name, *args, **kwargs)

    def unix_time_millis() -> float:
        return clock() * 1000

    clocked_time = types.SimpleNamespace(time=clock)
    with ExitStack() as stack:
        stack.enter_context(mock.patch("moto.sqs.models.unix_time", clock))
        stack.enter_context(mock.patch("moto.sqs.models.unix_time_millis", unix_time_millis))
        stack.enter_context(mock.patch.object(SQSBackend, "receive_message", receive_message))
        stack.enter_context(mock.patch("ops.redrive.time", clocked_time))
        for module in _SFN_DATES:
            stack.enter_context(mock.patch(f"{module}.datetime", clocked_datetime_module(clock)))
        stack.enter_context(
            mock.patch.object(
                StepFunctionResponse, "redrive_execution", _redrive_execution(clock), create=True
            )
        )
        yield
