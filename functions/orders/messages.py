"""The orders-queue message as it arrives (docs/how-it-works.md, "Messages and consumer dedup").
Anything else is poison.

The shape is defined once, in orders.domain (`OrderMessage`), which the API builds without
pydantic; this model adds the bounds the worker checks, and tests/unit/orders/test_messages.py
fails when a field differs from the domain's. The consumers' event is orders.events: each
function builds only the model it parses.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from orders.domain import ORDER_ID_PATTERN


class OrderMessageModel(BaseModel):
    """orders queue: orders.domain.OrderMessage."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    order_id: str = Field(min_length=1, max_length=64, pattern=ORDER_ID_PATTERN)
    run: int = Field(ge=1, strict=True)
    idempotency_key: str = Field(min_length=1)
