from __future__ import annotations

import pytest

from orders.config import (
    ApiSettings,
    ConsumerSettings,
    FunctionSettings,
    InvalidSettings,
    MissingSetting,
    StepSettings,
    SweepSettings,
    WorkerSettings,
    settings_of,
)

LIFETIMES = {
    "IDEMPOTENCY_TTL_SECONDS": "30",
    "FENCE_TTL_SECONDS": "60",
    "DEDUP_TTL_SECONDS": "50",
    "PROVIDER_KEY_LIFETIME_SECONDS": "40",
}
BASE = {**LIFETIMES, "SERVICE_NAME": "retrysafe", "STAGE": "dev", "AWS_LAMBDA_FUNCTION_NAME": "fn"}
API = {
    **BASE,
    "IDEMPOTENCY_TABLE": "i",
    "ORDERS_TABLE": "o",
    "INVENTORY_TABLE": "inv",
    "PAYMENTS_TABLE": "p",
    "LEDGER_TABLE": "l",  # RecordLedger's record is on its ledger entry (orders.items.record_at)
    "FENCE_TABLE": "f",
    "ORDERS_QUEUE_URL": "q",
}


def test_the_api_reads_exactly_its_tables_and_queue():
    settings = ApiSettings.from_env({**API, "NOTIFICATIONS_TABLE": "not-the-apis", "OTHER": "x"})
    assert (settings.service, settings.stage, settings.fence_ttl_seconds) == ("retrysafe", "dev", 60)
    assert settings.table("orders") == "o"
    assert settings.queue("orders") == "q"
    # a table infra does not give the API is a wiring bug, named, even if the variable is set
    with pytest.raises(MissingSetting, match="notifications"):
        settings.table("notifications")


WORKER = {
    "ORDERS_TABLE": "o",
    "ORDERS_DLQ_URL": "d",
    "STATE_MACHINE_ARN": "arn",
    "THROTTLE_BACKOFF_SECONDS": "10",
    "WORKFLOW_TYPE": "STANDARD",
    "MAX_RECEIVE_COUNT": "10",
}


def test_each_kind_reads_its_own_typed_fields():
    worker = WorkerSettings.from_env(
        {
            **BASE,
            "ORDERS_TABLE": "o",
            "ORDERS_DLQ_URL": "d",
            "STATE_MACHINE_ARN": "arn",
            "THROTTLE_BACKOFF_SECONDS": "10,20,40",
            "WORKFLOW_TYPE": "EXPRESS",
            "MAX_RECEIVE_COUNT": "10",
        }
    )
    assert worker.throttle_backoff_seconds == (10, 20, 40)
    assert (worker.express, worker.max_receive_count) == (True, 10)
    assert (worker.source, worker.queue(worker.dead_letter_queue)) == ("worker", "d")
    sweep = SweepSettings.from_env(
        {**BASE, "ORDERS_TABLE": "o", "ORDERS_QUEUE_URL": "q", "STRANDED_AFTER_SECONDS": "900"}
    )
    assert sweep.stranded_after_seconds == 900
    consumer = ConsumerSettings.from_env(
        {
            **BASE,
            "CONSUMER_NAME": "notify",
            "IDEMPOTENCY_TABLE": "i",
            "ORDERS_TABLE": "o",
            "NOTIFICATIONS_TABLE": "n",
            "NOTIFY_DLQ_URL": "d",
        }
    )
    assert (consumer.consumer_name, consumer.source, consumer.queue(consumer.dead_letter_queue)) == (
        "notify",
        "notify",
        "d",
    )


@pytest.mark.parametrize(
    ("kind", "env", "named"),
    [
        (ApiSettings, {}, "STAGE"),
        (ApiSettings, {**API, "STAGE": "has space"}, "STAGE"),
        (ApiSettings, {**API, "FENCE_TTL_SECONDS": "-1"}, "FENCE_TTL_SECONDS"),
        (ApiSettings, {**API, "FENCE_TTL_SECONDS": "1.5"}, "FENCE_TTL_SECONDS"),
        (ApiSettings, {k: v for k, v in API.items() if k != "PAYMENTS_TABLE"}, "PAYMENTS_TABLE"),
        (SweepSettings, {**BASE, "ORDERS_TABLE": "o", "ORDERS_QUEUE_URL": "q"}, "STRANDED_AFTER_SECONDS"),
        (
            SweepSettings,
            {**BASE, "ORDERS_TABLE": "o", "ORDERS_QUEUE_URL": "q", "STRANDED_AFTER_SECONDS": "0"},
            "STRANDED_AFTER_SECONDS",
        ),
        (WorkerSettings, {**BASE, "ORDERS_TABLE": "o", "ORDERS_DLQ_URL": "d"}, "STATE_MACHINE_ARN"),
        *(
            (WorkerSettings, {**BASE, **WORKER, **{variable: value}}, variable)
            for variable, value in (("WORKFLOW_TYPE", "express"), ("MAX_RECEIVE_COUNT", "0"))
        ),
        *(
            (WorkerSettings, {k: v for k, v in {**BASE, **WORKER}.items() if k != missing}, missing)
            for missing in ("WORKFLOW_TYPE", "MAX_RECEIVE_COUNT")
        ),
        (StepSettings, BASE, "STEP_NAME"),
        (ConsumerSettings, BASE, "CONSUMER_NAME"),
        # no lifetime has a default: infra/config.py is the one place that holds them
        *(
            (ApiSettings, {k: v for k, v in API.items() if k != missing}, missing)
            for missing in [*LIFETIMES, "SERVICE_NAME", "AWS_LAMBDA_FUNCTION_NAME"]
        ),
    ],
)
def test_bad_settings_fail_the_cold_start_naming_the_variable(
    kind: type[FunctionSettings], env: dict[str, str], named: str
):
    with pytest.raises(InvalidSettings, match=named):
        kind.from_env(env)


def test_a_step_function_is_given_the_tables_and_queues_of_its_entry():
    env = {
        **BASE,
        "STEP_NAME": "PublishEvents",
        "FENCE_TABLE": "f",
        "NOTIFY_QUEUE_URL": "q1",
        "ANALYTICS_QUEUE_URL": "q2",
    }
    settings = StepSettings.from_env(env)
    assert settings.step_name == "PublishEvents"
    assert (dict(settings.tables), dict(settings.queues)) == (
        {"fences": "f"},
        {"notify": "q1", "analytics": "q2"},
    )


@pytest.mark.parametrize(
    ("kind", "env", "named"),
    [
        # ReserveInventory declares the inventory table (orders.workflow.STEPS)
        (StepSettings, {"STEP_NAME": "ReserveInventory", "FENCE_TABLE": "f"}, "INVENTORY_TABLE"),
        # PublishEvents sends to every consumer's queue
        (
            StepSettings,
            {"STEP_NAME": "PublishEvents", "FENCE_TABLE": "f", "NOTIFY_QUEUE_URL": "q"},
            "ANALYTICS_QUEUE_URL",
        ),
        (
            ConsumerSettings,
            {"CONSUMER_NAME": "notify", "IDEMPOTENCY_TABLE": "i", "NOTIFY_DLQ_URL": "d"},
            "NOTIFICATIONS_TABLE",
        ),
        (
            ConsumerSettings,
            {"CONSUMER_NAME": "analytics", "IDEMPOTENCY_TABLE": "i", "AGGREGATES_TABLE": "a"},
            "ANALYTICS_DLQ_URL",
        ),
        # every consumer reads the order its event names (orders.consumers)
        (
            ConsumerSettings,
            {
                "CONSUMER_NAME": "notify",
                "IDEMPOTENCY_TABLE": "i",
                "NOTIFICATIONS_TABLE": "n",
                "NOTIFY_DLQ_URL": "d",
            },
            "ORDERS_TABLE",
        ),
        (StepSettings, {"STEP_NAME": "NoSuchStep"}, "NoSuchStep"),
        (ConsumerSettings, {"CONSUMER_NAME": "nobody"}, "nobody"),
    ],
)
def test_a_step_or_consumer_missing_what_its_entry_declares_fails_the_cold_start(
    kind: type[FunctionSettings], env: dict[str, str], named: str
):
    with pytest.raises(InvalidSettings, match=named):
        kind.from_env({**BASE, **env})


def test_a_handler_names_its_settings_class():
    assert settings_of("orders.handlers.steps.handler") is StepSettings
    assert settings_of("orders.handlers.api.handler") is ApiSettings
    with pytest.raises(TypeError, match="SETTINGS"):
        settings_of("orders.config.settings_of")
