"""run_atomic: the effect writes and the COMPLETED record in one TransactWriteItems."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber

from reliability import AtomicEffect, FenceState, FenceStore, StepId, Write
from reliability.errors import (
    EffectConditionFailed,
    FenceBusy,
    ResultTooLarge,
    StoreError,
    TransientError,
)
from reliability.telemetry import Telemetry
from reliability_demo import DemoOutOfStock
from reliability_helpers import (
    ENTRIES,
    FENCES,
    CallCounter,
    FakeClock,
    aws_client,
    counter_add,
    counter_value,
    entry_put,
    fence_store,
    put_stock,
    stock_decrement,
    stock_of,
)

STEP = StepId(token="dev.order-1.r1", step="record-entry")


def test_first_run_commits_effect_and_record_in_one_round_trip(fences: FenceStore, ddb: Any) -> None:
    # Given a step that has never run
    calls = CallCounter(ddb)
    # When it runs atomically
    outcome = fences.run_atomic(
        STEP, lambda: AtomicEffect({"entry": "e1"}, [entry_put("e1", 5), counter_add("c")])
    )
    # Then one TransactWriteItems wrote the effect and the COMPLETED record
    assert calls.take() == ["TransactWriteItems"]
    assert outcome.result == {"entry": "e1"}
    assert (outcome.skipped, outcome.fencing_token) == (False, 0)  # an atomic step holds no lease
    assert counter_value(ddb, "c") == 1
    record = fences.read(STEP)
    assert record is not None
    assert record.state is FenceState.COMPLETED
    assert record.result == {"entry": "e1"}
    assert record.expiration == (1_800_000_000 + 3600)
    # (the stored format, reliability.record: an atomic record's fencing_token is 0)
    stored = ddb.get_item(TableName=FENCES, Key={"id": {"S": fences.external_key(STEP)}})["Item"]
    assert stored["fencing_token"] == {"N": "0"}


def test_replay_returns_the_stored_result_in_one_round_trip_without_reapplying(
    fences: FenceStore, ddb: Any
) -> None:
    # Given a completed atomic step
    first = fences.run_atomic(STEP, lambda: AtomicEffect({"entry": "e1", "n": [1, 2]}, [counter_add("c")]))
    calls = CallCounter(ddb)
    # When it runs again (a Lambda retry) with a build that would now produce something else
    replay = fences.run_atomic(STEP, lambda: AtomicEffect({"entry": "different"}, [counter_add("c")]))
    # Then the stored result comes back from the cancellation reason: one call, no second read
    assert calls.take() == ["TransactWriteItems"]
    assert replay.skipped is True
    assert replay.result == first.result
    assert counter_value(ddb, "c") == 1


def test_effect_condition_failure_raises_the_attached_business_error_and_records_it(
    fences: FenceStore, ddb: Any
) -> None:
    # Given stock of 1 and a reservation of 5
    put_stock(ddb, "item-1", 1)
    step = StepId(token="dev.order-2.r1", step="hold-items")

    def build() -> AtomicEffect:
        return AtomicEffect(
            {"reserved": 5},
            [Write(stock_decrement("item-1", 5), on_condition_failed=DemoOutOfStock("item-1"))],
        )

    # When the step runs
    with pytest.raises(DemoOutOfStock, match="item-1"):
        fences.run_atomic(step, build)
    # Then nothing of the effect landed and the failure is recorded
    assert stock_of(ddb, "item-1") == 1
    record = fences.read(step)
    assert record is not None
    assert record.state is FenceState.FAILED
    assert record.error_type == "DemoOutOfStock"
    # And a replay raises the same class and message even though stock now suffices
    put_stock(ddb, "item-1", 100)
    with pytest.raises(DemoOutOfStock) as replayed:
        fences.run_atomic(step, build)
    assert type(replayed.value) is DemoOutOfStock
    assert str(replayed.value) == "item-1"
    assert stock_of(ddb, "item-1") == 100


def test_on_condition_failure_mapping_by_index(fences: FenceStore, ddb: Any) -> None:
    # Given an effect whose second write has a mapped business error
    put_stock(ddb, "item-2", 0)
    effect = AtomicEffect(
        {"ok": True},
        [entry_put("e2", 1), stock_decrement("item-2", 1)],
        on_condition_failure={1: DemoOutOfStock("item-2")},
    )
    # When it runs, Then the mapped error is raised and the first write did not land either
    with pytest.raises(DemoOutOfStock):
        fences.run_atomic(StepId("dev.o.r1", "reserve"), lambda: effect)
    assert "Item" not in ddb.get_item(TableName=ENTRIES, Key={"pk": {"S": "ENTRY#e2"}, "sk": {"S": "ENTRY"}})


def test_the_mapping_by_index_also_names_the_error_of_a_write_given_as_a_write(
    fences: FenceStore, ddb: Any
) -> None:
    # (a Write without an error of its own takes the one mapped to its index)
    put_stock(ddb, "item-5", 0)
    effect = AtomicEffect(
        {"ok": True},
        [Write(entry_put("e5", 1)), Write(stock_decrement("item-5", 1))],
        on_condition_failure={1: DemoOutOfStock("item-5")},
    )
    with pytest.raises(DemoOutOfStock):
        fences.run_atomic(StepId("dev.o.r1", "reserve"), lambda: effect)


def test_an_effect_of_99_writes_fills_the_transaction_with_its_record(fences: FenceStore, ddb: Any) -> None:
    fences.run_atomic(STEP, lambda: AtomicEffect({}, [counter_add(str(i)) for i in range(99)]))
    assert [counter_value(ddb, str(i)) for i in (0, 98)] == [1, 1]


def test_unmapped_effect_condition_failure_is_a_reliability_error_and_records_nothing(
    fences: FenceStore, ddb: Any
) -> None:
    # Given an effect write with a condition but no business error attached
    put_stock(ddb, "item-3", 0)
    step = StepId("dev.o.r1", "reserve")
    # When it runs, Then EffectConditionFailed names the write, and no record is written
    with pytest.raises(EffectConditionFailed) as raised:
        fences.run_atomic(step, lambda: AtomicEffect({}, [stock_decrement("item-3", 1)]))
    assert raised.value.index == 0
    assert fences.read(step) is None


def test_an_unmapped_condition_failure_names_the_write_by_its_index(fences: FenceStore, ddb: Any) -> None:
    # Given an effect whose second write's condition fails with no business error attached
    put_stock(ddb, "item-4", 0)
    effect = AtomicEffect({}, [entry_put("e4", 1), stock_decrement("item-4", 1)])
    # When it runs, Then the error names that write, its code and why nothing says more
    with pytest.raises(EffectConditionFailed) as raised:
        fences.run_atomic(StepId("dev.o.r1", "reserve"), lambda: effect)
    assert (raised.value.index, raised.value.code) == (1, "ConditionalCheckFailed")
    assert str(raised.value) == "effect write 1 failed its condition and has no BusinessError attached"


def test_an_in_progress_leased_record_makes_an_atomic_run_busy(fences: FenceStore) -> None:
    # Given a leased attempt holding the step
    fences.claim(STEP, attempt_id="a1", lease_seconds=30)
    # When an atomic run of the same step arrives, Then it is told to retry
    with pytest.raises(FenceBusy):
        fences.run_atomic(STEP, lambda: AtomicEffect({}, [counter_add("c")]))


def test_result_too_large_writes_nothing(ddb: Any, telemetry: Telemetry, clock: FakeClock) -> None:
    # Given a store with a small result limit
    small = fence_store(ddb, telemetry, clock, max_result_bytes=100)
    # When a step's result exceeds it
    with pytest.raises(ResultTooLarge):
        small.run_atomic(STEP, lambda: AtomicEffect({"blob": "x" * 200}, [counter_add("c")]))
    # Then neither the record nor the effect was written
    assert small.read(STEP) is None
    assert counter_value(ddb, "c") == 0


def test_the_default_limit_is_exactly_step_functions_payload(fences: FenceStore) -> None:
    # {"blob":"..."} is 11 bytes of JSON around the blob: 262,144 bytes (256 KiB) in all fits
    fits = fences.run_atomic(STEP, lambda: AtomicEffect({"blob": "x" * (262_144 - 11)}))
    assert len(fits.result["blob"]) == 262_133
    with pytest.raises(ResultTooLarge) as refused:
        fences.run_atomic(StepId("dev.o.r1", "other"), lambda: AtomicEffect({"blob": "x" * (262_144 - 10)}))
    assert str(refused.value) == "step result is 262145 bytes; the limit is 262144 (Step Functions 256 KiB)"


def test_default_limit_is_step_functions_payload(fences: FenceStore, ddb: Any) -> None:
    # Given a 300 KB result, When it runs, Then it fails clearly before writing
    with pytest.raises(ResultTooLarge, match="256"):
        fences.run_atomic(STEP, lambda: AtomicEffect({"blob": "x" * 300_000}))
    assert fences.read(STEP) is None


def test_build_contract_is_checked(fences: FenceStore) -> None:
    with pytest.raises(TypeError, match=r"^build\(\) must return an AtomicEffect$"):
        fences.run_atomic(STEP, lambda: {"not": "an effect"})  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match=r"^an AtomicEffect holds at most 99 writes, got 100$"):
        fences.run_atomic(STEP, lambda: AtomicEffect({}, [counter_add(str(i)) for i in range(100)]))
    with pytest.raises(TypeError):
        fences.run_atomic(STEP, lambda: AtomicEffect({"when": object()}))


# --- failures moto cannot produce: botocore Stubber ------------------------------------------


def stubbed(telemetry: Telemetry) -> tuple[FenceStore, Stubber]:
    client = aws_client("dynamodb")
    stub = Stubber(client)
    store = fence_store(client, telemetry, FakeClock())
    return store, stub


def cancelled(*codes: str, item: dict[str, Any] | None = None) -> dict[str, Any]:
    reasons: list[dict[str, Any]] = [{"Code": code} for code in codes]
    if item is not None:
        reasons[0]["Item"] = item
    return {"CancellationReasons": reasons}


@pytest.mark.parametrize(
    ("codes", "expected", "named"),
    [
        (("None", "TransactionConflict"), TransientError, "['TransactionConflict']"),
        (("ThrottlingError", "None"), TransientError, "['ThrottlingError']"),
        (("None", "ValidationError", "ProvisionedThroughputExceeded"), TransientError, None),
        (("InternalServerError", "None"), TransientError, None),
        (("None", "ValidationError"), StoreError, "['ValidationError']"),
    ],
)
def test_cancellations_that_are_not_conditions_map_by_code(
    telemetry: Telemetry, codes: tuple[str, ...], expected: type[Exception], named: str | None
) -> None:
    # Given DynamoDB cancels the transaction for a reason other than a condition
    store, stub = stubbed(telemetry)
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        response_meta={},
        modeled_fields=cancelled(*codes),
    )
    # When the step runs, Then the error is mapped by code, and names the codes that were not "None"
    with stub, pytest.raises(expected) as raised:
        store.run_atomic(STEP, lambda: AtomicEffect({}, [counter_add("c")] * (len(codes) - 1)))
    assert type(raised.value) is expected
    if named is not None:
        assert str(raised.value) == f"transaction cancelled: {named}"


@pytest.mark.parametrize(
    ("code", "status", "expected"),
    [
        ("ProvisionedThroughputExceededException", 400, TransientError),
        ("ThrottlingException", 400, TransientError),
        ("InternalServerError", 500, TransientError),
        ("ResourceNotFoundException", 400, StoreError),
    ],
)
def test_client_errors_map_to_store_errors(
    telemetry: Telemetry, code: str, status: int, expected: type[Exception]
) -> None:
    store, stub = stubbed(telemetry)
    stub.add_client_error("transact_write_items", service_error_code=code, http_status_code=status)
    with stub, pytest.raises(expected):
        store.run_atomic(STEP, lambda: AtomicEffect({}, [counter_add("c")]))


def test_a_concurrent_winner_answers_a_business_failure(telemetry: Telemetry) -> None:
    # Given our transaction fails on stock, but another attempt completes the step before we record FAILED
    store, stub = stubbed(telemetry)
    completed = {
        "id": {"S": store.external_key(STEP)},
        "state": {"S": "COMPLETED"},
        "fencing_token": {"N": "0"},
        "result": {"S": '{"winner":true}'},
    }
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        modeled_fields=cancelled("None", "ConditionalCheckFailed"),
    )
    stub.add_client_error(
        "put_item", service_error_code="ConditionalCheckFailedException", modeled_fields={"Item": completed}
    )
    # When the step runs, Then the winner's result is returned as a skip
    with stub:
        outcome = store.run_atomic(
            STEP, lambda: AtomicEffect({}, [Write(stock_decrement("s", 1), DemoOutOfStock("s"))])
        )
    assert outcome.skipped is True
    assert outcome.result == {"winner": True}


def test_a_refusal_without_the_old_item_is_busy(telemetry: Telemetry) -> None:
    store, stub = stubbed(telemetry)
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        modeled_fields=cancelled("ConditionalCheckFailed", "None"),
    )
    with stub, pytest.raises(FenceBusy) as busy:
        store.run_atomic(STEP, lambda: AtomicEffect({}, [counter_add("c")]))
    assert str(busy.value) == f"fence {store.external_key(STEP)} refused the commit"


def test_a_business_error_from_build_is_recorded_and_replayed(fences: FenceStore, ddb: Any) -> None:
    # Given a build that decides the order cannot be served
    step = StepId("dev.o-b.r1", "hold-items")

    def build() -> AtomicEffect:
        raise DemoOutOfStock("item-9")

    # When it runs, Then the error is recorded FAILED and raised, in one round trip
    calls = CallCounter(ddb)
    with pytest.raises(DemoOutOfStock):
        fences.run_atomic(step, build)
    assert calls.take() == ["PutItem"]
    record = fences.read(step)
    assert record is not None
    assert record.state is FenceState.FAILED
    # And a replay whose build would now succeed still raises the recorded error
    with pytest.raises(DemoOutOfStock, match="item-9"):
        fences.run_atomic(step, lambda: AtomicEffect({"reserved": 1}, [counter_add("c")]))
    assert counter_value(ddb, "c") == 0


def test_a_replay_whose_build_now_fails_returns_the_stored_result(fences: FenceStore, ddb: Any) -> None:
    # Given a step that reserved the last unit
    put_stock(ddb, "last", 1)
    step = StepId("dev.o-c.r1", "hold-items")

    def build() -> AtomicEffect:
        if stock_of(ddb, "last") < 1:
            raise DemoOutOfStock("last")
        return AtomicEffect({"reserved": 1}, [stock_decrement("last", 1)])

    first = fences.run_atomic(step, build)
    # When the step is retried, its build sees its own effect (stock 0) and would fail
    replay = fences.run_atomic(step, build)
    # Then the fence answers: the stored result, no failure recorded
    assert replay.skipped is True
    assert replay.result == first.result
    record = fences.read(step)
    assert record is not None
    assert record.state is FenceState.COMPLETED


def test_optional_writes_whose_conditions_fail_are_dropped_and_the_rest_commits(
    fences: FenceStore, ddb: Any
) -> None:
    # Given stock of 1 on item-1 and none on item-2, and a step whose decrements are optional
    put_stock(ddb, "item-1", 1)
    put_stock(ddb, "item-2", 0)
    step = StepId(token="dev.order-9.r1", step="release-items")
    writes: list[Write | dict[str, Any]] = [
        Write(stock_decrement("item-1", 1), optional=True),
        Write(stock_decrement("item-2", 1), optional=True),
        counter_add("c"),
    ]
    calls = CallCounter(ddb)
    # When it runs atomically
    outcome = fences.run_atomic(step, lambda: AtomicEffect({"done": True}, writes))
    # Then the transaction was sent again without the write that failed, and completed
    assert calls.take() == ["TransactWriteItems", "TransactWriteItems"]
    assert outcome.result == {"done": True}
    assert (stock_of(ddb, "item-1"), stock_of(ddb, "item-2"), counter_value(ddb, "c")) == (0, 0, 1)
    record = fences.read(step)
    assert record is not None
    assert record.state is FenceState.COMPLETED


def test_a_required_write_failing_beside_an_optional_one_still_refuses_the_whole_effect(
    fences: FenceStore, ddb: Any
) -> None:
    # Given no stock on either item, one decrement optional and one required
    put_stock(ddb, "item-1", 0)
    put_stock(ddb, "item-2", 0)
    step = StepId(token="dev.order-10.r1", step="release-items")
    writes: list[Write | dict[str, Any]] = [
        Write(stock_decrement("item-1", 1), optional=True),
        Write(stock_decrement("item-2", 1)),
        counter_add("c"),
    ]
    # When it runs, then nothing is dropped: the required write's failure is the answer
    with pytest.raises(EffectConditionFailed):
        fences.run_atomic(step, lambda: AtomicEffect({}, writes))
    assert counter_value(ddb, "c") == 0
    assert fences.read(step) is None
