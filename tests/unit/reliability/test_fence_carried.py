"""A record carried by the business item its step writes (``Write(carries_record=True)``): the
item is the record, one UpdateItem is the whole cost, a replay is answered from the item."""

from __future__ import annotations

from typing import Any

import pytest

from reliability import AtomicEffect, FenceStore, StepId, Write
from tests.unit.reliability.helpers import LEDGER, CallCounter, counter_add, counter_value

STEP = StepId(token="OrderCompleted#dev#r1#v:o-1", step="notify")
ITEM = {"pk": {"S": "order#o-1"}, "sk": {"S": "notification#1"}}


def sent_once() -> Write:
    """A send that counts itself (ADD), so an effect applied twice is visible."""
    return Write(
        entry={
            "Update": {
                "TableName": LEDGER,
                "Key": ITEM,
                "UpdateExpression": "SET channel = :c ADD sends :one",
                "ExpressionAttributeValues": {":c": {"S": "email"}, ":one": {"N": "1"}},
            }
        },
        carries_record=True,
    )


def item(ddb: Any) -> dict[str, Any]:
    found: dict[str, Any] = ddb.get_item(TableName=LEDGER, Key=ITEM, ConsistentRead=True)["Item"]
    return found


def test_the_first_run_is_one_update_of_the_item_that_carries_the_record(
    fences: FenceStore, ddb: Any
) -> None:
    # Given an effect whose one write carries the record
    calls = CallCounter(ddb)
    # When it runs
    outcome = fences.run_atomic(STEP, lambda: AtomicEffect({"order_id": "o-1"}, [sent_once()]))
    # Then one UpdateItem applied it and set the COMPLETED record on the item, not in the fence table
    assert calls.take() == ["UpdateItem"]
    assert (outcome.result, outcome.skipped) == ({"order_id": "o-1"}, False)
    stored = item(ddb)
    assert stored["sends"] == {"N": "1"}
    assert stored["id"] == {"S": fences.external_key(STEP)}
    assert (stored["state"], stored["step"], stored["token"]) == (
        {"S": "COMPLETED"},
        {"S": "notify"},
        {"S": STEP.token},
    )
    assert "expiration" not in stored  # the record lives as long as the item
    assert fences.read(STEP) is None


def test_a_replay_is_answered_by_the_item_and_applies_nothing(fences: FenceStore, ddb: Any) -> None:
    # Given a completed run
    fences.run_atomic(STEP, lambda: AtomicEffect({"order_id": "o-1"}, [sent_once()]))
    calls = CallCounter(ddb)
    # When the event comes again
    replay = fences.run_atomic(STEP, lambda: AtomicEffect({"order_id": "other"}, [sent_once()]))
    # Then the refused update's ALL_OLD is the answer: one call, the send not repeated
    assert calls.take() == ["UpdateItem"]
    assert (replay.result, replay.skipped) == ({"order_id": "o-1"}, True)
    assert item(ddb)["sends"] == {"N": "1"}


def test_a_carrier_beside_other_writes_heads_their_transaction(fences: FenceStore, ddb: Any) -> None:
    # Given a carrier and another write
    def build() -> AtomicEffect:
        return AtomicEffect({"order_id": "o-1"}, [counter_add("c"), sent_once()])

    calls = CallCounter(ddb)
    # When it runs twice
    fences.run_atomic(STEP, build)
    replay = fences.run_atomic(STEP, build)
    # Then each run is one transaction without a fence-table record, and the second applies nothing
    assert calls.take() == ["TransactWriteItems", "TransactWriteItems"]
    assert replay.skipped is True
    assert (counter_value(ddb, "c"), item(ddb)["sends"]) == (1, {"N": "1"})


def test_a_carrier_is_one_unconditioned_update(fences: FenceStore) -> None:
    conditioned = Write(
        entry={"Update": {**sent_once().entry["Update"], "ConditionExpression": "attribute_exists(pk)"}},
        carries_record=True,
    )
    for writes in ([sent_once(), sent_once()], [conditioned]):

        def build(writes: list[Write] = writes) -> AtomicEffect:
            return AtomicEffect({}, writes)

        with pytest.raises(TypeError):
            fences.run_atomic(STEP, build)


def test_a_leased_completion_carries_no_record(fences: FenceStore) -> None:
    # Given a leased step whose effect would hand back a write that carries the record
    def effect(_key: str) -> AtomicEffect:
        return AtomicEffect({}, [sent_once()])

    # When it completes, Then it is refused (a leased record is its own item), the claim released
    with pytest.raises(TypeError):
        fences.run_leased(STEP, attempt_id="a-1", lease_seconds=5, effect=effect)
    assert fences.read(STEP) is not None
