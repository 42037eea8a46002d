"""A fence record as stored (its attributes, by name, as operators' tools and the TTL read them),
read back, and the AWS error each refusal or failure keeps as its cause."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from botocore.stub import Stubber

from reliability import AtomicEffect, FenceStore, StepId, Write
from reliability.errors import StaleFence, StoreError, TransientError
from reliability.record import FenceRecord
from reliability.requests import number
from reliability_demo import DemoOutOfStock
from reliability_helpers import (
    FENCES,
    FakeClock,
    lose_answer,
    make_telemetry,
    put_stock,
    read_emitted,
    stock_decrement,
)

STEP = StepId(token="dev.order-7.r1", step="reserve", item="sku-1")
TTL = 3600


def _store(ddb: Any, clock: FakeClock) -> FenceStore:
    return FenceStore(
        client=ddb,
        table_name=FENCES,
        ttl_seconds=TTL,
        telemetry=make_telemetry(),
        namespace="fence",
        clock=clock,
    )


def test_a_number_attribute_is_written_as_python_writes_the_number() -> None:
    assert number(3) == {"N": "3"}
    assert number(1_800_000_000.25) == {"N": "1800000000.25"}


def test_a_claimed_record_holds_these_attributes_and_reads_back_whole(ddb: Any, clock: FakeClock) -> None:
    store = _store(ddb, clock)
    fence = store.fence(STEP)
    store.claim(STEP, attempt_id="a-1", lease_seconds=30)

    [item] = ddb.scan(TableName=FENCES)["Items"]
    assert set(item) == {
        "id",
        "state",
        "owner",
        "lease_expires",
        "claimed_at",
        "fencing_token",
        "label",
        "token",
        "step",
        "item",
        "updated_at",
        "expiration",
    }
    assert item["label"] == {"S": fence.key.label}
    assert (item["token"], item["step"], item["item"]) == (
        {"S": STEP.token},
        {"S": "reserve"},
        {"S": "sku-1"},
    )
    assert item["updated_at"] == {"N": repr(clock())}
    assert item["expiration"] == {"N": str(int(clock() + TTL))}
    record = FenceRecord.from_item(item)
    assert (record.key, record.label, record.fencing_token) == (fence.key.value, fence.key.label, 1)


def test_a_record_without_a_fencing_token_reads_as_token_zero() -> None:
    record = FenceRecord.from_item({"id": {"S": "k"}, "state": {"S": "COMPLETED"}})

    assert record.fencing_token == 0


def test_a_claims_line_names_the_attempt_that_won(
    ddb: Any, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(ddb, clock)
    capsys.readouterr()
    store.claim(STEP, attempt_id="a-1", lease_seconds=30)

    lines = read_emitted(capsys.readouterr().out).decisions()
    assert [(line["decision"], line["attempt"], line["fencing_token"]) for line in lines] == [
        ("FenceClaimed", "a-1", 1)
    ]


def _code(error: BaseException | None) -> str | None:
    return error.response["Error"]["Code"] if isinstance(error, ClientError) else None


def test_a_stale_completion_keeps_the_refused_condition_as_its_cause(ddb: Any, clock: FakeClock) -> None:
    store = _store(ddb, clock)
    store.claim(STEP, attempt_id="a-1", lease_seconds=30)
    clock.advance(31)
    store.claim(STEP, attempt_id="a-2", lease_seconds=30)

    with pytest.raises(StaleFence) as stale:
        store.complete(STEP, fencing_token=1, result={"by": "a-1"}, attempt_id="a-1")
    assert _code(stale.value.__cause__) == "ConditionalCheckFailedException"


def test_an_effects_refused_condition_keeps_the_cancelled_transaction_as_its_cause(
    ddb: Any, clock: FakeClock
) -> None:
    store = _store(ddb, clock)
    put_stock(ddb, "item", 0)

    def reserve(key: str) -> AtomicEffect:
        return AtomicEffect({"reserved": 1}, [Write(stock_decrement("item", 1), DemoOutOfStock("item"))])

    with pytest.raises(DemoOutOfStock) as refused:
        store.run_leased(STEP, attempt_id="a-1", lease_seconds=30, effect=reserve)
    assert _code(refused.value.__cause__) == "TransactionCanceledException"


def test_a_request_dynamodb_rejects_is_a_store_error_naming_the_code(ddb: Any, clock: FakeClock) -> None:
    store = _store(ddb, clock)
    with Stubber(ddb) as stub:
        stub.add_client_error("get_item", service_error_code="ValidationException", http_status_code=400)
        with pytest.raises(StoreError) as rejected:
            store.read(STEP)

    assert str(rejected.value) == "DynamoDB rejected the request: ValidationException"
    assert _code(rejected.value.__cause__) == "ValidationException"


class _Unreachable:
    """A DynamoDB client whose endpoint cannot be reached."""

    def get_item(self, **_: Any) -> dict[str, Any]:
        raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")


def test_an_unreachable_endpoint_is_a_transient_error_naming_it(clock: FakeClock) -> None:
    store = _store(_Unreachable(), clock)

    with pytest.raises(TransientError) as failed:
        store.read(STEP)

    assert str(failed.value) == "DynamoDB: EndpointConnectionError"
    assert isinstance(failed.value.__cause__, EndpointConnectionError)


def test_a_claim_whose_answer_was_lost_is_still_this_attempts_claim(
    ddb: Any, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(ddb, clock)
    lose_answer(ddb, "UpdateItem")  # the claim lands, its answer is lost, botocore sends it again
    capsys.readouterr()

    claim = store.claim(STEP, attempt_id="a-1", lease_seconds=30)

    assert (claim.won, claim.record.owner) == (True, "a-1")
    lines = read_emitted(capsys.readouterr().out).decisions()
    assert [(line["decision"], line["attempt"]) for line in lines] == [("FenceClaimed", "a-1")]
