"""`make seed` loads the service's reference data through its proof's `seed`, handed the physical
table names by short name from the stack outputs; a service without one seeds nothing."""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping
from typing import Any

import pytest

from ops.seed import seed_service
from ops.service import seed_hook
from orders.workflow import SERVICE
from proof import seed as orders_seed
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


def test_the_proof_seed_gets_the_tables_by_short_name(monkeypatch: pytest.MonkeyPatch):
    seen: list[tuple[Mapping[str, str], bool]] = []

    def seed(dynamodb: Any, tables: Mapping[str, str], *, reset: bool = False) -> int:
        seen.append((dict(tables), reset))
        return 3

    module = types.ModuleType("bookings_proof")
    module.seed = seed  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bookings_proof", module)
    outputs = {"SeatsTableName": "seats-dev", "BookingsTableName": "bookings-dev", "FenceTableName": "f"}

    assert seed_service(object(), outputs, declared=_bookings("bookings_proof"), reset=True) == 3
    assert seen == [({"bookings": "bookings-dev", "seats": "seats-dev", "fences": "f"}, True)]


def test_without_a_proof_there_is_nothing_to_seed():
    assert seed_service(object(), {"SeatsTableName": "seats-dev"}, declared=_bookings(None)) == 0


def test_the_sample_seeds_its_catalog_through_the_hook():
    assert seed_hook(SERVICE) is orders_seed
