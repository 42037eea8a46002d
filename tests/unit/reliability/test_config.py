"""Typed configuration read once at cold start."""

from __future__ import annotations

import pytest

from reliability.config import ConfigError, ReliabilityConfig, load_config

ENV = {
    "SERVICE_NAME": "retrysafe",
    "STAGE": "dev",
    "FENCE_TTL_SECONDS": "3600",
    "DEDUP_TTL_SECONDS": "7200",
    "FENCE_TABLE": "retrysafe-dev-fences",
    "POWERTOOLS_METRICS_NAMESPACE": "retrysafe",
}


def test_reads_the_documented_variables() -> None:
    config = ReliabilityConfig.from_env(ENV)
    assert config.stage == "dev"
    assert config.fence_ttl_seconds == 3600
    assert config.dedup_ttl_seconds == 7200
    assert config.require("fence_table") == "retrysafe-dev-fences"
    assert config.idempotency_table is None
    with pytest.raises(ConfigError):
        config.require("idempotency_table")


@pytest.mark.parametrize(
    "env",
    [
        {"STAGE": "dev"},
        {k: v for k, v in ENV.items() if k != "FENCE_TTL_SECONDS"},
        {**ENV, "FENCE_TTL_SECONDS": "soon"},
        {**ENV, "DEDUP_TTL_SECONDS": "-1"},
    ],
)
def test_bad_environment_fails_the_cold_start(env: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        ReliabilityConfig.from_env(env)


def test_load_config_reads_once(monkeypatch: pytest.MonkeyPatch) -> None:
    load_config.cache_clear()
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    first = load_config()
    monkeypatch.setenv("STAGE", "prod")
    assert load_config() is first
    load_config.cache_clear()
