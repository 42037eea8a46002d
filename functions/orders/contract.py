"""The public API contract: request and response bodies of `POST /orders` and `GET /orders/{id}`.

ONE definition of a valid order: `CREATE_ORDER_SCHEMA` (JSON Schema 2020-12) is what the function
checks (`reliability.fields.conform`), what `orders.openapi` publishes as
`components.schemas.CreateOrderRequest`, and (in draft 4's words) the model API Gateway validates
at the edge; the one rule JSON Schema cannot say (each sku once) is `distinct_skus`, here. The
bodies are plain dataclasses: the API function loads no pydantic on its cold start (it cost about a
fifth of its floor, bench/coldstart.py); `orders.openapi` derives the response schemas from these
classes at build time. Whatever is accepted can be read back (`OrderView.items`).
Clients, docs and tests rely on these shapes; change them only together with docs/api.md.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from orders.domain import CURRENCY_PATTERN, MAX_ID_CHARS, VISIBLE_ASCII_PATTERN, OrderStatus, StepStatus
from orders.errors import InvalidRequest, MalformedBody
from reliability.fields import REPEATED_ITEM, Body, ShapeError, checkable, conform

MAX_ITEMS = 50
MAX_QUANTITY = 100
# The largest POST /orders body the function parses. A body within the contract is at most ~5 KiB
# (50 lines of a 64-character sku); the bound keeps parsing cheap whatever a client sends
# (deep nesting, long numbers), and API Gateway's own bound (10 MiB) is far above it.
MAX_BODY_BYTES = 16 * 1024


def _client_id(title: str) -> dict[str, Any]:
    """An id a client chooses: visible ASCII (orders.domain: the consumers' event bounds it alike)."""
    return {
        "maxLength": MAX_ID_CHARS,
        "minLength": 1,
        "pattern": VISIBLE_ASCII_PATTERN,
        "title": title,
        "type": "string",
    }


# A quantity is a JSON Schema `integer`: any number with a zero fractional part, so `65.0` is 65
# (OpenAPI 3.1's schemas are JSON Schema 2020-12, and encoders write it so: `json.dumps(65.0)`).
# `conform` makes it the int before anything reads it: the idempotency payload, the stored line and
# `GET` see one value. Still refused: `65.5`, `"65"`, `true`. The edge's draft-4 model says the same
# (`reliability.cdk.api_model`).
CREATE_ORDER_SCHEMA: Mapping[str, Any] = checkable(
    {
        "additionalProperties": False,
        "description": "Body of `POST /orders` (the `Idempotency-Key` header is required too).",
        "properties": {
            "customer_id": _client_id("Customer Id"),
            "currency": {"pattern": CURRENCY_PATTERN, "title": "Currency", "type": "string"},
            # Each sku once is stricter than JSON Schema can say: `uniqueItems` compares whole
            # items, so it refuses only a line sent twice (at the edge, 400), and the function
            # refuses a sku repeated with another quantity (422, `distinct_skus`). Every accepted
            # order's items are unique, so the keyword is true of them.
            "items": {
                "description": (
                    "Each sku at most once (a sku repeated with another quantity: 422 InvalidRequest)."
                ),
                "items": {
                    "additionalProperties": False,
                    "properties": {
                        "sku": _client_id("Sku"),
                        "quantity": {
                            "maximum": MAX_QUANTITY,
                            "minimum": 1,
                            "title": "Quantity",
                            "type": "integer",
                        },
                    },
                    "required": ["sku", "quantity"],
                    "title": "OrderItem",
                    "type": "object",
                },
                "maxItems": MAX_ITEMS,
                "minItems": 1,
                "title": "Items",
                "type": "array",
                "uniqueItems": True,
            },
        },
        "required": ["customer_id", "currency", "items"],
        "title": "CreateOrderRequest",
        "type": "object",
    }
)
# A line of an order, as the request gives it and the read model (`OrderView.items`) returns it.
ORDER_ITEM_SCHEMA: Mapping[str, Any] = CREATE_ORDER_SCHEMA["properties"]["items"]["items"]


@dataclass(frozen=True)
class OrderItem(Body):
    sku: str
    quantity: int


def distinct_skus(items: list[OrderItem]) -> list[OrderItem]:
    """Each sku once per order: an order's lines are exactly what the client sent, so every line
    keeps the quantity bound and the read model returns the request's items unchanged (merging
    repeated skus made lines above the bound that `GET /orders/{id}` could not return)."""
    repeated = sorted(sku for sku, count in Counter(item.sku for item in items).items() if count > 1)
    if repeated:
        raise ShapeError("items", f"each sku may appear once; repeated: {', '.join(repeated)}")
    return items


@dataclass(frozen=True)
class CreateOrderRequest(Body):
    """Body of `POST /orders` (`CREATE_ORDER_SCHEMA`)."""

    customer_id: str
    currency: str
    items: list[OrderItem]

    @classmethod
    def model_validate(cls, data: Any, /) -> Self:
        """The request in `data` (parsed JSON), or `ShapeError` naming the first field outside it."""
        try:
            body = conform(CREATE_ORDER_SCHEMA, data)
        except ShapeError as error:
            if (error.field, error.problem) == ("items", REPEATED_ITEM):  # a line sent twice
                distinct_skus([OrderItem(**line) for line in data["items"]])  # names its sku
            raise
        items = distinct_skus([OrderItem(**line) for line in body["items"]])
        return cls(customer_id=body["customer_id"], currency=body["currency"], items=items)


def parse_create_order(body: str | bytes | None) -> CreateOrderRequest:
    """The `POST /orders` body, or a 4xx domain error for ANY input (never an exception that
    becomes a 5xx): too large, not UTF-8, not JSON, nested too deep (RecursionError), a number too
    long for Python's int conversion (ValueError) -> 400 MalformedBody; JSON outside the contract
    -> 422 InvalidRequest naming the field, never echoing the input."""
    # surrogatepass: a lone surrogate (from a "\ud800" escape in the event) is refused as not UTF-8
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else (body or b"")
    if len(raw) > MAX_BODY_BYTES:
        raise MalformedBody(f"the body is larger than {MAX_BODY_BYTES} bytes")
    if not raw.strip():
        raise MalformedBody("the body is empty; send the order as JSON")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise MalformedBody("the body is not UTF-8") from error
    except RecursionError as error:
        raise MalformedBody("the body is nested too deeply") from error
    except ValueError as error:  # JSONDecodeError, and ints longer than sys.get_int_max_str_digits()
        raise MalformedBody("the body is not valid JSON") from error
    try:
        return CreateOrderRequest.model_validate(data)
    except ShapeError as error:
        raise InvalidRequest(f"{error.field}: {error.problem}") from error


@dataclass(frozen=True)
class OrderAccepted(Body):
    """202 body of `POST /orders`."""

    order_id: str
    status: OrderStatus = field(default=OrderStatus.ACCEPTED, kw_only=True)
    status_url: str


@dataclass(frozen=True)
class Charge(Body):
    charge_id: str
    idempotency_key: str
    amount_cents: int
    currency: str
    status: str
    created_at: str


@dataclass(frozen=True)
class ProviderCall(Body):
    call_id: str
    idempotency_key: str
    amount_cents: int
    received_at: str


@dataclass(frozen=True)
class OrderView(Body):
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
