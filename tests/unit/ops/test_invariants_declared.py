"""The generic invariants hold for any declared workflow: a wallet transfer service, declared here
with no proof hook, gets its doubled effects, its missing effects on a completed run and its
uncompensated failed runs found from its declaration alone."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from boto3.dynamodb.types import TypeSerializer

from ops.invariants import Stores, check
from ops.invariants.effects import Effects, new_counts, tally_items
from reliability.declaration import Consumer, Entity, Item, Service, Step
from reliability.keys import execution_token

WALLET = Service(
    name="wallet",
    entity=Entity(name="transfer", id_prefix="t-", table="transfers"),
    tables=frozenset({"transfers", "balances", "receipts"}),
    queue="transfers",
    steps=(
        Step(
            name="DebitSource",
            kind="atomic",
            effect="wallet.effects:debit",
            description="debit",
            catch={"MarkFailed": ("InsufficientFunds",)},
            writes=(Item("balances", "debit#"),),
        ),
        Step(
            name="SendToBank",
            kind="leased",
            effect="wallet.effects:send",
            description="the bank transfer",
            catch={"RefundSource": ("Rejected",)},
            provider="bank",
        ),
        Step(
            name="CreditTarget",
            kind="atomic",
            effect="wallet.effects:credit",
            description="credit",
            writes=(Item("balances", "credit#"),),
        ),
        Step(
            name="MarkDone",
            kind="atomic",
            effect="wallet.effects:done",
            description="done",
            next=None,
            status="DONE",
        ),
        Step(
            name="RefundSource",
            kind="atomic",
            effect="wallet.effects:refund",
            description="refund",
            compensates="DebitSource",
            writes=(Item("balances", "refund#"),),
        ),
        Step(
            name="MarkFailed",
            kind="atomic",
            effect="wallet.effects:failed",
            description="failed",
            next=None,
            status="REJECTED",
        ),
    ),
    consumers=(
        Consumer(
            name="receipt",
            effect="wallet.effects:receipt",
            description="r",
            writes=(Item("receipts", "receipt#"),),
        ),
    ),
)
TOKEN = execution_token(stage="dev", business_id="t-1", run=1)
COMPLETED_STEPS = ("DebitSource", "SendToBank", "CreditTarget", "MarkDone")
REJECTED_STEPS = {
    "DebitSource": "COMPLETED",
    "SendToBank": "FAILED",
    "RefundSource": "COMPLETED",
    "MarkFailed": "COMPLETED",
}


class _Dynamo:
    """Scans answer the items a test put, by physical table name (`<short>-table`)."""

    def __init__(self, tables: dict[str, list[dict[str, Any]]]) -> None:
        serialize = TypeSerializer().serialize
        self._tables = {
            f"{name}-table": [{k: serialize(v) for k, v in item.items()} for item in items]
            for name, items in tables.items()
        }

    def scan(self, *, TableName: str, **_: Any) -> dict[str, Any]:
        return {"Items": self._tables.get(TableName, [])}


class _Sqs:
    def receive_message(self, **_: Any) -> dict[str, Any]:
        return {}


def _world(status: str, fences: dict[str, str], effects: dict[str, int]) -> list[str]:
    """A transfer t-1 on run 1 with these step records and this many items of each declared prefix."""
    balances = [
        {"pk": "transfer#t-1", "sk": f"{prefix}{TOKEN}" + ("" if n == 0 else f"#{n}"), "token": TOKEN}
        for prefix in ("debit#", "credit#", "refund#")
        for n in range(effects.get(prefix, 0))
    ]
    receipts = [
        {"pk": "transfer#t-1", "sk": f"receipt#{TOKEN}#{n}", "token": TOKEN}
        for n in range(effects.get("receipt#", 0))
    ]
    tables: dict[str, list[dict[str, Any]]] = {
        "transfers": [
            {
                "pk": "transfer#t-1",
                "sk": "transfer",
                "status": status,
                "run": 1,
                "created_at": "2026-11-27T00:00:00+00:00",
            }
        ],
        "balances": balances,
        "receipts": receipts,
        "fences": [
            {"id": f"{TOKEN}#{s}", "token": TOKEN, "step": s, "state": state} for s, state in fences.items()
        ],
    }
    stores = Stores(
        dynamodb=_Dynamo(tables),
        sqs=_Sqs(),
        tables={name: f"{name}-table" for name in tables},
        clock=lambda: 1_795_737_600.0,  # 2026-11-27, the transfer's day: its fences must be there
        declared=WALLET,
    )
    return check(stores).violations


DONE = dict.fromkeys(COMPLETED_STEPS, "COMPLETED")
COMPLETED = {"debit#": 1, "credit#": 1, "receipt#": 1}


def test_a_completed_transfer_whose_effects_and_records_agree_passes():
    assert _world("DONE", DONE, COMPLETED) == []
    assert _world("REJECTED", REJECTED_STEPS, {"debit#": 1, "refund#": 1}) == []


def test_a_doubled_effect_is_found():
    violations = _world("DONE", DONE, {**COMPLETED, "credit#": 2})
    assert "t-1: 2 CreditTarget effects (at most 1)" in violations
    assert "t-1: 2 receipt effects (at most 1)" in _world("DONE", DONE, {**COMPLETED, "receipt#": 2})


@pytest.mark.parametrize(
    ("missing", "expected"),
    [
        ("credit#", "t-1: 0 CreditTarget effect(s), expected 1"),
        ("receipt#", "t-1: 0 receipt effect(s), expected 1 (or the event dead-lettered)"),
    ],
)
def test_a_missing_effect_on_a_completed_run_is_found(missing: str, expected: str):
    assert expected in _world("DONE", DONE, {**COMPLETED, missing: 0})


def test_an_uncompensated_failed_run_is_found():
    # Given a rejected transfer whose debit was never refunded (its refund step recorded done)
    violations = _world("REJECTED", REJECTED_STEPS, {"debit#": 1})
    assert violations == [
        "t-1: REJECTED but its DebitSource effect was not undone by RefundSource",
        "t-1: step RefundSource recorded DONE without its RefundSource effect",
    ]
    # And one that credited the target though it was rejected: no step undoes a credit
    assert "t-1: REJECTED but has 1 CreditTarget effect(s), which no step compensates" in _world(
        "REJECTED", REJECTED_STEPS, {"debit#": 1, "refund#": 1, "credit#": 1}
    )


def test_a_failed_record_carried_at_its_effects_key_is_no_effect():
    # Given the item a step's effect would write, holding that step's FAILED record instead
    row = {
        "pk": "transfer#t-1",
        "sk": f"debit#{TOKEN}",
        "token": TOKEN,
        "step": "DebitSource",
        "state": "FAILED",
    }
    counts = new_counts()
    tally_items([row], "debit#", "DebitSource", counts, Effects.of(WALLET).entity_id)
    # Then nothing was applied; the same item with the effect's COMPLETED record is one effect
    assert +counts["t-1"][1] == Counter()
    tally_items(
        [{**row, "state": "COMPLETED"}], "debit#", "DebitSource", counts, Effects.of(WALLET).entity_id
    )
    assert counts["t-1"][1] == Counter(DebitSource=1)
