"""What the saga runner hands each step's effect (its context, the run's terms, the request and the
step's external key), the lease it takes, and the key lifetime that stops a blind repeat."""

from __future__ import annotations

from typing import Any

import pytest
from test_saga import TOKEN, _fences, _saga, _state
from two_step_service import Desk, Terms, announce, find_payment, hold, pay

from reliability import ExternalKeyExpired, FenceStore, StepId
from reliability.saga import AtomicStep, LeasedStep, StepRequest
from reliability.telemetry import Telemetry
from reliability.testing.crashpoints import SimulatedCrash
from reliability_helpers import FakeClock


@pytest.fixture
def store(ddb: Any, telemetry: Telemetry, clock: FakeClock) -> FenceStore:
    return _fences(ddb, telemetry, clock)


def test_each_step_of_the_table_carries_its_declared_name() -> None:
    assert {name: step.name for name, step in _saga().steps().items()} == {
        "Hold": "Hold",
        "Pay": "Pay",
        "Announce": "Announce",
        "Release": "Release",
    }


def test_an_atomic_effect_is_built_from_the_context_the_runs_terms_and_the_request(store: FenceStore) -> None:
    seen: list[tuple[Any, ...]] = []

    def spying_hold(ctx: Desk, terms: Terms, request: StepRequest) -> Any:
        seen.append((ctx, terms, request.attempt_id))
        return hold(ctx, terms, request)

    saga, desk = _saga(), Desk()
    saga.steps()["Hold"] = AtomicStep("Hold", spying_hold)
    saga.run_step(desk, store, "Hold", StepRequest(_state(seats=3), "a-1", 10))

    assert seen == [(desk, Terms(visit_id="v-1", seats=3), "a-1")]


def test_a_leased_effect_gets_the_context_the_terms_the_request_and_the_steps_external_key(
    store: FenceStore,
) -> None:
    seen: list[tuple[Any, ...]] = []

    def spying_pay(ctx: Desk, terms: Terms, request: StepRequest, key: str) -> dict[str, Any]:
        seen.append((ctx, terms, request.attempt_id, key))
        return pay(ctx, terms, request, key)

    saga, desk = _saga(), Desk()
    saga.steps()["Pay"] = LeasedStep("Pay", spying_pay)
    saga.run_step(desk, store, "Pay", StepRequest(_state(seats=2, Hold={"held": 2}), "a-1", 10))

    key = store.external_key(StepId(token=TOKEN, step="Pay"))
    assert seen == [(desk, Terms(visit_id="v-1", seats=2), "a-1", key)]
    assert desk.provider.calls == [key]


def test_a_takeover_reconciles_with_the_context_the_terms_and_the_request(
    ddb: Any, telemetry: Telemetry, clock: FakeClock
) -> None:
    seen: list[tuple[Any, ...]] = []

    def spying_find(ctx: Desk, terms: Terms, request: StepRequest) -> dict[str, Any] | None:
        seen.append((ctx, terms, request.attempt_id))
        return find_payment(ctx, terms, request)

    saga, desk = _saga(), Desk()
    saga.steps()["Pay"] = LeasedStep("Pay", pay, reconcile=spying_find)
    crashing = _fences(ddb, telemetry, clock, crash="fence:after-effect:Pay=1")
    state = _state(seats=2, Hold={"held": 2})
    with pytest.raises(SimulatedCrash):
        saga.run_step(desk, crashing, "Pay", StepRequest(state, "a-1", 5))
    clock.advance(6)
    saga.run_step(desk, crashing, "Pay", StepRequest(state, "a-2", 5))

    assert seen == [(desk, Terms(visit_id="v-1", seats=2), "a-2")]


@pytest.mark.parametrize(("remaining", "lease"), [(7.5, 7.5), (0.2, 1.0), (1.0, 1.0)])
def test_the_lease_is_the_invocations_remaining_time_and_at_least_a_second(
    store: FenceStore, clock: FakeClock, remaining: float, lease: float
) -> None:
    held: list[float] = []

    def still_running(ctx: Desk, terms: Terms, request: StepRequest, key: str) -> dict[str, Any]:
        record = store.read(StepId(token=TOKEN, step="Pay"))
        assert record is not None
        held.append(float(record.lease_expires or 0) - clock())
        return {}

    saga = _saga()
    saga.steps()["Pay"] = LeasedStep("Pay", still_running)
    saga.run_step(Desk(), store, "Pay", StepRequest(_state(), "a-1", remaining))

    assert held == [lease]


def _announce_crashing_after_its_effect(ddb: Any, telemetry: Telemetry, clock: FakeClock) -> tuple[Any, ...]:
    calls: list[str] = []

    def counted(ctx: Desk, terms: Terms, request: StepRequest, key: str) -> dict[str, Any]:
        calls.append(request.attempt_id)
        return announce(ctx, terms, request, key)

    saga, desk = _saga(), Desk(event_dedup_seconds=600.0)
    real = saga.steps()["Announce"]
    assert isinstance(real, LeasedStep)
    saga.steps()["Announce"] = LeasedStep("Announce", counted, key_lifetime=real.key_lifetime)
    crashing = _fences(ddb, telemetry, clock, crash="fence:after-effect:Announce=1")
    with pytest.raises(SimulatedCrash):
        saga.run_step(desk, crashing, "Announce", StepRequest(_state(), "a-1", 5))
    return saga, desk, crashing, calls


def test_a_takeover_within_the_consumers_memory_announces_again(
    ddb: Any, telemetry: Telemetry, clock: FakeClock
) -> None:
    saga, desk, fences, calls = _announce_crashing_after_its_effect(ddb, telemetry, clock)
    clock.advance(300)  # the lease is over; the consumers still remember the event id

    saga.run_step(desk, fences, "Announce", StepRequest(_state(), "a-2", 5))

    assert calls == ["a-1", "a-2"]


def test_a_takeover_past_the_consumers_memory_refuses_to_announce_blind(
    ddb: Any, telemetry: Telemetry, clock: FakeClock
) -> None:
    saga, desk, fences, calls = _announce_crashing_after_its_effect(ddb, telemetry, clock)
    clock.advance(601)  # the consumers' memory of the event id (Desk.event_dedup_seconds) is over

    with pytest.raises(ExternalKeyExpired, match="keeps its idempotency key only 600 s"):
        saga.run_step(desk, fences, "Announce", StepRequest(_state(), "a-2", 5))
    assert calls == ["a-1"]
