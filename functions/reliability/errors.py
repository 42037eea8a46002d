"""The reliability layer's exception hierarchy and the ClientError -> exception mapping.

Class names are part of the Step Functions Retry/Catch contract (DEVELOPERS.md, "The workflow
contract"): the Lambda runtime reports ``errorType`` = the exception's class name, so renaming a
class here changes which states retry or catch it.

- ``RetryableError`` and its subclasses (``FenceBusy``, ``StoreUnavailable``) are retried by the
  workflow with backoff.
- ``StaleFence`` and ``ResultTooLarge`` are reliability failures that a retry does not cure.
- ``BusinessError`` is the base of the domain's permanent errors. A fence records them as FAILED
  and raises the same class with the same message on every replay; subclasses register themselves
  by class name so a replay can rebuild them from the stored record.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    HTTPClientError,
    ReadTimeoutError,
)

logger = logging.getLogger(__name__)


class ReliabilityError(Exception):
    """Base of every error the reliability layer raises itself."""


class RetryableError(ReliabilityError):
    """A retry (with backoff) may succeed."""


class FenceBusy(RetryableError):
    """Another attempt holds a live lease on this step."""


class StoreUnavailable(RetryableError):
    """DynamoDB throttled, failed with a 5xx, or could not be reached."""


class StoreError(ReliabilityError):
    """DynamoDB rejected a request for a reason a retry does not cure (validation, access, missing table)."""


class StaleFence(ReliabilityError):
    """A zombie's completion: the fence passed to a later attempt; this attempt's effect was not written."""


class ResultTooLarge(ReliabilityError):
    """A step result exceeds the DynamoDB item or Step Functions payload limit; nothing was written."""


class EffectConditionFailed(ReliabilityError):
    """An effect write's own condition failed and build() attached no BusinessError to that write."""

    def __init__(self, message: str, *, index: int, code: str) -> None:
        super().__init__(message)
        self.index = index
        self.code = code


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


# DynamoDB error codes that a retry with backoff can cure.
RETRYABLE_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "Throttling",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "TransactionConflictException",
        "TransactionInProgressException",
        "LimitExceededException",
    }
)
# Codes a TransactionCanceledException carries per entry that a retry can cure.
RETRYABLE_CANCELLATION_CODES = frozenset(
    {"TransactionConflict", "ProvisionedThroughputExceeded", "ThrottlingError", "InternalServerError"}
)
CONNECTION_ERRORS: tuple[type[Exception], ...] = (
    EndpointConnectionError,
    ConnectionClosedError,
    ConnectTimeoutError,
    ReadTimeoutError,
    HTTPClientError,
)


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def store_error(error: Exception) -> ReliabilityError:
    """Map a botocore failure to the hierarchy by code or type, never by message text.

    Use as ``raise store_error(e) from e``.
    """
    if isinstance(error, ClientError):
        code = error_code(error)
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        if code in RETRYABLE_CODES or status >= 500:
            return StoreUnavailable(f"DynamoDB {code or status}")
        return StoreError(f"DynamoDB rejected the request: {code}")
    if isinstance(error, CONNECTION_ERRORS):
        return StoreUnavailable(f"DynamoDB unreachable: {type(error).__name__}")
    return StoreError(f"DynamoDB call failed: {type(error).__name__}")
