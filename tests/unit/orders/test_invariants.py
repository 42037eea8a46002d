"""The invariant checker sees every kind of double (or missing) effect."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from ops.invariants import Stores, check
from orders import items as layout

REGION = "us-east-1"


def _stores(ddb: Any, dlq_url: str | None = None) -> Stores:
    return Stores(
        dynamodb=ddb,
        sqs=boto3.client("sqs", region_name=REGION),
        tables={
            name: name
            for name in ("orders", "inventory", "payments", "ledger", "notifications", "aggregates", "fences")
        },
        dlq_urls={"orders": dlq_url} if dlq_url else {},
    )


def _put(ddb: Any, table: str, item: dict[str, Any]) -> None:
    typed = {
        k: ({"N": str(v)} if isinstance(v, int) else {"S": v})
        for k, v in item.items()
        if not isinstance(v, dict)
    }
    typed.update(
        {k: {"M": {s: {"N": str(q)} for s, q in v.items()}} for k, v in item.items() if isinstance(v, dict)}
    )
    ddb.put_item(TableName=table, Item=typed)


def _order(ddb: Any, order_id: str, status: str) -> None:
    _put(
        ddb,
        "orders",
        {
            "pk": f"order#{order_id}",
            "sk": "order",
            "order_id": order_id,
            "status": status,
            "created_at": "2026-11-22T00:00:00+00:00",
        },
    )


def _take(ddb: Any, sku: str, quantity: int) -> None:
    ddb.update_item(
        TableName="inventory",
        Key={"pk": {"S": f"sku#{sku}"}, "sk": {"S": "catalog"}},
        UpdateExpression="SET stock = stock - :q",
        ExpressionAttributeValues={":q": {"N": str(quantity)}},
    )


def _completed(ddb: Any, order_id: str, *, charges: int = 1, notifications: int = 1) -> None:
    _order(ddb, order_id, "COMPLETED")
    token = f"dev.{order_id}.r1"  # the run's steps' records, where orders.items.record_at puts them
    carried: dict[str, dict[str, Any]] = {}
    for step in ("ReserveInventory", "ChargePayment", "RecordLedger", "PublishEvents", "MarkCompleted"):
        fence_id = f"saga#{token}#{step}"
        record = {"id": fence_id, "token": token, "step": step, "state": "COMPLETED"}
        at = layout.record_at(step, order_id=order_id, token=token, fence_id=fence_id)
        if at.carried:
            carried[at.table] = record
        else:
            _put(ddb, "fences", record)
    _put(
        ddb,
        "inventory",
        {
            **carried["inventory"],
            "pk": f"order#{order_id}",
            "sk": f"reservation#{token}",
            "kind": "reservation",
            "lines": {"sku-1": 2},
        },
    )
    _take(ddb, "sku-1", 2)
    for n in range(charges):
        _put(ddb, "payments", {"pk": f"order#{order_id}", "sk": f"charge#{n}", "status": "SUCCEEDED"})
        _put(ddb, "payments", {"pk": f"order#{order_id}", "sk": f"call#{n}"})
    _put(ddb, "ledger", {**carried["ledger"], "pk": f"order#{order_id}", "sk": f"entry#{token}"})
    for n in range(notifications):
        _put(ddb, "notifications", {"pk": f"order#{order_id}", "sk": f"notification#{n}"})
    _put(
        ddb,
        "aggregates",
        {"pk": f"event#{order_id}", "sk": "marker", "day": "2026-11-22", "order_id": order_id},
    )
    ddb.update_item(
        TableName="aggregates",
        Key={"pk": {"S": "day#2026-11-22"}, "sk": {"S": "total"}},
        UpdateExpression="ADD orders :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )


def test_a_clean_completed_order_passes(ddb: Any):
    _completed(ddb, "o-1")
    report = check(_stores(ddb))
    assert report.ok, report.to_text()
    assert report.row("o-1").verdict == "completed"
    assert "every invariant holds" in report.to_text()


@pytest.mark.parametrize(
    ("charges", "notifications", "expected"),
    [
        (2, 1, "2 ChargePayment effects (at most 1)"),
        (1, 2, "2 notify effects (at most 1)"),
        (0, 1, "0 ChargePayment effect(s), expected 1"),
    ],
)
def test_a_double_or_missing_effect_is_a_violation(ddb: Any, charges: int, notifications: int, expected: str):
    _completed(ddb, "o-1", charges=charges, notifications=notifications)
    report = check(_stores(ddb))
    assert not report.ok
    assert any(expected in v for v in report.violations), report.violations


def test_a_stock_change_without_a_reservation_is_a_violation(ddb: Any):
    _take(ddb, "sku-3", 1)
    report = check(_stores(ddb))
    assert report.violations == ["sku sku-3: stock fell by 1 but reservations minus releases are 0"]


def test_a_counter_added_twice_is_a_violation(ddb: Any):
    _completed(ddb, "o-1")
    ddb.update_item(
        TableName="aggregates",
        Key={"pk": {"S": "day#2026-11-22"}, "sk": {"S": "total"}},
        UpdateExpression="ADD orders :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    assert any("counter says 2" in v for v in check(_stores(ddb)).violations)


def test_a_failed_order_must_be_compensated(ddb: Any):
    _order(ddb, "o-2", "FAILED")
    _put(
        ddb,
        "inventory",
        {"pk": "order#o-2", "sk": "reservation#t", "kind": "reservation", "lines": {"sku-2": 1}},
    )
    _take(ddb, "sku-2", 1)
    report = check(_stores(ddb))
    assert any(
        "its ReserveInventory effect was not undone by ReleaseInventory" in v for v in report.violations
    )


def test_an_accepted_order_must_be_finished_or_dead_lettered_with_a_reason(ddb: Any):
    _order(ddb, "o-3", "ACCEPTED")
    assert not check(_stores(ddb)).ok
    assert check(_stores(ddb), allow_in_flight=True).ok

    sqs = boto3.client("sqs", region_name=REGION)
    dlq = sqs.create_queue(QueueName="orders-dlq")["QueueUrl"]
    sqs.send_message(
        QueueUrl=dlq,
        MessageBody=json.dumps({"order_id": "o-3", "run": 1, "idempotency_key": "k"}),
        MessageAttributes={"reason": {"DataType": "String", "StringValue": "conflicting execution"}},
    )
    report = check(_stores(ddb, dlq))
    assert report.ok, report.to_text()
    assert report.row("o-3").verdict == "dead-lettered"
    assert report.dead_letters[0].reason == "conflicting execution"
    # Peeking did not consume the dead letter
    assert check(_stores(ddb, dlq)).row("o-3").verdict == "dead-lettered"


def test_a_dead_letter_does_not_excuse_an_order_whose_effects_still_stand(ddb: Any):
    # Given a RUNNING order that reserved stock, then its message was dead-lettered with a reason
    _order(ddb, "o-4", "RUNNING")
    _put(
        ddb,
        "inventory",
        {"pk": "order#o-4", "sk": "reservation#t", "kind": "reservation", "lines": {"sku-4": 1}},
    )
    _take(ddb, "sku-4", 1)
    sqs = boto3.client("sqs", region_name=REGION)
    dlq = sqs.create_queue(QueueName="orders-dlq")["QueueUrl"]
    sqs.send_message(
        QueueUrl=dlq,
        MessageBody=json.dumps({"order_id": "o-4", "run": 1, "idempotency_key": "k"}),
        MessageAttributes={"reason": {"DataType": "String", "StringValue": "RunNotCurrent"}},
    )
    # Then the stock it still holds is a violation: nothing compensated it
    assert check(_stores(ddb, dlq)).violations == [
        "o-4: RUNNING, in a DLQ, but ReserveInventory's effect still standing (not compensated)"
    ]


def test_an_order_left_to_an_operator_may_stay_running_and_only_that_order(ddb: Any):
    # Given two RUNNING orders, one whose failed execution an operator's redrive refused
    _order(ddb, "o-left", "RUNNING")
    _order(ddb, "o-other", "RUNNING")
    _take(ddb, "sku-3", 1)  # and stock that fell without any reservation

    # When the invariants are checked with that order left to the operator
    report = check(_stores(ddb), left_to_operator={"o-left"})

    # Then only its being unfinished is tolerated: the other order and every other rule still count
    assert not [v for v in report.violations if v.startswith("o-left")]
    assert any(v.startswith("o-other: RUNNING: neither completed") for v in report.violations)
    assert any("stock fell by 1" in v for v in report.violations)
