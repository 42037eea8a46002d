"""ops.invariants: one amount across order, charge, ledger entry and aggregate."""

from __future__ import annotations

from proof.invariants import check_amounts

ORDER = {"pk": "order#o-1", "sk": "order", "order_id": "o-1", "status": "COMPLETED", "total_cents": 398}
CHARGE = {
    "pk": "order#o-1",
    "sk": "charge#k",
    "status": "SUCCEEDED",
    "charge_id": "ch_1",
    "amount_cents": 398,
}
ENTRY = {"pk": "order#o-1", "sk": "entry#t", "charge_id": "ch_1", "amount_cents": 398}
COUNTED = {"pk": "event#e", "sk": "marker", "day": "2026-11-23", "order_id": "o-1", "total_cents": 398}


def test_agreeing_amounts_pass():
    assert check_amounts([ORDER], [CHARGE], [ENTRY], [COUNTED]) == []


def test_each_disagreement_is_named():
    violations = check_amounts(
        [ORDER],
        [{**CHARGE, "amount_cents": 399}],
        [{**ENTRY, "charge_id": "unknown", "amount_cents": 1}],
        [{**COUNTED, "total_cents": 0}],
    )
    assert violations == [
        "o-1: charge of 399 cents for an order total of 398",
        "o-1: ledger entry of 1 cents for an order total of 398",
        "o-1: aggregate count of 0 cents for an order total of 398",
        "o-1: ledger entry against unknown, not a succeeded charge of the order",
    ]


def test_declined_charges_and_failed_orders_are_not_compared():
    declined = {**CHARGE, "status": "DECLINED", "amount_cents": 1}
    assert check_amounts([{**ORDER, "status": "FAILED"}], [declined], [], []) == []
