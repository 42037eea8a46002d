"""The generic step runner over a declaration of the tests' own (`two_step_service`): an atomic
step whose record rides on its business item, a leased step with reconcile, a compensation."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from two_step_service import SERVICE, Desk, Terms, TooManySeats, run_of

from reliability import FenceState, FenceStore
from reliability.declaration import StepStatus
from reliability.effects import RecordOn
from reliability.saga import SAGA_NAMESPACE, AtomicStep, LeasedStep, Saga, StepRequest
from reliability.telemetry import Telemetry
from reliability.testing.crashpoints import CrashPlan, SimulatedCrash
from reliability_helpers import FENCES, STOCK, FakeClock

TOKEN = "dev.v-1.r1"


def _saga() -> Saga[Desk, Terms]:
    return Saga(
        SERVICE,
        run_of,
        tables=lambda desk: desk.tables,
        event_key_lifetime=lambda desk: desk.event_dedup_seconds,
    )


def _state(seats: int = 2, **results: Any) -> dict[str, Any]:
    return {"visit_id": "v-1", "token": TOKEN, "seats": seats, "results": results}


def _fences(ddb: Any, telemetry: Telemetry, clock: FakeClock, crash: str | None = None) -> FenceStore:
    return FenceStore(
        client=ddb,
        table_name=FENCES,
        ttl_seconds=3600,
        telemetry=telemetry,
        namespace=SAGA_NAMESPACE,
        clock=clock,
        crash_plan=CrashPlan.parse(crash, mode="raise") if crash else None,
    )


def _items(ddb: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = ddb.scan(TableName=table)["Items"]
    return items


@pytest.fixture
def store(ddb: Any, telemetry: Telemetry, clock: FakeClock) -> FenceStore:
    return _fences(ddb, telemetry, clock)


def test_the_step_table_resolves_each_declared_step_by_its_kind() -> None:
    saga = _saga()
    table = saga.steps()
    assert list(table) == ["Hold", "Pay", "Announce", "Release"]
    assert isinstance(table["Hold"], AtomicStep)
    pay, announce = table["Pay"], table["Announce"]
    assert isinstance(pay, LeasedStep)
    assert isinstance(announce, LeasedStep)
    assert pay.reconcile is not None
    assert announce.reconcile is None
    assert saga.steps() is table  # resolved once per Saga: the cold start


def test_a_step_whose_port_is_the_events_gets_the_consumers_memory_as_its_key_lifetime() -> None:
    table = _saga().steps()
    announce, pay = table["Announce"], table["Pay"]
    assert isinstance(announce, LeasedStep)
    assert isinstance(pay, LeasedStep)
    assert announce.key_lifetime is not None
    assert announce.key_lifetime(Desk(event_dedup_seconds=42.0)) == 42.0
    assert pay.key_lifetime is None


def test_a_compensation_of_an_undeclared_step_fails_the_cold_start() -> None:
    release = replace(SERVICE.step("Release"), compensates="Hld")
    broken = replace(SERVICE, steps=(*SERVICE.steps[:3], release))
    with pytest.raises(KeyError, match="Hld"):
        Saga(broken, run_of).steps()


def test_an_atomic_step_applies_once_and_its_record_rides_on_its_item(ddb: Any, store: FenceStore) -> None:
    saga, desk = _saga(), Desk()
    first = saga.run_step(desk, store, "Hold", StepRequest(_state(), "a-1", 10))
    replay = saga.run_step(desk, store, "Hold", StepRequest(_state(), "a-2", 10))
    assert first == replay == {"held": 2}
    [hold] = _items(ddb, STOCK)
    assert (hold["pk"]["S"], hold["sk"]["S"]) == ("visit#v-1", f"hold#{TOKEN}")
    assert hold["state"]["S"] == FenceState.COMPLETED
    assert _items(ddb, FENCES) == []  # carried: no record in the fence table


def test_a_business_error_is_recorded_failed_and_raised_on_a_replay(ddb: Any, store: FenceStore) -> None:
    saga, desk = _saga(), Desk()
    for attempt in ("a-1", "a-2"):
        with pytest.raises(TooManySeats):
            saga.run_step(desk, store, "Hold", StepRequest(_state(seats=5), attempt, 10))
    [record] = _items(ddb, STOCK)
    assert (record["sk"]["S"], record["state"]["S"]) == (f"hold#{TOKEN}", FenceState.FAILED)


def test_a_leased_step_calls_its_provider_once_and_a_replay_returns_its_result(store: FenceStore) -> None:
    saga, desk = _saga(), Desk()
    state = _state(Hold={"held": 2})
    first = saga.run_step(desk, store, "Pay", StepRequest(state, "a-1", 10))
    replay = saga.run_step(desk, store, "Pay", StepRequest(state, "a-2", 10))
    assert first == replay == {"payment_id": "pay-1", "seats": 2}
    assert len(desk.provider.calls) == 1


def test_a_takeover_of_a_leased_step_reconciles_instead_of_calling_again(
    ddb: Any, telemetry: Telemetry, clock: FakeClock
) -> None:
    saga, desk = _saga(), Desk()
    state = _state(Hold={"held": 2})
    crashing = _fences(ddb, telemetry, clock, crash="fence:after-effect:Pay=1")
    with pytest.raises(SimulatedCrash):
        saga.run_step(desk, crashing, "Pay", StepRequest(state, "a-1", 5))
    clock.advance(6)  # the first attempt's lease (its remaining time) is over
    taken_over = saga.run_step(desk, crashing, "Pay", StepRequest(state, "a-2", 5))
    assert taken_over == {"payment_id": "pay-1"}  # the provider's own answer, found by reference
    assert len(desk.provider.calls) == 1


def test_the_runner_binds_the_request_to_the_declaration(store: FenceStore) -> None:
    # Pay reads Hold's result; the runner's request refuses a step the declaration lacks.
    seen: list[StepRequest] = []

    def pay(ctx: Desk, terms: Terms, request: StepRequest, key: str) -> dict[str, Any]:
        seen.append(request)
        return {}

    saga = _saga()
    saga.steps()["Pay"] = LeasedStep("Pay", pay)
    saga.run_step(Desk(), store, "Pay", StepRequest(_state(), "a-1", 10))
    assert seen[0].service is SERVICE
    with pytest.raises(KeyError, match="Hld"):
        seen[0].result_of("Hld")
    assert seen[0].result_of("Hold") == {}


def test_step_statuses_follow_the_fences_and_a_completed_compensation() -> None:
    saga = _saga()
    assert saga.step_statuses({}) == {}
    assert saga.step_statuses({"Hold": FenceState.COMPLETED, "Pay": FenceState.FAILED}) == {
        "Hold": StepStatus.DONE,
        "Pay": StepStatus.FAILED,
    }
    compensated = {"Hold": FenceState.COMPLETED, "Release": FenceState.COMPLETED}
    assert saga.step_statuses(compensated) == {"Hold": StepStatus.COMPENSATED, "Release": StepStatus.DONE}
    in_progress = {"Hold": FenceState.COMPLETED, "Release": FenceState.IN_PROGRESS}
    assert saga.step_statuses(in_progress) == {"Hold": StepStatus.DONE}


def test_record_on_names_the_carrying_item_under_the_entitys_partition() -> None:
    saga = _saga()
    assert saga.record_on(Desk(), "Hold", "v-1", TOKEN) == RecordOn(
        STOCK, {"pk": {"S": "visit#v-1"}, "sk": {"S": f"hold#{TOKEN}"}}
    )
    assert saga.record_on(Desk(), "Pay", "v-1", TOKEN) is None
    with pytest.raises(RuntimeError, match="holds table"):
        saga.record_on(Desk(tables={}), "Hold", "v-1", TOKEN)
    tableless: Saga[Desk, Terms] = Saga(SERVICE, run_of)
    with pytest.raises(RuntimeError, match="holds table"):
        tableless.record_on(Desk(), "Hold", "v-1", TOKEN)
