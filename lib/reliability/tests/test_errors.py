"""The exception hierarchy, the BusinessError registry and ClientError mapping by code."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    HTTPClientError,
    ReadTimeoutError,
)

from reliability.errors import (
    BusinessError,
    EffectConditionFailed,
    FenceBusy,
    PoisonMessage,
    ReliabilityError,
    ResultTooLarge,
    RetryableError,
    StaleFence,
    StoreError,
    TransientError,
    store_error,
    transient_errors,
)
from reliability_demo import DemoOutOfStock, DemoPaymentDeclined


def test_hierarchy_matches_the_retry_contract() -> None:
    assert issubclass(FenceBusy, RetryableError)
    assert issubclass(TransientError, RetryableError)
    assert issubclass(StaleFence, RetryableError)
    assert not issubclass(ResultTooLarge, RetryableError)
    assert issubclass(RetryableError, ReliabilityError)
    assert not issubclass(BusinessError, ReliabilityError)


def test_each_error_keeps_its_message_and_what_it_names() -> None:
    # A log line, a DLQ reason and a replay read these; str() is what a traceback shows
    poison = PoisonMessage("unparseable body")
    assert (str(poison), poison.reason) == ("unparseable body", "unparseable body")
    failed = EffectConditionFailed("write 2 failed", index=2, code="ConditionalCheckFailed")
    assert (str(failed), failed.index, failed.code) == ("write 2 failed", 2, "ConditionalCheckFailed")
    business = BusinessError("declined", details={"reason": "card"})
    assert (str(business), business.message, business.details) == ("declined", "declined", {"reason": "card"})
    assert (str(BusinessError()), BusinessError().message, BusinessError().details) == ("", "", {})


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


@pytest.mark.parametrize(
    "error",
    [
        EndpointConnectionError(endpoint_url="http://x"),
        ConnectionClosedError(endpoint_url="http://x"),
        ConnectTimeoutError(endpoint_url="http://x"),
        ReadTimeoutError(endpoint_url="http://x"),
        HTTPClientError(error="reset"),
        client_error("ThrottlingException"),
        client_error("SomethingNew", 500),
    ],
)
def test_an_adapters_transport_failure_or_throttle_becomes_transient_error(error: Exception) -> None:
    what = error.response["Error"]["Code"] if isinstance(error, ClientError) else type(error).__name__
    # When a call inside transient_errors fails on the way (the request may or may not have landed)
    with pytest.raises(TransientError, match=rf"^PutItem: {what}$") as raised, transient_errors("PutItem"):
        raise error
    # Then it is the one retryable error, chained to the cause
    assert raised.value.__cause__ is error


def test_a_non_transient_failure_passes_through_transient_errors_unchanged() -> None:
    error = client_error("ValidationException")
    with pytest.raises(ClientError) as raised, transient_errors("PutItem"):
        raise error
    assert raised.value is error


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (client_error("ThrottlingException"), "DynamoDB: ThrottlingException"),
        (ReadTimeoutError(endpoint_url="http://x"), "DynamoDB: ReadTimeoutError"),
        (client_error("ValidationException"), "DynamoDB rejected the request: ValidationException"),
        (RuntimeError("other"), "DynamoDB call failed: RuntimeError"),
    ],
)
def test_a_store_error_says_what_failed_by_code_or_type(error: Exception, message: str) -> None:
    assert str(store_error(error)) == message


def test_an_error_without_response_metadata_is_classified_by_its_code_alone() -> None:
    # botocore fills ResponseMetadata, a hand-built or stubbed ClientError may not
    bare = ClientError({"Error": {"Code": "ValidationException"}}, "PutItem")
    throttled = ClientError({"Error": {"Code": "ThrottlingException"}}, "PutItem")
    assert type(store_error(bare)) is StoreError
    assert type(store_error(throttled)) is TransientError


def test_a_subclass_defined_at_run_time_registers_under_its_name(caplog: pytest.LogCaptureFixture) -> None:
    # Given a domain error class defined now (not at import)
    name = f"Late{uuid.uuid4().hex}"
    first = type(name, (BusinessError,), {})
    # Then it is what a replay of its name rebuilds, and nothing was said about it
    assert BusinessError.registry[name] is first
    assert type(BusinessError.restore(name, "m")) is first
    assert caplog.records == []
    # When a second class takes the same name, Then the later one wins, with a warning naming it
    second = type(name, (BusinessError,), {})
    assert BusinessError.registry[name] is second
    [warning] = caplog.records
    assert warning.levelname == "WARNING"
    assert (
        warning.getMessage() == "BusinessError subclass name registered twice; the later one wins on replay"
    )
    assert warning.error_type == name  # type: ignore[attr-defined]


def test_a_name_no_class_has_comes_back_as_a_business_error_of_that_name_and_message() -> None:
    name = f"RenamedLongAgo{uuid.uuid4().hex}"
    restored = BusinessError.restore(name, "msg", {"a": 1})
    assert (type(restored).__name__, type(restored).__module__) == (name, "reliability.errors")
    assert isinstance(restored, BusinessError)
    assert (str(restored), restored.details) == ("msg", {"a": 1})


def test_a_client_error_without_a_code_is_a_store_error_with_none_named() -> None:
    # (a malformed error answer must still map, never crash the mapper)
    responses: list[dict[str, Any]] = [{}, {"Error": {}}]
    for response in responses:
        error = store_error(ClientError(response, "GetItem"))
        assert type(error) is StoreError
        assert str(error) == "DynamoDB rejected the request: "
