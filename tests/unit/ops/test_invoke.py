"""The invoke tool finds the function from the stack outputs and reports function errors."""

from __future__ import annotations

import io
import json

import boto3
import pytest
from botocore.stub import Stubber

from ops.invoke import invoke
from ops.stack_outputs import function_output as function_output_key
from ops.target import Target


@pytest.mark.parametrize(
    ("function", "key"),
    [("api", "ApiFunctionName"), ("reserve-inventory", "ReserveInventoryFunctionName")],
)
def test_function_output_key_follows_the_outputs_contract(function: str, key: str) -> None:
    assert function_output_key(function) == key


def test_invoke_sends_the_event_and_returns_the_function_error() -> None:
    # Given a function that fails with a handler exception
    client = boto3.client("lambda", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    body = json.dumps({"errorType": "TransientError", "errorMessage": "throttled"}).encode()
    with Stubber(client) as stub:
        stub.add_response(
            "invoke",
            {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": io.BytesIO(body)},
            {"FunctionName": "rs-worker", "InvocationType": "RequestResponse", "Payload": b'{"Records": []}'},
        )
        # When the sample event is invoked
        payload, error = invoke(client, function_name="rs-worker", event={"Records": []})

    # Then the error is reported with the handler's exception class, not swallowed
    assert (payload["errorType"], error) == ("TransientError", "Unhandled")


def test_an_unknown_function_names_the_outputs_the_target_has() -> None:
    target = Target(endpoint_url=None, region="us-east-1", outputs={"WorkerFunctionName": "rs-worker"})
    with pytest.raises(KeyError, match="WorkerFunctionName"):
        target.output(function_output_key("nope"))
