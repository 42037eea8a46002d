"""The OrderCompleted event as it arrives on every consumer's queue (docs/how-it-works.md,
"Messages and consumer dedup").
Anything else is poison: `reliability.batch.parse_body` dead-letters it with the fields that failed,
on its first receive, before any consumer's effect sees it.

The shape is defined once, in orders.domain (`OrderCompleted`), which the publishing step builds
without pydantic; these models add the bounds a consumer checks, and
tests/unit/orders/test_messages.py fails when a field differs from the domain's. The orders-queue
message is orders.messages: each function builds only the model it parses.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from orders.domain import (
    CURRENCY_PATTERN,
    EVENT_TYPE_COMPLETED,
    MAX_ID_CHARS,
    ORDER_ID_PATTERN,
    VISIBLE_ASCII_PATTERN,
    completed_fact,
)
from reliability.keys import MAX_KEY_BYTES, SEGMENT_PATTERN, Fact

# Room for the longest ISO 8601 date and time with an offset ("2026-11-22T05:00:00.123456+05:30"
# is 32 characters); a longer string is no instant.
_MAX_INSTANT_CHARS = 40


def _aware_instant(value: str) -> str:
    """An ISO 8601 date and time with a timezone offset, as the consumers' effects read it
    (`datetime.fromisoformat`: the analytics day): what passes here, they can read."""
    try:
        instant = datetime.fromisoformat(value)
    except ValueError as error:
        raise ValueError("not an ISO 8601 date and time") from error
    if instant.utcoffset() is None:
        raise ValueError("an ISO 8601 date and time without a timezone offset")
    return value


VisibleId = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS, pattern=VISIBLE_ASCII_PATTERN)
]
Instant = Annotated[str, StringConstraints(max_length=_MAX_INSTANT_CHARS), AfterValidator(_aware_instant)]


class EventItem(BaseModel):
    """orders.domain.EventLine."""

    model_config = ConfigDict(frozen=True)

    sku: VisibleId
    quantity: int = Field(ge=1, strict=True)


class OrderCompletedEvent(BaseModel):
    """Every consumer's queue: orders.domain.OrderCompleted. Integers are strict (no "12" or true)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    # A label, never a dedup key (a consumer derives its own from `fact()`), but still bounded.
    event_id: str = Field(min_length=1, max_length=MAX_KEY_BYTES, pattern=VISIBLE_ASCII_PATTERN)
    stage: str | None = Field(default=None, pattern=SEGMENT_PATTERN)  # a key segment, as every stage
    type: str = Field(pattern=f"^{EVENT_TYPE_COMPLETED}$")
    order_id: str = Field(min_length=1, max_length=MAX_ID_CHARS, pattern=ORDER_ID_PATTERN)
    run: int = Field(ge=1, strict=True)
    customer_id: VisibleId
    currency: str = Field(pattern=CURRENCY_PATTERN)
    total_cents: int = Field(ge=0, strict=True)
    items: list[EventItem] = Field(min_length=1)
    occurred_at: Instant

    def fact(self) -> Fact:
        """What the event states, by business identity (never by its `event_id`)."""
        return completed_fact(self.order_id, self.run)
