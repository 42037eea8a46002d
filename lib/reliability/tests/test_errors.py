"""The exception hierarchy, the BusinessError registry and ClientError mapping by code."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from reliability.errors import (
    BusinessError,
    FenceBusy,
    ReliabilityError,
    ResultTooLarge,
    RetryableError,
    StaleFence,
    StoreError,
    TransientError,
    store_error,
)
from reliability_demo import DemoOutOfStock, DemoPaymentDeclined


def test_hierarchy_matches_the_retry_contract() -> None:
    assert issubclass(FenceBusy, RetryableError)
    assert issubclass(TransientError, RetryableError)
    assert issubclass(StaleFence, RetryableError)
    assert not issubclass(ResultTooLarge, RetryableError)
    assert issubclass(RetryableError, ReliabilityError)
    assert not issubclass(BusinessError, ReliabilityError)


def test_subclasses_register_by_name_and_restore_identically() -> None:
    # Given a domain error with a custom constructor
    original = DemoPaymentDeclined("card expired")
    # When it is restored from what a fence stores
    restored = BusinessError.restore("DemoPaymentDeclined", str(original), original.details)
    # Then the same class, message and details come back
    assert type(restored) is DemoPaymentDeclined
    assert str(restored) == str(original)
    assert restored.details == {"reason": "card expired"}
    assert BusinessError.registry["DemoOutOfStock"] is DemoOutOfStock


def test_an_unknown_name_still_restores_with_that_class_name() -> None:
    restored = BusinessError.restore("RenamedLongAgo", "msg")
    assert type(restored).__name__ == "RenamedLongAgo"
    assert isinstance(restored, BusinessError)
    assert str(restored) == "msg"


def client_error(code: str, status: int = 400) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": "whatever text"}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "PutItem",
    )


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (client_error("ProvisionedThroughputExceededException"), TransientError),
        (client_error("ThrottlingException"), TransientError),
        (client_error("RequestLimitExceeded"), TransientError),
        (client_error("TransactionConflictException"), TransientError),
        (client_error("SomethingNew", 503), TransientError),
        (client_error("ValidationException"), StoreError),
        (client_error("AccessDeniedException"), StoreError),
        (EndpointConnectionError(endpoint_url="http://x"), TransientError),
        (ReadTimeoutError(endpoint_url="http://x"), TransientError),
        (RuntimeError("other"), StoreError),
    ],
)
def test_store_errors_map_by_code_never_by_message(error: Exception, expected: type[Exception]) -> None:
    assert type(store_error(error)) is expected
