"""The composition root over a service's own declaration (tests/visit_api.py's): each kind of
function's settings from its environment, tables and queues from the declaration, and the
runtime a handler gets (built once from the environment, or installed, or scoped)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import visit_api

from reliability import settings as kinds
from reliability.declaration import Consumer
from reliability.runtime import Runtime, Runtimes
from reliability.settings import FunctionSettings, InvalidSettings, MissingSetting
from reliability.workflow_runs import Reruns, WorkflowStarter

SERVICE = replace(
    visit_api.SERVICE, consumers=(Consumer(name="audit", effect="x:y", description="d", tables=("entries",)),)
)


class WorkerSettings(kinds.WorkerSettings):
    DECLARATION = SERVICE


class ConsumerSettings(kinds.ConsumerSettings):
    DECLARATION = SERVICE


class SweepSettings(kinds.SweepSettings):
    DECLARATION = SERVICE


class VisitRuntime(Runtime[FunctionSettings]):
    SERVICE = SERVICE

    @property
    def run_store(self) -> Any:
        return "the visits store"

    def workflow_input(self, entity: Any, run: int, token: str) -> dict[str, Any]:
        return {"visit_id": entity.visit_id, "run": run, "token": token}


BASE = {
    "SERVICE_NAME": "visits",
    "STAGE": "dev",
    "AWS_LAMBDA_FUNCTION_NAME": "visits-dev-fn",
    "IDEMPOTENCY_TTL_SECONDS": "3600",
    "FENCE_TTL_SECONDS": "3600",
    "DEDUP_TTL_SECONDS": "3600",
    "PROVIDER_KEY_LIFETIME_SECONDS": "3600",
}
WORKER = {
    **BASE,
    "VISITS_TABLE": "visits-dev",
    "VISITS_DLQ_URL": "https://dlq",
    "STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:visits",
    "THROTTLE_BACKOFF_SECONDS": "10,20",
    "WORKFLOW_TYPE": "STANDARD",
    "MAX_RECEIVE_COUNT": "3",
}


def test_the_worker_is_given_the_entitys_table_and_the_queues_dlq() -> None:
    settings = WorkerSettings.from_env(WORKER)
    assert (dict(settings.tables), dict(settings.queues)) == (
        {"visits": "visits-dev"},
        {"visits-dlq": "https://dlq"},
    )
    assert (settings.dead_letter_queue, settings.throttle_backoff_seconds, settings.express) == (
        "visits-dlq",
        (10, 20),
        False,
    )
    with pytest.raises(MissingSetting, match="entries"):
        settings.table("entries")


def test_a_consumer_is_given_its_declared_tables_and_a_missing_variable_is_named() -> None:
    environ = {
        **BASE,
        "CONSUMER_NAME": "audit",
        "IDEMPOTENCY_TABLE": "i",
        "VISITS_TABLE": "v",
        "AUDIT_DLQ_URL": "q",
    }
    with pytest.raises(InvalidSettings, match="ENTRIES_TABLE"):
        ConsumerSettings.from_env(environ)
    settings = ConsumerSettings.from_env({**environ, "ENTRIES_TABLE": "e"})
    assert set(settings.tables) == {"idempotency", "visits", "entries"}
    with pytest.raises(InvalidSettings, match="no consumer 'nobody'"):
        ConsumerSettings.from_env({**environ, "CONSUMER_NAME": "nobody"})


def test_a_kind_not_bound_to_a_declaration_fails_the_cold_start() -> None:
    with pytest.raises(InvalidSettings, match="DECLARATION"):
        kinds.SweepSettings.from_env({**BASE, "STRANDED_AFTER_SECONDS": "300"})


def test_the_runtime_builds_the_run_model_from_its_hooks_and_the_declaration() -> None:
    runtime = VisitRuntime(WorkerSettings.from_env(WORKER), client_factory=lambda _service: object())
    starter = runtime.workflow_starter
    assert isinstance(starter, WorkflowStarter)
    assert (starter.entity, starter.store, starter.express) == (SERVICE.entity, "the visits store", None)
    with pytest.raises(MissingSetting):  # a worker is not given the service's queue
        runtime.reruns  # noqa: B018 - the property builds it


def test_the_sweep_reruns_over_the_services_queue() -> None:
    environ = {**BASE, "VISITS_TABLE": "v", "VISITS_QUEUE_URL": "https://q", "STRANDED_AFTER_SECONDS": "300"}
    runtime = VisitRuntime(SweepSettings.from_env(environ), client_factory=lambda _service: object())
    assert isinstance(runtime.reruns, Reruns)
    with pytest.raises(MissingSetting, match="is not WorkerSettings"):
        runtime.workflow_starter  # noqa: B018 - the property builds it


def test_a_handler_gets_the_scoped_runtime_else_the_installed_else_one_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtimes: Runtimes[VisitRuntime] = Runtimes(VisitRuntime)
    for name, value in WORKER.items():
        monkeypatch.setenv(name, value)
    built = runtimes.current(WorkerSettings)
    assert runtimes.current(WorkerSettings) is built  # once per process
    with pytest.raises(MissingSetting):
        runtimes.current(SweepSettings)  # one process serves one kind
    other = VisitRuntime(WorkerSettings.from_env(WORKER))
    with runtimes.scoped(other):
        assert runtimes.current(WorkerSettings) is other
    assert runtimes.install(other) is built
    assert runtimes.current(WorkerSettings) is other
