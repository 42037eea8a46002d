"""A FAKE payment provider on the payments table, shaped like a real one (Stripe-style keys).

- Every call is recorded as a raw call (`order#<id>` / `call#<time>#<uuid>`), whatever happens
  next, so a duplicate call is visible even when the provider dedupes it.
- An idempotency key is remembered for `key_lifetime_seconds` (real providers forget keys:
  Stripe after 24 h). While it is remembered, a repeated key returns the stored charge (or the
  stored decline); once it is forgotten, the same key charges AGAIN, as a real provider would.
  The first charge of a key is `order#<id>` / `charge#<key>` (a conditional put, so two racing
  first calls charge once); a charge after the key was forgotten is `charge#<key>#<n>`.
- Each charge carries metadata (`order_id`, `reference`) that never expires and can be searched
  (`find_charge`), as real providers allow (Stripe's search by metadata): that is how a caller
  reconciles once the key may be gone.
- Time is the injected clock's, so a simulation can move past the key lifetime.
- The decline rule is deterministic from the input so tests and demos can trigger a permanent
  payment failure: a customer id starting with `declined-`, or an amount above the limit.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from orders.adapters._dynamo import CONDITION_FAILED, from_item, query_all, to_item
from orders.domain import ChargeRecord, ProviderCallRecord
from orders.errors import PaymentDeclined
from orders.items import CALL, CHARGE, order_pk
from reliability.errors import error_code, transient_errors

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

    def __init__(
        self,
        *,
        client: Any,
        table_name: str,
        key_lifetime_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self._table = table_name
        self.key_lifetime_seconds = key_lifetime_seconds
        self._clock = clock

    def charge(
        self,
        *,
        idempotency_key: str,
        order_id: str,
        customer_id: str,
        amount_cents: int,
        currency: str,
        reference: str,
    ) -> ChargeRecord:
        now = self._clock()
        stamp = datetime.fromtimestamp(now, UTC).isoformat()
        with transient_errors("provider call"):
            self._client.put_item(
                TableName=self._table,
                Item=to_item(
                    {
                        "pk": order_pk(order_id),
                        "sk": f"{CALL}{stamp}#{uuid.uuid4()}",
                        "call_id": str(uuid.uuid4()),
                        "idempotency_key": idempotency_key,
                        "amount_cents": amount_cents,
                        "received_at": stamp,
                    }
                ),
            )
        reason = decline_reason(customer_id=customer_id, amount_cents=amount_cents)

        def new_charge(suffix: str = "") -> dict[str, Any]:
            return {
                "pk": order_pk(order_id),
                "sk": f"{CHARGE}{idempotency_key}{suffix}",
                "charge_id": f"ch_{uuid.uuid4().hex[:24]}",
                "idempotency_key": idempotency_key,
                "amount_cents": amount_cents,
                "currency": currency,
                "customer_id": customer_id,
                "status": DECLINED if reason else SUCCEEDED,
                "decline_reason": reason,
                "created_at": stamp,
                "key_expires_at": int(now + self.key_lifetime_seconds),
                # metadata: searchable forever, whatever happens to the key
                "order_id": order_id,
                "reference": reference,
            }

        record = self._put_once(new_charge())
        if not _remembered(record, now):
            # The provider forgot this key: the newest charge made under it since, or a new one.
            earlier = self._charges_of_key(order_id, idempotency_key)
            remembered = [item for item in earlier if _remembered(item, now)]
            record = remembered[-1] if remembered else self._put_once(new_charge(f"#{len(earlier) + 1}"))
        if record["status"] == DECLINED:
            raise PaymentDeclined(f"payment declined: {record.get('decline_reason')}")
        return _charge(record)

    def _put_once(self, record: dict[str, Any]) -> dict[str, Any]:
        """Write the charge unless a racing call with the same key wrote it first (then that one)."""
        try:
            with transient_errors("provider charge"):
                self._client.put_item(
                    TableName=self._table,
                    Item=to_item(record),
                    ConditionExpression="attribute_not_exists(pk)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
            return from_item(error.response.get("Item", {}))
        return record

    def _charges_of_key(self, order_id: str, idempotency_key: str) -> list[dict[str, Any]]:
        items = self._partition(order_id, f"{CHARGE}{idempotency_key}")
        return sorted(
            (item for item in items if item["idempotency_key"] == idempotency_key),
            key=lambda item: str(item["created_at"]),
        )

    def find_charge(self, *, order_id: str, reference: str) -> ChargeRecord | None:
        """The first charge whose metadata holds this order and reference, or None."""
        found = [
            item
            for item in self._partition(order_id, CHARGE)
            if item.get("reference") == reference and item.get("order_id") == order_id
        ]
        found.sort(key=lambda item: str(item["created_at"]))
        return _charge(found[0]) if found else None

    def history(self, order_id: str) -> tuple[list[ChargeRecord], list[ProviderCallRecord]]:
        """The order's charges and raw calls: one Query of its partition."""
        items = self._partition(order_id, "")
        charges = [_charge(item) for item in items if item["sk"].startswith(CHARGE)]
        calls = [
            ProviderCallRecord(
                call_id=item["call_id"],
                idempotency_key=item["idempotency_key"],
                amount_cents=item["amount_cents"],
                received_at=item["received_at"],
            )
            for item in items
            if item["sk"].startswith(CALL)
        ]
        return charges, calls

    def _partition(self, order_id: str, prefix: str) -> list[dict[str, Any]]:
        with transient_errors("provider read"):
            return query_all(self._client, table=self._table, pk=order_pk(order_id), sk_prefix=prefix or None)


def _remembered(item: dict[str, Any], now: float) -> bool:
    """Whether the provider still dedupes on the key of this charge (a record without an expiry
    predates key lifetimes: remembered)."""
    return float(item.get("key_expires_at", now + 1)) > now


def _charge(item: dict[str, Any]) -> ChargeRecord:
    return ChargeRecord(
        charge_id=item["charge_id"],
        idempotency_key=item["idempotency_key"],
        amount_cents=item["amount_cents"],
        currency=item["currency"],
        status=item["status"],
        created_at=item["created_at"],
    )
