"""A record carried by the business item its step writes (``Write(carries_record=True)``): the
item is the record, one UpdateItem is the whole cost, a replay is answered from the item."""

from __future__ import annotations

from typing import Any

import pytest

from reliability import AtomicEffect, BusinessError, FenceStore, RecordOn, StepId, Write
from reliability.errors import StoreError
from reliability_demo import DemoOutOfStock
from reliability_helpers import (
    ENTRIES,
    FENCES,
    STOCK,
    CallCounter,
    counter_add,
    counter_value,
    make_telemetry,
    read_emitted,
)

STEP = StepId(token="OrderCompleted#dev#r1#v:o-1", step="announce")
ITEM = {"pk": {"S": "order#o-1"}, "sk": {"S": "notification#1"}}


def sent_once() -> Write:
    """A send that counts itself (ADD), so an effect applied twice is visible."""
    return Write(
        entry={
            "Update": {
                "TableName": ENTRIES,
                "Key": ITEM,
                "UpdateExpression": "SET channel = :c ADD sends :one",
                "ExpressionAttributeValues": {":c": {"S": "email"}, ":one": {"N": "1"}},
            }
        },
        carries_record=True,
    )


def item(ddb: Any) -> dict[str, Any]:
    found: dict[str, Any] = ddb.get_item(TableName=ENTRIES, Key=ITEM, ConsistentRead=True)["Item"]
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
        {"S": "announce"},
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
    with pytest.raises(TypeError, match=r"^a leased step's completion has no write that carries its record$"):
        fences.run_leased(STEP, attempt_id="a-1", lease_seconds=5, effect=effect)
    assert fences.read(STEP) is not None


# --- a step's record on the item its effect writes (RecordOn) -----------------------------------

STEP_ON = StepId(token="dev.o-1.r1", step="HoldItems")
RESERVED = {"pk": {"S": "order#o-1"}, "sk": {"S": "reservation#dev.o-1.r1"}}
ON = RecordOn(STOCK, RESERVED)


def reservation_put() -> Write:
    """The item the step writes once per run, as the adapter writes it: a Put of a new item."""
    return Write(
        entry={
            "Put": {
                "TableName": STOCK,
                "Item": {**RESERVED, "kind": {"S": "reservation"}, "token": {"S": STEP_ON.token}},
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
    )


def take_stock(limit: int) -> Write:
    """A write whose condition is business: the stock must suffice (OutOfStock otherwise)."""
    return Write(
        entry={
            "Update": {
                "TableName": ENTRIES,
                "Key": {"pk": {"S": "COUNTER#stock"}, "sk": {"S": "COUNTER"}},
                "UpdateExpression": "ADD applied :one",
                "ConditionExpression": "attribute_not_exists(applied) OR applied < :limit",
                "ExpressionAttributeValues": {":one": {"N": "1"}, ":limit": {"N": str(limit)}},
            }
        },
        on_condition_failed=BusinessError("out of stock"),
    )


def stored(ddb: Any) -> dict[str, Any] | None:
    found: dict[str, Any] | None = ddb.get_item(TableName=STOCK, Key=RESERVED, ConsistentRead=True).get(
        "Item"
    )
    return found


def test_a_record_on_the_written_item_carries_completed_and_replays(fences: FenceStore, ddb: Any) -> None:
    # Given a step whose record is on the item its effect Puts, beside another write
    def build() -> AtomicEffect:
        return AtomicEffect({"reserved": 1}, [take_stock(10), reservation_put()])

    calls = CallCounter(ddb)
    # When it runs, and again
    first = fences.run_atomic(STEP_ON, build, record_on=ON)
    replay = fences.run_atomic(STEP_ON, build, record_on=ON)
    # Then one transaction each, the item holds its own attributes and the COMPLETED record (no
    # TTL), the fence table nothing, and the replay applied nothing
    assert calls.take() == ["TransactWriteItems", "TransactWriteItems"]
    assert (first.skipped, replay.skipped, replay.result) == (False, True, {"reserved": 1})
    item = stored(ddb)
    assert item is not None
    assert (item["kind"], item["state"], item["token"]) == (
        {"S": "reservation"},
        {"S": "COMPLETED"},
        {"S": STEP_ON.token},
    )
    assert "expiration" not in item
    assert fences.read(STEP_ON) is None
    assert counter_value(ddb, "stock") == 1
    assert fences.read_many([STEP_ON], record_on={STEP_ON: ON})[STEP_ON].result == {"reserved": 1}


def test_a_business_failure_is_recorded_at_the_items_key_and_outlives_a_change(
    fences: FenceStore, ddb: Any
) -> None:
    # Given a step that fails its business condition (no stock left)
    ddb.update_item(
        TableName=ENTRIES,
        Key={"pk": {"S": "COUNTER#stock"}, "sk": {"S": "COUNTER"}},
        UpdateExpression="SET applied = :n",
        ExpressionAttributeValues={":n": {"N": "5"}},
    )

    def build(limit: int) -> AtomicEffect:
        return AtomicEffect({"reserved": 1}, [take_stock(limit), reservation_put()])

    with pytest.raises(BusinessError):
        fences.run_atomic(STEP_ON, lambda: build(5), record_on=ON)
    # When a late duplicate runs after the condition would hold (stock came back)
    with pytest.raises(BusinessError):
        fences.run_atomic(STEP_ON, lambda: build(100), record_on=ON)
    # Then the FAILED record at the item's key refused it: nothing applied, and that record is not
    # the item (none of its attributes), nor in the fence table
    assert counter_value(ddb, "stock") == 5
    item = stored(ddb)
    assert item is not None
    assert item["state"] == {"S": "FAILED"}
    assert "kind" not in item
    assert fences.read(STEP_ON) is None


def test_a_build_failure_with_a_record_on_an_item_is_recorded_there(fences: FenceStore, ddb: Any) -> None:
    def refuse() -> AtomicEffect:
        raise BusinessError("refused before any write")

    for _ in range(2):
        with pytest.raises(BusinessError):
            fences.run_atomic(STEP_ON, refuse, record_on=ON)
    item = stored(ddb)
    assert item is not None
    assert item["state"] == {"S": "FAILED"}
    assert fences.read(STEP_ON) is None


def test_the_item_a_record_is_on_must_be_written_exactly_once_and_plainly(fences: FenceStore) -> None:
    marked = Write(reservation_put().entry, carries_record=True)
    failing = Write(reservation_put().entry, on_condition_failed=BusinessError("x"))
    for writes in ([take_stock(1)], [reservation_put(), reservation_put()], [marked], [failing]):

        def build(writes: list[Write] = writes) -> AtomicEffect:
            return AtomicEffect({}, writes)

        with pytest.raises(TypeError):
            fences.run_atomic(STEP_ON, build, record_on=ON)


def test_a_carrier_is_an_update_or_the_put_of_a_named_item_and_only_one(fences: FenceStore) -> None:
    # A Put carries the record only as the item a RecordOn names (its key says which attributes
    # are the key); two carriers are two records for one step
    put_without_record_on = Write(reservation_put().entry, carries_record=True)
    for writes in ([sent_once(), sent_once()], [put_without_record_on]):

        def build(writes: list[Write] = writes) -> AtomicEffect:
            return AtomicEffect({}, writes)

        with pytest.raises(TypeError) as refused:
            fences.run_atomic(STEP, build)
        assert str(refused.value) == (
            "at most one write carries the record: an Update, or the Put of a RecordOn item"
        )


def out_of_stock() -> AtomicEffect:
    raise DemoOutOfStock("none")


def test_a_carried_record_holds_the_atomic_fencing_token(fences: FenceStore, ddb: Any) -> None:
    # The record format (reliability.record): fencing_token 0 for run_atomic, wherever it lives
    fences.run_atomic(STEP, lambda: AtomicEffect({}, [sent_once()]))
    assert item(ddb)["fencing_token"] == {"N": "0"}
    with pytest.raises(DemoOutOfStock):
        fences.run_atomic(STEP_ON, out_of_stock, record_on=ON)
    failed = stored(ddb)
    assert failed is not None
    assert failed["fencing_token"] == {"N": "0"}


def test_an_atomic_failure_says_what_failed(ddb: Any, capsys: pytest.CaptureFixture[str]) -> None:
    # (a logger of its own: a logger writes to the stdout of the test that first built it)
    store = FenceStore(
        client=ddb, table_name=FENCES, ttl_seconds=60, telemetry=make_telemetry(), namespace="fence"
    )
    capsys.readouterr()
    with pytest.raises(DemoOutOfStock):
        store.run_atomic(STEP_ON, out_of_stock, record_on=ON)
    [line] = [
        line
        for line in read_emitted(capsys.readouterr().out).decisions()
        if line["decision"] == "FenceFailed"
    ]
    assert (line["error_type"], line["mode"], line["step"]) == (
        "DemoOutOfStock",
        "atomic",
        "HoldItems",
    )


def test_read_many_answers_only_the_steps_whose_items_carry_their_own_record(
    fences: FenceStore, ddb: Any
) -> None:
    # Given three steps whose records are on items of one table: the first item exists without a
    # record yet (an attribute of its own named like the record's state), the second carries
    # another step's record, the third its own
    def on(n: int) -> RecordOn:
        return RecordOn(STOCK, {"pk": {"S": "order#o-1"}, "sk": {"S": f"reservation#{n}"}})

    steps = [StepId(token="dev.o-1.r1", step=f"Reserve{n}") for n in range(3)]
    ddb.put_item(TableName=STOCK, Item={**on(0).key, "state": {"S": "pending"}})

    def reserve(n: int) -> AtomicEffect:
        put = {"Put": {"TableName": STOCK, "Item": {**on(n).key, "kind": {"S": "reservation"}}}}
        return AtomicEffect({"n": n}, [put])

    fences.run_atomic(StepId(token="dev.o-1.r1", step="Other"), lambda: reserve(1), record_on=on(1))
    fences.run_atomic(steps[2], lambda: reserve(2), record_on=on(2))
    # When they are read together
    found = fences.read_many(steps, record_on={step: on(n) for n, step in enumerate(steps)})
    # Then only the third has a record
    assert list(found) == [steps[2]]
    assert found[steps[2]].result == {"n": 2}


def carrier(expression: str, **fields: Any) -> Write:
    entry = {"Update": {"TableName": ENTRIES, "Key": ITEM, "UpdateExpression": expression, **fields}}
    return Write(entry=entry, carries_record=True)


@pytest.mark.parametrize(
    ("expression", "fields", "expected"),
    [
        # an expression without SET: the record's SET goes before its clauses
        ("ADD sends :one", {"ExpressionAttributeValues": {":one": {"N": "1"}}}, {"sends": {"N": "1"}}),
        # a lower-case SET is a SET (DynamoDB's keywords are case-insensitive)
        ("set channel = :c", {"ExpressionAttributeValues": {":c": {"S": "sms"}}}, {"channel": {"S": "sms"}}),
        # names without values, and neither
        ("REMOVE #d", {"ExpressionAttributeNames": {"#d": "draft"}}, {}),
        ("REMOVE draft", {}, {}),
    ],
)
def test_any_update_of_the_item_carries_the_record(
    fences: FenceStore, ddb: Any, expression: str, fields: dict[str, Any], expected: dict[str, Any]
) -> None:
    # Given the item exists with a draft attribute
    ddb.put_item(TableName=ENTRIES, Item={**ITEM, "draft": {"S": "yes"}})
    # When a step whose one write is that Update runs
    fences.run_atomic(STEP, lambda: AtomicEffect({"ok": 1}, [carrier(expression, **fields)]))
    # Then the Update applied, and the item carries the COMPLETED record
    stored = item(ddb)
    assert {name: stored[name] for name in expected} == expected
    assert (stored["state"], stored["id"]) == ({"S": "COMPLETED"}, {"S": fences.external_key(STEP)})
    if "REMOVE" in expression:
        assert "draft" not in stored


def test_a_carrier_with_a_condition_of_its_own_is_refused_saying_why(fences: FenceStore) -> None:
    conditioned = carrier("SET channel = :c", ConditionExpression="attribute_exists(pk)")
    with pytest.raises(
        TypeError, match=r"^a write that carries the record has no condition but the record's$"
    ):
        fences.run_atomic(STEP, lambda: AtomicEffect({}, [conditioned]))


def test_an_item_that_holds_an_id_of_its_own_cannot_carry_the_record(fences: FenceStore, ddb: Any) -> None:
    # Given the item already has an `id` attribute (the record's key attribute) and no record
    ddb.put_item(TableName=ENTRIES, Item={**ITEM, "id": {"S": "its-own"}})
    # When a step whose record it would carry runs, Then a store error says so; nothing applied
    with pytest.raises(StoreError) as refused:
        fences.run_atomic(STEP, lambda: AtomicEffect({}, [sent_once()]))
    assert (
        str(refused.value) == f"the item that carries {fences.external_key(STEP)} exists without its record"
    )
    assert "sends" not in item(ddb)
