"""ops.invariants: every rule honours the same two exemptions (`rules.Exemptions`): an order left to
an operator may stay unfinished, and once an order is older than its fences' windows an absent
fence is no evidence. Both found by `make chaos` on main, where a rule of its own ignored one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from infra.config import FENCE_WINDOWS, outlived
from ops.invariants import Stores, check
from orders import items as layout
from proof.catalog import seed_inventory

REGION = "us-east-1"
CREATED = "2026-11-01T00:00:00+00:00"
TABLES = ("orders", "inventory", "payments", "ledger", "notifications", "aggregates")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    for name, value in (
        ("AWS_DEFAULT_REGION", REGION),
        ("AWS_ACCESS_KEY_ID", "t"),
        ("AWS_SECRET_ACCESS_KEY", "t"),
    ):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name=REGION)
        keys = {"pk": "HASH", "sk": "RANGE"}
        for table, schema in [(name, keys) for name in TABLES] + [("fences", {"id": "HASH"})]:
            ddb.create_table(
                TableName=table,
                KeySchema=[{"AttributeName": a, "KeyType": k} for a, k in schema.items()],
                AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in schema],
                BillingMode="PAY_PER_REQUEST",
            )
        seed_inventory(ddb, "inventory")
        yield ddb, boto3.client("sqs", region_name=REGION)


def _stores(ddb: Any, sqs: Any, *, now: float, dlq_url: str = "") -> Stores:
    tables = {name: name for name in (*TABLES, "fences")}
    dlqs = {"orders": dlq_url} if dlq_url else {}
    return Stores(dynamodb=ddb, sqs=sqs, tables=tables, dlq_urls=dlqs, clock=lambda: now)


def _put(ddb: Any, table: str, item: dict[str, Any]) -> None:
    typed = {
        k: {"M": {s: {"N": str(q)} for s, q in v.items()}} if isinstance(v, dict) else {"S": str(v)}
        for k, v in item.items()
    }
    ddb.put_item(TableName=table, Item=typed)


def _order(ddb: Any, order_id: str, status: str) -> None:
    order = {"pk": layout.order_pk(order_id), "sk": "order", "order_id": order_id, "status": status}
    _put(ddb, "orders", {**order, "created_at": CREATED})


def _stock(ddb: Any, order_id: str, kind: str) -> None:
    item = {"pk": layout.order_pk(order_id), "sk": f"{kind}#t", "kind": kind, "lines": {"sku-1": 1}}
    _put(ddb, "inventory", item)


def _created() -> float:
    return datetime.fromisoformat(CREATED).timestamp()


def test_a_declined_order_whose_charge_fence_ttl_deleted_passes(aws: tuple[Any, Any]) -> None:
    # Given a declined order (reserved, charge declined, released, FAILED) 35 days old: TTL deleted
    # its fences, ChargePayment's FAILED record among them
    ddb, sqs = aws
    _order(ddb, "o-declined", "FAILED")
    _stock(ddb, "o-declined", "reservation")
    _stock(ddb, "o-declined", "release")
    _put(
        ddb,
        "payments",
        {"pk": layout.order_pk("o-declined"), "sk": f"{layout.CHARGE}k", "status": "DECLINED"},
    )
    old = _created() + outlived(FENCE_WINDOWS) + 1

    # Then the missing fence is no evidence against the declined charge
    assert check(_stores(ddb, sqs, now=old)).violations == []
    # while it still is one when the fences must still be there
    young = check(_stores(ddb, sqs, now=_created() + 60)).violations
    assert (
        "o-declined: a refusal of ChargePayment's call on a FAILED run whose ChargePayment is None" in young
    )


def test_an_order_left_to_an_operator_may_keep_what_it_took_beside_a_strays_dead_letter(
    aws: tuple[Any, Any],
) -> None:
    # Given an order stopped mid-run (stock taken) past the restart-safe window, left to an operator,
    # and a stray message for its run 2 dead-lettered as RunNotCurrent
    ddb, sqs = aws
    _order(ddb, "o-left", "RUNNING")
    _stock(ddb, "o-left", "reservation")
    ddb.update_item(
        TableName="inventory",
        Key={"pk": {"S": "sku#sku-1"}, "sk": {"S": "catalog"}},
        UpdateExpression="SET stock = stock - :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    dlq = sqs.create_queue(QueueName="orders-dlq")["QueueUrl"]
    sqs.send_message(
        QueueUrl=dlq,
        MessageBody=json.dumps({"order_id": "o-left", "run": 2, "idempotency_key": "k"}),
        MessageAttributes={"reason": {"DataType": "String", "StringValue": "RunNotCurrent"}},
    )
    stores = _stores(ddb, sqs, now=_created() + 60, dlq_url=dlq)

    # Then what it left standing is the operator's to settle, not a violation
    assert check(stores, left_to_operator={"o-left"}).violations == []
    # and for an order nobody left to an operator the dead letter still excuses nothing
    assert check(stores).violations == [
        "o-left: RUNNING, in a DLQ, but ReserveInventory's effect still standing (not compensated)"
    ]
