"""Stage configuration: read from the cdk.json context, validated, names derived once."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from emulator.synth import cdk_context
from infra.config import (
    DEDUP_WINDOWS,
    DLQ_RETENTION_DAYS,
    FENCE_WINDOWS,
    QUEUE_RETENTION_DAYS,
    REDRIVE_WINDOW_DAYS,
    SECONDS_PER_DAY,
    ApiAuth,
    ConfigError,
    load_config,
    outlived,
)


@pytest.fixture
def context() -> dict[str, Any]:
    return copy.deepcopy(cdk_context("dev")["retrysafe"])


@pytest.mark.parametrize("stage", ["dev", "prod", "local", "dev-express", "local-express"])
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


def test_only_prod_has_customer_managed_keys_and_they_default_to_off(context: dict[str, Any]) -> None:
    assert {stage: load_config(context, stage).customer_managed_keys for stage in context["stages"]} == {
        "dev": False,
        "prod": True,
        "local": False,  # the local cloud (moto) deploys it: AWS's keys only
        "dev-express": False,
        "local-express": False,
    }
    del context["stages"]["prod"]["customer_managed_keys"]
    assert load_config(context, "prod").customer_managed_keys is False


def test_ttls_are_derived_from_the_windows_they_must_outlive(context: dict[str, Any]) -> None:
    config = load_config(context, "dev")
    assert config.idempotency_ttl_seconds == 24 * 3600  # the client retry window itself
    # A fence outlives a message's stay in the orders queue and its DLQ plus the redrive window;
    # a consumer's dedup record outlives the redrive window plus its own queue and DLQ.
    days = QUEUE_RETENTION_DAYS + DLQ_RETENTION_DAYS + REDRIVE_WINDOW_DAYS
    assert (
        outlived(FENCE_WINDOWS) == outlived(DEDUP_WINDOWS) == days * SECONDS_PER_DAY == 32 * SECONDS_PER_DAY
    )
    assert config.fence_ttl_seconds > outlived(FENCE_WINDOWS)
    assert config.dedup_ttl_seconds > outlived(DEDUP_WINDOWS)


@pytest.mark.parametrize(
    ("setting", "what"), [("dedup_ttl_days", "consumer dedup TTL"), ("fence_ttl_days", "step fence TTL")]
)
def test_a_ttl_shorter_than_its_window_is_refused_naming_both(
    context: dict[str, Any], setting: str, what: str
) -> None:
    context["stages"]["dev"][setting] = 31
    with pytest.raises(ConfigError) as refused:
        load_config(context, "dev")
    message = str(refused.value)
    assert f"{what} ({setting}) is 31 d, shorter than the 32 d it must outlive" in message
    assert "Step Functions redrive window 14 d" in message
    assert "DLQ retention 14 d" in message
    # And a TTL that covers the windows is accepted
    context["stages"]["dev"][setting] = 32
    assert load_config(context, "dev").stage == "dev"


def test_unknown_stage_is_rejected(context: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="unknown stage 'qa'"):
        load_config(context, "qa")


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("api_auth",), "COGNITO", "invalid"),
        (("retain_data",), "yes", "retain_data"),
        (("customer_managed_keys",), "yes", "customer_managed_keys"),
        (("log_level",), "TRACE", "log_level"),
        (("client_retry_window_hours",), 0, "client_retry_window_hours"),
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
