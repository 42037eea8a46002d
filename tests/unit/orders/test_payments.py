"""The fake payment provider: idempotency keys honoured, raw calls recorded apart from charges."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orders.adapters.payments import DECLINE_ABOVE_CENTS, FakePaymentProvider, decline_reason
from orders.errors import PaymentDeclined
from reliability.errors import BusinessError


def _charge(provider: FakePaymentProvider, key: str, *, customer: str = "c", amount: int = 500) -> Any:
    return provider.charge(
        idempotency_key=key, order_id="o-1", customer_id=customer, amount_cents=amount, currency="EUR"
    )


def test_the_same_key_charges_once_and_every_call_is_visible(ddb: Any):
    provider = FakePaymentProvider(client=ddb, table_name="payments")

    first = _charge(provider, "key-1")
    again = _charge(provider, "key-1")

    assert again == first
    assert len(provider.charges("o-1")) == 1
    assert len(provider.calls("o-1")) == 2
    assert {c.idempotency_key for c in provider.calls("o-1")} == {"key-1"}


def test_a_new_key_is_a_new_charge(ddb: Any):
    provider = FakePaymentProvider(client=ddb, table_name="payments")
    _charge(provider, "key-1")
    _charge(provider, "key-2")
    assert len(provider.charges("o-1")) == 2


def test_a_decline_is_permanent_and_replayed_for_the_same_key(ddb: Any):
    provider = FakePaymentProvider(client=ddb, table_name="payments")
    for _ in range(2):
        with pytest.raises(PaymentDeclined):
            _charge(provider, "key-d", customer="declined-7")
    assert [c.status for c in provider.charges("o-1")] == ["DECLINED"]
    assert len(provider.calls("o-1")) == 2
    assert issubclass(PaymentDeclined, BusinessError)


@given(st.text(max_size=20), st.integers(0, 2 * DECLINE_ABOVE_CENTS))
def test_the_decline_rule_is_deterministic(customer: str, amount: int):
    expected = customer.startswith("declined-") or amount > DECLINE_ABOVE_CENTS
    assert (decline_reason(customer_id=customer, amount_cents=amount) is not None) is expected
