"""The public API contract: request and response bodies of `POST /orders` and `GET /orders/{id}`.

ONE definition of a valid order: `CreateOrderRequest` is what the app parses, what the read model
(`OrderView.items`) returns, and (through `orders.openapi` -> `openapi.json`) the body model API
Gateway validates at the edge. So whatever is accepted can be read back.
Clients, docs and tests rely on these shapes; change them only together with docs/api.md.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
)

from orders.domain import CURRENCY_PATTERN, MAX_ID_CHARS, VISIBLE_ASCII_PATTERN, OrderStatus, StepStatus
from orders.errors import InvalidRequest, MalformedBody

MAX_ITEMS = 50
MAX_QUANTITY = 100
# The largest POST /orders body the function parses. A body within the contract is at most ~5 KiB
# (50 lines of a 64-character sku); the bound keeps parsing cheap whatever a client sends
# (deep nesting, long numbers), and API Gateway's own bound (10 MiB) is far above it.
MAX_BODY_BYTES = 16 * 1024
_MAX_PROBLEMS = 5

# Ids are visible ASCII (orders.domain: the consumers' event bounds them alike).
Sku = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS, pattern=VISIBLE_ASCII_PATTERN)]
CustomerId = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS, pattern=VISIBLE_ASCII_PATTERN)
]
Currency = Annotated[str, StringConstraints(pattern=CURRENCY_PATTERN)]


def _whole_number(value: object) -> object:
    """A JSON number with a zero fraction (`65.0`) is the integer it equals.

    The published document is OpenAPI 3.1, whose schemas are JSON Schema 2020-12: there `integer`
    is any number with a zero fractional part, so `65.0` is the integer 65, and encoders write it so
    (Python's `json.dumps(65.0)`). Refusing it would make the API stricter than its own document
    (and JSON Schema cannot say "written without a fraction"). It becomes 65 before anything reads
    it: the idempotency payload, the stored line and `GET` see one value, so `65.0` and `65` under
    one key are one order. Still refused: `65.5`, `"65"`, `true` (strict). The edge's draft-4 model
    says the same (`infra/api_model.py`)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Quantity = Annotated[int, Field(ge=1, le=MAX_QUANTITY, strict=True), BeforeValidator(_whole_number)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OrderItem(_Strict):
    sku: Sku
    quantity: Quantity


def _distinct_skus(items: list[OrderItem]) -> list[OrderItem]:
    """Each sku once per order: an order's lines are exactly what the client sent, so every line
    keeps the quantity bound and the read model returns the request's items unchanged (merging
    repeated skus made lines above the bound that `GET /orders/{id}` could not return)."""
    repeated = sorted(sku for sku, count in Counter(item.sku for item in items).items() if count > 1)
    if repeated:
        raise ValueError(f"each sku may appear once; repeated: {', '.join(repeated)}")
    return items


# Each sku once is stricter than JSON Schema can say: `uniqueItems` compares whole items, so it
# refuses only a line sent twice (at the edge, 400), and the function refuses a sku repeated with
# another quantity (422). Every accepted order's items are unique, so the keyword is true of them.
OrderItems = Annotated[
    list[OrderItem],
    Field(
        min_length=1,
        max_length=MAX_ITEMS,
        description="Each sku at most once (a sku repeated with another quantity: 422 InvalidRequest).",
        json_schema_extra={"uniqueItems": True},
    ),
    AfterValidator(_distinct_skus),
]


class CreateOrderRequest(_Strict):
    """Body of `POST /orders` (the `Idempotency-Key` header is required too)."""

    customer_id: CustomerId
    currency: Currency
    items: OrderItems


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
    except ValidationError as error:
        problems = [
            f"{'.'.join(str(part) for part in problem['loc']) or 'body'}: {problem['msg']}"
            for problem in error.errors(include_input=False, include_url=False, include_context=False)[
                :_MAX_PROBLEMS
            ]
        ]
        raise InvalidRequest("; ".join(problems)) from error


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
