"""Domain errors.

Two families:
- `OrderError` subclasses are client-facing problems: the library's `RequestError`, which the API
  (`reliability.api`) maps to HTTP in one place (`status` and `code`).
- `PaymentDeclined` and `OutOfStock` are permanent saga failures. They subclass reliability's
  `BusinessError`, so a fence replay re-raises the same class and Step Functions' Catch matches
  on the class name (docs/how-it-works.md, "The workflow contract").
"""

from __future__ import annotations

# The run model's errors are the library's (reliability.workflow_runs), named here for the lab.
from reliability.errors import (
    KEY_REUSED,
    BusinessError,
    ExecutionConflict,
    ExecutionFailed,
    MalformedBody,
    RequestError,
    RerunRefused,
    RunNotCurrent,
    UnknownEntity,
)

__all__ = [
    "ExecutionConflict",
    "ExecutionFailed",
    "InvalidRequest",
    "MalformedBody",
    "OrderConflict",
    "OrderError",
    "OrderNotFound",
    "OutOfStock",
    "PaymentDeclined",
    "RerunRefused",
    "RunNotCurrent",
    "UnknownOrder",
    "UnknownSku",
    "UnverifiedEvent",
]


class OrderError(RequestError):
    """A problem with a client's order request; carries its HTTP status and error code."""


class InvalidRequest(OrderError):
    status = 422
    code = "InvalidRequest"


class UnknownSku(OrderError):
    status = 422
    code = "UnknownSku"

    def __init__(self, skus: list[str]) -> None:
        self.skus = skus
        super().__init__(f"unknown sku: {', '.join(skus)}")


class OrderNotFound(OrderError):
    status = 404
    code = "OrderNotFound"

    def __init__(self, order_id: str) -> None:
        self.order_id = order_id
        super().__init__(f"no order {order_id!r}")


class OrderConflict(OrderError):
    """The key already placed a different order: the client reused its key with another body after
    the HTTP record expired (while it lives, `reliability.http` answers the same 422)."""

    status = 422
    code = KEY_REUSED


class PaymentDeclined(BusinessError):
    """The payment provider refused the charge for good: compensate, do not retry."""


class OutOfStock(BusinessError):
    """A sku has less stock than the order needs: fail the order, do not retry."""


class UnknownOrder(UnknownEntity):
    """A workflow or queue message names an order that does not exist (a poison input)."""


class UnverifiedEvent(Exception):
    """An event a consumer cannot verify (a poison input): another stage's, or one whose run or
    terms are not its order's (orders.consumers)."""
