"""The simulator's changes to moto's behaviour, each one patch naming what moto does and why.

Applied together by `InProcessCloud.installed()` (`on_the_clock(clock)`), for the life of one cloud:

1. SQS on the simulated clock: moto stamps sends, receives and visibility with the wall clock
   (`moto.sqs.models.unix_time`/`unix_time_millis`), so a message would never age past its
   queue's retention however far the simulation jumps. Here they read the `Clock`, and retention
   is applied by `InProcessCloud.advance` (`drop_expired`); moto's own check at receive is off
   (it marks an expired message received and stops the receive, leaving the message in place).
   The operator tool that compares SentTimestamp with its own start (`ops.redrive.redrive_dlq`)
   reads the same clock. ChangeMessageVisibility's 12-hour limit counts from the message's latest
   receive, as SQS's does (moto counts from its send, which a simulated day jump would exceed for
   any message received after it).
2. Step Functions start and stop dates on the simulated clock (moto: `datetime.now()` in the
   parser's backend), so "ended 15 days ago" means simulated days.
3. RedriveExecution: moto has none (NotImplementedError). The simulator answers it with AWS's
   refusal of an execution that is not failed, or that ended more than the redrive window
   (`reliability.cdk.config.REDRIVE_WINDOW_DAYS`) ago (`ExecutionNotRedrivable`); within the window the
   execution resumes at the state it failed in (`simulator.redrive`), as AWS's does. Like AWS's,
   it is idempotent by `clientToken` (which the SDK generates once per call, so its own resend
   carries the same one): a redrive asked again with the token of a successful one within
   15 minutes gets the same answer and redrives nothing.
4. The local cloud's patches 14-21 (lab/src/emulator/patches_dynamo.py, lab/src/emulator/patches_speed.py, the
   same functions): a transaction snapshots only the items it names, a base-table Query lists only
   the queried partition, one ASL parse per definition, DynamoDB responses written as JSON, the
   update-expression validation and the dispatch's method listing without their repeated work,
   and one client for the Step Functions Lambda tasks (the server's host lookup is never reached
   in-process).
5. TransactWriteItems is idempotent by `ClientRequestToken`, as DynamoDB's is for 10 minutes after
   a successful one (moto ignores the token and runs the transaction again). botocore generates the
   token once per call, so the SDK's resend of a transaction whose answer was lost is answered as
   the first was, without running it twice; the same token with other items is refused
   (`IdempotentParameterMismatchException`).
6. Express workflows as AWS runs them (`express_workflows`, applied by `InProcessCloud.installed()`
   after the others): the local cloud's patches E1-E6 (lab/src/emulator/patches_express.py:
   StartSyncExecution on its `sync-` host, no name dedup, no execution API, the 5-minute limit),
   with the time limit on the simulated clock: moto times TimeoutSeconds with a wall-clock thread
   join, which a Retry wait that moves the clock instead of sleeping never reaches, so the
   execution is stopped (TIMED_OUT) at its first state or retry past the limit. A synchronous
   execution runs its tasks' handlers in this process while the caller's handler waits: the caller
   gets its Powertools logger keys back afterwards, as its own sandbox would have kept them.
"""

from __future__ import annotations

import datetime
import json
import types
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from moto.core.exceptions import JsonRESTError
from moto.core.responses import ActionResult
from moto.dynamodb.exceptions import DynamodbException
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.table import Table
from moto.dynamodb.responses import DynamoHandler
from moto.sqs.exceptions import InvalidParameterValue, ReceiptHandleIsInvalid
from moto.sqs.models import Message, Queue, SQSBackend
from moto.stepfunctions.parser.asl.component.program.program import Program
from moto.stepfunctions.parser.asl.eval.environment import Environment
from moto.stepfunctions.parser.asl.eval.program_state import ProgramRunning
from moto.stepfunctions.responses import StepFunctionResponse

from emulator import patches_express as express
from emulator import patches_speed as speed
from emulator.patches_dynamo import query_by_partition, transactions_by_item
from ops.redrive import REDRIVABLE_STATUSES
from reliability.cdk.config import REDRIVE_WINDOW_DAYS
from reliability.observability import logger
from simulator.clock import Clock, clocked_datetime_module
from simulator.redrive import resume_at_failed_state

DAY = 86_400
REDRIVE_WINDOW_SECONDS = REDRIVE_WINDOW_DAYS * DAY
# How long a client token makes a repeated request idempotent (AWS's API references).
REDRIVE_TOKEN_SECONDS = 15 * 60  # RedriveExecution's clientToken
TRANSACTION_TOKEN_SECONDS = 10 * 60  # TransactWriteItems' ClientRequestToken

_SFN_DATES = ("moto.stepfunctions.parser.models", "moto.stepfunctions.parser.backend.execution")


class ExecutionNotRedrivable(JsonRESTError):
    code = 400

    def __init__(self, message: str) -> None:
        super().__init__("ExecutionNotRedrivable", message)


class IdempotentParameterMismatch(DynamodbException):
    def __init__(self) -> None:
        super().__init__(
            "com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException",
            "The request uses the same client token as a previous, but non-identical request.",
        )


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
    answered: dict[tuple[str, str], tuple[float, ActionResult]] = {}  # (arn, clientToken) -> when, answer

    def redrive_execution(self: StepFunctionResponse) -> Any:
        arn = self._get_param("executionArn")
        token = self._get_param("clientToken")
        earlier = answered.get((arn, token)) if token else None
        if earlier is not None and clock() - earlier[0] <= REDRIVE_TOKEN_SECONDS:
            return earlier[1]
        execution: Any = self.stepfunction_backend.describe_execution(arn)  # the parser's Execution
        status = str(getattr(execution.exec_status, "value", execution.exec_status))
        if status not in REDRIVABLE_STATUSES:
            raise ExecutionNotRedrivable(f"{arn} is {status}: only a failed execution can be redriven")
        ended = execution.stop_date.timestamp() if execution.stop_date else clock()
        if clock() - ended > REDRIVE_WINDOW_SECONDS:
            raise ExecutionNotRedrivable(
                f"{arn} ended more than {REDRIVE_WINDOW_DAYS} days ago: it can no longer be redriven"
            )
        resume_at_failed_state(execution)
        answer = ActionResult({"redriveDate": datetime.datetime.fromtimestamp(clock(), tz=datetime.UTC)})
        if token:
            answered[(arn, token)] = (clock(), answer)
        return answer

    return redrive_execution


def _idempotent_transactions(clock: Clock) -> Any:
    original = DynamoHandler.transact_write_items
    answered: dict[str, tuple[float, str, Any]] = {}  # token -> when, the items, the answer

    def transact_write_items(self: DynamoHandler) -> Any:
        token = self.body.get("ClientRequestToken")
        if not token:
            return original(self)
        items = json.dumps(self.body["TransactItems"], sort_keys=True)
        earlier = answered.get(token)
        if earlier is not None and clock() - earlier[0] <= TRANSACTION_TOKEN_SECONDS:
            if earlier[1] != items:
                raise IdempotentParameterMismatch
            return earlier[2]
        answer = original(self)  # a cancelled transaction raises: it changed nothing, nothing to remember
        answered[token] = (clock(), items, answer)
        return answer

    return transact_write_items


_MAX_VISIBILITY_SECONDS = 43_200  # SQS: 12 hours from the message's latest receive
_MARK_RECEIVED = Message.mark_received


def _received_on(clock: Clock) -> Any:
    def mark_received(self: Message, visibility_timeout: int | None = None) -> None:
        _MARK_RECEIVED(self, visibility_timeout)
        self.simulated_received_at = clock()  # type: ignore[attr-defined]

    return mark_received


def _change_visibility(clock: Clock) -> Any:
    def change_message_visibility(
        self: SQSBackend, queue_name: str, receipt_handle: str, visibility_timeout: int
    ) -> None:
        queue = self.get_queue(queue_name)
        for message in queue._messages:
            if message.had_receipt_handle(receipt_handle):
                received = getattr(message, "simulated_received_at", clock())
                if clock() + int(visibility_timeout) - received > _MAX_VISIBILITY_SECONDS:
                    limit = f"beyond the limit [{_MAX_VISIBILITY_SECONDS} seconds]"
                    raise InvalidParameterValue(
                        f"Value {visibility_timeout} for parameter VisibilityTimeout is invalid. "
                        f"Reason: Total VisibilityTimeout for the message is {limit}"
                    )
                message.change_visibility(visibility_timeout)
                if message.visible and message in queue.pending_messages:
                    queue.pending_messages.remove(message)
                return
        raise ReceiptHandleIsInvalid

    return change_message_visibility


@contextmanager
def on_the_clock(clock: Clock) -> Iterator[None]:
    """Patches 1-5 (1-3 and 5 on `clock`)."""

    def unix_time_millis() -> float:
        return clock() * 1000

    clocked_time = types.SimpleNamespace(time=clock)
    with ExitStack() as stack:
        stack.enter_context(mock.patch("moto.sqs.models.unix_time", clock))
        stack.enter_context(mock.patch("moto.sqs.models.unix_time_millis", unix_time_millis))
        stack.enter_context(
            mock.patch.object(SQSBackend, "is_message_valid_based_on_retention_period", return_value=True)
        )
        stack.enter_context(mock.patch.object(Message, "mark_received", _received_on(clock)))
        stack.enter_context(
            mock.patch.object(SQSBackend, "change_message_visibility", _change_visibility(clock))
        )
        stack.enter_context(mock.patch("ops.redrive.time", clocked_time))
        for module in _SFN_DATES:
            stack.enter_context(mock.patch(f"{module}.datetime", clocked_datetime_module(clock)))
        stack.enter_context(
            mock.patch.object(
                StepFunctionResponse, "redrive_execution", _redrive_execution(clock), create=True
            )
        )
        for owner, name, replacement in speed.replacements():
            stack.enter_context(mock.patch.object(owner, name, replacement))
        stack.enter_context(
            mock.patch.object(
                DynamoDBBackend,
                "transact_write_items",
                transactions_by_item(DynamoDBBackend.transact_write_items),
            )
        )
        stack.enter_context(
            mock.patch.object(DynamoHandler, "transact_write_items", _idempotent_transactions(clock))
        )
        query, all_items = query_by_partition(Table.query, Table.all_items)
        stack.enter_context(mock.patch.object(Table, "query", query))
        stack.enter_context(mock.patch.object(Table, "all_items", all_items))
        yield


# --- 5. Express workflows ------------------------------------------------------------------------
_PROGRAM_EVAL = Program.eval


def _timed_program(clock: Clock) -> Any:
    """`Program.eval` that gives the execution its deadline on `clock` (read by `_stopped_at`)."""

    def program_eval(self: Program, env: Environment) -> None:
        limit = express.time_limit(self, env)
        if limit is not None:
            env.simulated_deadline = clock() + limit  # type: ignore[attr-defined]
        _PROGRAM_EVAL(self, env)

    return program_eval


def _stopped_at(clock: Clock) -> Any:
    """`Environment.is_running` that times the execution out once `clock` passes its deadline:
    the interpreter asks before every state and every retry (frames have no deadline of their own;
    the execution's timing out stops them)."""

    def is_running(self: Environment) -> bool:
        if not isinstance(self._program_state, ProgramRunning):
            return False
        deadline = getattr(self, "simulated_deadline", None)
        if deadline is not None and clock() >= deadline:
            self.set_timed_out()
            return False
        return True

    return is_running


def _keeping_the_callers_logger(start_sync_execution: Any) -> Any:
    def keeping(self: StepFunctionResponse) -> Any:
        keys = logger.get_current_keys().copy()
        try:
            return start_sync_execution(self)
        finally:
            logger.remove_keys([key for key in logger.get_current_keys() if key not in keys])
            logger.append_keys(**keys)

    return keeping


@contextmanager
def express_workflows(clock: Clock) -> Iterator[None]:
    """Patch 5: lab/src/emulator/patches_express.py's E1-E6, its dates and its time limit on `clock`."""
    timed = _timed_program(clock)
    with ExitStack() as stack:
        for owner, name, replacement in [*express.replacements(), *express.sync_endpoint()]:
            patched = timed if (owner, name) == (Program, "eval") else replacement
            if name == "start_sync_execution":
                patched = _keeping_the_callers_logger(replacement)
            stack.enter_context(mock.patch.object(owner, name, patched, create=True))
        stack.enter_context(mock.patch.object(Environment, "is_running", _stopped_at(clock)))
        stack.enter_context(mock.patch.object(express, "datetime", clocked_datetime_module(clock)))
        yield
