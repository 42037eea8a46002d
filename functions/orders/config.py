"""Typed configuration: one model per kind of function, validated once at cold start.

Each handler module names its kind (`SETTINGS = StepSettings`) and asks `orders.runtime.current`
for a runtime of it; the model's fields are exactly what that kind is given (docs/architecture.md,
"Functions"), none optional: a missing or malformed variable fails the cold start
(`InvalidSettings` naming it), never a first invocation. The tables and queues of a step or
consumer come from its orders.workflow entry, so a new entry needs no new setting. The lifetimes
(TTLs, the provider's key lifetime) have no defaults here: infra/config.py derives each from the
windows it must outlive and is the one place that holds them.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from orders import workflow as declared
from orders.workflow import queue_env, table_env

_STAGE = re.compile(r"[A-Za-z0-9_-]{1,64}")
_LIFETIMES = {
    "idempotency_ttl_seconds": "IDEMPOTENCY_TTL_SECONDS",
    "fence_ttl_seconds": "FENCE_TTL_SECONDS",
    "dedup_ttl_seconds": "DEDUP_TTL_SECONDS",
    "provider_key_lifetime_seconds": "PROVIDER_KEY_LIFETIME_SECONDS",
}


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


class _Reader:
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
    """What every function is given (infra/stacks/app.py), plus its kind's tables and queues:
    `tables` by short name (`orders`, `fences`), `queues` by name (`notify`, `notify-dlq`)."""

    service: str
    stage: str
    function_name: str
    idempotency_ttl_seconds: int
    fence_ttl_seconds: int
    dedup_ttl_seconds: int
    provider_key_lifetime_seconds: int
    tables: Mapping[str, str]
    queues: Mapping[str, str]

    # The tables and queues a kind with a fixed shape is given (infra/stacks/app.py ACCESS; the
    # test over the synthesized template, tests/infra/test_function_env.py, keeps the two equal).
    TABLES: ClassVar[tuple[str, ...]] = ()
    QUEUES: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def declared(cls, reader: _Reader) -> tuple[tuple[str, ...], tuple[str, ...]]:  # noqa: ARG003 - kinds that read an entry use it
        """The tables and queues this kind is given."""
        return cls.TABLES, cls.QUEUES

    @classmethod
    def own(cls, reader: _Reader) -> dict[str, Any]:  # noqa: ARG003 - kinds with fields of their own use it
        """The kind's own fields."""
        return {}

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Self:
        """This kind's settings from ``environ``; InvalidSettings naming every missing or
        malformed variable."""
        reader = _Reader(environ)
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
class ApiSettings(FunctionSettings):
    """The API: HTTP idempotency, orders, and the reads behind `GET /orders/{id}`."""

    # Every table a step record may be on (orders.items.record_tables) is read by GET /orders/{id}.
    TABLES = ("idempotency", "orders", "inventory", "payments", "ledger", "fences")
    QUEUES = ("orders",)


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


WORKFLOW_TYPES = ("STANDARD", "EXPRESS")


@dataclass(frozen=True, kw_only=True)
class WorkerSettings(QueueFedSettings):
    """The orders-queue worker: starts one execution per (order, run)."""

    state_machine_arn: str
    # The visibility per receive after a throttled start or a failed Express run (infra/capacity.py), seconds.
    throttle_backoff_seconds: tuple[int, ...]
    # STANDARD: start the run's named execution; EXPRESS: run it and wait (infra/config.py WorkflowType).
    workflow_type: str
    # The orders queue's maxReceiveCount: an Express run that fails on this receive is dead-lettered
    # by the worker, with the execution's error as its reason.
    max_receive_count: int

    @property
    def express(self) -> bool:
        return self.workflow_type == "EXPRESS"

    TABLES = ("orders",)
    QUEUES = ("orders-dlq",)

    @property
    def source(self) -> str:
        return "worker"

    @property
    def dead_letter_queue(self) -> str:
        return "orders-dlq"

    @classmethod
    def own(cls, reader: _Reader) -> dict[str, Any]:
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
    """One consumer of orders.workflow.CONSUMERS: its dedup (idempotency) table, the orders table
    (read: every event is verified against its order, orders.consumers), its tables, its DLQ."""

    consumer_name: str

    @property
    def source(self) -> str:
        return self.consumer_name

    @property
    def dead_letter_queue(self) -> str:
        return f"{self.consumer_name}-dlq"

    @classmethod
    def declared(cls, reader: _Reader) -> tuple[tuple[str, ...], tuple[str, ...]]:
        name = reader.text("CONSUMER_NAME")
        if not name:
            return (), ()
        consumer = _entry(declared.consumer, name)
        return tuple(dict.fromkeys(("idempotency", "orders", *consumer.tables))), (f"{consumer.name}-dlq",)

    @classmethod
    def own(cls, reader: _Reader) -> dict[str, Any]:
        return {"consumer_name": reader.environ.get("CONSUMER_NAME", "")}


@dataclass(frozen=True, kw_only=True)
class StepSettings(FunctionSettings):
    """One fenced step of orders.workflow.STEPS: the fence table, its port tables and, for the
    events port, every consumer's queue."""

    step_name: str

    @classmethod
    def declared(cls, reader: _Reader) -> tuple[tuple[str, ...], tuple[str, ...]]:
        name = reader.text("STEP_NAME")
        if not name:
            return (), ()
        step = _entry(declared.step, name)
        tables = ("fences", *(port for port in step.ports if port != declared.EVENTS))
        queues = tuple(c.name for c in declared.CONSUMERS) if declared.EVENTS in step.ports else ()
        return tuple(dict.fromkeys(tables)), queues

    @classmethod
    def own(cls, reader: _Reader) -> dict[str, Any]:
        return {"step_name": reader.environ.get("STEP_NAME", "")}


@dataclass(frozen=True, kw_only=True)
class SweepSettings(FunctionSettings):
    """`sweep-accepted`: re-sends the message of orders ACCEPTED for longer than the bound."""

    # How long an order may stay ACCEPTED before the sweeper re-sends its message (infra/config.py).
    stranded_after_seconds: int

    TABLES = ("orders",)
    QUEUES = ("orders",)

    @classmethod
    def own(cls, reader: _Reader) -> dict[str, Any]:
        return {"stranded_after_seconds": reader.seconds("STRANDED_AFTER_SECONDS")}


def settings_of(handler: str) -> type[FunctionSettings]:
    """The settings class of a Lambda handler (`orders.handlers.steps.handler`): the `SETTINGS`
    its module names (what the simulator and the template tests build a function's runtime from)."""
    kind = getattr(importlib.import_module(handler.rpartition(".")[0]), "SETTINGS", None)
    if not (isinstance(kind, type) and issubclass(kind, FunctionSettings)):
        raise TypeError(f"{handler}: its module's SETTINGS is not an orders.config settings class")
    return kind


def _entry(find: Any, name: str) -> Any:
    try:
        return find(name)
    except KeyError as error:
        raise InvalidSettings(str(error)) from error
