"""A business entity's runs: the worker starts each one once (`WorkflowStarter`); an operator, or
the sweep schedule, starts the next or re-sends a stranded one (`Reruns`). Plain Python over the
ports below, generic over the service's `Entity` and its stored record (`EntityRun`).

A run is identified by (entity id, run): its execution is named `<entity id>-r<run>`, its token is
`reliability.keys.execution_token` of the two, and its queue message is `RunMessage`,
`{"<entity>_id", "run", "idempotency_key"}`, defined once here and parsed by `RunMessages`
without pydantic (the worker's cold start). The run is the entity's decision, never a message's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from reliability import fields
from reliability.errors import (
    EntityNotFound,
    ExecutionConflict,
    ExecutionFailed,
    PoisonMessage,
    RerunRefused,
    RunNotCurrent,
    UnknownEntity,
)
from reliability.keys import execution_token
from reliability.telemetry import Decision

if TYPE_CHECKING:  # annotations only: no module to load at run time
    from datetime import datetime

    from reliability.declaration import Entity
    from reliability.telemetry import Telemetry


class RunStatus(StrEnum):
    """Where an entity's current run stands (a service's own status enum may repeat these values:
    the run model compares values, never identities)."""

    ACCEPTED = "ACCEPTED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


# A run that reached one of these is over; only a FAILED one may be followed by another run.
TERMINAL_STATUSES = frozenset({RunStatus.COMPLETED, RunStatus.FAILED})
# What an entity id in a message may hold: the characters an execution name allows. Names are at
# most 80 characters; an id of at most 64 plus "-r<run>" leaves ample room.
ENTITY_ID_PATTERN = r"^[A-Za-z0-9_-]+$"
MAX_ID_CHARS = 64
_ANY = r"^[\s\S]+$"  # any string of at least one character
# A failed task's cause can be a whole traceback; the log line keeps its head.
CAUSE_LOGGED_CHARS = 512


def execution_name(entity_id: str, run: int) -> str:
    """The run's execution name: one per (entity, run), Standard's dedup."""
    return f"{entity_id}-r{run}"


RESTART_SUFFIX = "-restart-"  # an operator's restart of a run: `<execution name>-restart-<n>`
# `<entity id>-r<run>`, then whatever a restart of the run appends after a dash
_EXECUTION_NAME = re.compile(r"(?P<entity>.+?)-r(?P<run>[0-9]+)(?:-.*)?")


def run_of_execution(name: str) -> tuple[str, int]:
    """The (entity id, run) an execution's name carries (`execution_name`, or a restart's:
    `<execution name>-<anything>`)."""
    found = _EXECUTION_NAME.fullmatch(name)
    if found is None:
        raise ValueError(f"{name!r} is not an execution name of a run")
    return found["entity"], int(found["run"])


@dataclass(frozen=True)
class RunMessage:
    """A run's queue message: which entity, which run, and the key lineage it was created with."""

    entity_id: str
    run: int
    idempotency_key: str

    def body(self, entity: Entity) -> dict[str, Any]:
        """The JSON body, the entity's id under its own field name (`Entity.id_field`)."""
        return {entity.id_field: self.entity_id, "run": self.run, "idempotency_key": self.idempotency_key}


class RunMessages:
    """Parses a run's message body, no other field (`reliability.batch.parse_body`'s model
    protocol): `fields.ShapeError` naming the first field that is not as the worker accepts it."""

    def __init__(self, entity: Entity) -> None:
        self.entity = entity
        self._allowed = frozenset({entity.id_field, "run", "idempotency_key"})

    def model_validate(self, obj: Any, /) -> RunMessage:
        data = fields.record(obj, allowed=self._allowed)
        return RunMessage(
            entity_id=fields.text(
                data, self.entity.id_field, pattern=ENTITY_ID_PATTERN, max_length=MAX_ID_CHARS
            ),
            run=fields.integer(data, "run", minimum=1),
            idempotency_key=fields.text(data, "idempotency_key", pattern=_ANY),
        )


@dataclass(frozen=True)
class ExecutionEnd:
    """How an Express execution the worker waited for ended (StartSyncExecution's answer)."""

    arn: str
    status: str  # SUCCEEDED, FAILED or TIMED_OUT
    started: float  # epoch seconds
    stopped: float
    error: str | None = None
    cause: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.status == "SUCCEEDED"

    @property
    def reason(self) -> str:
        """What went wrong, as a dead-letter reason: `execution <status>: <error>: <cause>`."""
        parts = [f"execution {self.status}", *(part for part in (self.error, self.cause) if part)]
        return ": ".join(parts)


# --- ports ------------------------------------------------------------------------------------
class EntityRun(Protocol):
    """What the run model reads of a stored entity (a service's entity record has these)."""

    @property
    def entity_id(self) -> str: ...
    @property
    def idempotency_key(self) -> str: ...
    @property
    def run(self) -> int: ...
    @property
    def status(self) -> str: ...  # a RunStatus value
    @property
    def execution_arn(self) -> str | None: ...


E = TypeVar("E", bound=EntityRun)


class RunStore(Protocol[E]):
    """The entity's record, as far as its runs go (`reliability.run_store.DynamoRunStore`)."""

    def get(self, entity_id: str) -> E | None: ...

    def mark_running(self, entity_id: str, *, run: int, execution_arn: str | None) -> None:
        """RUNNING (+ the execution ARN, when given), if `run` is still the current run; a
        finished entity is never moved back (its ARN is still recorded)."""
        ...

    def record_execution(self, entity_id: str, *, run: int, execution_arn: str) -> None:
        """The run's (latest) execution ARN, status untouched, if `run` is still the current run."""
        ...

    def start_next_run(self, entity_id: str, *, run: int) -> E:
        """run -> run + 1, ACCEPTED, in ONE conditional write, only if the current run is `run`
        and it ended FAILED. Else `RerunRefused`, never for the SDK's resend of this call's own
        write that landed (then: the entity as it is now)."""
        ...

    def accepted_before(self, created_before: str) -> list[E]:
        """Entities ACCEPTED (their current run not started) created before the ISO-8601 instant."""
        ...


class Queue(Protocol):
    def send(self, body: Mapping[str, Any]) -> str:
        """Send one JSON message; returns the message id."""
        ...


class Workflow(Protocol):
    def start(self, *, name: str, payload: Mapping[str, Any]) -> str:
        """Start (or find the identical) execution; returns its ARN. `ExecutionConflict` when an
        execution of that name has a different input."""
        ...

    def execution_arn(self, name: str) -> str:
        """The ARN an execution of this name has (names are unique per state machine)."""
        ...


class ExpressWorkflow(Protocol):
    def run(self, *, name: str, payload: Mapping[str, Any]) -> ExecutionEnd:
        """Start an execution and wait for its end (its time limit at the latest). Names are not
        deduplicated: a second run with the same name is a second execution."""
        ...


# The workflow's input for (entity, run, token): the service's (it carries what its steps need).
WorkflowInputOf = Callable[[E, int, str], Mapping[str, Any]]


# --- use cases --------------------------------------------------------------------------------
@dataclass
class WorkflowStarter(Generic[E]):
    """The worker's use case: one workflow execution per (entity, run).

    Standard: one dedup mechanism, the execution name `<entity id>-r<run>` (a second start with
    the same input is answered with the first's ARN, `Workflow.start`). The entity's own record
    tells a duplicate message apart before any start: RUNNING with an ARN on this run means started.

    Express (`express` set): the worker runs the execution and waits for its end (`_run_express`);
    Express does not dedupe names, so only a finished entity is a duplicate, and the queue is the
    run's durable retry."""

    stage: str
    entity: Entity
    store: RunStore[E]
    workflow: Workflow
    telemetry: Telemetry
    workflow_input: WorkflowInputOf[E]
    express: ExpressWorkflow | None = None

    def start_once(self, message: RunMessage) -> str:
        """`start`, with a message that can never succeed turned into poison. Returns the ARN."""
        try:
            return self.start(message)
        except (UnknownEntity, RunNotCurrent, ExecutionConflict) as error:
            raise PoisonMessage(str(error)) from error

    def start(self, message: RunMessage) -> str:
        """Start `<entity id>-r<run>` with the workflow input; record RUNNING + ARN.

        A message for a run after the entity's current one is poison (`RunNotCurrent`): a run
        after the first begins only by `Reruns.start_next_run`. A message for an earlier run is a
        late copy of a message already consumed (run N+1 began only once run N had ended FAILED);
        like a message for a run already started (the entity has its ARN), it is a duplicate: no
        call but the read (`DedupHit`). A message for the current run of an entity that finished
        without an ARN recorded (its steps were run by hand) records the ARN and starts nothing.

        Raises `UnknownEntity` (poison) for an entity that does not exist or whose key lineage
        does not match, and `ExecutionConflict` (poison) when the name exists with another input.
        """
        name = self.entity.name
        found = self.store.get(message.entity_id)
        if found is None:
            raise UnknownEntity(f"no {name} {message.entity_id!r}")
        if found.idempotency_key != message.idempotency_key:
            raise UnknownEntity(f"message key lineage does not match {name} {message.entity_id!r}")
        if message.run > found.run:
            raise RunNotCurrent(
                f"message run {message.run} is not {name} {found.entity_id}'s current run {found.run} "
                f"({found.status}); a new run starts only with a rerun of the {name}"
            )
        token = execution_token(stage=self.stage, business_id=message.entity_id, run=message.run)
        execution = execution_name(message.entity_id, message.run)
        if message.run < found.run:
            self.telemetry.decision(
                Decision.DEDUP_HIT,
                token=token,
                step="worker",
                status=str(found.status),
                current_run=found.run,
            )
            return self.workflow.execution_arn(execution) if self.express is None else execution
        if self.express is not None:
            return self._run_express(self.express, found, run=message.run, token=token, name=execution)
        if found.status != RunStatus.ACCEPTED and found.execution_arn:
            self.telemetry.decision(Decision.DEDUP_HIT, token=token, step="worker", status=str(found.status))
            return found.execution_arn
        if found.status in TERMINAL_STATUSES:
            arn = self.workflow.execution_arn(execution)
        else:
            arn = self.workflow.start(name=execution, payload=self.workflow_input(found, message.run, token))
        self.store.mark_running(message.entity_id, run=message.run, execution_arn=arn)
        return arn

    def _run_express(self, express: ExpressWorkflow, found: E, *, run: int, token: str, name: str) -> str:
        """The current run on Express: a finished entity is a duplicate (`DedupHit`); otherwise it
        is marked RUNNING (the sweeper leaves it to the queue from then on), the execution runs
        under the run's token while the worker waits, and its end is recorded on the entity and
        logged (`ExecutionEnded`: Express keeps no history). An entity that is RUNNING already had
        an execution that failed, timed out, lost its worker or is still running (a duplicate
        message): starting one more is the only way on, and the fences make every copy's effects
        happen once. A run that did not succeed raises `ExecutionFailed`: the queue retries it."""
        if found.status in TERMINAL_STATUSES:
            self.telemetry.decision(Decision.DEDUP_HIT, token=token, step="worker", status=str(found.status))
            return found.execution_arn or name
        self.store.mark_running(found.entity_id, run=run, execution_arn=None)
        end = express.run(name=name, payload=self.workflow_input(found, run, token))
        self.store.record_execution(found.entity_id, run=run, execution_arn=end.arn)
        self.telemetry.decision(
            Decision.EXECUTION_ENDED,
            token=token,
            step="worker",
            execution=end.arn,
            status=end.status,
            started=end.started,
            stopped=end.stopped,
            error=end.error,
            cause=(end.cause or "")[:CAUSE_LOGGED_CHARS] or None,
        )
        if not end.succeeded:
            raise ExecutionFailed(end)
        return end.arn


@dataclass
class Reruns(Generic[E]):
    """Operator actions on an entity's runs: a new run, or a stranded entity's message again (also
    on a schedule, the sweep function)."""

    entity: Entity
    store: RunStore[E]
    queue: Queue

    def start_next_run(self, entity_id: str) -> E:
        """Run N+1 of an entity whose run N ended FAILED: one conditional transition (run == N and
        FAILED -> run N+1, ACCEPTED), then its message. Asked again after a crash between the two,
        it finds the entity ACCEPTED on run N+1 and only sends the message again. A transition
        whose answer was lost is still this call's (the store recognises its own write); if run
        N+1 was started meanwhile (the sweeper sent its message), nothing is sent."""
        found = self.store.get(entity_id)
        if found is None:
            raise EntityNotFound(f"no {self.entity.name} {entity_id!r}")
        if found.status != RunStatus.ACCEPTED:
            found = self.store.start_next_run(entity_id, run=found.run)
        if found.status == RunStatus.ACCEPTED:
            self.resend(found)
        return found

    def resend(self, found: E) -> None:
        """The message of an ACCEPTED entity's current run, again (the worker dedupes a duplicate)."""
        if found.status != RunStatus.ACCEPTED:
            raise RerunRefused(
                f"{self.entity.name} {found.entity_id} is {found.status}: its message was consumed"
            )
        message = RunMessage(found.entity_id, found.run, found.idempotency_key)
        self.queue.send(message.body(self.entity))

    def resend_stranded(self, *, now: datetime, bound_seconds: int) -> list[E]:
        """Re-send the message of every entity still ACCEPTED `bound_seconds` after it was created
        (the API died between the entity write and the send, and the client never retried).
        The bound is past the normal queue-to-start latency, so a healthy entity is left alone; a
        duplicate of a message still on its way is harmless (the worker dedupes per entity and run).
        Returns the entities re-sent."""
        stranded = self.store.accepted_before((now - timedelta(seconds=bound_seconds)).isoformat())
        for found in stranded:
            self.resend(found)
        return stranded
