"""The environment a function needs, read once at cold start (domain code never reads os.environ)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache


class ConfigError(ValueError):
    """A required variable is missing or malformed (fails the cold start, loudly)."""


def _int(environ: Mapping[str, str], name: str) -> int:
    raw = environ.get(name)
    if raw is None or raw == "":
        raise ConfigError(f"missing environment variable {name}")
    try:
        value = int(raw)
    except ValueError as error:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from error
    if value <= 0:
        raise ConfigError(f"{name} must be positive, got {value}")
    return value


@dataclass(frozen=True)
class ReliabilityConfig:
    """Names and windows the reliability layer needs; each table is optional (a function gets
    only the ones it may use, DEVELOPERS.md). The TTLs are required: the deployment derives them
    from the windows they must outlive (infra/config.py), so no default here can disagree."""

    service_name: str
    stage: str
    fence_ttl_seconds: int
    dedup_ttl_seconds: int
    idempotency_table: str | None = None
    fence_table: str | None = None
    metrics_namespace: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ReliabilityConfig:
        missing = [name for name in ("SERVICE_NAME", "STAGE") if not environ.get(name)]
        if missing:
            raise ConfigError(f"missing environment variables: {', '.join(missing)}")
        return cls(
            service_name=environ["SERVICE_NAME"],
            stage=environ["STAGE"],
            fence_ttl_seconds=_int(environ, "FENCE_TTL_SECONDS"),
            dedup_ttl_seconds=_int(environ, "DEDUP_TTL_SECONDS"),
            idempotency_table=environ.get("IDEMPOTENCY_TABLE") or None,
            fence_table=environ.get("FENCE_TABLE") or None,
            metrics_namespace=environ.get("POWERTOOLS_METRICS_NAMESPACE") or None,
        )

    def require(self, name: str) -> str:
        """A table name that this function must have, e.g. ``config.require("fence_table")``."""
        value = getattr(self, name)
        if not value:
            raise ConfigError(f"{name} is not configured for this function")
        return str(value)


@lru_cache(maxsize=1)
def load_config() -> ReliabilityConfig:
    """Read once per process (cold start)."""
    return ReliabilityConfig.from_env(os.environ)
