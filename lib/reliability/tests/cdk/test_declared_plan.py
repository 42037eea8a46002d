"""The pure-Python half of a service's assembly, over a declaration of its own: the declaration
loaded by path and checked at synth, the capacity plan following its provider steps, each
function's access following its entries. No synthesis."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import wallet_service

from reliability.cdk.access import access_of
from reliability.cdk.capacity import (
    PROVIDER_CALL_SECONDS,
    STEP_SECONDS,
    WORKER_SECONDS_PER_MESSAGE,
    StageCapacity,
    plan,
    worker_seconds_per_message,
)
from reliability.cdk.config import WorkflowType
from reliability.cdk.declared import IDEMPOTENCY, ManifestError, check, load_service, provider_steps
from reliability.cdk.sizing import OWN_FUNCTIONS, functions_of, queue_consumers
from reliability.declaration import FENCES, Service

CAPACITY = StageCapacity(account_concurrency=1000, provider_requests_per_second=50)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    wallet_service.write(tmp_path)
    return tmp_path


@pytest.fixture
def service(root: Path) -> Service:
    return load_service(root / wallet_service.PACKAGE / "workflow.py")


def _check(service: Service, root: Path) -> None:
    check(service, code_root=root, reserved_functions=set(OWN_FUNCTIONS), source="workflow.py")


def test_the_declaration_loads_by_path_and_passes(service: Service, root: Path) -> None:
    assert service.name == "transfers"
    _check(service, root)


def test_a_module_without_a_service_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty.py").write_text("SERVICE = None\n")
    with pytest.raises(ManifestError, match="defines no Service named 'SERVICE'"):
        load_service(tmp_path / "empty.py")


def test_every_problem_is_named_at_once(service: Service, root: Path) -> None:
    # Given an effect that names no function, a port that is no table, and a record table declared
    debit, *others = service.steps
    broken = dataclasses.replace(
        service,
        tables=service.tables | {FENCES, IDEMPOTENCY},
        steps=(dataclasses.replace(debit, effect="transfers.effects:nowhere", ports=("vaults",)), *others),
    )
    with pytest.raises(ManifestError) as refused:
        _check(broken, root)
    message = str(refused.value)
    assert message.startswith("workflow.py:\n- ")
    assert "['fences', 'idempotency'] are record tables every service has" in message
    assert "step Debit: effect 'transfers.effects:nowhere' is not a function" in message
    assert "step Debit: unknown ports ['vaults']" in message


def test_a_step_may_not_take_a_function_name_the_service_has(service: Service, root: Path) -> None:
    worker = dataclasses.replace(service.steps[0], name="Worker", catch={})
    with pytest.raises(ManifestError, match=r"function names \['worker'\] are already taken"):
        _check(dataclasses.replace(service, steps=(worker, *service.steps[1:])), root)


def test_the_provider_step_is_capped_and_nothing_else_but_the_worker(service: Service) -> None:
    assert [s.name for s in provider_steps(service)] == ["PayOut"]
    reserved = plan(service, CAPACITY).reserved_concurrency
    assert set(reserved) == {"worker", "pay-out"}
    assert reserved["pay-out"] == int(CAPACITY.provider_requests_per_second * PROVIDER_CALL_SECONDS)


def test_a_service_without_a_provider_step_reserves_only_the_worker(service: Service) -> None:
    plain = dataclasses.replace(
        service, steps=tuple(dataclasses.replace(s, reconcile=None) for s in service.steps)
    )
    assert set(plan(plain, CAPACITY).reserved_concurrency) == {"worker"}


def test_the_services_own_limit_binds_when_it_is_the_tightest(service: Service) -> None:
    own = {"one hot item": 5.0}
    result = plan(service, CAPACITY, own_limits=own)
    assert result.binding_limit == "one hot item"
    assert result.admitted_runs_per_second < 5.0


def test_an_express_worker_waits_a_provider_call_for_each_provider_step(service: Service) -> None:
    # Debit, PayOut, Publish, MarkDone: one provider call, three DynamoDB steps
    seconds = worker_seconds_per_message(service, WorkflowType.EXPRESS)
    assert seconds == pytest.approx(WORKER_SECONDS_PER_MESSAGE + PROVIDER_CALL_SECONDS + 3 * STEP_SECONDS)
    assert plan(service, CAPACITY, WorkflowType.EXPRESS).worker_batch_size == 1


def test_each_function_has_access_and_a_size_and_each_queue_a_consumer(service: Service) -> None:
    functions = functions_of(service, wallet_service.HANDLER_PACKAGE)
    access = access_of(service)
    assert access.keys() == functions.keys()
    assert queue_consumers(service) == {"transfers": "worker", "audit": "audit"}
    assert {a.consume for a in access.values() if a.consume} == set(queue_consumers(service))
    assert access["publish"].send == ("audit",)
    assert access["audit"].read == ("transfers",)
    assert functions["pay-out"].timeout_seconds == service.step("PayOut").timeout_seconds
