"""The transfer's business errors. Their class names are a contract: the state machine's
Catch routes on them (`workflow.Step.catch`), and the API answers their codes."""

from __future__ import annotations

from reliability.errors import KEY_REUSED, BusinessError, RequestError


class InsufficientFunds(BusinessError):
    """The source account does not hold the amount (a permanent answer: the transfer fails, and
    nothing was debited)."""


class PayoutRefused(BusinessError):
    """The payout provider refused the transfer (a permanent answer: the saga reverses the debit)."""


class TransferNotFound(RequestError):
    """No transfer has this id (GET answers 404)."""

    status = 404
    code = "TransferNotFound"


class TransferConflict(RequestError):
    """The key already created a transfer with other terms: the client reused its key with another
    body after the HTTP record expired (while it lives, the library answers the same 422)."""

    status = 422
    code = KEY_REUSED


class InvalidRequest(RequestError):
    """JSON outside the contract (`POST /transfers` answers 422 naming the field)."""

    status = 422
    code = "InvalidRequest"


class InvalidWorkflowInput(ValueError):
    """A step's input is not a run of a transfer (a state machine wired wrong)."""
