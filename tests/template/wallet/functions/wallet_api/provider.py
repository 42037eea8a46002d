"""The payout provider the `Payout` step calls, and a fake of it to run and test without one.

`Provider` is the port (what the effects call). `FakeProvider` keeps its payouts in a DynamoDB
table of its own (`payouts`), as a real provider keeps them on its side: one payout per reference
(the run's execution token, which it never forgets) and idempotent per idempotency key; it refuses
an amount above `PAYOUT_LIMIT`, so the compensation path can be tried. Replace it with your
provider's client; keep `find` (the reconcile) if the provider can look a payout up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from botocore.exceptions import ClientError
from reliability.errors import error_code, transient_errors

from wallet_api.domain import key

PAYOUT_LIMIT = 50_000
PAYOUT = "payout#"


@dataclass(frozen=True)
class Payout:
    payout_id: str
    idempotency_key: str
    status: str  # PAID or REFUSED

    @property
    def paid(self) -> bool:
        return self.status == "PAID"


class Provider(Protocol):
    def pay(
        self, *, idempotency_key: str, entity_id: str, reference: str, target: str, amount: int
    ) -> Payout: ...

    def find(self, *, entity_id: str, reference: str) -> Payout | None: ...


def _payout(item: dict[str, Any]) -> Payout:
    return Payout(
        payout_id=item["payout_id"]["S"],
        idempotency_key=item["idempotency_key"]["S"],
        status=item["status"]["S"],
    )


class FakeProvider:
    """A provider that answers the same payout to every retry of one run."""

    def __init__(self, *, client: Any, table: str) -> None:
        self._client = client
        self._table = table

    def pay(
        self, *, idempotency_key: str, entity_id: str, reference: str, target: str, amount: int
    ) -> Payout:
        item = {
            **key(entity_id, f"{PAYOUT}{reference}"),
            "payout_id": {"S": f"po-{idempotency_key[-32:]}"},
            "idempotency_key": {"S": idempotency_key},
            "target": {"S": target},
            "amount": {"N": str(amount)},
            "status": {"S": "PAID" if amount <= PAYOUT_LIMIT else "REFUSED"},
        }
        try:
            with transient_errors("provider pay"):
                self._client.put_item(
                    TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(pk)"
                )
        except ClientError as error:
            if error_code(error) != "ConditionalCheckFailedException":
                raise
            found = self.find(entity_id=entity_id, reference=reference)
            if found is None:  # pragma: no cover - the condition failed on this very item
                raise
            return found
        return _payout(item)

    def find(self, *, entity_id: str, reference: str) -> Payout | None:
        with transient_errors("provider find"):
            answer = self._client.get_item(
                TableName=self._table, Key=key(entity_id, f"{PAYOUT}{reference}"), ConsistentRead=True
            )
        item = answer.get("Item")
        return _payout(item) if item else None
