"""The fake payment provider: idempotency keys honoured, raw calls recorded apart from charges."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orders.adapters.payments import DECLINE_ABOVE_CENTS, FakePaymentProvider, decline_reason
from orders.contract import Charge, ProviderCall
from orders.domain import ChargeRecord, ProviderCallRecord
from orders.errors import PaymentDeclined
from reliability.errors import BusinessError


def _charge(
    provider: FakePaymentProvider, key: str, *, customer: str = "c", amount: int = 500, reference: str = "t"
) -> Any:
    return provider.charge(
        idempotency_key=key,
        order_id="o-1",
        customer_id=customer,
        amount_cents=amount,
        currency="EUR",
        reference=reference,
    )


def test_the_same_key_charges_once_and_every_call_is_visible(ddb: Any):
    provider = FakePaymentProvider(client=ddb, table_name="payments", key_lifetime_seconds=86400)

    first = _charge(provider, "key-1")
    again = _charge(provider, "key-1")

    assert again == first
    assert len(provider.history("o-1")[0]) == 1
    assert len(provider.history("o-1")[1]) == 2
    assert {c.idempotency_key for c in provider.history("o-1")[1]} == {"key-1"}


def test_a_new_key_is_a_new_charge(ddb: Any):
    provider = FakePaymentProvider(client=ddb, table_name="payments", key_lifetime_seconds=86400)
    _charge(provider, "key-1")
    _charge(provider, "key-2")
    assert len(provider.history("o-1")[0]) == 2


def test_a_decline_is_permanent_and_replayed_for_the_same_key(ddb: Any):
    provider = FakePaymentProvider(client=ddb, table_name="payments", key_lifetime_seconds=86400)
    for _ in range(2):
        with pytest.raises(PaymentDeclined):
            _charge(provider, "key-d", customer="declined-7")
    assert [c.status for c in provider.history("o-1")[0]] == ["DECLINED"]
    assert len(provider.history("o-1")[1]) == 2
    assert issubclass(PaymentDeclined, BusinessError)


@given(st.text(max_size=20), st.integers(0, 2 * DECLINE_ABOVE_CENTS))
def test_the_decline_rule_is_deterministic(customer: str, amount: int):
    expected = customer.startswith("declined-") or amount > DECLINE_ABOVE_CENTS
    assert (decline_reason(customer_id=customer, amount_cents=amount) is not None) is expected


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_key_is_forgotten_after_its_lifetime_and_then_charges_again(ddb: Any):
    # Given a provider that remembers keys for an hour, as real ones do for a while (Stripe: 24 h)
    clock = Clock()
    provider = FakePaymentProvider(client=ddb, table_name="payments", key_lifetime_seconds=3600, clock=clock)
    first = _charge(provider, "key-1")
    clock.now += 3599
    assert _charge(provider, "key-1") == first
    # When the same key comes back after the lifetime, Then the provider charges again
    clock.now += 2
    second = _charge(provider, "key-1")
    assert second.charge_id != first.charge_id
    assert [c.status for c in provider.history("o-1")[0]] == ["SUCCEEDED", "SUCCEEDED"]
    # And the new charge is remembered for its own lifetime
    clock.now += 10
    assert _charge(provider, "key-1") == second
    assert len(provider.history("o-1")[0]) == 2


def test_a_charge_is_found_by_its_metadata_long_after_the_key_is_forgotten(ddb: Any):
    clock = Clock()
    provider = FakePaymentProvider(client=ddb, table_name="payments", key_lifetime_seconds=3600, clock=clock)
    assert provider.find_charge(order_id="o-1", reference="token-1") is None
    charge = _charge(provider, "key-1", reference="token-1")
    _charge(provider, "key-2", reference="token-2")
    clock.now += 365 * 86400
    assert provider.find_charge(order_id="o-1", reference="token-1") == charge
    assert provider.find_charge(order_id="o-2", reference="token-1") is None


def test_the_read_model_shows_the_provider_records_field_for_field():
    """The charge step reads plain records (no pydantic on its cold start); `GET /orders/{id}`
    shows the same fields through the contract's models."""
    assert [f.name for f in fields(Charge)] == [f.name for f in fields(ChargeRecord)]
    assert [f.name for f in fields(ProviderCall)] == [f.name for f in fields(ProviderCallRecord)]
