"""Typed configuration: the environment a function gets (DEVELOPERS.md), validated once at cold start.

Each function receives only the variables its table/queue grants cover, so every resource
setting is optional here and `require()` names the missing one when a use case needs it; a step
or consumer function's cold start fails when a table or queue its orders.workflow entry declares
is not set (`InvalidSettings` naming the variables), not its first invocation. The
lifetimes (TTLs, the provider's key lifetime) have no defaults here: infra/config.py derives
each from the windows it must outlive and is the one place that holds them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass

from orders import workflow as declared
from orders.workflow import queue_env

_ENV = {
    "service": "SERVICE_NAME",
    "stage": "STAGE",
    "idempotency_ttl_seconds": "IDEMPOTENCY_TTL_SECONDS",
    "fence_ttl_seconds": "FENCE_TTL_SECONDS",
    "dedup_ttl_seconds": "DEDUP_TTL_SECONDS",
    "provider_key_lifetime_seconds": "PROVIDER_KEY_LIFETIME_SECONDS",
    "idempotency_table": "IDEMPOTENCY_TABLE",
    "fence_table": "FENCE_TABLE",
    "orders_table": "ORDERS_TABLE",
    "inventory_table": "INVENTORY_TABLE",
    "payments_table": "PAYMENTS_TABLE",
    "ledger_table": "LEDGER_TABLE",
    "notifications_table": "NOTIFICATIONS_TABLE",
    "aggregates_table": "AGGREGATES_TABLE",
    "orders_queue_url": "ORDERS_QUEUE_URL",
    "orders_dlq_url": "ORDERS_DLQ_URL",
    "state_machine_arn": "STATE_MACHINE_ARN",
    "throttle_backoff_seconds": "THROTTLE_BACKOFF_SECONDS",
    "stranded_after_seconds": "STRANDED_AFTER_SECONDS",
    "function_name": "AWS_LAMBDA_FUNCTION_NAME",
    "step_name": "STEP_NAME",
    "consumer_name": "CONSUMER_NAME",
}
# A consumer's queues (orders.workflow.CONSUMERS): `<NAME>_QUEUE_URL`, `<NAME>_DLQ_URL`.
_QUEUE_SUFFIXES = {"_QUEUE_URL": "", "_DLQ_URL": "-dlq"}


# Lifetimes have no default (infra/config.py holds them); each is a whole number of seconds > 0.
_REQUIRED = (
    "stage",
    "idempotency_ttl_seconds",
    "fence_ttl_seconds",
    "dedup_ttl_seconds",
    "provider_key_lifetime_seconds",
)
_POSITIVE_INTS = frozenset(
    {
        "idempotency_ttl_seconds",
        "fence_ttl_seconds",
        "dedup_ttl_seconds",
        "provider_key_lifetime_seconds",
        "stranded_after_seconds",
    }
)
_STAGE = re.compile(r"[A-Za-z0-9_-]{1,64}")


class MissingSetting(RuntimeError):
    """A use case needs a resource this function was not configured (and granted) with."""


class InvalidSettings(ValueError):
    """The environment is not one infra gives a function: the cold start fails, naming why."""


def _positive_int(field: str, raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise InvalidSettings(f"{_ENV[field]} must be a whole number of seconds above 0, not {raw!r}")
    return value


def _table_env(table: str) -> str:
    return _ENV[f"{table}_table"]


def _declared_variables(step_name: str | None, consumer_name: str | None) -> list[str]:
    """The variables the function's orders.workflow entry needs: a step's fence table,
    its port tables and, for the events port, every consumer's queue; a consumer's dedup table,
    its tables and its DLQ."""
    try:
        if step_name:
            step = declared.step(step_name)
            tables = ["fence", *(port for port in step.ports if port != declared.EVENTS)]
            queues = [c.name for c in declared.CONSUMERS] if declared.EVENTS in step.ports else []
            return [*dict.fromkeys(map(_table_env, tables)), *map(queue_env, queues)]
        if consumer_name:
            consumer = declared.consumer(consumer_name)
            tables = ["idempotency", *consumer.tables]
            return [*dict.fromkeys(map(_table_env, tables)), queue_env(f"{consumer.name}-dlq")]
    except KeyError as error:
        raise InvalidSettings(str(error)) from error
    return []


# A plain dataclass, not a pydantic model: every function reads it at cold start, and most never
# load pydantic otherwise (bench/coldstart.py).
@dataclass(frozen=True, kw_only=True)
class Settings:
    service: str = "retrysafe"
    stage: str
    idempotency_ttl_seconds: int
    fence_ttl_seconds: int
    dedup_ttl_seconds: int
    provider_key_lifetime_seconds: int
    idempotency_table: str | None = None
    fence_table: str | None = None
    orders_table: str | None = None
    inventory_table: str | None = None
    payments_table: str | None = None
    ledger_table: str | None = None
    notifications_table: str | None = None
    aggregates_table: str | None = None
    orders_queue_url: str | None = None
    orders_dlq_url: str | None = None
    state_machine_arn: str | None = None
    # The worker's visibility backoff per receive after a throttled start, comma-separated
    # seconds (infra/capacity.py).
    throttle_backoff_seconds: str | None = None
    # How long an order may stay ACCEPTED before the sweeper re-sends its message (infra/config.py).
    stranded_after_seconds: int | None = None
    function_name: str | None = None
    # Which entry of orders.workflow a step or consumer function runs (infra sets it from the entry).
    step_name: str | None = None
    consumer_name: str | None = None
    # Every queue URL the function was given, by queue name (`notify`, `notify-dlq`, ...).
    queue_urls: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """The settings in ``environ`` (unset or empty variables are absent); InvalidSettings when
        a lifetime or the stage is missing or malformed."""
        values: dict[str, object] = {field: environ[var] for field, var in _ENV.items() if environ.get(var)}
        missing = [_ENV[field] for field in _REQUIRED if field not in values]
        declared_by_entry = _declared_variables(environ.get("STEP_NAME"), environ.get("CONSUMER_NAME"))
        missing += [variable for variable in declared_by_entry if not environ.get(variable)]
        if missing:
            raise InvalidSettings(f"not set: {', '.join(missing)}")
        for field in _POSITIVE_INTS & values.keys():
            values[field] = _positive_int(field, str(values[field]))
        if not _STAGE.fullmatch(str(values["stage"])):
            raise InvalidSettings(f"STAGE must be 1-64 of [A-Za-z0-9_-], not {values['stage']!r}")
        values["queue_urls"] = {
            var.removesuffix(suffix).lower().replace("_", "-") + name_suffix: url
            for var, url in environ.items()
            for suffix, name_suffix in _QUEUE_SUFFIXES.items()
            if var.endswith(suffix) and url
        }
        return cls(**values)  # type: ignore[arg-type]

    def require(self, field: str) -> str:
        value = getattr(self, field)
        if not value:
            raise MissingSetting(f"{_ENV[field]} is not set for this function")
        return str(value)

    def queue_url(self, queue: str) -> str:
        url = self.queue_urls.get(queue)
        if not url:
            raise MissingSetting(f"{queue_env(queue)} is not set for this function")
        return url
