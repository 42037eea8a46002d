"""A service's stage configuration, read once from the CDK context (`cdk.json`) and validated,
and the windows its record TTLs must outlive. Pure Python (no aws_cdk).

`cdk.json` holds `retrysafe.service` and `retrysafe.stages.<stage>`; the stage is picked with
`-c stage=<stage>`. Nothing else of a service's CDK app reads the context.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from reliability.cdk.windows import REDRIVE_WINDOW_DAYS as REDRIVE_WINDOW_DAYS  # noqa: PLC0414
from reliability.cdk.windows import SECONDS_PER_DAY as SECONDS_PER_DAY  # noqa: PLC0414
from reliability.cdk.windows import (
    SECONDS_PER_HOUR,
    TtlTooShort,
    Window,
    check_outlives,
    window,
)
from reliability.cdk.windows import derived_ttl_days as _derived_ttl_days
from reliability.cdk.windows import outlived as outlived  # noqa: PLC0414

CONTEXT_KEY = "retrysafe"
DEFAULT_STAGE = "dev"

_NAME = re.compile(r"^[a-z][a-z0-9-]{1,19}$")
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

# An accepted request's message normally starts its workflow within a few worker timeouts; an
# entity still ACCEPTED this long after it was created was stranded (the API died before the send
# and the client never retried): the sweeper re-sends its message, and the dashboard alarms on it.
STRANDED_AFTER_MINUTES = 15
# How often the sweeper (`sweep-accepted`) runs.
SWEEP_EVERY_MINUTES = 5

# --- the windows: how late the same key can come back, each written once ----------------------
# A message waits at most this long in a source queue (the worker's, each consumer's) ...
QUEUE_RETENTION_DAYS = 4
# ... and then at most this long in its DLQ before SQS deletes it (the SQS maximum).
DLQ_RETENTION_DAYS = 14
# (Step Functions' redrive window, REDRIVE_WINDOW_DAYS, is AWS's: reliability.cdk.windows.)
# How long an external provider dedupes an idempotency key (Stripe: 24 h): a stage's default. A
# reconciling leased step does not rely on it outliving anything: a takeover looks its effect up
# by the entity's id and the run's token first.
PROVIDER_KEY_LIFETIME_HOURS = 24
# Added to every derived TTL: an execution's own running time (retries, FenceBusy waits; minutes)
# and clock skew. DynamoDB TTL only ever deletes late, never early, so no margin is needed for it.
TTL_MARGIN_DAYS = 3


# A step fence must exist whenever its (token, step) can run again: the run's message may wait out
# the worker's queue and its DLQ before it starts the execution, which can then be redriven.
FENCE_WINDOWS = (
    window("worker-queue retention", QUEUE_RETENTION_DAYS),
    window("DLQ retention", DLQ_RETENTION_DAYS),
    window("Step Functions redrive window", REDRIVE_WINDOW_DAYS),
)
# A consumer's dedup record must exist whenever its event id can arrive again: the step on the events
# port may re-send it until the execution's redrive window closes, and the re-sent message may then wait out
# the consumer's queue and DLQ (and be redriven from there).
DEDUP_WINDOWS = (
    window("Step Functions redrive window", REDRIVE_WINDOW_DAYS),
    window("consumer-queue retention", QUEUE_RETENTION_DAYS),
    window("DLQ retention", DLQ_RETENTION_DAYS),
)


def derived_ttl_days(windows: tuple[Window, ...]) -> int:
    return _derived_ttl_days(windows, margin_days=TTL_MARGIN_DAYS)


class ConfigError(ValueError):
    """The cdk.json context does not describe a valid stage."""


class ApiAuth(StrEnum):
    IAM = "IAM"
    NONE = "NONE"


class WorkflowType(StrEnum):
    """The workflow's state machine type (`workflow` in a stage's cdk.json entry).

    STANDARD: a durable execution per run (its name deduplicates starts for 90 days, its
    history is an API, a failed one is redriven), $25 per million state transitions. EXPRESS: an
    execution the worker waits for (StartSyncExecution, at most 5 minutes, no name dedup, no
    history API, no redrive), $1 per million plus its duration; the worker's queue is its durable
    retry and the fences make every copy of a run safe (docs/how-it-works.md, "Express workflows")."""

    STANDARD = "STANDARD"
    EXPRESS = "EXPRESS"


@dataclass(frozen=True, kw_only=True)
class ApiThrottle:
    rate: int
    burst: int


@dataclass(frozen=True, kw_only=True)
class StageConfig:
    service: str
    stage: str
    api_auth: ApiAuth
    retain_data: bool
    # How long a client may retry a POST with the same Idempotency-Key and get the first answer
    # back (the HTTP idempotency record's TTL). A retry after that still finds its entity: the
    # entity's id is derived from the key, and the stored entity is reused.
    client_retry_window_hours: int
    # Consumer dedup and step fence TTLs: derived from the windows (DEDUP_WINDOWS, FENCE_WINDOWS)
    # unless cdk.json sets them, and never shorter than those windows (checked here, at synth).
    dedup_ttl_days: int
    fence_ttl_days: int
    log_level: str
    api_throttle: ApiThrottle
    # One KMS key of the stage's own (rotated yearly) encrypts its tables, queues, log groups and
    # Lambda environments; false keeps AWS's keys (no key to pay for and administer), and every
    # scanner finding that asks for a customer managed key is acknowledged on its resource.
    customer_managed_keys: bool = False
    # The workflow's type; STANDARD unless the stage's entry says EXPRESS.
    workflow: WorkflowType = WorkflowType.STANDARD

    def name(self, suffix: str) -> str:
        """The physical name of a resource: `{service}-{stage}-{suffix}`."""
        return f"{self.service}-{self.stage}-{suffix}"

    @property
    def data_stack_name(self) -> str:
        return self.name("data")

    @property
    def app_stack_name(self) -> str:
        return self.name("app")

    @property
    def idempotency_ttl_seconds(self) -> int:
        return self.client_retry_window_hours * SECONDS_PER_HOUR

    @property
    def dedup_ttl_seconds(self) -> int:
        return self.dedup_ttl_days * SECONDS_PER_DAY

    @property
    def fence_ttl_seconds(self) -> int:
        return self.fence_ttl_days * SECONDS_PER_DAY

    @property
    def provider_key_lifetime_seconds(self) -> int:
        return PROVIDER_KEY_LIFETIME_HOURS * SECONDS_PER_HOUR


def check_lifetimes(config: StageConfig) -> None:
    """Every key outlives every path by which it can come back, or the synth fails naming both."""
    try:
        check_outlives("consumer dedup TTL (dedup_ttl_days)", config.dedup_ttl_seconds, DEDUP_WINDOWS)
        check_outlives("step fence TTL (fence_ttl_days)", config.fence_ttl_seconds, FENCE_WINDOWS)
    except TtlTooShort as error:
        raise ConfigError(f"stage {config.stage}: {error}") from error


def _workflow_type(stage: str, raw: Any) -> WorkflowType:
    try:
        return WorkflowType(raw)
    except ValueError:
        choices = " or ".join(w.value for w in WorkflowType)
        raise ConfigError(f"retrysafe.stages.{stage}.workflow must be {choices}, got {raw!r}") from None


def load_config(context: Mapping[str, Any], stage: str | None = None) -> StageConfig:
    """Build the config of one stage from the `retrysafe` context block; raise ConfigError if invalid."""
    stage = stage or DEFAULT_STAGE
    service = context.get("service")
    if not isinstance(service, str) or not _NAME.match(service):
        raise ConfigError(f"retrysafe.service must match {_NAME.pattern}, got {service!r}")
    if not _NAME.match(stage):
        raise ConfigError(f"stage must match {_NAME.pattern}, got {stage!r}")
    stages = context.get("stages") or {}
    if stage not in stages:
        raise ConfigError(f"unknown stage {stage!r}; cdk.json defines {sorted(stages)}")
    raw = stages[stage]
    workflow = _workflow_type(stage, raw.get("workflow", WorkflowType.STANDARD.value))
    try:
        api_auth = ApiAuth(raw["api_auth"])
        throttle = ApiThrottle(rate=int(raw["api_throttle"]["rate"]), burst=int(raw["api_throttle"]["burst"]))
        config = StageConfig(
            service=service,
            stage=stage,
            api_auth=api_auth,
            retain_data=bool(raw["retain_data"]),
            client_retry_window_hours=int(raw.get("client_retry_window_hours", 24)),
            dedup_ttl_days=int(raw.get("dedup_ttl_days", derived_ttl_days(DEDUP_WINDOWS))),
            fence_ttl_days=int(raw.get("fence_ttl_days", derived_ttl_days(FENCE_WINDOWS))),
            log_level=str(raw.get("log_level", "INFO")),
            api_throttle=throttle,
            customer_managed_keys=raw.get("customer_managed_keys", False),
            workflow=workflow,
        )
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"retrysafe.stages.{stage} is invalid: {e!r}") from e
    if not isinstance(raw["retain_data"], bool):
        raise ConfigError(f"retrysafe.stages.{stage}.retain_data must be true or false")
    if not isinstance(config.customer_managed_keys, bool):
        raise ConfigError(f"retrysafe.stages.{stage}.customer_managed_keys must be true or false")
    if config.log_level not in _LOG_LEVELS:
        raise ConfigError(f"log_level must be one of {_LOG_LEVELS}, got {config.log_level!r}")
    if not 1 <= config.client_retry_window_hours <= 24 * 30:
        raise ConfigError(f"client_retry_window_hours must be 1..720, got {config.client_retry_window_hours}")
    check_lifetimes(config)
    if throttle.rate <= 0 or throttle.burst < throttle.rate:
        raise ConfigError(f"api_throttle needs rate > 0 and burst >= rate, got {throttle}")
    return config
