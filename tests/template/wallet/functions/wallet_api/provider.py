"""The payout provider the `Payout` step calls, and a fake of it to run and test without one.

`Provider` is the port (what the effects call). `FakeProvider` keeps its payouts in a DynamoDB
table of its own (`payouts`), as a real provider keeps them on its side, and behaves like one:
- a repeated idempotency key answers the payout made under it, but only while the provider
  remembers the key (`key_lifetime_seconds`, on the injected clock): once forgotten, the same key
  pays AGAIN, as a real provider would (so a step that calls twice, unfenced, pays twice);
- each payout carries the run's reference (its execution token), searchable forever (`find`):
  that is how a takeover reconciles once the key may be gone;
- it refuses an amount above `PAYOUT_LIMIT`, so the compensation path can be tried.
Replace it with your provider's client; keep `find` (the reconcile) if it can look a payout up.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from botocore.exceptions import ClientError
from reliability.errors import error_code, transient_errors

from wallet_api.domain import ENTITY, key

PAYOUT_LIMIT = 50_000
# A payout is `<entity>#<id>` / `payout#<idempotency key>#<n>`: the n-th payout under that key
# (n > 0 only once the provider had forgotten the key; four digits, so they sort in order).
PAYOUT = "payout#"


@dataclass(frozen=True)
class Payout:
    payout_id: str
    idempotency_key: str
    reference: str
    status: str  # PAID or REFUSED
    key_expires_at: float | None = None

    @property
    def paid(self) -> bool:
        return self.status == "PAID"


class Provider(Protocol):
    def pay(
        self, *, idempotency_key: str, entity_id: str, reference: str, target: str, amount: int
    ) -> Payout: ...

    def find(self, *, entity_id: str, reference: str) -> Payout | None: ...


def _payout(item: dict[str, Any]) -> Payout:
    expires = item.get("key_expires_at")
    return Payout(
        payout_id=item["payout_id"]["S"],
        idempotency_key=item["idempotency_key"]["S"],
        reference=item["reference"]["S"],
        status=item["status"]["S"],
        key_expires_at=float(expires["N"]) if expires else None,
    )


class FakeProvider:
    """A provider that answers the same payout to every retry under one key while it remembers it."""

    def __init__(
        self,
        *,
        client: Any,
        table: str,
        clock: Callable[[], float] = time.time,
        key_lifetime_seconds: float | None = None,
    ) -> None:
        self._client = client
        self._table = table
        self._clock = clock
        self._key_lifetime = key_lifetime_seconds

    def pay(
        self, *, idempotency_key: str, entity_id: str, reference: str, target: str, amount: int
    ) -> Payout:
        now = self._clock()
        made = [p for p in self._payouts(entity_id) if p.idempotency_key == idempotency_key]
        remembered = [p for p in made if p.key_expires_at is None or p.key_expires_at > now]
        if remembered:
            return remembered[-1]
        item = {
            **key(entity_id, f"{PAYOUT}{idempotency_key}#{len(made):04d}"),
            "payout_id": {"S": f"po-{idempotency_key[-24:]}-{len(made)}"},
            "idempotency_key": {"S": idempotency_key},
            "reference": {"S": reference},
            "target": {"S": target},
            "amount": {"N": str(amount)},
            "status": {"S": "PAID" if amount <= PAYOUT_LIMIT else "REFUSED"},
        }
        if self._key_lifetime is not None:
            item["key_expires_at"] = {"N": str(now + self._key_lifetime)}
        try:
            with transient_errors("provider pay"):
                self._client.put_item(
                    TableName=self._table,
                    Item=item,
                    ConditionExpression="attribute_not_exists(pk)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ClientError as error:  # a racing call with the same key paid first: its payout
            if error_code(error) != "ConditionalCheckFailedException":
                raise
            return _payout(error.response["Item"])
        return _payout(item)

    def find(self, *, entity_id: str, reference: str) -> Payout | None:
        """The first payout of the run `reference` names, whatever became of its key."""
        return next((p for p in self._payouts(entity_id) if p.reference == reference), None)

    def _payouts(self, entity_id: str) -> list[Payout]:
        """The transfer's payouts, in the order they were made under each key."""
        with transient_errors("provider query"):
            answer = self._client.query(
                TableName=self._table,
                KeyConditionExpression="pk = :pk AND begins_with(sk, :payout)",
                ExpressionAttributeValues={
                    ":pk": {"S": ENTITY.partition(entity_id)},
                    ":payout": {"S": PAYOUT},
                },
                ConsistentRead=True,
            )
        return [_payout(item) for item in answer.get("Items", [])]
