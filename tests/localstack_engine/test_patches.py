"""The patched engine (localstack_engine.patches), one test per patch, against the engine itself.

One engine for the module on a free port of 127.0.0.1, started as `make e2e-localstack` starts it
(localstack_engine.process). Each test drives it through AWS APIs only, like the service would.
"""

from __future__ import annotations

import io
import json
import os
import socket
import textwrap
import time
import urllib.request
import uuid
import zipfile
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from localstack_engine import process

pytestmark = pytest.mark.slow

ROLE = "arn:aws:iam::000000000000:role/engine-test"
# A variable of the process that starts the engine: a function must never see it (the engine's
# environment is made clean by localstack_engine.process, not by a patch).
HOST_ONLY = "RETRYSAFE_ENGINE_TEST_HOST_ONLY"

HANDLERS = textwrap.dedent(
    """
    import json
    import os


    class PaymentDeclined(Exception):
        pass


    def decline(event, context):
        raise PaymentDeclined("card declined")


    def echo(event, context):
        return {"statusCode": 200, "body": json.dumps(event)}


    def runtime(event, context):
        import boto3

        return {"boto3": boto3.__version__, "host_only": os.environ.get("HOST_ONLY")}
    """
).replace("HOST_ONLY", HOST_ONLY)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((process.HOST, 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    if not process.ENGINE_PYTHON.is_file():
        pytest.skip(
            "the engine's virtualenv is not built: `make test` (or make ministack) builds .venv-ministack"
        )
    os.environ[HOST_ONLY] = "leaked"
    try:
        with process.running(_free_port()) as url:
            yield url
    finally:
        del os.environ[HOST_ONLY]


@pytest.fixture(scope="module")
def aws(endpoint: str) -> Any:
    session = boto3.session.Session(
        aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1"
    )
    return lambda service: session.client(service, endpoint_url=endpoint)


def _function(aws: Any, handler: str) -> str:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handlers.py", HANDLERS)
    name = f"{handler}-{uuid.uuid4().hex[:8]}"
    arn = aws("lambda").create_function(
        FunctionName=name,
        Runtime="python3.14",
        Architectures=["arm64"],
        Role=ROLE,
        Handler=f"handlers.{handler}",
        Code={"ZipFile": buffer.getvalue()},
        Timeout=30,
    )["FunctionArn"]
    return str(arn)


def _invoke(aws: Any, function: str) -> tuple[Any, str | None]:
    response = aws("lambda").invoke(FunctionName=function, Payload=b"{}")
    return json.loads(response["Payload"].read()), response.get("FunctionError")


def _wait(probe: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while (result := probe()) is None:
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.3)
    return result


def test_patch_1_a_handler_error_is_typed_by_its_exception_class(aws: Any) -> None:
    # Given a function whose handler raises PaymentDeclined
    function = _function(aws, "decline")

    # When it is invoked directly, Then the error is typed as on AWS
    payload, error = _invoke(aws, function)
    assert error == "Unhandled"
    assert (payload["errorType"], payload["errorMessage"]) == ("PaymentDeclined", "card declined")

    # And a Step Functions Catch on that name matches (the saga's compensation path)
    definition = {
        "StartAt": "Charge",
        "States": {
            "Charge": {
                "Type": "Task",
                "Resource": function,
                "Catch": [{"ErrorEquals": ["PaymentDeclined"], "Next": "Declined"}],
                "End": True,
            },
            "Declined": {"Type": "Pass", "Result": "compensated", "End": True},
        },
    }
    sfn = aws("stepfunctions")
    machine = sfn.create_state_machine(
        name=f"catch-{uuid.uuid4().hex[:8]}", definition=json.dumps(definition), roleArn=ROLE
    )["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=machine, input="{}")["executionArn"]

    def finished() -> dict[str, Any] | None:
        described = sfn.describe_execution(executionArn=execution)
        return described if described["status"] != "RUNNING" else None

    described = _wait(finished)
    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["output"]) == "compensated"


def test_patch_2_a_proxy_event_names_the_apis_domain(aws: Any, endpoint: str) -> None:
    # Given a REST API whose every path goes to a function that answers with the event it got
    function = _function(aws, "echo")
    apigw = aws("apigateway")
    api = apigw.create_rest_api(name=f"echo-{uuid.uuid4().hex[:8]}")["id"]
    root = apigw.get_resources(restApiId=api)["items"][0]["id"]
    proxy = apigw.create_resource(restApiId=api, parentId=root, pathPart="{proxy+}")["id"]
    apigw.put_method(restApiId=api, resourceId=proxy, httpMethod="ANY", authorizationType="NONE")
    apigw.put_integration(
        restApiId=api,
        resourceId=proxy,
        httpMethod="ANY",
        type="AWS_PROXY",
        integrationHttpMethod="POST",
        uri=f"arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/{function}/invocations",
    )
    apigw.create_deployment(restApiId=api, stageName="dev")

    # When it is called through the endpoint
    with urllib.request.urlopen(f"{endpoint}/_aws/execute-api/{api}/dev/echo") as response:
        event = json.loads(response.read())

    # Then the event names the API's own domain (what the API builds its links from) and the
    # scheme it was reached with, as API Gateway's does
    domain = event["requestContext"]["domainName"]
    assert domain == f"{api}.execute-api.localhost:{endpoint.rsplit(':', 1)[1]}"
    assert event["requestContext"]["domainPrefix"] == api
    assert event["headers"]["X-Forwarded-Proto"] == "http"
    # and that domain is the engine's: a request addressed to it reaches the same API
    request = urllib.request.Request(f"{endpoint}/dev/echo", headers={"Host": domain})
    with urllib.request.urlopen(request) as response:
        assert json.loads(response.read())["path"] == "/echo"


def test_patch_3_cloudformation_creates_a_metric_math_alarm(aws: Any) -> None:
    # Given a template with an alarm on a metric math expression, as CDK writes a MathExpression
    template = {
        "Resources": {
            "Ratio": {
                "Type": "AWS::CloudWatch::Alarm",
                "Properties": {
                    "ComparisonOperator": "GreaterThanThreshold",
                    "EvaluationPeriods": 1,
                    "Threshold": 0,
                    "TreatMissingData": "notBreaching",
                    "Metrics": [
                        {"Id": "expr", "Expression": "m1 + 0", "ReturnData": True, "Label": "sum"},
                        {
                            "Id": "m1",
                            "ReturnData": False,
                            "MetricStat": {
                                "Metric": {"Namespace": "retrysafe", "MetricName": "Failed"},
                                "Period": 300,
                                "Stat": "Sum",
                            },
                        },
                    ],
                },
            }
        }
    }
    cfn = aws("cloudformation")
    name = f"alarm-{uuid.uuid4().hex[:8]}"

    # When the stack is created
    cfn.create_stack(StackName=name, TemplateBody=json.dumps(template))

    def settled() -> dict[str, Any] | None:
        stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
        return None if stack["StackStatus"].endswith("IN_PROGRESS") else stack

    # Then it completes, as on AWS, and the alarm holds the expression
    assert _wait(settled)["StackStatus"] == "CREATE_COMPLETE"
    alarm_name = cfn.describe_stack_resource(StackName=name, LogicalResourceId="Ratio")[
        "StackResourceDetail"
    ]["PhysicalResourceId"]
    [alarm] = aws("cloudwatch").describe_alarms(AlarmNames=[alarm_name])["MetricAlarms"]
    assert [m["Id"] for m in alarm["Metrics"]] == ["expr", "m1"]
    assert alarm["StateValue"] == "INSUFFICIENT_DATA"
    cfn.delete_stack(StackName=name)


def test_a_function_runs_with_lambdas_runtime_and_none_of_the_hosts_environment(aws: Any) -> None:
    # (not a patch: the engine's virtualenv and the environment localstack_engine.process gives it)
    payload, error = _invoke(aws, _function(aws, "runtime"))

    assert error is None, payload
    assert payload["boto3"]  # the Lambda runtime provides boto3
    assert payload["host_only"] is None
