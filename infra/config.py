"""Stage configuration, read once from the `cdk.json` context and validated.

`cdk.json` holds `retrysafe.service` and `retrysafe.stages.<stage>`; the stage is picked with
`-c stage=dev|prod|local`. Nothing else in `infra/` reads the context.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

CONTEXT_KEY = "retrysafe"
DEFAULT_STAGE = "dev"

_NAME = re.compile(r"^[a-z][a-z0-9-]{1,19}$")
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

SECONDS_PER_HOUR = 3600
SECONDS_PER_DAY = 24 * SECONDS_PER_HOUR

# How long a message may sit in a DLQ before SQS deletes it (the SQS maximum).
DLQ_RETENTION_DAYS = 14
# Step Functions accepts a redrive of a failed Standard execution for 14 days after it stopped.
REDRIVE_WINDOW_DAYS = 14
# A step fence must still exist when the last legitimate retry of its step can arrive: a message
# may wait out the whole DLQ retention and then start or redrive an execution whose steps run
# inside the redrive window. 14 + 14 = 28 days; 30 leaves a margin for clock skew and for DynamoDB
# TTL deleting lazily (it only ever deletes late, never early).
FENCE_TTL_DAYS = 30
FENCE_TTL_SECONDS = FENCE_TTL_DAYS * SECONDS_PER_DAY
assert FENCE_TTL_DAYS > REDRIVE_WINDOW_DAYS + DLQ_RETENTION_DAYS


class ConfigError(ValueError):
    """The cdk.json context does not describe a valid stage."""


class ApiAuth(StrEnum):
    IAM = "IAM"
    NONE = "NONE"


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
    # back, and how long a consumer remembers an event id. 24 h covers client retry budgets and
    # SQS redeliveries (minutes to hours); a completed step is never re-run later than that
    # because its fence (FENCE_TTL_DAYS) outlives every redrive, so it never republishes.
    dedup_ttl_hours: int
    log_level: str
    api_throttle: ApiThrottle

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
    def dedup_ttl_seconds(self) -> int:
        return self.dedup_ttl_hours * SECONDS_PER_HOUR

    @property
    def fence_ttl_seconds(self) -> int:
        return FENCE_TTL_SECONDS


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
    try:
        api_auth = ApiAuth(raw["api_auth"])
        throttle = ApiThrottle(rate=int(raw["api_throttle"]["rate"]), burst=int(raw["api_throttle"]["burst"]))
        config = StageConfig(
            service=service,
            stage=stage,
            api_auth=api_auth,
            retain_data=bool(raw["retain_data"]),
            dedup_ttl_hours=int(raw.get("dedup_ttl_hours", 24)),
            log_level=str(raw.get("log_level", "INFO")),
            api_throttle=throttle,
        )
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"retrysafe.stages.{stage} is invalid: {e!r}") from e
    if not isinstance(raw["retain_data"], bool):
        raise ConfigError(f"retrysafe.stages.{stage}.retain_data must be true or false")
    if config.log_level not in _LOG_LEVELS:
        raise ConfigError(f"log_level must be one of {_LOG_LEVELS}, got {config.log_level!r}")
    if not 1 <= config.dedup_ttl_hours <= 24 * 30:
        raise ConfigError(f"dedup_ttl_hours must be 1..720, got {config.dedup_ttl_hours}")
    if throttle.rate <= 0 or throttle.burst < throttle.rate:
        raise ConfigError(f"api_throttle needs rate > 0 and burst >= rate, got {throttle}")
    return config
