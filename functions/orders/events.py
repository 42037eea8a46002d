"""The OrderCompleted event as it arrives on every consumer's queue (DEVELOPERS.md, Messages).
Anything else is poison.

The shape is defined once, in orders.domain (`OrderCompleted`), which the publishing step builds
without pydantic; these models add the bounds a consumer checks, and
tests/unit/orders/test_messages.py fails when a field differs from the domain's. The orders-queue
message is orders.messages: each function builds only the model it parses.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from orders.domain import ORDER_ID_PATTERN


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
    order_id: str = Field(min_length=1, max_length=64, pattern=ORDER_ID_PATTERN)
    run: int = Field(ge=1)
    customer_id: str
    currency: str
    total_cents: int = Field(ge=0)
    items: list[EventItem]
    occurred_at: str
