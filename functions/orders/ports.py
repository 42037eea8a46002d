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
    ExecutionEnd,
    Order,
    OrderStatus,
    OrderTerms,
    ProviderCallRecord,
)
from reliability import Write


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


class OrderStore(Protocol):
    def create(self, order: Order) -> Order:
        """Store a new order; an existing one under the same id is returned instead (idempotent)."""
        ...

    def get(self, order_id: str) -> Order | None: ...

    def mark_running(self, order_id: str, *, run: int, execution_arn: str | None) -> None:
        """RUNNING (+ the execution ARN, when given), if `run` is still the order's current run;
        a finished order is never moved back (its ARN is still recorded)."""
        ...

    def record_execution(self, order_id: str, *, run: int, execution_arn: str) -> None:
        """The run's (latest) execution ARN, status untouched, if `run` is still the current run."""
        ...

    def start_next_run(self, order_id: str, *, run: int) -> Order:
        """run -> run + 1, status ACCEPTED, in ONE conditional write: only if the order's current
        run is `run` and it ended FAILED (after its compensation). Else `RerunRefused`, never for
        the SDK's resend of this call's own write that landed (then: the order as it is now)."""
        ...

    def accepted_before(self, created_before: str) -> list[Order]:
        """Orders ACCEPTED (their current run not started) created before the ISO-8601 instant."""
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


class Queue(Protocol):
    def send(self, body: Mapping[str, Any]) -> str:
        """Send one JSON message; returns the message id."""
        ...


class Workflow(Protocol):
    def start(self, *, name: str, payload: Mapping[str, Any]) -> str:
        """Start (or find the identical) execution; returns its ARN.

        Raises `orders.errors.ExecutionConflict` when an execution of that name has a different input.
        """
        ...

    def execution_arn(self, name: str) -> str:
        """The ARN an execution of this name has (names are unique per state machine)."""
        ...


class ExpressWorkflow(Protocol):
    def run(self, *, name: str, payload: Mapping[str, Any]) -> ExecutionEnd:
        """Start an execution and wait for its end (its time limit at the latest). Names are not
        deduplicated: a second run with the same name is a second execution, concurrent with the
        first if it still runs."""
        ...


class Notifications(Protocol):
    def notification_writes(self, event: Mapping[str, Any]) -> list[Write]: ...


class Aggregates(Protocol):
    def count_writes(self, event: Mapping[str, Any]) -> list[Write]: ...
