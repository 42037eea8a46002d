"""ops.invariants: a finished run's steps (their records) and effects tell one story, read from the
sample's declaration; a dead letter excuses an unfinished order only when nothing it did is left
standing."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from infra.config import FENCE_WINDOWS, outlived
from ops.invariants import EntityRow, older_than_fence_windows
from ops.invariants.effects import Effects, refused
from ops.invariants.rules import Exemptions, check_steps, left_standing
from ops.invariants.stores import fences_of
from ops.service import hook_counts
from orders.workflow import SERVICE
from reliability.declaration import Entity, Service, Step

EFFECTS = Effects.of(SERVICE, hook_counts(SERVICE))
DONE = {
    "ReserveInventory": "COMPLETED",
    "ChargePayment": "COMPLETED",
    "RecordLedger": "COMPLETED",
    "PublishEvents": "COMPLETED",
    "MarkCompleted": "COMPLETED",
}
FAILED = {
    "ReserveInventory": "COMPLETED",
    "ChargePayment": "FAILED",
    "ReleaseInventory": "COMPLETED",
    "MarkFailed": "COMPLETED",
}


def _row(entity_id: str, status: str, **effects: int) -> EntityRow:
    return EntityRow(entity_id, status, effects=Counter(effects))


def _completed(**effects: int) -> EntityRow:
    return _row(
        "o-1", "COMPLETED", **{"ReserveInventory": 1, "ChargePayment": 1, "RecordLedger": 1, **effects}
    )


def test_a_completed_order_whose_steps_and_effects_agree_passes():
    assert check_steps(_completed(), DONE, EFFECTS) == []


def test_an_effect_without_its_step_and_a_step_without_its_effect_are_named():
    fences = {**DONE, "RecordLedger": "FAILED"}
    violations = check_steps(_completed(ChargePayment=0), fences, EFFECTS)
    assert violations == [
        "step ChargePayment recorded DONE without its ChargePayment effect",
        "its RecordLedger effect without step RecordLedger recorded done (it is FAILED)",
    ]
    # A step whose fence is gone or never written is not done either
    assert (
        "its ReserveInventory effect without step ReserveInventory recorded done (it is absent)"
        in check_steps(_completed(), {k: v for k, v in DONE.items() if k != "ReserveInventory"}, EFFECTS)
    )


def test_once_the_fences_may_have_expired_an_absent_fence_is_no_evidence_but_a_wrong_one_still_is():
    # Given an order older than the fence windows: DynamoDB TTL may have deleted any of its fences
    gone = {k: v for k, v in DONE.items() if k != "ReserveInventory"}
    old = Exemptions(fences_may_be_gone=True)
    assert check_steps(_completed(), gone, EFFECTS, old) == []
    # Then a fence that is still there must still agree with the effects
    assert check_steps(_completed(), {**gone, "RecordLedger": "FAILED"}, EFFECTS, old) == [
        "its RecordLedger effect without step RecordLedger recorded done (it is FAILED)"
    ]


def test_an_order_is_old_enough_to_lose_its_fences_only_past_the_fence_windows():
    created = {"created_at": "2026-11-01T00:00:00+00:00"}
    start = datetime.fromisoformat(created["created_at"]).timestamp()
    assert not older_than_fence_windows(created, start + outlived(FENCE_WINDOWS) - 1)
    assert older_than_fence_windows(created, start + outlived(FENCE_WINDOWS))


def test_a_providers_refusal_belongs_to_a_failed_run_whose_step_failed_once():
    declined = refused("ChargePayment")
    failed = _row("o-2", "FAILED", ReserveInventory=1, ReleaseInventory=1, **{declined: 1})
    assert check_steps(failed, FAILED, EFFECTS) == []
    twice = _row("o-2", "FAILED", ReserveInventory=1, ReleaseInventory=1, **{declined: 2})
    assert check_steps(twice, FAILED, EFFECTS) == ["2 refusals of ChargePayment's call (at most 1)"]
    assert "a refusal of ChargePayment's call on a COMPLETED run whose ChargePayment is DONE" in check_steps(
        _completed(**{declined: 1}), DONE, EFFECTS
    )


def test_a_dead_letter_excuses_an_order_only_when_its_effects_were_undone():
    assert left_standing(_row("o-3", "RUNNING", ReserveInventory=1, ReleaseInventory=1), EFFECTS) == []
    assert left_standing(_row("o-3", "RUNNING", ReserveInventory=1, ChargePayment=1), EFFECTS) == [
        "ReserveInventory's effect",
        "ChargePayment's effect",
    ]


def test_fences_are_matched_to_the_entitys_run_by_its_token():
    fences = {"local.o-1.r1": {"ChargePayment": "COMPLETED"}, "local.o-1.r2": {"ChargePayment": "FAILED"}}
    assert fences_of("o-1", fences, 2) == {"ChargePayment": "FAILED"}
    assert fences_of("o-9", fences, 1) == {}


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
    effects = Effects.of(declared)
    completed = _row("b-1", "COMPLETED")
    # Then a COMPLETED entity agrees with that step done, and not with it absent
    assert check_steps(completed, {"Finish": "COMPLETED"}, effects) == []
    assert check_steps(completed, {}, effects) == [
        "status COMPLETED without step Finish recorded done (it is absent)"
    ]
    assert check_steps(_row("b-2", "FAILED"), {"Finish": "COMPLETED"}, effects) == [
        "step Finish recorded DONE without status COMPLETED"
    ]
