"""A service adds its own invariants through ONE hook named in its declaration
(its proof's `violations`); the checker calls it with the table scans, beside the generic rules."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import pytest

from ops.invariants import Stores, check
from ops.service import domain_invariants
from orders.workflow import SERVICE
from proof.invariants import violations as orders_violations
from reliability.declaration import Entity, Service, Step

FINISH = Step(name="Finish", kind="atomic", effect="m:f", description="finish", next=None, status="DONE")


def _bookings(proof: str | None) -> Service:
    return Service(
        name="bookings",
        entity=Entity(name="booking", id_prefix="b-", table="bookings"),
        tables=frozenset({"bookings", "seats"}),
        queue="bookings",
        steps=(FINISH,),
        proof=proof,
    )


class _Dynamo:
    """Each table holds one item naming the table."""

    def scan(self, *, TableName: str, **_: Any) -> dict[str, Any]:
        return {"Items": [{"pk": {"S": f"row#{TableName}"}, "sk": {"S": "row"}}]}


class _Sqs:
    def receive_message(self, **_: Any) -> dict[str, Any]:
        return {}


def _stores(declared: Service) -> Stores:
    tables = {t: f"{t}-table" for t in declared.tables}
    return Stores(dynamodb=_Dynamo(), sqs=_Sqs(), tables=tables, declared=declared)


def test_the_declared_hook_is_called_with_the_table_scans(monkeypatch: pytest.MonkeyPatch):
    # Given a declaration whose hook says what it read from the seats table
    def seats_rule(items: Callable[[str], list[dict[str, Any]]], counts: Any) -> list[str]:
        return [f"seats read: {[i['pk'] for i in items('seats')]}"]

    module = types.ModuleType("bookings_proof")
    module.violations = seats_rule  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bookings_proof", module)
    # When the checker runs under it
    report = check(_stores(_bookings("bookings_proof")))
    # Then the hook's violation is reported with the scan it was given
    assert report.global_violations == ["seats read: ['row#seats-table']"]


def test_without_a_hook_only_the_generic_rules_hold():
    assert check(_stores(_bookings(None))).global_violations == []
    assert domain_invariants(_bookings(None))(lambda _table: [], {}) == []


def test_the_sample_registers_its_own_rules_through_the_hook():
    assert domain_invariants(SERVICE) is orders_violations
