"""Typed configuration: one model per kind of function, validated once at cold start.

Each handler module names its kind (`SETTINGS = StepSettings`) and asks the service's composition
root (`reliability.runtime.Runtimes.current`) for a runtime of it; the model's fields are exactly
what that kind is given, none optional: a missing or malformed variable fails the cold start
(`InvalidSettings` naming it), never a first invocation. The tables and queues of a step or
consumer come from its entry in the service's declaration (`DECLARATION`, which a service binds
on its own subclass of each kind), so a new entry needs no new setting. The lifetimes (TTLs, the
provider's key lifetime) have no defaults here: the service's infrastructure derives each from the
windows it must outlive and is the one place that holds them.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from reliability.declaration import EVENTS, FENCES, Service, queue_env, table_env

_STAGE = re.compile(r"[A-Za-z0-9_-]{1,64}")
_LIFETIMES = {
    "idempotency_ttl_seconds": "IDEMPOTENCY_TTL_SECONDS",
    "fence_ttl_seconds": "FENCE_TTL_SECONDS",
    "dedup_ttl_seconds": "DEDUP_TTL_SECONDS",
    "provider_key_lifetime_seconds": "PROVIDER_KEY_LIFETIME_SECONDS",
}
# The table of HTTP idempotency records and consumer dedup records.
IDEMPOTENCY = "idempotency"
WORKFLOW_TYPES = ("STANDARD", "EXPRESS")


class MissingSetting(LookupError):
    """Code asked for a table or queue its function's kind is not given: a wiring bug."""


class InvalidSettings(ValueError):
    """The environment is not one infra gives this kind of function: the cold start fails, naming why."""


def _seconds(variable: str, raw: str, unit: str = " of seconds") -> int:
    """A whole number (of seconds) above 0."""
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise InvalidSettings(f"{variable} must be a whole number{unit} above 0, not {raw!r}")
    return value


class Reader:
    """Reads variables, collecting every missing one so the cold start names them all at once."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.missing: list[str] = []

    def text(self, variable: str) -> str:
        value = self.environ.get(variable, "")
        if not value:
            self.missing.append(variable)
        return value

    def seconds(self, variable: str) -> int:
        raw = self.text(variable)
        return _seconds(variable, raw) if raw else 0

    def count(self, variable: str) -> int:
        raw = self.text(variable)
        return _seconds(variable, raw, unit="") if raw else 0

    def check(self) -> None:
        if self.missing:
            raise InvalidSettings(f"not set: {', '.join(dict.fromkeys(self.missing))}")


@dataclass(frozen=True, kw_only=True)
class FunctionSettings:
    """What every function is given, plus its kind's tables and queues: `tables` by short name,
    `queues` by name (a consumer's, `<consumer>-dlq`)."""

    service: str
    stage: str
    function_name: str
    idempotency_ttl_seconds: int
    fence_ttl_seconds: int
    dedup_ttl_seconds: int
    provider_key_lifetime_seconds: int
    tables: Mapping[str, str]
    queues: Mapping[str, str]

    # The service's declaration: a service binds it on its subclass of each kind.
    DECLARATION: ClassVar[Service | None] = None
    # The tables and queues a kind with a fixed shape is given.
    TABLES: ClassVar[tuple[str, ...]] = ()
    QUEUES: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def declaration(cls) -> Service:
        if cls.DECLARATION is None:
            raise InvalidSettings(f"{cls.__name__} is not bound to a service's declaration (DECLARATION)")
        return cls.DECLARATION

    @classmethod
    def declared(cls, reader: Reader) -> tuple[tuple[str, ...], tuple[str, ...]]:  # noqa: ARG003 - kinds that read an entry use it
        """The tables and queues this kind is given."""
        return cls.TABLES, cls.QUEUES

    @classmethod
    def own(cls, reader: Reader) -> dict[str, Any]:  # noqa: ARG003 - kinds with fields of their own use it
        """The kind's own fields."""
        return {}

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Self:
        """This kind's settings from ``environ``; InvalidSettings naming every missing or
        malformed variable."""
        reader = Reader(environ)
        values: dict[str, Any] = {
            "service": reader.text("SERVICE_NAME"),
            "stage": reader.text("STAGE"),
            "function_name": reader.text("AWS_LAMBDA_FUNCTION_NAME"),
            **{field: reader.seconds(variable) for field, variable in _LIFETIMES.items()},
        }
        tables, queues = cls.declared(reader)
        values["tables"] = {table: reader.text(table_env(table)) for table in tables}
        values["queues"] = {queue: reader.text(queue_env(queue)) for queue in queues}
        values |= cls.own(reader)
        reader.check()
        if not _STAGE.fullmatch(values["stage"]):
            raise InvalidSettings(f"STAGE must be 1-64 of [A-Za-z0-9_-], not {values['stage']!r}")
        return cls(**values)

    def table(self, table: str) -> str:
        try:
            return self.tables[table]
        except KeyError:
            raise MissingSetting(f"{type(self).__name__} is not given the {table} table") from None

    def queue(self, queue: str) -> str:
        try:
            return self.queues[queue]
        except KeyError:
            raise MissingSetting(f"{type(self).__name__} is not given the {queue} queue") from None


@dataclass(frozen=True, kw_only=True)
class QueueFedSettings(FunctionSettings):
    """A function an SQS queue triggers: its poison records go to `dead_letter_queue`, named
    `source` in their reason."""

    @property
    def source(self) -> str:
        raise NotImplementedError

    @property
    def dead_letter_queue(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class WorkerSettings(QueueFedSettings):
    """The worker of the service's queue: starts one execution per (entity, run); reads and marks
    the entity's table, dead-letters to the queue's DLQ."""

    state_machine_arn: str
    # The visibility per receive after a throttled start or a failed Express run, seconds.
    throttle_backoff_seconds: tuple[int, ...]
    # STANDARD: start the run's named execution; EXPRESS: run it and wait.
    workflow_type: str
    # The queue's maxReceiveCount: an Express run that fails on this receive is dead-lettered by
    # the worker, with the execution's error as its reason.
    max_receive_count: int

    @property
    def express(self) -> bool:
        return self.workflow_type == "EXPRESS"

    @property
    def source(self) -> str:
        return "worker"

    @property
    def dead_letter_queue(self) -> str:
        return f"{self.declaration().queue}-dlq"

    @classmethod
    def declared(cls, reader: Reader) -> tuple[tuple[str, ...], tuple[str, ...]]:  # noqa: ARG003 - the kind's shape
        service = cls.declaration()
        return (service.entity.table,), (f"{service.queue}-dlq",)

    @classmethod
    def own(cls, reader: Reader) -> dict[str, Any]:
        schedule = reader.text("THROTTLE_BACKOFF_SECONDS")
        workflow_type = reader.text("WORKFLOW_TYPE")
        if workflow_type and workflow_type not in WORKFLOW_TYPES:
            raise InvalidSettings(f"WORKFLOW_TYPE must be one of {WORKFLOW_TYPES}, not {workflow_type!r}")
        return {
            "state_machine_arn": reader.text("STATE_MACHINE_ARN"),
            "throttle_backoff_seconds": tuple(
                _seconds("THROTTLE_BACKOFF_SECONDS", part) for part in schedule.split(",") if schedule
            ),
            "workflow_type": workflow_type,
            "max_receive_count": reader.count("MAX_RECEIVE_COUNT"),
        }


@dataclass(frozen=True, kw_only=True)
class ConsumerSettings(QueueFedSettings):
    """One consumer of the declaration: its dedup (idempotency) table, the entity's table (read:
    every event is verified against its entity), its own tables, its DLQ."""

    consumer_name: str

    @property
    def source(self) -> str:
        return self.consumer_name

    @property
    def dead_letter_queue(self) -> str:
        return f"{self.consumer_name}-dlq"

    @classmethod
    def declared(cls, reader: Reader) -> tuple[tuple[str, ...], tuple[str, ...]]:
        name = reader.text("CONSUMER_NAME")
        if not name:
            return (), ()
        service = cls.declaration()
        consumer = _entry(service.consumer, name)
        tables = (IDEMPOTENCY, service.entity.table, *consumer.tables)
        return tuple(dict.fromkeys(tables)), (f"{consumer.name}-dlq",)

    @classmethod
    def own(cls, reader: Reader) -> dict[str, Any]:
        return {"consumer_name": reader.environ.get("CONSUMER_NAME", "")}


@dataclass(frozen=True, kw_only=True)
class StepSettings(FunctionSettings):
    """One fenced step of the declaration: the fence table, its port tables and, for the events
    port, every consumer's queue."""

    step_name: str

    @classmethod
    def declared(cls, reader: Reader) -> tuple[tuple[str, ...], tuple[str, ...]]:
        name = reader.text("STEP_NAME")
        if not name:
            return (), ()
        service = cls.declaration()
        step = _entry(service.step, name)
        tables = (FENCES, *(port for port in step.ports if port != EVENTS))
        queues = tuple(c.name for c in service.consumers) if EVENTS in step.ports else ()
        return tuple(dict.fromkeys(tables)), queues

    @classmethod
    def own(cls, reader: Reader) -> dict[str, Any]:
        return {"step_name": reader.environ.get("STEP_NAME", "")}


@dataclass(frozen=True, kw_only=True)
class SweepSettings(FunctionSettings):
    """The sweep: re-sends the message of entities ACCEPTED for longer than the bound."""

    # How long an entity may stay ACCEPTED before the sweeper re-sends its message.
    stranded_after_seconds: int

    @classmethod
    def declared(cls, reader: Reader) -> tuple[tuple[str, ...], tuple[str, ...]]:  # noqa: ARG003 - the kind's shape
        service = cls.declaration()
        return (service.entity.table,), (service.queue,)

    @classmethod
    def own(cls, reader: Reader) -> dict[str, Any]:
        return {"stranded_after_seconds": reader.seconds("STRANDED_AFTER_SECONDS")}


def settings_of(handler: str) -> type[FunctionSettings]:
    """The settings class of a Lambda handler (`<package>.handlers.steps.handler`): the `SETTINGS`
    its module names (what a simulator and the template tests build a function's runtime from)."""
    kind = getattr(importlib.import_module(handler.rpartition(".")[0]), "SETTINGS", None)
    if not (isinstance(kind, type) and issubclass(kind, FunctionSettings)):
        raise TypeError(f"{handler}: its module's SETTINGS is not a reliability.settings settings class")
    return kind


def _entry(find: Callable[[str], Any], name: str) -> Any:
    try:
        return find(name)
    except KeyError as error:
        raise InvalidSettings(str(error)) from error
