"""The orders-queue message as it arrives (docs/how-it-works.md, "Messages and consumer dedup").
Anything else is poison.

The shape is defined once, in orders.domain (`OrderMessage`), which the API builds; this class
adds the bounds the worker checks, by hand (orders.fields: the worker loads no pydantic), and
tests/unit/orders/test_messages.py fails when a field differs from the domain's. The consumers'
event is orders.events: each function builds only the model it parses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from orders import fields
from orders.domain import MAX_ID_CHARS, ORDER_ID_PATTERN

_FIELDS = frozenset({"order_id", "run", "idempotency_key"})
_ANY = r"^[\s\S]+$"  # any string of at least one character


@dataclass(frozen=True)
class OrderMessageModel:
    """orders queue: orders.domain.OrderMessage, no other field."""

    order_id: str
    run: int
    idempotency_key: str

    @classmethod
    def model_validate(cls, obj: Any, /) -> Self:
        """The message in `obj` (a parsed JSON body); `fields.ShapeError` naming the first field
        that is not as the worker accepts it (reliability.batch.parse_body's protocol)."""
        data = fields.record(obj, allowed=_FIELDS)
        return cls(
            order_id=fields.text(data, "order_id", pattern=ORDER_ID_PATTERN, max_length=MAX_ID_CHARS),
            run=fields.integer(data, "run", minimum=1),
            idempotency_key=fields.text(data, "idempotency_key", pattern=_ANY),
        )
