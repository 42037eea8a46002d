"""Stage configuration: read from the cdk.json context, validated, names derived once."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from infra.config import (
    DLQ_RETENTION_DAYS,
    FENCE_TTL_SECONDS,
    REDRIVE_WINDOW_DAYS,
    SECONDS_PER_DAY,
    ApiAuth,
    ConfigError,
    load_config,
)
from simulator.synth import cdk_context


@pytest.fixture
def context() -> dict[str, Any]:
    return copy.deepcopy(cdk_context("dev")["retrysafe"])


@pytest.mark.parametrize("stage", ["dev", "prod", "local"])
def test_every_stage_in_cdk_json_is_valid(context: dict[str, Any], stage: str) -> None:
    config = load_config(context, stage)
    assert config.stage == stage
    assert config.name("orders") == f"retrysafe-{stage}-orders"
    assert config.data_stack_name == f"retrysafe-{stage}-data"
    assert config.app_stack_name == f"retrysafe-{stage}-app"


def test_stage_defaults_to_dev(context: dict[str, Any]) -> None:
    assert load_config(context, None).stage == "dev"


def test_prod_retains_data_and_local_has_no_api_auth(context: dict[str, Any]) -> None:
    assert load_config(context, "prod").retain_data is True
    assert load_config(context, "dev").retain_data is False
    assert load_config(context, "local").api_auth is ApiAuth.NONE
    assert load_config(context, "dev").api_auth is ApiAuth.IAM


def test_ttls(context: dict[str, Any]) -> None:
    config = load_config(context, "dev")
    assert config.dedup_ttl_seconds == 24 * 3600
    # The fence outlives a message's whole DLQ stay plus the execution redrive window.
    assert config.fence_ttl_seconds == FENCE_TTL_SECONDS
    assert FENCE_TTL_SECONDS > (DLQ_RETENTION_DAYS + REDRIVE_WINDOW_DAYS) * SECONDS_PER_DAY


def test_unknown_stage_is_rejected(context: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="unknown stage 'qa'"):
        load_config(context, "qa")


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("api_auth",), "COGNITO", "invalid"),
        (("retain_data",), "yes", "retain_data"),
        (("log_level",), "TRACE", "log_level"),
        (("dedup_ttl_hours",), 0, "dedup_ttl_hours"),
        (("api_throttle", "burst"), 1, "api_throttle"),
    ],
)
def test_invalid_values_are_rejected(
    context: dict[str, Any], path: tuple[str, ...], value: Any, message: str
) -> None:
    target = context["stages"]["dev"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ConfigError, match=message):
        load_config(context, "dev")


def test_invalid_service_name_is_rejected(context: dict[str, Any]) -> None:
    context["service"] = "Retry Safe"
    with pytest.raises(ConfigError, match="service"):
        load_config(context, "dev")


def test_config_is_frozen(context: dict[str, Any]) -> None:
    config = load_config(context, "dev")
    with pytest.raises(AttributeError):
        config.stage = "prod"  # type: ignore[misc]
