"""The order model and the pure rules: pricing, ids, the event a completed order emits.

Nothing here knows about Lambda events, boto3 or the environment.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypedDict

from orders.errors import UnknownSku
from orders.workflow import SERVICE

# A step's status on the order's current run, read from its fence (`orders.saga.step_statuses`):
# the library's, named here for the contract and the tools. A fence skip is not a status: it
# writes nothing (it is the `FenceSkipped` decision, logged).
from reliability.declaration import StepStatus as StepStatus  # noqa: PLC0414 - an explicit re-export
from reliability.keys import Fact

# The run model's facts are the library's (reliability.workflow_runs), named here for the sample
# and the lab: the execution name, how an Express execution ended, a message's id bounds.
from reliability.workflow_runs import ENTITY_ID_PATTERN, RunMessage
from reliability.workflow_runs import MAX_ID_CHARS as MAX_ID_CHARS  # noqa: PLC0414 - re-export
from reliability.workflow_runs import TERMINAL_STATUSES as RUN_TERMINAL_STATUSES
from reliability.workflow_runs import ExecutionEnd as ExecutionEnd  # noqa: PLC0414 - re-export
from reliability.workflow_runs import execution_name as execution_name  # noqa: PLC0414 - re-export

if TYPE_CHECKING:
    # The API's contract. Not imported at run time here: the functions that never parse a request
    # (steps, worker, consumers) do not load it (bench/coldstart.py).
    from orders.contract import CreateOrderRequest, OrderItem


# The run model's statuses (reliability.workflow_runs.RunStatus: the same values, which the run
# model compares), as the API's contract publishes them.
class OrderStatus(StrEnum):
    ACCEPTED = "ACCEPTED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


# A run that reached one of these is over; only a FAILED one may be followed by another run.
TERMINAL_STATUSES = frozenset(OrderStatus(status) for status in RUN_TERMINAL_STATUSES)
# What a queue message's order id may hold (orders.events): the characters an execution name allows.
ORDER_ID_PATTERN = ENTITY_ID_PATTERN
# Ids a client chooses (customer, sku) are visible ASCII: they become DynamoDB keys and log fields,
# and stay readable in both. The API's contract (orders.contract) and the consumers' event
# (orders.events) bound them alike.
VISIBLE_ASCII_PATTERN = r"^[!-~]+$"
CURRENCY_PATTERN = r"^[A-Z]{3}$"
EVENT_TYPE_COMPLETED = "OrderCompleted"


@dataclass(frozen=True)
class CatalogItem:
    sku: str
    price_cents: int
    stock: int


@dataclass(frozen=True)
class ChargeRecord:
    """A charge as the payment provider keeps it (`orders.ports.PaymentProvider`). Plain data, so
    the charge step reads its outcome without the API's contract (pydantic: its cold start);
    the API's read model shows it as `orders.contract.Charge`, field for field."""

    charge_id: str
    idempotency_key: str
    amount_cents: int
    currency: str
    status: str
    created_at: str


@dataclass(frozen=True)
class ProviderCallRecord:
    """A raw call the payment provider received; shown as `orders.contract.ProviderCall`."""

    call_id: str
    idempotency_key: str
    amount_cents: int
    received_at: str


@dataclass(frozen=True)
class Line:
    sku: str
    quantity: int
    unit_price_cents: int

    @property
    def amount_cents(self) -> int:
        return self.quantity * self.unit_price_cents


@dataclass(frozen=True)
class OrderTerms:
    """What was agreed when the order was accepted: who, in which currency, the priced lines.

    Never changes afterwards (a client's retry gets the stored order back, `same_order_as`), so
    the workflow carries it in its input (`WorkflowInput`) and no step re-reads the order."""

    order_id: str
    customer_id: str
    currency: str
    lines: tuple[Line, ...]

    @property
    def total_cents(self) -> int:
        return sum(line.amount_cents for line in self.lines)

    @property
    def items(self) -> list[OrderItem]:
        from orders.contract import OrderItem  # noqa: PLC0415 - the API's read model only; cold start

        return [OrderItem(sku=line.sku, quantity=line.quantity) for line in self.lines]

    @property
    def quantities(self) -> dict[str, int]:
        return {line.sku: line.quantity for line in self.lines}

    def lines_as_dicts(self) -> list[dict[str, Any]]:
        return [
            {"sku": line.sku, "quantity": line.quantity, "unit_price_cents": line.unit_price_cents}
            for line in self.lines
        ]


@dataclass(frozen=True)
class Order(OrderTerms):
    """The stored order: its terms plus where it stands."""

    idempotency_key: str
    created_at: str
    owner: str  # the caller who placed it (`reliability.http.caller_of`); "" on an order stored before owners
    run: int = 1
    status: OrderStatus = OrderStatus.ACCEPTED
    execution_arn: str | None = None

    @property
    def entity_id(self) -> str:
        """The order id, as the run model reads it (reliability.workflow_runs.EntityRun)."""
        return self.order_id

    def same_order_as(self, other: Order) -> bool:
        """True when `other` is the same business order: the same customer, currency and items.

        Prices are not compared: the stored order keeps the prices it was accepted at, and a
        client's retry after a crash is priced again from the catalog, which may have changed in
        between. The retry is the same order, and gets the stored one back.
        """
        return (self.customer_id, self.currency, self.quantities) == (
            other.customer_id,
            other.currency,
            other.quantities,
        )

    def is_for(self, request: CreateOrderRequest) -> bool:
        """True when `request` asks for this order (`same_order_as`, before it is priced)."""
        return (self.customer_id, self.currency, self.quantities) == (
            request.customer_id,
            request.currency,
            merged_items(request.items),
        )


def order_id_for(stored_idempotency_key: str) -> str:
    """The business order id, derived from the stored (stage-, route- and caller-scoped) key
    (`reliability.declaration.Entity.id_for`: the lab finds the order a key created by the same)."""
    return SERVICE.entity.id_for(stored_idempotency_key)


def merged_items(items: Iterable[OrderItem]) -> dict[str, int]:
    """Quantities per sku, in first-seen order (one DynamoDB item may appear once per transaction)."""
    merged: dict[str, int] = {}
    for item in items:
        merged[item.sku] = merged.get(item.sku, 0) + item.quantity
    return merged


def price(items: Iterable[OrderItem], catalog: Mapping[str, CatalogItem]) -> tuple[Line, ...]:
    """Price each line from the catalog; every unknown sku is named in one `UnknownSku`."""
    quantities = merged_items(items)
    unknown = [sku for sku in quantities if sku not in catalog]
    if unknown:
        raise UnknownSku(unknown)
    return tuple(
        Line(sku=sku, quantity=quantity, unit_price_cents=catalog[sku].price_cents)
        for sku, quantity in quantities.items()
    )


def new_order(
    *,
    request: CreateOrderRequest,
    catalog: Mapping[str, CatalogItem],
    stored_idempotency_key: str,
    owner: str,
    now: datetime,
) -> Order:
    return Order(
        order_id=order_id_for(stored_idempotency_key),
        customer_id=request.customer_id,
        currency=request.currency,
        lines=price(request.items, catalog),
        idempotency_key=stored_idempotency_key,
        created_at=now.isoformat(),
        owner=owner,
    )


@dataclass(frozen=True)
class WorkflowInput:
    """The state machine's input: `{"order_id", "run", "token", "customer_id", "currency",
    "lines": [{"sku", "quantity", "unit_price_cents"}]}` (the run's identity and the order's terms)."""

    terms: OrderTerms
    run: int
    token: str

    @property
    def order_id(self) -> str:
        return self.terms.order_id

    def as_dict(self) -> dict[str, Any]:
        terms = self.terms
        return {
            "order_id": terms.order_id,
            "run": self.run,
            "token": self.token,
            "customer_id": terms.customer_id,
            "currency": terms.currency,
            "lines": terms.lines_as_dicts(),
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> WorkflowInput:
        """KeyError, TypeError or ValueError when the state lacks a field or has a wrong type."""
        lines = tuple(
            Line(
                sku=str(line["sku"]),
                quantity=int(line["quantity"]),
                unit_price_cents=int(line["unit_price_cents"]),
            )
            for line in state["lines"]
        )
        if not lines:
            raise ValueError("an order has at least one line")
        terms = OrderTerms(
            order_id=str(state["order_id"]),
            customer_id=str(state["customer_id"]),
            currency=str(state["currency"]),
            lines=lines,
        )
        return cls(terms=terms, run=int(state["run"]), token=str(state["token"]))


@dataclass(frozen=True)
class OrderMessage(RunMessage):
    """The orders-queue message, `{"order_id", "run", "idempotency_key"}`: the library's run
    message (`reliability.workflow_runs.RunMessage`) of an order."""

    @property
    def order_id(self) -> str:
        return self.entity_id

    def as_dict(self) -> dict[str, Any]:
        return self.body(SERVICE.entity)


class EventLine(TypedDict):
    sku: str
    quantity: int


class OrderCompleted(TypedDict):
    """The OrderCompleted fan-out event: the one definition of its shape (docs/how-it-works.md,
    "Messages and consumer dedup").
    The consumers validate it with orders.events.OrderCompletedEvent, which adds the bounds (a
    pydantic model: the step that builds the event must not load pydantic); a unit test holds
    that model's fields to these.

    `event_id` is the publisher's `Fact.id` of (type, order, run) in its stage, a label a consumer
    does not trust: each derives the id it dedupes on itself (orders.consumers). `stage` is the
    publishing stage (a consumer refuses another's); None in events published before it was
    stamped, which a consumer judges by their order alone."""

    event_id: str
    stage: str | None
    type: str
    order_id: str
    run: int
    customer_id: str
    currency: str
    total_cents: int
    items: list[EventLine]
    occurred_at: str


def completed_fact(order_id: str, run: int) -> Fact:
    """What an OrderCompleted event states: this run of this order completed."""
    return Fact(kind=EVENT_TYPE_COMPLETED, subject=order_id, run=run)


def completed_event(*, stage: str, order: OrderTerms, run: int, occurred_at: datetime) -> OrderCompleted:
    """The fan-out message for every consumer of orders.workflow.CONSUMERS; its id is stable
    across republishes (derived from the stage, order, run and event type)."""
    return {
        "event_id": completed_fact(order.order_id, run).id(stage=stage),
        "stage": stage,
        "type": EVENT_TYPE_COMPLETED,
        "order_id": order.order_id,
        "run": run,
        "customer_id": order.customer_id,
        "currency": order.currency,
        "total_cents": order.total_cents,
        "items": [{"sku": line.sku, "quantity": line.quantity} for line in order.lines],
        "occurred_at": occurred_at.isoformat(),
    }
