"""ops.idem: show and forget an HTTP idempotency record, show and reset a step fence, safely."""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from botocore.config import Config
from moto import mock_aws

from ops.idem import Idem, Refused, describe_fence, describe_http, fence_record_id, http_record_id
from ops.story.collect import record_location
from reliability import AtomicEffect, BusinessError, FenceStore, RecordOn, StepId
from reliability.http import ANONYMOUS, HttpIdempotency, HttpResponse
from reliability_helpers import (
    FENCES,
    IDEMPOTENCY,
    REGION,
    STOCK,
    FakeClock,
    create_tables,
    lose_answer,
    make_telemetry,
)

# The sample's inventory table is the library helpers' stock table here.
INVENTORY = STOCK

STAGE = "dev"


class Context:
    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@pytest.fixture
def ddb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "t",
        "AWS_SECRET_ACCESS_KEY": "t",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        create_tables(client)
        yield client


def _idem(ddb: Any, table: str, *, answer: bool, tmp_path: Any = None, clock: Any = None) -> Idem:
    kwargs = {"clock": clock} if clock else {}
    return Idem(
        dynamodb=ddb,
        table=table,
        console=io.StringIO(),
        confirm=lambda _question: answer,
        audit_log=tmp_path / "audit.log" if tmp_path else None,
        **kwargs,
    )


def _fences(ddb: Any, clock: FakeClock) -> FenceStore:
    """The saga's fence store on the test tables, on `clock`."""
    return FenceStore(
        client=ddb,
        table_name=FENCES,
        ttl_seconds=3600,
        telemetry=make_telemetry(),
        namespace="saga",
        clock=clock,
        stage=STAGE,
    )


def _http(ddb: Any) -> HttpIdempotency:
    return HttpIdempotency(
        persistence=DynamoDBPersistenceLayer(table_name=IDEMPOTENCY, boto3_client=ddb),
        stage=STAGE,
        ttl_seconds=3600,
        telemetry=make_telemetry(),
    )


def _post(http: HttpIdempotency, key: str, execute: Any) -> HttpResponse:
    scoped = http.checked_key(route="POST /orders", caller=ANONYMOUS, headers={"Idempotency-Key": key})
    assert not isinstance(scoped, HttpResponse)
    return http.handle(
        route="POST /orders",
        key=scoped,
        payload='{"sku": "a"}',
        lambda_context=Context(),
        execute=execute,
    )


def _describe_http(key: str):
    _, scoped = http_record_id(key, stage=STAGE)
    return lambda item: describe_http(item, raw_key=key, scoped=scoped, now=time.time())


def test_show_finds_the_record_reliability_http_stored_for_a_client_key(ddb):
    # Given a request that completed with key k-1 (the real HttpIdempotency on Powertools)
    _post(_http(ddb), "k-1", lambda: HttpResponse(202, {"order_id": "o-1", "status": "ACCEPTED"}))
    idem = _idem(ddb, IDEMPOTENCY, answer=False)
    # When an operator shows it by the client's key
    record_id, _ = http_record_id("k-1", stage=STAGE)
    shown = idem.show(record_id, _describe_http("k-1"))
    # Then the record is found and summarised: status, expiry, response, readable input
    assert isinstance(idem.console, io.StringIO)
    text = idem.console.getvalue()
    assert shown is not None
    assert not shown.live
    assert "status   COMPLETED" in text
    assert "response 202 order_id=o-1, status=ACCEPTED" in text
    assert "Idempotency-Key 'k-1' on POST /orders" in text


def test_forget_asks_and_deletes_only_after_a_yes_and_writes_an_audit_event(ddb, tmp_path):
    _post(_http(ddb), "k-2", lambda: HttpResponse(202, {"order_id": "o-2"}))
    record_id, _ = http_record_id("k-2", stage=STAGE)
    # When the operator answers no, nothing is deleted
    assert not _idem(ddb, IDEMPOTENCY, answer=False).forget(record_id, _describe_http("k-2"), what="record")
    assert "Item" in ddb.get_item(TableName=IDEMPOTENCY, Key={"id": {"S": record_id}})
    # When they answer yes, it is deleted, and the deletion is an audit event
    assert _idem(ddb, IDEMPOTENCY, answer=True, tmp_path=tmp_path).forget(
        record_id, _describe_http("k-2"), what="record"
    )
    assert "Item" not in ddb.get_item(TableName=IDEMPOTENCY, Key={"id": {"S": record_id}})
    (audit,) = [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]
    assert (audit["event"], audit["id"], audit["table"]) == (
        "idempotency-state-deleted",
        record_id,
        IDEMPOTENCY,
    )
    # And the same key is new again: the next request executes
    runs: list[str] = []

    def execute() -> HttpResponse:
        runs.append("run")
        return HttpResponse(202, {"order_id": "o-2"})

    _post(_http(ddb), "k-2", execute)
    assert runs == ["run"]


def test_forget_refuses_a_record_whose_request_is_still_running(ddb):
    record_id, _ = http_record_id("k-3", stage=STAGE)
    refused: list[Exception] = []

    def execute() -> HttpResponse:
        # While the first request runs, its record is IN_PROGRESS with a live lease
        try:
            _idem(ddb, IDEMPOTENCY, answer=True).forget(record_id, _describe_http("k-3"), what="record")
        except Refused as error:
            refused.append(error)
        return HttpResponse(202, {"order_id": "o-3"})

    _post(_http(ddb), "k-3", execute)
    assert refused, "forget deleted an IN_PROGRESS record with a live lease"
    item = ddb.get_item(TableName=IDEMPOTENCY, Key={"id": {"S": record_id}})["Item"]
    assert item["status"]["S"] == "COMPLETED"  # the request finished and stored its response


def test_fence_reset_refuses_a_live_lease_and_resets_once_it_has_expired(ddb, tmp_path):
    clock = FakeClock()
    fences = _fences(ddb, clock)
    record_id, token = fence_record_id("o-9", "ChargePayment", stage=STAGE, run=1)
    step = StepId(token=token, step="ChargePayment")
    assert fences.external_key(step) == record_id
    fences.claim(step, attempt_id="attempt-1", lease_seconds=30)
    idem = _idem(ddb, FENCES, answer=True, tmp_path=tmp_path, clock=clock)

    def describe(item: Any) -> Any:
        return describe_fence(item, now=clock())

    # Given an attempt holds the fence with a live lease, a reset is refused
    with pytest.raises(Refused, match="live lease"):
        idem.forget(record_id, describe, what="fence")
    assert fences.read(step) is not None
    # Once the lease has expired (the attempt is dead), the reset deletes the fence
    clock.advance(31)
    assert idem.forget(record_id, describe, what="fence")
    assert fences.read(step) is None


def test_a_fence_that_changed_after_it_was_shown_is_not_deleted(ddb):
    clock = FakeClock()
    fences = _fences(ddb, clock)
    record_id, token = fence_record_id("o-8", "ChargePayment", stage=STAGE)
    step = StepId(token=token, step="ChargePayment")
    fences.claim(step, attempt_id="attempt-1", lease_seconds=1)
    clock.advance(2)

    def confirm_while_another_takes_over(_question: str) -> bool:
        fences.claim(step, attempt_id="attempt-2", lease_seconds=30)  # a retry takes over meanwhile
        return True

    idem = Idem(dynamodb=ddb, table=FENCES, console=io.StringIO(), confirm=confirm_while_another_takes_over)
    with pytest.raises(Refused, match="changed"):
        idem.forget(record_id, lambda item: describe_fence(item, now=clock()), what="fence")
    record = fences.read(step)
    assert record is not None
    assert record.owner == "attempt-2"


def test_a_record_carried_by_its_effects_item_is_shown_but_only_a_failed_one_is_reset(ddb):
    # Given ReserveInventory's records on the reservation item (orders.items.record_at): one run
    # completed (the item is the reservation), another failed (a record-only item at its key)
    clock = FakeClock()
    fences = _fences(ddb, clock)
    outputs = {"FenceTableName": FENCES, "InventoryTableName": INVENTORY}
    located = {}
    for order_id, fails in (("o-7", False), ("o-6", True)):
        _, token = fence_record_id(order_id, "ReserveInventory", stage=STAGE)
        table, key = record_location(outputs, entity_id=order_id, token=token, step="ReserveInventory")
        assert table == INVENTORY
        put = {"Put": {"TableName": INVENTORY, "Item": {**key, "kind": {"S": "reservation"}}}}

        def build(fails: bool = fails, put: dict = put) -> AtomicEffect:
            if fails:
                raise BusinessError("out of stock")
            return AtomicEffect({"reserved": 1}, [put])

        step = StepId(token=token, step="ReserveInventory")
        with contextlib.suppress(BusinessError):
            fences.run_atomic(step, build, record_on=RecordOn(table, key))
        located[order_id] = key
    idem = _idem(ddb, INVENTORY, answer=True, clock=clock)

    def describe(item: Any) -> Any:
        return describe_fence(item, now=clock(), carried=True)

    # When an operator resets the completed one, Then it is refused and the reservation stays
    with pytest.raises(Refused, match="carried by the item"):
        idem.forget(located["o-7"], describe, what="fence")
    assert ddb.get_item(TableName=INVENTORY, Key=located["o-7"])["Item"]["kind"] == {"S": "reservation"}
    # The failed one (no effect landed) may be reset, as a fence-table record may
    assert idem.forget(located["o-6"], describe, what="fence")
    assert "Item" not in ddb.get_item(TableName=INVENTORY, Key=located["o-6"])


@pytest.mark.parametrize("what", ["record", "fence"])
def test_a_delete_that_landed_but_whose_answer_was_lost_is_done_not_refused(ddb, tmp_path, what):
    # Given a completed HTTP record, or a fence whose attempt died, and an operator's client that
    # retries as botocore's standard mode does (ops.target's)
    clock = FakeClock()
    if what == "record":
        _post(_http(ddb), "k-4", lambda: HttpResponse(202, {"order_id": "o-4"}))
        record_id, table, describe = http_record_id("k-4", stage=STAGE)[0], IDEMPOTENCY, _describe_http("k-4")
    else:
        record_id, token = fence_record_id("o-5", "ChargePayment", stage=STAGE)
        _fences(ddb, clock).claim(StepId(token, "ChargePayment"), attempt_id="attempt-1", lease_seconds=1)
        clock.advance(2)
        table = FENCES

        def describe(item: Any) -> Any:
            return describe_fence(item, now=clock())

    client = boto3.client("dynamodb", region_name=REGION, config=Config(retries={"mode": "standard"}))
    # And the DeleteItem lands but its answer is lost, so the SDK sends it again
    attempts = lose_answer(client, "DeleteItem")
    idem = Idem(dynamodb=client, table=table, console=io.StringIO(), confirm=lambda _q: True, clock=clock)
    idem.audit_log = tmp_path / "audit.log"
    # When the operator confirms the delete; Then it is done (not "changed since it was shown")
    assert idem.forget(record_id, describe, what=what)
    assert len(attempts) == 2
    assert "Item" not in ddb.get_item(TableName=table, Key={"id": {"S": record_id}})
    (audit,) = [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]
    assert (audit["event"], audit["id"]) == ("idempotency-state-deleted", record_id)
    assert "already gone" in audit["answer"]
