"""The demo's plan comes from the declaration: the sample's reproduces what the demo hard-coded
(its crash in ChargePayment, the compensation of a declined payment), and another service's
plan is its own."""

from __future__ import annotations

from ops.demo.plan import Plan
from ops.outcomes import outcome
from orders.workflow import SERVICE
from tests.unit.ops.test_outcomes import _wallet


def test_the_sample_plan_is_what_the_demo_played():
    plan = Plan.of(SERVICE)
    assert plan.crash_spec(1) == "fence:after-effect:ChargePayment@charge-payment=1"
    assert plan.first_step == "ReserveInventory"
    assert plan.compensated(outcome(SERVICE, "payment-declined")) == {"ReserveInventory": "ReleaseInventory"}
    assert plan.compensated(outcome(SERVICE, "out-of-stock")) == {}
    assert plan.final == {"COMPLETED", "FAILED"}
    assert plan.read_path("o-1") == "/orders/o-1"
    assert plan.provider_effects is not None
    assert plan.provider_effects({"provider_calls": [{}], "charges": []}) == (1, 0)


def test_another_service_plays_its_own_workflow(monkeypatch):
    monkeypatch.setattr("ops.demo.plan.request_factory", lambda _declared: lambda *_: {})
    plan = Plan.of(_wallet())
    assert plan.crash_step.name == "Credit"  # the happy path's leased step
    assert [o.name for o in plan.catches] == ["insufficient-funds", "unknown-payee"]
    assert plan.compensated(outcome(_wallet(), "unknown-payee")) == {"Debit": "Refund"}
    assert plan.read_path("t-9") == "/transfers/t-9"
    assert plan.observe_hook is None  # the wallet has no proof module: nothing to observe
