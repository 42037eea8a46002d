"""A fenced step's settings (`reliability.settings.StepSettings`) on the tests' own service
(`two_step_service`): the step named by STEP_NAME is given the fence table and the tables its
entry declares as ports; a step with the events port is given every consumer's queue instead of
an `events` table; anything missing or unknown fails the cold start naming it."""

from __future__ import annotations

import pytest
from two_step_service import SERVICE

from reliability import settings as kinds
from reliability.settings import InvalidSettings

BASE = {
    "SERVICE_NAME": "visits",
    "STAGE": "dev",
    "AWS_LAMBDA_FUNCTION_NAME": "visits-dev-hold",
    "IDEMPOTENCY_TTL_SECONDS": "900",
    "FENCE_TTL_SECONDS": "3600",
    "DEDUP_TTL_SECONDS": "7200",
    "PROVIDER_KEY_LIFETIME_SECONDS": "600",
    "FENCE_TABLE": "fences-dev",
}


class StepSettings(kinds.StepSettings):
    DECLARATION = SERVICE


def test_a_step_is_given_the_fence_table_and_its_port_tables_and_no_queue() -> None:
    settings = StepSettings.from_env({**BASE, "STEP_NAME": "Hold", "HOLDS_TABLE": "holds-dev"})
    assert settings.step_name == "Hold"
    assert (dict(settings.tables), dict(settings.queues)) == (
        {"fences": "fences-dev", "holds": "holds-dev"},
        {},
    )


def test_a_step_with_the_events_port_is_given_every_consumers_queue_and_no_events_table() -> None:
    settings = StepSettings.from_env(
        {**BASE, "STEP_NAME": "Announce", "AUDIT_QUEUE_URL": "https://sqs/audit"}
    )
    assert settings.step_name == "Announce"
    assert (dict(settings.tables), dict(settings.queues)) == (
        {"fences": "fences-dev"},
        {"audit": "https://sqs/audit"},
    )


def test_a_step_missing_a_port_table_fails_naming_its_variable() -> None:
    with pytest.raises(InvalidSettings) as failed:
        StepSettings.from_env({**BASE, "STEP_NAME": "Pay"})
    assert str(failed.value) == "not set: PROVIDER_TABLE"


@pytest.mark.parametrize("environ", [BASE, {**BASE, "STEP_NAME": ""}])
def test_a_step_without_its_name_fails_naming_the_variable(environ: dict[str, str]) -> None:
    with pytest.raises(InvalidSettings) as failed:
        StepSettings.from_env(environ)
    assert str(failed.value) == "not set: STEP_NAME"


def test_a_step_the_declaration_does_not_have_fails_naming_it() -> None:
    with pytest.raises(InvalidSettings, match="no step 'Ship' in service 'visits'"):
        StepSettings.from_env({**BASE, "STEP_NAME": "Ship"})
