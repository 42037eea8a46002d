"""Mutants derived from the declaration: every declared entry gets its own, each switching the
library's guard off for that entry's function alone, so a new service's steps, consumers and
routes are mutated with no edit to lab/src/chaos/."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from chaos.guards import payload_unhashed, takeover_without_reconcile
from chaos.mutants import MUTANTS, derived
from reliability import FenceStore
from reliability.declaration import Consumer, Entity, Item, Route, Service, Step
from reliability.http import HttpIdempotency

BOOKINGS = Service(
    name="bookings",
    entity=Entity(name="booking", id_prefix="b-", table="bookings"),
    tables=frozenset({"bookings", "seats", "tickets"}),
    queue="bookings",
    steps=(
        Step(
            name="HoldSeat",
            kind="atomic",
            effect="b:hold",
            description="hold",
            writes=(Item("seats", "hold#"),),
        ),
        Step(
            name="ChargeCard",
            kind="leased",
            effect="b:charge",
            reconcile="b:find",
            description="c",
            provider="cards",
        ),
        Step(name="SendSms", kind="leased", effect="b:sms", description="sms", provider="sms"),
        Step(
            name="Confirm",
            kind="atomic",
            effect="b:confirm",
            description="confirm",
            next=None,
            status="CONFIRMED",
        ),
    ),
    routes=(
        Route(
            method="POST",
            path="/bookings",
            operation_id="createBooking",
            view="b:create",
            status=202,
            description="accepted",
            response="Accepted",
            idempotent=True,
        ),
        Route(
            method="GET",
            path="/bookings/{id}",
            operation_id="getBooking",
            view="b:get",
            status=200,
            description="it",
            response="View",
        ),
    ),
    consumers=(
        Consumer(name="send-ticket", effect="b:ticket", description="t", writes=(Item("tickets", "t#"),)),
    ),
)


def test_each_declared_entry_gets_its_mutants_on_its_own_function():
    mutants = {m.name: m for m in derived(BOOKINGS)}
    # Then a fence-off per step, a reconcile-off per reconciling leased step, a dedup-off per
    # consumer and a payload-hash-off per idempotent route, and nothing else
    assert list(mutants) == [
        "fence-off:HoldSeat",
        "fence-off:ChargeCard",
        "fence-off:SendSms",
        "fence-off:Confirm",
        "reconcile-off:ChargeCard",
        "dedup-off:send-ticket",
        "payload-hash-off:createBooking",
    ]
    # each on its entry's function alone
    assert {name: sorted(m.functions) for name, m in mutants.items()} == {
        "fence-off:HoldSeat": ["hold-seat"],
        "fence-off:ChargeCard": ["charge-card"],
        "fence-off:SendSms": ["send-sms"],
        "fence-off:Confirm": ["confirm"],
        "reconcile-off:ChargeCard": ["charge-card"],
        "dedup-off:send-ticket": ["send-ticket"],
        "payload-hash-off:createBooking": ["api"],
    }


def test_the_sample_s_entries_are_mutated_by_derivation():
    names = {m.name for m in MUTANTS}
    assert {"fence-off:ChargePayment", "reconcile-off:ChargePayment", "dedup-off:notify"} <= names
    assert "payload-hash-off:createOrder" in names


def test_a_fence_off_mutant_drops_the_fences_refusal_from_what_its_function_sends():
    fence_off = derived(BOOKINGS)[0]
    assert fence_off.rewrite is not None
    claim: dict[str, Any] = {
        "ConditionExpression": "attribute_not_exists(#id) OR (#state = :in_progress AND #lease < :now)",
        "UpdateExpression": "SET #state = :in_progress",
        "ExpressionAttributeNames": {"#id": "id", "#state": "state", "#lease": "lease_expires"},
        "ExpressionAttributeValues": {":in_progress": {"S": "IN_PROGRESS"}, ":now": {"N": "1"}},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    assert fence_off.rewrite("hold-seat", "UpdateItem", claim, None)
    assert "ConditionExpression" not in claim
    assert claim["ExpressionAttributeNames"] == {"#state": "state"}


def test_reconcile_off_skips_the_lookup_of_its_step_only(monkeypatch: pytest.MonkeyPatch):
    looked_up: list[str] = []

    def library(self: Any, fence: Any, claim: Any, attempt_id: str, effect: Any) -> dict[str, str]:
        looked_up.append(fence.step.step)
        return {"found": fence.step.step}

    monkeypatch.setattr(FenceStore, "_reconciled", library)
    blind = takeover_without_reconcile("ChargeCard").__new__(takeover_without_reconcile("ChargeCard"))

    def fence(step: str) -> Any:
        return SimpleNamespace(step=SimpleNamespace(step=step))

    nothing: Any = None
    assert blind._reconciled(fence("ChargeCard"), nothing, "a", nothing) is None  # acts again, blind
    assert blind._reconciled(fence("SendSms"), nothing, "a", nothing) == {"found": "SendSms"}
    assert looked_up == ["SendSms"]


def test_payload_hash_off_hashes_no_payload_on_its_route_only(monkeypatch: pytest.MonkeyPatch):
    hashed: list[tuple[str, Any]] = []

    def library(self: Any, *, route: str, key: Any, payload: Any, lambda_context: Any, execute: Any) -> Any:
        hashed.append((route, payload))

    monkeypatch.setattr(HttpIdempotency, "handle", library)
    blind_class = payload_unhashed("POST /bookings")
    blind = blind_class.__new__(blind_class)
    nothing: Any = None
    for route in ("POST /bookings", "POST /refunds"):
        blind.handle(
            route=route, key=nothing, payload={"seat": 1}, lambda_context=None, execute=lambda: nothing
        )
    assert hashed == [("POST /bookings", None), ("POST /refunds", {"seat": 1})]
