"""The public API contract: request and response bodies of `POST /orders` and `GET /orders/{id}`.

Clients, docs and tests rely on these shapes; change them only together with DEVELOPERS.md.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

MAX_ITEMS = 50
MAX_QUANTITY = 100

Sku = Annotated[str, StringConstraints(min_length=1, max_length=64)]
CustomerId = Annotated[str, StringConstraints(min_length=1, max_length=64)]
Currency = Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")]


class OrderStatus(StrEnum):
    ACCEPTED = "ACCEPTED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


class StepStatus(StrEnum):
    DONE = "DONE"
    SKIPPED = "SKIPPED"
    FAILED = "FAILED"
    COMPENSATED = "COMPENSATED"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OrderItem(_Strict):
    sku: Sku
    quantity: int = Field(ge=1, le=MAX_QUANTITY, strict=True)


class CreateOrderRequest(_Strict):
    """Body of `POST /orders` (the `Idempotency-Key` header is required too)."""

    customer_id: CustomerId
    currency: Currency
    items: list[OrderItem] = Field(min_length=1, max_length=MAX_ITEMS)


class OrderAccepted(_Strict):
    """202 body of `POST /orders`."""

    order_id: str
    status: OrderStatus = OrderStatus.ACCEPTED
    status_url: str


class Charge(_Strict):
    charge_id: str
    idempotency_key: str
    amount_cents: int
    currency: str
    status: str
    created_at: str


class ProviderCall(_Strict):
    call_id: str
    idempotency_key: str
    amount_cents: int
    received_at: str


class OrderView(_Strict):
    """200 body of `GET /orders/{order_id}`."""

    order_id: str
    status: OrderStatus
    customer_id: str
    currency: str
    total_cents: int
    items: list[OrderItem]
    steps: dict[str, StepStatus]
    charges: list[Charge]
    provider_calls: list[ProviderCall]
    execution_arn: str | None = None


class ErrorBody(_Strict):
    """Every error response: a stable machine-readable code and a human message."""

    error: str
    message: str
