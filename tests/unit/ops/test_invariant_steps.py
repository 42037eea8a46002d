"""ops.invariants: a finished order's steps (their fences) and effects tell one story; a dead
letter excuses an unfinished order only when nothing it did is left standing."""

from __future__ import annotations

from datetime import datetime

from infra.config import FENCE_WINDOWS, outlived
from ops.invariants import OrderRow, older_than_fence_windows
from ops.invariants.rules import Exemptions, check_steps, left_standing
from ops.invariants.stores import fences_of
from reliability.declaration import Entity, Service, Step

DONE = {
    "ReserveInventory": "COMPLETED",
    "ChargePayment": "COMPLETED",
    "RecordLedger": "COMPLETED",
    "PublishEvents": "COMPLETED",
    "MarkCompleted": "COMPLETED",
}


def _completed(
    reservations: int = 1, charges: int = 1, ledger_entries: int = 1, declined: int = 0
) -> OrderRow:
    return OrderRow(
        "o-1",
        "COMPLETED",
        reservations=reservations,
        charges=charges,
        ledger_entries=ledger_entries,
        declined=declined,
    )


def test_a_completed_order_whose_steps_and_effects_agree_passes():
    assert check_steps(_completed(), DONE) == []


def test_an_effect_without_its_step_and_a_step_without_its_effect_are_named():
    fences = {**DONE, "RecordLedger": "FAILED"}
    violations = check_steps(_completed(charges=0), fences)
    assert violations == [
        "step ChargePayment recorded DONE without a succeeded charge",
        "a ledger entry without step RecordLedger recorded done (it is FAILED)",
    ]
    # A step whose fence is gone or never written is not done either
    assert "a reservation without step ReserveInventory recorded done (it is absent)" in check_steps(
        _completed(), {k: v for k, v in DONE.items() if k != "ReserveInventory"}
    )


def test_once_the_fences_may_have_expired_an_absent_fence_is_no_evidence_but_a_wrong_one_still_is():
    # Given an order older than the fence windows: DynamoDB TTL may have deleted any of its fences
    gone = {k: v for k, v in DONE.items() if k != "ReserveInventory"}
    assert check_steps(_completed(), gone, Exemptions(fences_may_be_gone=True)) == []
    # Then a fence that is still there must still agree with the effects
    assert check_steps(
        _completed(), {**gone, "RecordLedger": "FAILED"}, Exemptions(fences_may_be_gone=True)
    ) == ["a ledger entry without step RecordLedger recorded done (it is FAILED)"]


def test_an_order_is_old_enough_to_lose_its_fences_only_past_the_fence_windows():
    created = {"created_at": "2026-11-01T00:00:00+00:00"}
    start = datetime.fromisoformat(created["created_at"]).timestamp()
    assert not older_than_fence_windows(created, start + outlived(FENCE_WINDOWS) - 1)
    assert older_than_fence_windows(created, start + outlived(FENCE_WINDOWS))


def test_a_declined_charge_belongs_to_a_failed_order_whose_charge_step_failed_once():
    failed = OrderRow("o-2", "FAILED", reservations=1, releases=1, declined=1)
    fences = {
        "ReserveInventory": "COMPLETED",
        "ChargePayment": "FAILED",
        "ReleaseInventory": "COMPLETED",
        "MarkFailed": "COMPLETED",
    }
    assert check_steps(failed, fences) == []
    twice = OrderRow("o-2", "FAILED", reservations=1, releases=1, declined=2)
    assert check_steps(twice, fences) == ["2 declined charges (at most 1)"]
    assert "a declined charge on a COMPLETED order whose ChargePayment is DONE" in check_steps(
        _completed(declined=1), DONE
    )


def test_a_dead_letter_excuses_an_order_only_when_its_effects_were_undone():
    assert left_standing(OrderRow("o-3", "RUNNING", reservations=1, releases=1)) == []
    assert left_standing(OrderRow("o-3", "RUNNING", reservations=1, charges=1)) == [
        "stock taken",
        "a succeeded charge",
    ]


def test_fences_are_matched_to_the_orders_current_run_by_its_token():
    fences = {"local.o-1.r1": {"ChargePayment": "COMPLETED"}, "local.o-1.r2": {"ChargePayment": "FAILED"}}
    assert fences_of({"order_id": "o-1", "run": 2}, fences) == {"ChargePayment": "FAILED"}
    assert fences_of({"order_id": "o-9", "run": 1}, fences) == {}


def test_the_steps_that_set_the_status_are_the_declarations():
    # Given a declaration whose run ends in a step of its own that sets COMPLETED
    finish = Step(
        name="Finish", kind="atomic", effect="m:finish", description="finish", next=None, status="COMPLETED"
    )
    declared = Service(
        name="bookings",
        entity=Entity(name="booking", id_prefix="b-", table="bookings"),
        tables=frozenset({"bookings"}),
        queue="bookings",
        steps=(finish,),
    )
    completed = OrderRow("b-1", "COMPLETED")
    # Then a COMPLETED entity agrees with that step done, and not with it absent
    assert check_steps(completed, {"Finish": "COMPLETED"}, declared=declared) == []
    assert check_steps(completed, {}, declared=declared) == [
        "status COMPLETED without step Finish recorded done (it is absent)"
    ]
    assert check_steps(OrderRow("b-2", "FAILED"), {"Finish": "COMPLETED"}, declared=declared) == [
        "step Finish recorded DONE without status COMPLETED"
    ]
