"""The reliability layer's exception hierarchy and the ClientError -> exception mapping.

Class names are part of the Step Functions Retry/Catch contract (docs/how-it-works.md, "The workflow
contract"): the Lambda runtime reports ``errorType`` = the exception's class name, so renaming a
class here changes which states retry or catch it.

- ``RetryableError`` and its subclasses (``FenceBusy``, ``StaleFence``, ``TransientError``) are
  retried by the workflow with backoff. Adapters turn every transient AWS or transport failure into
  ``TransientError`` (``transient_errors``), so nothing transient reaches Step Functions under
  another name.
- ``ResultTooLarge`` and ``ExternalKeyExpired`` are reliability failures that a retry does not cure.
- ``PoisonMessage`` marks a queue record no retry can cure: reliability.batch dead-letters it.
- The run errors (``UnknownEntity``, ``RunNotCurrent``, ``ExecutionConflict``, ``RerunRefused``,
  ``ExecutionFailed``, ``EntityNotFound``) are what a business entity's runs refuse
  (reliability.workflow_runs).
- ``BusinessError`` is the base of the domain's permanent errors. A fence records them as FAILED
  and raises the same class with the same message on every replay; subclasses register themselves
  by class name so a replay can rebuild them from the stored record.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    HTTPClientError,
    ReadTimeoutError,
)
from botocore.retries.standard import ThrottledRetryableChecker, TransientRetryableChecker

if TYPE_CHECKING:
    from reliability.workflow_runs import ExecutionEnd

logger = logging.getLogger(__name__)

# The HTTP error code of a key used again with another payload (`reliability.http`'s 422; a
# service's own store answers it too once the HTTP record has expired).
KEY_REUSED = "IdempotencyKeyReused"


class ReliabilityError(Exception):
    """Base of every error the reliability layer raises itself."""


class RetryableError(ReliabilityError):
    """A retry (with backoff) may succeed."""


class FenceBusy(RetryableError):
    """Another attempt holds a live lease on this step."""


class TransientError(RetryableError):
    """An AWS call throttled, failed with a 5xx or a transaction conflict, or could not reach the
    service or its answer in time (connect/read timeout): the one class adapters raise for
    anything a retry with backoff may cure, whatever the service (DynamoDB, SQS, Step Functions).
    Its name is in every task's Retry (docs/how-it-works.md, "The workflow contract")."""


class StoreError(ReliabilityError):
    """DynamoDB rejected a request for a reason a retry does not cure (validation, access, missing table)."""


class StaleFence(RetryableError):
    """A zombie's completion: the fence passed to a later attempt; this attempt's effect was not
    written. A retry is safe: it finds the step done (a skip), still held, or free to take over."""


class ExternalKeyExpired(ReliabilityError):
    """A leased step's takeover found an attempt older than the external system's idempotency-key
    lifetime and has no way to ask whether that attempt acted: stop for an operator, never act
    blind (not retried: a retry cannot make the key remembered again)."""


class ResultTooLarge(ReliabilityError):
    """A step result exceeds the DynamoDB item or Step Functions payload limit; nothing was written."""


class EffectConditionFailed(ReliabilityError):
    """An effect write's own condition failed and build() attached no BusinessError to that write."""

    def __init__(self, message: str, *, index: int, code: str) -> None:
        super().__init__(message)
        self.index = index
        self.code = code


class PoisonMessage(Exception):
    """This queue record can never succeed: dead-letter it now instead of retrying
    (reliability.batch). Here, not there, so code that raises it (a use case the worker calls)
    does not load the batch utilities and pydantic."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --- a client's request (reliability.api) -----------------------------------------------------
class RequestError(Exception):
    """A problem with a client's request; carries its HTTP status and error code (a service's
    own client errors subclass it, each with its `status` and `code`): the API answers it in the
    error shape, `{"error": code, "message": str(error)}`."""

    status = 400
    code = "BadRequest"


class MalformedBody(RequestError):
    """A request body that is not what any route accepts (not JSON, not UTF-8, empty, too big)."""

    status = 400
    code = "MalformedBody"


# --- a business entity's runs (reliability.workflow_runs) -------------------------------------
class UnknownEntity(Exception):
    """A queue message or a workflow input names an entity that does not exist, or whose key
    lineage is not the entity's (a poison input)."""


class EntityNotFound(LookupError):
    """An operator asked for the runs of an entity that does not exist."""


class RunNotCurrent(Exception):
    """A queue message for a run after the entity's current run (a poison input: nobody decided
    on it): runs after the first start only through `Reruns.start_next_run`, never from a message
    alone. (A message for an earlier run is a duplicate, not this.)"""


class ExecutionConflict(Exception):
    """A workflow execution with this name exists with a different input: the message is poison."""


class RerunRefused(Exception):
    """A new run was asked for an entity whose current run did not end FAILED."""


class ExecutionFailed(TransientError):
    """An Express execution of the run ended FAILED or TIMED_OUT: the worker keeps the message, and
    the queue brings it back to run again under the same token (the fences skip what is done); on
    its last receive it is dead-lettered with `end.reason` (reliability.worker)."""

    def __init__(self, end: ExecutionEnd) -> None:
        self.end = end
        super().__init__(end.reason)


class BusinessError(Exception):
    """Base for permanent domain errors (PaymentDeclined, OutOfStock, ...).

    A subclass is rebuilt on replay from ``(class name, message, details)`` without calling its
    ``__init__``, so keep everything a caller needs in ``message`` and ``details`` (JSON values).
    """

    registry: ClassVar[dict[str, type[BusinessError]]] = {}

    def __init__(self, message: str = "", *, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        previous = BusinessError.registry.get(cls.__name__)
        if previous is not None and previous is not cls:
            logger.warning(
                "BusinessError subclass name registered twice; the later one wins on replay",
                extra={"error_type": cls.__name__},
            )
        BusinessError.registry[cls.__name__] = cls

    @classmethod
    def restore(
        cls, error_type: str, message: str, details: Mapping[str, Any] | None = None
    ) -> BusinessError:
        """Rebuild a recorded error: the same class (by name) and the same message.

        An unknown name (a class renamed or not imported in this process) still comes back with
        that class name, so Step Functions' Catch keeps matching.
        """
        target = BusinessError.registry.get(error_type)
        if target is None:
            target = type(error_type, (BusinessError,), {"__module__": __name__})
        error = target.__new__(target)
        BusinessError.__init__(error, message, details=details)
        return error


# Error codes a retry with backoff can cure, in every AWS service this layer calls: exactly what
# botocore's standard retry mode treats as throttling or transient (its own lists, so a new
# SDK's additions come with the pin), plus DynamoDB's transaction conflicts, which botocore
# leaves to the caller. Any HTTP status >= 500 is transient too, whatever its code.
TRANSIENT_CODES = frozenset(
    {
        *ThrottledRetryableChecker._THROTTLED_ERROR_CODES,
        *TransientRetryableChecker._TRANSIENT_ERROR_CODES,
        "InternalServerError",
        "InternalError",
        "InternalFailure",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "TransactionConflictException",
    }
)
# Codes a TransactionCanceledException carries per entry that a retry can cure.
RETRYABLE_CANCELLATION_CODES = frozenset(
    {"TransactionConflict", "ProvisionedThroughputExceeded", "ThrottlingError", "InternalServerError"}
)
# Transport failures: the request may or may not have reached AWS; a retry of an idempotent
# call is the cure (every call this layer makes is conditional or keyed).
CONNECTION_ERRORS: tuple[type[Exception], ...] = (
    EndpointConnectionError,
    ConnectionClosedError,
    ConnectTimeoutError,
    ReadTimeoutError,
    HTTPClientError,
)


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def is_transient(error: BaseException) -> bool:
    """True for a throttle, a 5xx, a transaction conflict or a transport failure (by code, status
    or type, never by message text)."""
    if isinstance(error, ClientError):
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        return error_code(error) in TRANSIENT_CODES or status >= 500
    return isinstance(error, CONNECTION_ERRORS)


def transient_error(error: BaseException, operation: str) -> TransientError | None:
    """The one retryable error for ``error`` when it is transient, else None."""
    if not is_transient(error):
        return None
    what = error_code(error) if isinstance(error, ClientError) else type(error).__name__
    return TransientError(f"{operation}: {what}")


@contextmanager
def transient_errors(operation: str) -> Iterator[None]:
    """Every adapter's AWS calls run inside this: a transient failure becomes ``TransientError``
    (the state machine retries it with backoff and jitter, a consumer reports the record failed,
    the API answers 503); anything else propagates unchanged for the adapter to map."""
    try:
        yield
    except (ClientError, *CONNECTION_ERRORS) as error:
        transient = transient_error(error, operation)
        if transient is not None:
            raise transient from error
        raise


def store_error(error: Exception) -> ReliabilityError:
    """Map a DynamoDB failure to the hierarchy: ``TransientError`` or ``StoreError``.

    Use as ``raise store_error(e) from e``.
    """
    transient = transient_error(error, "DynamoDB")
    if transient is not None:
        return transient
    if isinstance(error, ClientError):
        return StoreError(f"DynamoDB rejected the request: {error_code(error)}")
    return StoreError(f"DynamoDB call failed: {type(error).__name__}")
