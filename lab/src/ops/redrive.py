"""Redrive tools for operators: a DLQ back to its source queue, a failed workflow execution again.

Each uses the native API where the endpoint has it (`StartMessageMoveTask`, `RedriveExecution`)
and otherwise a fallback with the same guarantees for this service (moto has neither):
- DLQ: receive, send to the source queue, delete; a message is deleted from the DLQ only after
  its copy was accepted, so a crash mid-move duplicates at worst, which the consumers dedupe.
  Only messages that were in the DLQ when the move started are moved: one that a consumer
  dead-letters again meanwhile (a poison message) stays there, instead of going round forever.
- workflow: `RedriveExecution` resumes the failed execution at the state it failed in (the states
  that succeeded before it are not run again, whatever their fences say). The fallback, and
  `--restart` on purpose, is a new execution with the same input, hence the same execution token:
  it starts from the first state, every step whose fence completed is skipped and only the
  unfinished work runs, including a step whose fence an operator reset (docs/operating.md,
  "Inspecting and resetting idempotency state").
- workflow on Express (`--id`: an entity's id): Express has no RedriveExecution and no
  execution API to find a failed execution by; the service's queue is the run's retry. A restart
  is the entity's current-run message sent again: the worker runs the run once more under the
  same token (`restart_express_run`), refused past the same restart-safe window.
The result says which method was used. A start the SDK sent again after it had landed (a lost
answer) is recognised, not reported as a failure: a move task refused while the DLQ's own task,
started since the call, runs; a restart's name taken by an execution with the same input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from botocore.exceptions import ClientError

from ops.service import service
from ops.stack_outputs import dlq_output, queue_output, table_output
from ops.target import Target, run_tool
from reliability.cdk.config import FENCE_WINDOWS, outlived
from reliability.declaration import Service
from reliability.run_store import run_records
from reliability.sqs import SqsQueue
from reliability.stepfunctions import execution_arn as execution_arn_of
from reliability.workflow_runs import TERMINAL_STATUSES, EntityRun, RunMessage, execution_name

if TYPE_CHECKING:
    from reliability.workflow_runs import Queue, RunStore

REDRIVABLE_STATUSES = frozenset({"FAILED", "TIMED_OUT", "ABORTED"})
# Every fence of an execution was written after it started and lives at least the windows it must
# outlive (a synth checks each stage's TTL: reliability.cdk.config), so a restart under the same
# token is safe while the execution started less than this ago; later, its fences may be gone and
# a restart could repeat effects.
RESTART_SAFE_SECONDS = outlived(FENCE_WINDOWS)
_RECEIVE_BATCH = 10
# AWS refuses a request signed more than 5 minutes off its clock: the most a task's start time
# (the server's clock) can differ from this tool's.
_SIGNING_SKEW_MS = 5 * 60 * 1000


class Method(StrEnum):
    START_MESSAGE_MOVE_TASK = "StartMessageMoveTask"
    RECEIVE_SEND_DELETE = "receive-send-delete"
    REDRIVE_EXECUTION = "RedriveExecution"
    RESTART = "restart-with-same-token"
    # Step Functions refused (stopped more than the redrive window ago) and its fences may be gone.
    REFUSED = "ExecutionNotRedrivable"
    # Express: the run's message sent again; the worker starts the execution under the same token.
    QUEUED_RESTART = "restart-with-same-token-by-the-queue"


class CreatedRun(EntityRun, Protocol):
    """An entity's run and when the entity was created (an Express restart's window counts from
    it): `reliability.run_store.RunRecord`, or a service's own record."""

    @property
    def created_at(self) -> str: ...  # ISO 8601


C = TypeVar("C", bound=CreatedRun)


class RedriveError(RuntimeError):
    """The redrive cannot be done as asked (nothing to redrive to, wrong execution status)."""


@dataclass(frozen=True)
class DlqRedrive:
    method: Method
    dlq_url: str
    destination_url: str | None
    moved: int | None  # None: the native task moves asynchronously
    task_handle: str | None = None


@dataclass(frozen=True)
class WorkflowRedrive:
    method: Method
    failed_execution_arn: str
    execution_arn: str


def _unsupported(error: Exception) -> bool:
    """True when the endpoint does not implement the action (not a failure of the action).

    In-process moto raises NotImplementedError; moto's server answers a bare HTTP 500 whose error
    code is the status number, a shape AWS never uses (its errors always carry a named code).
    """
    if isinstance(error, NotImplementedError):
        return True
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        return code in {"500", "501", "InvalidAction", "UnknownOperationException"}
    return False


def _queue_arn(sqs: Any, url: str) -> str:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    return str(attributes["QueueArn"])


def _source_queue(sqs: Any, dlq_url: str) -> str:
    sources: list[str] = sqs.list_dead_letter_source_queues(QueueUrl=dlq_url).get("queueUrls", [])
    if len(sources) != 1:
        raise RedriveError(f"{dlq_url} is the DLQ of {len(sources)} queues ({sources}); name the destination")
    return sources[0]


def _task_started_since(sqs: Any, request: dict[str, Any], since_ms: int) -> str | None:
    """The handle of the DLQ's move task to the same destination, running and started since
    `since_ms` (less the clock skew SigV4 allows), if there is one: this call's own when its answer
    was lost and SQS refused the SDK's resend (one active task per queue), or a task another
    operator started meanwhile. Either is the move asked for."""
    try:
        tasks = sqs.list_message_move_tasks(SourceArn=request["SourceArn"], MaxResults=1).get("Results", [])
    except ClientError:
        return None
    latest = tasks[0] if tasks else {}
    started = int(latest.get("StartedTimestamp", 0)) >= since_ms - _SIGNING_SKEW_MS
    same = latest.get("DestinationArn") == request.get("DestinationArn")
    return str(latest["TaskHandle"]) if latest.get("Status") == "RUNNING" and started and same else None


def redrive_dlq(sqs: Any, *, dlq_url: str, destination_url: str | None = None) -> DlqRedrive:
    """Move every message in `dlq_url` back to `destination_url` (default: its source queue)."""
    request: dict[str, Any] = {}
    asked_ms = int(time.time() * 1000)
    try:
        request["SourceArn"] = _queue_arn(sqs, dlq_url)
        if destination_url:
            request["DestinationArn"] = _queue_arn(sqs, destination_url)
        handle = sqs.start_message_move_task(**request)["TaskHandle"]
        return DlqRedrive(Method.START_MESSAGE_MOVE_TASK, dlq_url, destination_url, None, handle)
    except (ClientError, NotImplementedError) as error:
        if not _unsupported(error):
            running = _task_started_since(sqs, request, asked_ms) if "SourceArn" in request else None
            if running is None:
                raise
            return DlqRedrive(Method.START_MESSAGE_MOVE_TASK, dlq_url, destination_url, None, running)
    destination = destination_url or _source_queue(sqs, dlq_url)
    started_ms = int(time.time() * 1000)
    moved = 0
    while True:
        messages = sqs.receive_message(
            QueueUrl=dlq_url,
            MaxNumberOfMessages=_RECEIVE_BATCH,
            MessageAttributeNames=["All"],
            AttributeNames=["SentTimestamp"],
            WaitTimeSeconds=0,
        ).get("Messages", [])
        # SentTimestamp of a message SQS dead-lettered is its original send; of one a handler
        # dead-lettered, that send. Either way, newer than the start = it arrived during the move.
        arrived = [m for m in messages if int(m.get("Attributes", {}).get("SentTimestamp", 0)) > started_ms]
        for message in arrived:
            sqs.change_message_visibility(
                QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
        messages = [m for m in messages if m not in arrived]
        if not messages:
            return DlqRedrive(Method.RECEIVE_SEND_DELETE, dlq_url, destination, moved)
        for message in messages:
            send: dict[str, Any] = {"QueueUrl": destination, "MessageBody": message["Body"]}
            if message.get("MessageAttributes"):
                send["MessageAttributes"] = message["MessageAttributes"]
            sqs.send_message(**send)
            sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"])
            moved += 1


def redrive_execution(
    sfn: Any, *, execution_arn: str, restart: bool = False, now: float | None = None
) -> WorkflowRedrive:
    """Run a failed execution again: resumed at its failed state where the endpoint redrives, else
    (or with `restart`) from its first state under the same token, its fences skipping what is done.
    Past the redrive window a restart stands in, while the fences certainly live; after that the
    result is REFUSED and the entity needs a person (`make story`, then `make rerun` once FAILED)."""
    execution = sfn.describe_execution(executionArn=execution_arn)
    if execution["status"] not in REDRIVABLE_STATUSES:
        raise RedriveError(f"{execution_arn} is {execution['status']}; only failed executions redrive")

    # Every restart, asked for or the fallback's, runs only while the token's fences surely live:
    # an older one could repeat effects (the fault search met a second provider effect after a
    # day-36 restart).
    def restart_safe() -> bool:
        age = (now if now is not None else time.time()) - execution["startDate"].timestamp()
        return age < RESTART_SAFE_SECONDS

    if not restart:
        try:
            sfn.redrive_execution(executionArn=execution_arn)
            return WorkflowRedrive(Method.REDRIVE_EXECUTION, execution_arn, execution_arn)
        except (ClientError, NotImplementedError) as error:
            refused = isinstance(error, ClientError) and error.response["Error"]["Code"] == Method.REFUSED
            if not refused and not _unsupported(error):
                raise
            if refused and not restart_safe():
                return WorkflowRedrive(Method.REFUSED, execution_arn, execution_arn)
    elif not restart_safe():
        return WorkflowRedrive(Method.REFUSED, execution_arn, execution_arn)
    # A new name is required (names are unique per state machine for 90 days); the input, and so
    # the execution token every fence is keyed by, stays the same.
    state_machine_arn = execution["stateMachineArn"]
    executions = [
        e
        for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=state_machine_arn)
        for e in page["executions"]
    ]
    taken = {e["name"] for e in executions}
    base = execution["name"].split("-restart-")[0]
    attempts = sorted(
        (e for e in executions if e["name"].split("-restart-")[0] == base), key=lambda e: e["startDate"]
    )
    if attempts and attempts[-1]["executionArn"] != execution_arn:
        latest = attempts[-1]
        if latest["status"] not in REDRIVABLE_STATUSES:
            raise RedriveError(
                f"{execution_arn} was redriven already: {latest['name']} is {latest['status']}"
            )
    attempt = next(n for n in range(1, len(taken) + 2) if f"{base}-restart-{n}" not in taken)
    name = f"{base}-restart-{attempt}"
    try:
        started = sfn.start_execution(stateMachineArn=state_machine_arn, name=name, input=execution["input"])
    except ClientError as error:
        if error.response["Error"]["Code"] != "ExecutionAlreadyExists":
            raise
        # The name was free when listed: this start's own first attempt landed, its answer was lost
        # and the SDK's resend met the restart already ended (a running one answers the resend as
        # the start), or another operator's restart of this execution took the name. With the
        # same input, either is the restart asked for; one more would run the steps twice over.
        restart_arn = execution_arn_of(state_machine_arn, name)
        if sfn.describe_execution(executionArn=restart_arn)["input"] != execution["input"]:
            raise
        return WorkflowRedrive(Method.RESTART, execution_arn, restart_arn)
    return WorkflowRedrive(Method.RESTART, execution_arn, started["executionArn"])


def restart_express_run(
    *,
    store: RunStore[C],
    queue: Queue,
    entity_id: str,
    now: float | None = None,
    declared: Service | None = None,
) -> WorkflowRedrive:
    """Express: run an entity's current run again under the same token, by its message (module doc).

    Refused (`Method.REFUSED`) once the entity is older than `RESTART_SAFE_SECONDS`: its run's
    fences were all written after the entity was created, so they surely live until then (its
    creation bounds the run's first start; a rerun of an old entity is refused early, never late).
    A finished entity has nothing to restart (`RedriveError`)."""
    entity = (declared or service()).entity
    found = store.get(entity_id)
    if found is None:
        raise RedriveError(f"no {entity.name} {entity_id!r}")
    if found.status in TERMINAL_STATUSES:
        raise RedriveError(f"{entity.name} {entity_id} is {found.status}: nothing to restart")
    failed = found.execution_arn or execution_name(found.entity_id, found.run)
    age = (now if now is not None else time.time()) - datetime.fromisoformat(found.created_at).timestamp()
    if age >= RESTART_SAFE_SECONDS:
        return WorkflowRedrive(Method.REFUSED, failed, failed)
    queue.send(RunMessage(found.entity_id, found.run, found.idempotency_key).body(entity))
    return WorkflowRedrive(Method.QUEUED_RESTART, failed, execution_name(found.entity_id, found.run))


def express_entity(execution_arn: str) -> str:
    """The entity an Express execution ARN ran (`...:express:<machine>:<entity id>-r<run>:<id>`)."""
    parts = execution_arn.split(":")
    if len(parts) < 9 or parts[5] != "express" or "-r" not in parts[7]:
        raise RedriveError(f"{execution_arn} is not an execution of this service's Express workflow")
    return parts[7].rsplit("-r", 1)[0]


def redrive_failed_executions(
    sfn: Any, *, state_machine_arn: str, restart: bool = False, now: float | None = None
) -> list[WorkflowRedrive]:
    """Redrive every execution of the state machine whose latest attempt failed."""
    executions = [
        e
        for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=state_machine_arn)
        for e in page["executions"]
    ]
    # An execution already restarted under a newer name is not redriven twice.
    latest: dict[str, dict[str, Any]] = {}
    for e in sorted(executions, key=lambda e: e["startDate"]):
        latest[e["name"].split("-restart-")[0]] = e
    return [
        redrive_execution(sfn, execution_arn=e["executionArn"], restart=restart, now=now)
        for e in latest.values()
        if e["status"] in REDRIVABLE_STATUSES
    ]


def _workflow(
    target: Target, args: argparse.Namespace, declared: Service
) -> WorkflowRedrive | list[WorkflowRedrive]:
    sfn = target.client("stepfunctions")
    machine = target.output("StateMachineArn")
    if sfn.describe_state_machine(stateMachineArn=machine).get("type") == "EXPRESS":
        return _restart_express(target, args, declared)
    if args.entity_id:
        raise RedriveError("--id restarts an Express run; on Standard name --execution-arn (or none)")
    if args.execution_arn:
        return redrive_execution(sfn, execution_arn=args.execution_arn, restart=args.restart)
    return redrive_failed_executions(sfn, state_machine_arn=machine, restart=args.restart)


def _restart_express(target: Target, args: argparse.Namespace, declared: Service) -> WorkflowRedrive:
    entity_id = args.entity_id or (express_entity(args.execution_arn) if args.execution_arn else None)
    if entity_id is None:
        raise RedriveError(
            f"Express lists no executions: name the {declared.entity.name} (ID=<id>); a run whose "
            f"message is in the {declared.queue} DLQ comes back with "
            f"`make redrive-dlq QUEUE={declared.queue}`"
        )
    store = run_records(
        client=target.client("dynamodb"),
        table_name=target.output(table_output(declared.entity.table)),
        entity=declared.entity,
    )
    queue = SqsQueue(client=target.client("sqs"), queue_url=target.output(queue_output(declared.queue)))
    return restart_express_run(store=store, queue=queue, entity_id=entity_id, declared=declared)


def main(argv: Sequence[str] | None = None, declared: Service | None = None) -> int:
    """`declared`: the service whose queues and entities are redriven (default:
    `ops.service.service()`)."""
    declared = declared or service()
    parser = argparse.ArgumentParser(prog="python -m ops.redrive", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    dlq = commands.add_parser("dlq", help="move a DLQ's messages back to its source queue")
    dlq.add_argument("queue", choices=declared.queues, help="the queue whose DLQ to move back")
    workflow = commands.add_parser("workflow", help="redrive failed workflow executions")
    workflow.add_argument("--execution-arn", help="one execution (default: every failed one)")
    workflow.add_argument(
        "--id",
        dest="entity_id",
        help=f"Express: the {declared.entity.name} (its id) whose current run to start again under the "
        "same token",
    )
    workflow.add_argument(
        "--restart",
        action="store_true",
        help="start again from the first state under the same token instead of resuming at the failed "
        "state (after a fence reset of an earlier step)",
    )
    args = parser.parse_args(argv)

    target = Target.resolve()
    result: object
    try:
        if args.command == "dlq":
            result = redrive_dlq(target.client("sqs"), dlq_url=target.output(dlq_output(args.queue)))
        else:
            result = _workflow(target, args, declared)
    except RedriveError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    items = result if isinstance(result, list) else [result]
    print(json.dumps([asdict(item) for item in items], indent=2))
    refused = [item for item in items if isinstance(item, WorkflowRedrive) and item.method == Method.REFUSED]
    for item in refused:
        print(
            f"refused: {item.failed_execution_arn} is past the redrive window and its fences may have "
            "expired; a restart could repeat effects: see `make story`, then `make rerun` once FAILED",
            file=sys.stderr,
        )
    return 1 if refused else 0


if __name__ == "__main__":
    run_tool(main)
