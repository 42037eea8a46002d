from __future__ import annotations

import pytest

from orders.config import InvalidSettings, MissingSetting, Settings


def test_settings_read_the_documented_variables():
    settings = Settings.from_env(
        {
            "SERVICE_NAME": "retrysafe",
            "STAGE": "dev",
            "IDEMPOTENCY_TTL_SECONDS": "30",
            "FENCE_TTL_SECONDS": "60",
            "DEDUP_TTL_SECONDS": "50",
            "PROVIDER_KEY_LIFETIME_SECONDS": "40",
            "ORDERS_TABLE": "t",
            "OTHER": "x",
        }
    )
    assert (settings.service, settings.stage, settings.fence_ttl_seconds) == ("retrysafe", "dev", 60)
    assert settings.require("orders_table") == "t"
    with pytest.raises(MissingSetting, match="LEDGER_TABLE"):
        settings.require("ledger_table")


LIFETIMES = {
    "IDEMPOTENCY_TTL_SECONDS": "1",
    "FENCE_TTL_SECONDS": "1",
    "DEDUP_TTL_SECONDS": "1",
    "PROVIDER_KEY_LIFETIME_SECONDS": "1",
}


@pytest.mark.parametrize(
    "env",
    [
        {},
        {**LIFETIMES, "STAGE": "has space"},
        {**LIFETIMES, "STAGE": "dev", "FENCE_TTL_SECONDS": "-1"},
        {**LIFETIMES, "STAGE": "dev", "FENCE_TTL_SECONDS": "1.5"},
        {**LIFETIMES, "STAGE": "dev", "STRANDED_AFTER_SECONDS": "0"},
        # no lifetime has a default: infra/config.py is the one place that holds them
        *({"STAGE": "dev", **{k: v for k, v in LIFETIMES.items() if k != missing}} for missing in LIFETIMES),
    ],
)
def test_bad_settings_fail_the_cold_start(env: dict[str, str]):
    with pytest.raises(InvalidSettings):
        Settings.from_env(env)


BASE = {**LIFETIMES, "STAGE": "dev"}


def test_a_step_function_with_its_declared_tables_and_queues_starts():
    env = {
        **BASE,
        "STEP_NAME": "PublishEvents",
        "FENCE_TABLE": "f",
        "ORDERS_TABLE": "o",
        "NOTIFY_QUEUE_URL": "q1",
        "ANALYTICS_QUEUE_URL": "q2",
    }
    assert Settings.from_env(env).step_name == "PublishEvents"


@pytest.mark.parametrize(
    ("env", "named"),
    [
        # ReserveInventory declares the inventory table (orders.workflow.STEPS)
        ({"STEP_NAME": "ReserveInventory", "FENCE_TABLE": "f", "ORDERS_TABLE": "o"}, "INVENTORY_TABLE"),
        # PublishEvents sends to every consumer's queue
        (
            {"STEP_NAME": "PublishEvents", "FENCE_TABLE": "f", "ORDERS_TABLE": "o", "NOTIFY_QUEUE_URL": "q"},
            "ANALYTICS_QUEUE_URL",
        ),
        ({"CONSUMER_NAME": "notify", "IDEMPOTENCY_TABLE": "i", "NOTIFY_DLQ_URL": "d"}, "NOTIFICATIONS_TABLE"),
        (
            {"CONSUMER_NAME": "analytics", "IDEMPOTENCY_TABLE": "i", "AGGREGATES_TABLE": "a"},
            "ANALYTICS_DLQ_URL",
        ),
        ({"STEP_NAME": "NoSuchStep"}, "NoSuchStep"),
    ],
)
def test_a_step_or_consumer_missing_what_its_entry_declares_fails_the_cold_start(env, named):
    with pytest.raises(InvalidSettings, match=named):
        Settings.from_env({**BASE, **env})
