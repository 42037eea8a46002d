"""The OrderCompleted event as it arrives on every consumer's queue (docs/how-it-works.md,
"Messages and consumer dedup").
Anything else is poison: `reliability.batch.parse_body` dead-letters it with the field that failed,
on its first receive, before any consumer's effect sees it.

The shape is defined once, in orders.domain (`OrderCompleted`), which the publishing step builds;
these classes add the bounds a consumer checks, by hand (orders.fields: a consumer loads no
pydantic), and tests/unit/orders/test_messages.py fails when a field differs from the domain's.
The orders-queue message is orders.messages: each function builds only the model it parses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Self

from orders import fields
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
_TYPE_PATTERN = f"^{EVENT_TYPE_COMPLETED}$"
_ANY = r"^[\s\S]+$"  # any string of at least one character: the instant is checked by parsing it


def _aware_instant(data: Mapping[str, Any], field: str) -> str:
    """An ISO 8601 date and time with a timezone offset, as the consumers' effects read it
    (`datetime.fromisoformat`: the analytics day): what passes here, they can read."""
    value = fields.text(data, field, pattern=_ANY, max_length=_MAX_INSTANT_CHARS)
    try:
        instant = datetime.fromisoformat(value)
    except ValueError:
        raise fields.ShapeError(field, "not an ISO 8601 date and time") from None
    if instant.utcoffset() is None:
        raise fields.ShapeError(field, "an ISO 8601 date and time without a timezone offset")
    return value


@dataclass(frozen=True)
class EventItem:
    """orders.domain.EventLine."""

    sku: str
    quantity: int

    @classmethod
    def from_line(cls, obj: Any, where: str) -> Self:
        data = fields.record(obj, where)
        return cls(
            sku=fields.text(data, "sku", pattern=VISIBLE_ASCII_PATTERN, max_length=MAX_ID_CHARS, where=where),
            quantity=fields.integer(data, "quantity", minimum=1, where=where),
        )


def _lines(data: Mapping[str, Any], field: str) -> list[EventItem]:
    lines = data.get(field)
    if not isinstance(lines, list) or not lines:
        raise fields.ShapeError(field, "not a list of at least one line")
    return [EventItem.from_line(line, f"{field}.{i}") for i, line in enumerate(lines)]


@dataclass(frozen=True)
class OrderCompletedEvent:
    """Every consumer's queue: orders.domain.OrderCompleted; another field is ignored. Integers are
    strict (no "12" or true)."""

    # A label, never a dedup key (a consumer derives its own from `fact()`), but still bounded.
    event_id: str
    stage: str | None  # a key segment, as every stage; absent in events published before it
    type: str
    order_id: str
    run: int
    customer_id: str
    currency: str
    total_cents: int
    items: list[EventItem]
    occurred_at: str

    @classmethod
    def model_validate(cls, obj: Any, /) -> Self:
        """The event in `obj` (a parsed JSON body); `fields.ShapeError` naming the first field that
        is not as a consumer accepts it (reliability.batch.parse_body's protocol)."""
        data = fields.record(obj)
        stage = data.get("stage")
        return cls(
            event_id=fields.text(data, "event_id", pattern=VISIBLE_ASCII_PATTERN, max_length=MAX_KEY_BYTES),
            stage=None if stage is None else fields.text(data, "stage", pattern=SEGMENT_PATTERN),
            type=fields.text(data, "type", pattern=_TYPE_PATTERN),
            order_id=fields.text(data, "order_id", pattern=ORDER_ID_PATTERN, max_length=MAX_ID_CHARS),
            run=fields.integer(data, "run", minimum=1),
            customer_id=fields.text(
                data, "customer_id", pattern=VISIBLE_ASCII_PATTERN, max_length=MAX_ID_CHARS
            ),
            currency=fields.text(data, "currency", pattern=CURRENCY_PATTERN),
            total_cents=fields.integer(data, "total_cents", minimum=0),
            items=_lines(data, "items"),
            occurred_at=_aware_instant(data, "occurred_at"),
        )

    def model_dump(self, mode: str = "json") -> dict[str, Any]:
        """The event as JSON data (pydantic's name: the consumers build their effects' body from it)."""
        del mode  # JSON is the only form: every field is a JSON value already
        return asdict(self)

    def fact(self) -> Fact:
        """What the event states, by business identity (never by its `event_id`)."""
        return completed_fact(self.order_id, self.run)
