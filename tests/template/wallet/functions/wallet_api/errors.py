"""The transfer's business errors. Their class names are a contract: the state machine's
Catch routes on them (`workflow.Step.catch`), and the API answers their codes."""

from __future__ import annotations

from reliability.errors import BusinessError, RequestError


class InsufficientFunds(BusinessError):
    """The source account does not hold the amount (a permanent answer: the transfer fails, and
    nothing was debited)."""


class PayoutRefused(BusinessError):
    """The payout provider refused the transfer (a permanent answer: the saga reverses the debit)."""


class TransferNotFound(RequestError):
    """No transfer has this id (GET answers 404)."""

    status = 404
    code = "TransferNotFound"


class InvalidRequest(RequestError):
    """JSON outside the contract (`POST /transfers` answers 422 naming the field)."""

    status = 422
    code = "InvalidRequest"


class InvalidWorkflowInput(ValueError):
    """A step's input is not a run of a transfer (a state machine wired wrong)."""
