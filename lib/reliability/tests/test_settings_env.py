"""A function's settings read from its environment at cold start (`reliability.settings`): each
value as given, and each missing or malformed variable failing the cold start with a message that
names it and says what it must be."""

from __future__ import annotations

import pytest
from two_step_service import SERVICE

from reliability import settings as kinds
from reliability.settings import InvalidSettings, MissingSetting

BASE = {
    "SERVICE_NAME": "visits",
    "STAGE": "dev",
    "AWS_LAMBDA_FUNCTION_NAME": "visits-dev-fn",
    "IDEMPOTENCY_TTL_SECONDS": "900",
    "FENCE_TTL_SECONDS": "3600",
    "DEDUP_TTL_SECONDS": "7200",
    "PROVIDER_KEY_LIFETIME_SECONDS": "1",
}
WORKER = {
    **BASE,
    "VISITS_TABLE": "visits-dev",
    "VISITS_DLQ_URL": "https://sqs/visits-dlq",
    "STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:visits",
    "THROTTLE_BACKOFF_SECONDS": "10,20,40",
    "WORKFLOW_TYPE": "EXPRESS",
    "MAX_RECEIVE_COUNT": "5",
}
CONSUMER = {
    **BASE,
    "CONSUMER_NAME": "audit",
    "IDEMPOTENCY_TABLE": "idem-dev",
    "VISITS_TABLE": "visits-dev",
    "AUDITS_TABLE": "audits-dev",
    "AUDIT_DLQ_URL": "https://sqs/audit-dlq",
}


class WorkerSettings(kinds.WorkerSettings):
    DECLARATION = SERVICE


class ConsumerSettings(kinds.ConsumerSettings):
    DECLARATION = SERVICE


class ApiSettings(kinds.FunctionSettings):
    TABLES = ("idempotency",)
    QUEUES = ("visits",)


def invalid(kind: type[kinds.FunctionSettings], environ: dict[str, str]) -> str:
    """The message the cold start fails with."""
    with pytest.raises(InvalidSettings) as failed:
        kind.from_env(environ)
    return str(failed.value)


def test_every_lifetime_is_read_as_given_down_to_one_second() -> None:
    settings = ApiSettings.from_env(
        {**BASE, "IDEMPOTENCY_TABLE": "idem-dev", "VISITS_QUEUE_URL": "https://q"}
    )
    assert (
        settings.service,
        settings.stage,
        settings.function_name,
        settings.idempotency_ttl_seconds,
        settings.fence_ttl_seconds,
        settings.dedup_ttl_seconds,
        settings.provider_key_lifetime_seconds,
    ) == ("visits", "dev", "visits-dev-fn", 900, 3600, 7200, 1)
    assert (dict(settings.tables), dict(settings.queues)) == (
        {"idempotency": "idem-dev"},
        {"visits": "https://q"},
    )


@pytest.mark.parametrize("raw", ["0", "-5", "ten", "1.5", " "])
def test_a_lifetime_that_is_not_a_whole_number_of_seconds_above_0_fails_naming_it(raw: str) -> None:
    environ = {**BASE, "IDEMPOTENCY_TABLE": "i", "VISITS_QUEUE_URL": "q", "FENCE_TTL_SECONDS": raw}
    assert invalid(ApiSettings, environ) == (
        f"FENCE_TTL_SECONDS must be a whole number of seconds above 0, not {raw!r}"
    )


def test_every_missing_variable_is_named_once_in_one_message() -> None:
    environ = {k: v for k, v in BASE.items() if k not in ("STAGE", "DEDUP_TTL_SECONDS")}
    assert invalid(ApiSettings, {**environ, "IDEMPOTENCY_TABLE": ""}) == (
        "not set: STAGE, DEDUP_TTL_SECONDS, IDEMPOTENCY_TABLE, VISITS_QUEUE_URL"
    )


def test_a_stage_outside_the_allowed_characters_fails_naming_it() -> None:
    environ = {**BASE, "IDEMPOTENCY_TABLE": "i", "VISITS_QUEUE_URL": "q", "STAGE": "dev/blue"}
    assert invalid(ApiSettings, environ) == "STAGE must be 1-64 of [A-Za-z0-9_-], not 'dev/blue'"


def test_a_table_or_queue_a_kind_is_not_given_is_a_wiring_bug_naming_the_kind() -> None:
    settings = ApiSettings.from_env({**BASE, "IDEMPOTENCY_TABLE": "i", "VISITS_QUEUE_URL": "q"})
    with pytest.raises(MissingSetting) as table:
        settings.table("fences")
    with pytest.raises(MissingSetting) as queue:
        settings.queue("audit")
    assert (str(table.value), str(queue.value)) == (
        "ApiSettings is not given the fences table",
        "ApiSettings is not given the audit queue",
    )


# --- the worker ---------------------------------------------------------------------------------
def test_the_worker_reads_its_machine_schedule_type_and_receive_count() -> None:
    settings = WorkerSettings.from_env(WORKER)
    assert (
        settings.state_machine_arn,
        settings.throttle_backoff_seconds,
        settings.workflow_type,
        settings.express,
        settings.max_receive_count,
    ) == ("arn:aws:states:us-east-1:123456789012:stateMachine:visits", (10, 20, 40), "EXPRESS", True, 5)
    assert (
        WorkerSettings.from_env({**WORKER, "WORKFLOW_TYPE": "STANDARD", "MAX_RECEIVE_COUNT": "1"}).express
        is False
    )


@pytest.mark.parametrize(
    "variable", ["THROTTLE_BACKOFF_SECONDS", "WORKFLOW_TYPE", "MAX_RECEIVE_COUNT", "STATE_MACHINE_ARN"]
)
def test_a_missing_worker_variable_is_named(variable: str) -> None:
    environ = {k: v for k, v in WORKER.items() if k != variable}
    assert invalid(WorkerSettings, environ) == f"not set: {variable}"
    assert invalid(WorkerSettings, {**environ, variable: ""}) == f"not set: {variable}"


@pytest.mark.parametrize("schedule", ["10,0", "10,x", "10,,20"])
def test_a_backoff_schedule_with_a_step_not_above_0_fails_naming_it(schedule: str) -> None:
    step = schedule.split(",")[1]
    assert invalid(WorkerSettings, {**WORKER, "THROTTLE_BACKOFF_SECONDS": schedule}) == (
        f"THROTTLE_BACKOFF_SECONDS must be a whole number of seconds above 0, not {step!r}"
    )


def test_an_unknown_workflow_type_fails_naming_the_known_ones() -> None:
    assert invalid(WorkerSettings, {**WORKER, "WORKFLOW_TYPE": "express"}) == (
        "WORKFLOW_TYPE must be one of ('STANDARD', 'EXPRESS'), not 'express'"
    )


@pytest.mark.parametrize("raw", ["0", "three"])
def test_a_receive_count_not_above_0_fails_naming_it_as_a_count(raw: str) -> None:
    assert invalid(WorkerSettings, {**WORKER, "MAX_RECEIVE_COUNT": raw}) == (
        f"MAX_RECEIVE_COUNT must be a whole number above 0, not {raw!r}"
    )


# --- a consumer ---------------------------------------------------------------------------------
def test_a_consumer_is_named_by_its_variable_and_sources_its_dead_letters() -> None:
    settings = ConsumerSettings.from_env(CONSUMER)
    assert (settings.consumer_name, settings.source, settings.dead_letter_queue) == (
        "audit",
        "audit",
        "audit-dlq",
    )
    assert dict(settings.tables) == {
        "idempotency": "idem-dev",
        "visits": "visits-dev",
        "audits": "audits-dev",
    }
    assert dict(settings.queues) == {"audit-dlq": "https://sqs/audit-dlq"}


def test_a_consumer_without_its_name_fails_naming_the_variable() -> None:
    environ = {k: v for k, v in CONSUMER.items() if k != "CONSUMER_NAME"}
    assert invalid(ConsumerSettings, environ) == "not set: CONSUMER_NAME"
    assert "no consumer 'nobody' in service 'visits'" in invalid(
        ConsumerSettings, {**environ, "CONSUMER_NAME": "nobody"}
    )
