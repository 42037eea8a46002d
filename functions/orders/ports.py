"""The ports the services depend on. Adapters in `orders.adapters` implement them on AWS;
tests may hand in moto-backed adapters or fakes.

Writes that must commit together with a step fence are returned as reliability's `Write`: a
low-level DynamoDB `TransactWriteItems` entry plus the `BusinessError` its condition means.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from orders.domain import (
    CatalogItem,
    ChargeRecord,
    Order,
    OrderStatus,
    OrderTerms,
    ProviderCallRecord,
)
from reliability import Write

# The run model's ports are the library's, named here for the sample's use cases.
from reliability.workflow_runs import ExpressWorkflow as ExpressWorkflow  # noqa: PLC0414 - re-export
from reliability.workflow_runs import Queue as Queue  # noqa: PLC0414 - re-export
from reliability.workflow_runs import RunStore
from reliability.workflow_runs import Workflow as Workflow  # noqa: PLC0414 - re-export


class Catalog(Protocol):
    def lookup(self, skus: Sequence[str]) -> dict[str, CatalogItem]:
        """The catalog entries of the skus that exist (unknown skus are simply absent)."""
        ...


class Inventory(Protocol):
    def reserve_writes(self, order: OrderTerms, *, token: str) -> list[Write]:
        """Decrement stock per line (conditional on enough stock) and record the reservation."""
        ...

    def release_writes(self, order: OrderTerms, *, token: str) -> list[Write]:
        """Give back what `token`'s reservation took (nothing if it never reserved)."""
        ...


class OrderStore(RunStore[Order], Protocol):
    """The orders table: the run model's store (reliability.workflow_runs.RunStore) of orders, plus
    the order's creation and the write that ends its run."""

    def create(self, order: Order) -> Order:
        """Store a new order; an existing one under the same id is returned instead (idempotent)."""
        ...

    def status_write(self, order_id: str, status: OrderStatus) -> Write: ...


class PaymentProvider(Protocol):
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
        """Charge once per idempotency key while the provider remembers the key (real providers
        forget keys after a while: Stripe after 24 h, then the same key charges again). `order_id`
        and `reference` go into the charge's metadata, which never expires. Raises
        `PaymentDeclined` for a permanent refusal."""
        ...

    def find_charge(self, *, order_id: str, reference: str) -> ChargeRecord | None:
        """The charge whose metadata holds this order id and reference (a search by metadata, as
        real providers offer; it works however long ago the charge was made), or None."""
        ...

    def history(self, order_id: str) -> tuple[list[ChargeRecord], list[ProviderCallRecord]]:
        """The order's charges and every raw call the provider received (one read)."""
        ...


class Ledger(Protocol):
    def entry_writes(self, order: OrderTerms, *, token: str, charge_id: str) -> list[Write]: ...


class Notifications(Protocol):
    def notification_writes(self, event: Mapping[str, Any]) -> list[Write]: ...


class Aggregates(Protocol):
    def count_writes(self, event: Mapping[str, Any]) -> list[Write]: ...
