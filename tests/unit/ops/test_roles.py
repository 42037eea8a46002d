"""ops.roles: the parts steps play, from a declaration (the sample's, and one of another domain)."""

from __future__ import annotations

from dataclasses import replace

from ops.roles import events_step, final_step, first_atomic_step, provider_step
from ops.service import service
from reliability.declaration import Service, Step


def _names(declared: Service) -> tuple[str | None, ...]:
    found = (
        provider_step(declared),
        first_atomic_step(declared),
        events_step(declared),
        final_step(declared),
    )
    return tuple(s.name if s else None for s in found)


def test_the_samples_roles():
    assert _names(service()) == ("ChargePayment", "ReserveInventory", "PublishEvents", "MarkCompleted")


def test_a_transfer_without_events_has_its_own_roles():
    hold = Step(name="HoldFunds", kind="atomic", effect="w:hold", description="hold")
    send = Step(name="SendTransfer", kind="leased", effect="w:send", description="send", provider="bank")
    settle = Step(name="Settle", kind="atomic", effect="w:settle", description="settle", next=None)
    declared = replace(service(), steps=(hold, send, settle), consumers=())
    assert _names(declared) == ("SendTransfer", "HoldFunds", None, "Settle")
