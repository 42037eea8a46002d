"""The fence record's transition table, and the store behaving as the table says."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest

from reliability import AtomicEffect, BusinessError, FenceStore
from reliability.errors import FenceBusy, StaleFence
from reliability.record import (
    CLAIM_REFUSED,
    TERMINAL,
    TRANSITIONS,
    FenceEvent,
    FenceRecord,
    FenceState,
    Refusal,
    StepId,
    next_state,
)
from reliability_demo import DemoOutOfStock, DemoPaymentDeclined
from reliability_helpers import FakeClock, put_stock, stock_decrement

STEP = StepId("dev.order-9.r1", "pay")
LEASE = 10.0


def test_the_table_is_exactly_the_documented_transitions() -> None:
    # Given the documented lifecycle, Then the table holds it and nothing else
    assert dict(TRANSITIONS) == {
        (FenceState.ABSENT, FenceEvent.CLAIM): FenceState.IN_PROGRESS,
        (FenceState.IN_PROGRESS, FenceEvent.TAKEOVER): FenceState.IN_PROGRESS,
        (FenceState.IN_PROGRESS, FenceEvent.COMPLETE): FenceState.COMPLETED,
        (FenceState.IN_PROGRESS, FenceEvent.FAIL): FenceState.FAILED,
        (FenceState.IN_PROGRESS, FenceEvent.RELEASE): FenceState.IN_PROGRESS,
        (FenceState.ABSENT, FenceEvent.COMMIT): FenceState.COMPLETED,
        (FenceState.ABSENT, FenceEvent.COMMIT_FAILURE): FenceState.FAILED,
    }


@pytest.mark.parametrize("state", sorted(TERMINAL))
@pytest.mark.parametrize("event", list(FenceEvent))
def test_terminal_states_never_change(state: FenceState, event: FenceEvent) -> None:
    with pytest.raises(ValueError, match="no transition"):
        next_state(state, event)


def test_every_stored_state_has_a_claim_refusal() -> None:
    stored = {s for s in FenceState if s is not FenceState.ABSENT}
    assert set(CLAIM_REFUSED) == stored
    assert CLAIM_REFUSED[FenceState.COMPLETED] is Refusal.SKIP
    assert CLAIM_REFUSED[FenceState.FAILED] is Refusal.RAISE_STORED
    assert CLAIM_REFUSED[FenceState.IN_PROGRESS] is Refusal.BUSY


# --- the store follows the table -------------------------------------------------------------
# Each setup drives the real store (moto) into a state; each event is applied; the resulting
# record (or refusal) must match TRANSITIONS / CLAIM_REFUSED.


def setup_absent(store: FenceStore, clock: FakeClock) -> int:
    return 0


def setup_in_progress(store: FenceStore, clock: FakeClock) -> int:
    return store.claim(STEP, attempt_id="A", lease_seconds=LEASE).record.fencing_token


def setup_completed(store: FenceStore, clock: FakeClock) -> int:
    token = setup_in_progress(store, clock)
    store.complete(STEP, fencing_token=token, result={"done": True})
    return token


def setup_failed(store: FenceStore, clock: FakeClock) -> int:
    token = setup_in_progress(store, clock)
    store.fail(STEP, fencing_token=token, error=DemoPaymentDeclined("card"))
    return token


SETUPS: dict[FenceState, Callable[[FenceStore, FakeClock], int]] = {
    FenceState.ABSENT: setup_absent,
    FenceState.IN_PROGRESS: setup_in_progress,
    FenceState.COMPLETED: setup_completed,
    FenceState.FAILED: setup_failed,
}


def apply(event: FenceEvent, store: FenceStore, clock: FakeClock, token: int, ddb: Any) -> None:
    if event is FenceEvent.CLAIM:
        store.claim(STEP, attempt_id="B", lease_seconds=LEASE)
    elif event is FenceEvent.TAKEOVER:
        if store.read(STEP) is None:
            raise ValueError("a claim of an absent record is CLAIM, not TAKEOVER")
        clock.advance(LEASE + 1)
        claim = store.claim(STEP, attempt_id="B", lease_seconds=LEASE)
        if claim.won:
            assert claim.record.fencing_token == token + 1
    elif event is FenceEvent.COMPLETE:
        store.complete(STEP, fencing_token=token, result={"by": "owner"})
    elif event is FenceEvent.FAIL:
        store.fail(STEP, fencing_token=token, error=DemoOutOfStock("x"))
    elif event is FenceEvent.RELEASE:
        if not store.release(STEP, fencing_token=token):
            raise StaleFence("release refused")
    elif event is FenceEvent.COMMIT:
        store.run_atomic(STEP, lambda: AtomicEffect({"atomic": True}))
    elif event is FenceEvent.COMMIT_FAILURE:
        put_stock(ddb, "none", 0)
        store.run_atomic(
            STEP, lambda: AtomicEffect({}, [stock_decrement("none", 1)], {0: DemoOutOfStock("none")})
        )


def state_of(store: FenceStore) -> FenceState:
    record = store.read(STEP)
    return FenceState.ABSENT if record is None else record.state


@pytest.mark.parametrize("start", list(FenceState))
@pytest.mark.parametrize("event", list(FenceEvent))
def test_store_matches_table(
    start: FenceState, event: FenceEvent, fences: FenceStore, clock: FakeClock, ddb: Any
) -> None:
    # Given the record in `start`
    token = SETUPS[start](fences, clock)
    before = fences.read(STEP)
    # When `event` is applied
    expected = TRANSITIONS.get((start, event))
    if expected is not None:
        try:
            apply(event, fences, clock, token, ddb)
        except DemoOutOfStock:
            assert event is FenceEvent.COMMIT_FAILURE  # the failure is recorded, then raised
        # Then the record is in the table's next state
        assert state_of(fences) is expected
        return
    # Then a refused event leaves the record as it was (or raises the documented refusal)
    with contextlib.suppress(FenceBusy, StaleFence, DemoOutOfStock, DemoPaymentDeclined, ValueError):
        apply(event, fences, clock, token, ddb)
    after = fences.read(STEP)
    if start is FenceState.ABSENT:
        assert after is None
    else:
        assert after is not None
        assert before is not None
        assert (after.state, after.fencing_token, after.result) == (
            before.state,
            before.fencing_token,
            before.result,
        )


def test_a_lease_is_live_up_to_and_at_its_expiry_instant() -> None:
    # The claim's condition (#lease < :now) refuses a takeover at that instant: the lease still holds
    record = FenceRecord(key="k", state=FenceState.IN_PROGRESS, fencing_token=1, lease_expires=100.0)
    assert record.lease_live(100.0)
    assert not record.lease_live(100.001)


def test_a_failed_record_without_its_error_fields_replays_a_plain_business_error() -> None:
    # (a record written by hand, or by a version that stored no error): still a BusinessError
    error = FenceRecord(key="k", state=FenceState.FAILED, fencing_token=1).business_error()
    assert isinstance(error, BusinessError)
    assert type(error).__name__ == "BusinessError"  # what a Catch on the base name matches
    assert (str(error), error.message, error.details) == ("", "", {})


def test_the_terminal_states_are_the_stored_states_no_transition_leaves() -> None:
    stored = {s for s in FenceState if s is not FenceState.ABSENT}
    assert (
        stored - {start for start, _ in TRANSITIONS} == TERMINAL == {FenceState.COMPLETED, FenceState.FAILED}
    )
