"""A FAKE payment provider on the payments table, shaped like a real one (Stripe-style keys).

- Every call is recorded as a raw call (`order#<id>` / `call#<time>#<uuid>`), whatever happens
  next, so a duplicate call is visible even when the provider dedupes it.
- A charge is written once per idempotency key (`order#<id>` / `charge#<key>`, conditional put);
  a repeated key returns the stored charge (or the stored decline) instead of charging again.
- The decline rule is deterministic from the input so tests and demos can trigger a permanent
  payment failure: a customer id starting with `declined-`, or an amount above the limit.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from orders.adapters._dynamo import CONDITION_FAILED, error_code, from_item, query_all, to_item
from orders.adapters.dynamo import order_pk, translated_errors
from orders.contract import Charge, ProviderCall
from orders.errors import PaymentDeclined

DECLINED_CUSTOMER_PREFIX = "declined-"
DECLINE_ABOVE_CENTS = 5_000_000
SUCCEEDED = "SUCCEEDED"
DECLINED = "DECLINED"


def decline_reason(*, customer_id: str, amount_cents: int) -> str | None:
    """Why the fake provider refuses this charge for good, or None to accept it."""
    if customer_id.startswith(DECLINED_CUSTOMER_PREFIX):
        return "card_declined"
    if amount_cents > DECLINE_ABOVE_CENTS:
        return "amount_over_limit"
    return None


class FakePaymentProvider:
    """Implements `PaymentProvider`."""

    def __init__(self, *, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def charge(
        self, *, idempotency_key: str, order_id: str, customer_id: str, amount_cents: int, currency: str
    ) -> Charge:
        now = datetime.now(UTC).isoformat()
        with translated_errors("provider call"):
            self._client.put_item(
                TableName=self._table,
                Item=to_item(
                    {
                        "pk": order_pk(order_id),
                        "sk": f"call#{now}#{uuid.uuid4()}",
                        "call_id": str(uuid.uuid4()),
                        "idempotency_key": idempotency_key,
                        "amount_cents": amount_cents,
                        "received_at": now,
                    }
                ),
            )
        reason = decline_reason(customer_id=customer_id, amount_cents=amount_cents)
        record = {
            "pk": order_pk(order_id),
            "sk": f"charge#{idempotency_key}",
            "charge_id": f"ch_{uuid.uuid4().hex[:24]}",
            "idempotency_key": idempotency_key,
            "amount_cents": amount_cents,
            "currency": currency,
            "customer_id": customer_id,
            "status": DECLINED if reason else SUCCEEDED,
            "decline_reason": reason,
            "created_at": now,
        }
        try:
            with translated_errors("provider charge"):
                self._client.put_item(
                    TableName=self._table,
                    Item=to_item(record),
                    ConditionExpression="attribute_not_exists(pk)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
            record = from_item(error.response.get("Item", {}))  # the key's first answer, replayed
        if record["status"] == DECLINED:
            raise PaymentDeclined(f"payment declined: {record.get('decline_reason')}")
        return _charge(record)

    def charges(self, order_id: str) -> list[Charge]:
        return [_charge(item) for item in self._partition(order_id, "charge#")]

    def calls(self, order_id: str) -> list[ProviderCall]:
        return [
            ProviderCall(
                call_id=item["call_id"],
                idempotency_key=item["idempotency_key"],
                amount_cents=item["amount_cents"],
                received_at=item["received_at"],
            )
            for item in self._partition(order_id, "call#")
        ]

    def _partition(self, order_id: str, prefix: str) -> list[dict[str, Any]]:
        with translated_errors("provider read"):
            return query_all(self._client, table=self._table, pk=order_pk(order_id), sk_prefix=prefix)


def _charge(item: dict[str, Any]) -> Charge:
    return Charge(
        charge_id=item["charge_id"],
        idempotency_key=item["idempotency_key"],
        amount_cents=item["amount_cents"],
        currency=item["currency"],
        status=item["status"],
        created_at=item["created_at"],
    )
