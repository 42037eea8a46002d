"""The queue messages as they arrive (DEVELOPERS.md, Messages). Anything else is poison.

The shapes are defined once, in orders.domain (`OrderMessage`, `OrderCompleted`), which the steps
build without pydantic; these models add the bounds a consumer checks, and
tests/unit/orders/test_messages.py fails when a field differs from the domain's.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

_ID = r"^[A-Za-z0-9_-]+$"


class OrderMessageModel(BaseModel):
    """orders queue: orders.domain.OrderMessage."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    order_id: str = Field(min_length=1, max_length=64, pattern=_ID)
    run: int = Field(ge=1, strict=True)
    idempotency_key: str = Field(min_length=1)


class EventItem(BaseModel):
    """orders.domain.EventLine."""

    model_config = ConfigDict(frozen=True)

    sku: str
    quantity: int


class OrderCompletedEvent(BaseModel):
    """Every consumer's queue: orders.domain.OrderCompleted."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    event_id: str = Field(min_length=1)
    type: str = Field(pattern=r"^OrderCompleted$")
    order_id: str = Field(min_length=1, max_length=64, pattern=_ID)
    run: int = Field(ge=1)
    customer_id: str
    currency: str
    total_cents: int = Field(ge=0)
    items: list[EventItem]
    occurred_at: str
