"""Transient means retried: every adapter turns every transient AWS or transport failure into the
one retryable `TransientError`; business and programming errors pass through unchanged.

The failures are injected with the crash plan's error points (reliability.testing.crashpoints), so each
call fails as botocore raises it after its own retries: the modeled ClientError with the
service's code and HTTP status, or the transport exception.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from orders.adapters.aws import SqsQueue, StepFunctionsWorkflow
from orders.adapters.dynamo import DynamoCatalog
from orders.adapters.order_store import DynamoOrderStore
from orders.adapters.payments import FakePaymentProvider
from orders.runtime import default_client_factory
from reliability.errors import TransientError
from reliability.testing.crashpoints import CrashPlan

REGION = "us-east-1"
# One code per family: throttling, a 5xx, a DynamoDB transaction conflict, the transport failures.
TRANSIENT = {
    "throttling": "ThrottlingException",
    "provisioned-throughput": "ProvisionedThroughputExceededException",
    "request-limit": "RequestLimitExceeded",
    "5xx": "InternalServerError",
    "503": "ServiceUnavailable",
    "transaction-conflict": "TransactionConflictException",
    "read-timeout": "ReadTimeout",
    "connect-timeout": "ConnectTimeout",
    "no-connection": "EndpointConnectionError",
}
SQS_TRANSIENT = {
    "throttling": "ThrottlingException",
    "request-throttled": "RequestThrottled/403",
    "5xx": "InternalError",
    "unknown-5xx": "KmsInternal/502",
    "read-timeout": "ReadTimeout",
    "connect-timeout": "ConnectTimeout",
}
SFN_TRANSIENT = {
    "throttling": "ThrottlingException",
    "5xx": "InternalFailure",
    "read-timeout": "ReadTimeout",
    "no-connection": "EndpointConnectionError",
}

Call = Callable[[Any], Any]


def _dynamo_calls(ddb: Any) -> dict[str, tuple[str, Call]]:
    """adapter call -> (the AWS operation it makes first, the call)."""
    orders = DynamoOrderStore(client=ddb, table_name="orders")
    catalog = DynamoCatalog(client=ddb, table_name="inventory")
    payments = FakePaymentProvider(client=ddb, table_name="payments", key_lifetime_seconds=86400)
    return {
        "orders.get": ("DynamoDB.GetItem", lambda _: orders.get("o-1")),
        "catalog.lookup": ("DynamoDB.BatchGetItem", lambda _: catalog.lookup(["sku-1"])),
        "payments.charge": (
            "DynamoDB.PutItem",
            lambda _: payments.charge(
                idempotency_key="k",
                order_id="o-1",
                customer_id="c",
                amount_cents=100,
                currency="EUR",
                reference="t",
            ),
        ),
        "payments.history": ("DynamoDB.Query", lambda _: payments.history("o-1")),
    }


def _arm(client: Any, operation: str, code: str) -> None:
    CrashPlan.parse(f"error:{operation}:{code}=1").instrument(client)


@pytest.mark.parametrize("family", sorted(TRANSIENT))
@pytest.mark.parametrize("adapter", ["orders.get", "catalog.lookup", "payments.charge", "payments.history"])
def test_dynamodb_adapters_raise_transient_error(ddb: Any, adapter: str, family: str) -> None:
    client = boto3.client("dynamodb", region_name=REGION)
    operation, call = _dynamo_calls(client)[adapter]
    _arm(client, operation, TRANSIENT[family])
    with pytest.raises(TransientError, match=TRANSIENT[family]):
        call(None)
    call(None)  # the fault is spent: the same call now succeeds


@pytest.mark.parametrize("adapter", ["orders.get", "catalog.lookup", "payments.charge"])
def test_dynamodb_adapters_let_a_validation_error_through_unretried(ddb: Any, adapter: str) -> None:
    client = boto3.client("dynamodb", region_name=REGION)
    operation, call = _dynamo_calls(client)[adapter]
    _arm(client, operation, "ValidationException")
    with pytest.raises(ClientError) as raised:
        call(None)
    assert not isinstance(raised.value, TransientError)


@pytest.fixture
def queue(ddb: Any) -> tuple[Any, str]:
    sqs = boto3.client("sqs", region_name=REGION)
    return sqs, sqs.create_queue(QueueName="q")["QueueUrl"]


@pytest.mark.parametrize("family", sorted(SQS_TRANSIENT))
def test_the_sqs_adapter_raises_transient_error(queue: tuple[Any, str], family: str) -> None:
    sqs, url = queue
    _arm(sqs, "SQS.SendMessage", SQS_TRANSIENT[family])
    with pytest.raises(TransientError):
        SqsQueue(client=sqs, queue_url=url).send({"a": 1})
    assert SqsQueue(client=sqs, queue_url=url).send({"a": 1})


def test_the_sqs_adapter_lets_a_bad_request_through_unretried(queue: tuple[Any, str]) -> None:
    sqs, url = queue
    _arm(sqs, "SQS.SendMessage", "InvalidMessageContents")
    with pytest.raises(ClientError) as raised:
        SqsQueue(client=sqs, queue_url=url).send({"a": 1})
    assert not isinstance(raised.value, TransientError)


@pytest.fixture
def machine(ddb: Any) -> tuple[Any, str]:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    arn = sfn.create_state_machine(
        name="m",
        definition=json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}),
        roleArn="arn:aws:iam::123456789012:role/r",
    )["stateMachineArn"]
    return sfn, arn


@pytest.mark.parametrize("operation", ["SFN.StartExecution", "SFN.DescribeExecution"])
@pytest.mark.parametrize("family", sorted(SFN_TRANSIENT))
def test_the_step_functions_adapter_raises_transient_error(
    machine: tuple[Any, str], operation: str, family: str
) -> None:
    sfn, arn = machine
    workflow = StepFunctionsWorkflow(client=sfn, state_machine_arn=arn)
    payload = {"order_id": "o-1", "run": 1, "token": "t"}
    if operation == "SFN.DescribeExecution":
        workflow.start(name="o-1-r1", payload=payload)
        _arm(sfn, "SFN.StartExecution", "ExecutionAlreadyExists")  # so the adapter describes it
    _arm(sfn, operation, SFN_TRANSIENT[family])
    with pytest.raises(TransientError):
        workflow.start(name="o-1-r1", payload=payload)
    assert workflow.start(name="o-1-r1", payload=payload).endswith(":o-1-r1")


def test_the_step_functions_adapter_lets_a_bad_request_through_unretried(machine: tuple[Any, str]) -> None:
    sfn, arn = machine
    _arm(sfn, "SFN.StartExecution", "InvalidName")
    with pytest.raises(ClientError) as raised:
        StepFunctionsWorkflow(client=sfn, state_machine_arn=arn).start(name="x", payload={})
    assert not isinstance(raised.value, TransientError)


@pytest.mark.parametrize("service", ["dynamodb", "sqs", "stepfunctions"])
def test_clients_retry_in_botocore_standard_mode_with_explicit_settings(service: str) -> None:
    config = default_client_factory(service).meta.config
    assert config.retries == {"mode": "standard", "total_max_attempts": 3}
    assert (config.connect_timeout, config.read_timeout, config.tcp_keepalive) == (2, 5, True)
