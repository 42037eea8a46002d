"""Stage configuration: the library's (`reliability.cdk.config`), read from this repository's
`cdk.json` (`retrysafe.service`, `retrysafe.stages.<stage>`; `-c stage=dev|prod|local`).

The tools (ops, chaos, simulator, scale) and the docs' constants read the windows and the stage
config through this module.
"""

from __future__ import annotations

from reliability.cdk.config import (
    CONTEXT_KEY,
    DEDUP_WINDOWS,
    DEFAULT_STAGE,
    DLQ_RETENTION_DAYS,
    FENCE_WINDOWS,
    PROVIDER_KEY_LIFETIME_HOURS,
    QUEUE_RETENTION_DAYS,
    REDRIVE_WINDOW_DAYS,
    SECONDS_PER_DAY,
    STRANDED_AFTER_MINUTES,
    SWEEP_EVERY_MINUTES,
    TTL_MARGIN_DAYS,
    ApiAuth,
    ApiThrottle,
    ConfigError,
    StageConfig,
    WorkflowType,
    check_lifetimes,
    derived_ttl_days,
    load_config,
    outlived,
)

__all__ = [
    "CONTEXT_KEY",
    "DEDUP_WINDOWS",
    "DEFAULT_STAGE",
    "DLQ_RETENTION_DAYS",
    "FENCE_WINDOWS",
    "PROVIDER_KEY_LIFETIME_HOURS",
    "QUEUE_RETENTION_DAYS",
    "REDRIVE_WINDOW_DAYS",
    "SECONDS_PER_DAY",
    "STRANDED_AFTER_MINUTES",
    "SWEEP_EVERY_MINUTES",
    "TTL_MARGIN_DAYS",
    "ApiAuth",
    "ApiThrottle",
    "ConfigError",
    "StageConfig",
    "WorkflowType",
    "check_lifetimes",
    "derived_ttl_days",
    "load_config",
    "outlived",
]
