"""A running local cloud with the fixture assembly: deploy, Lambda, Step Functions, SQS, REST API.

One cloud for the module (moto's backends are process-global); it is stopped, its patches
removed and moto reset when the module ends, so other tiers see plain moto again.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from localcloud import Config, LocalCloud, patches
from ops.local import control, outputs
from tests.localcloud.conftest import ASSEMBLY

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cloud(tmp_path_factory) -> Iterator[LocalCloud]:
    state = tmp_path_factory.mktemp("localcloud")
    config = Config(port=0, state_dir=state, assembly=ASSEMBLY, max_workers=2)
    with LocalCloud(config) as running:
        yield running
    assert not patches.installed()


def wait_for(check: Callable[[], Any], timeout: float = 30.0, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"not true after {timeout}s: {check}")


def invoke(
    cloud: LocalCloud, payload: dict[str, Any], function: str = "fx-local-step"
) -> tuple[Any, str | None]:
    response = cloud.client("lambda").invoke(FunctionName=function, Payload=json.dumps(payload).encode())
    return json.loads(response["Payload"].read()), response.get("FunctionError")


def http(
    method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, list[str]], bytes]:
    request = urllib.request.Request(url, data=body, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, message, data = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, message, data = error.code, error.headers, error.read()
    headers_out: dict[str, list[str]] = {}
    for name, value in message.items():
        headers_out.setdefault(name.lower(), []).append(value)
    return status, headers_out, data


def test_outputs_file_and_describe_stacks(cloud):
    # outputs.json is derived from what `cdk deploy --outputs-file` wrote
    cli_outputs = json.loads(cloud.config.cli_outputs_path.read_text())
    assert cli_outputs["fx-local-data"]["TableName"] == "fx-local-table"
    written = outputs.load(cloud.config.outputs_path)

    assert written == cloud.outputs
    assert written.endpoint == cloud.endpoint.url
    assert written.api_url is not None
    assert written.api_url.startswith("http://127.0.0.1:")
    assert written.api_url.endswith("/local/")
    assert written["ApiUrl"] == written.api_url
    assert written["TableName"] == "fx-local-table"
    assert written["StateMachineArn"].endswith(":stateMachine:fx-local-machine")
    assert not [key for key in written.outputs if key.startswith("ExportsOutput")]
    described = cloud.client("cloudformation").describe_stacks(StackName="fx-local-data")["Stacks"][0]
    assert {o["OutputKey"] for o in described["Outputs"]} >= {"TableName", "QueueUrl", "DlqUrl"}


def test_function_runs_with_its_configuration(cloud):
    payload, error = invoke(cloud, {"action": "ok"})

    assert error is None
    assert payload["endpoint"] == cloud.endpoint.url
    assert payload["memory"] == "256"
    assert payload["pid"] in cloud.workers()["fx-local-step"]


def test_handler_exception_is_unhandled_with_the_class_name(cloud):
    payload, error = invoke(cloud, {"action": "raise"})

    assert error == "Unhandled"
    assert payload["errorType"] == "FixtureError"


def test_killed_worker_leaves_the_cloud_serving(cloud):
    payload, _ = invoke(cloud, {"action": "ok"})
    os.kill(payload["pid"], signal.SIGKILL)

    again, error = invoke(cloud, {"action": "ok"})

    assert error is None
    assert again["pid"] != payload["pid"]


def test_async_invoke_returns_at_once(cloud):
    started = time.monotonic()
    response = cloud.client("lambda").invoke(
        FunctionName="fx-local-step", InvocationType="Event", Payload=b'{"action": "sleep", "seconds": 1}'
    )

    assert response["StatusCode"] == 202
    assert time.monotonic() - started < 1


def run_execution(cloud: LocalCloud, payload: dict[str, Any]) -> dict[str, Any]:
    sfn = cloud.client("stepfunctions")
    arn = sfn.start_execution(stateMachineArn=cloud.outputs["StateMachineArn"], input=json.dumps(payload))[
        "executionArn"
    ]
    return wait_for(lambda: (d := sfn.describe_execution(executionArn=arn))["status"] != "RUNNING" and d, 60)


def test_cfn_state_machine_is_listed_and_runs(cloud):
    names = [m["name"] for m in cloud.client("stepfunctions").list_state_machines()["stateMachines"]]
    assert "fx-local-machine" in names

    done = run_execution(cloud, {"action": "ok"})

    assert done["status"] == "SUCCEEDED"
    assert json.loads(done["output"])["ok"] is True


def test_catch_matches_the_exception_class_name(cloud):
    done = run_execution(cloud, {"action": "raise"})

    assert done["status"] == "SUCCEEDED"
    assert json.loads(done["output"])["error"]["Error"] == "FixtureError"


def test_retry_on_runtime_exit_error_after_a_crash(cloud, tmp_path):
    done = run_execution(cloud, {"action": "crash-once", "marker": str(tmp_path / "crashed")})

    assert done["status"] == "SUCCEEDED"
    history = cloud.client("stepfunctions").get_execution_history(executionArn=done["executionArn"])["events"]
    failures = [
        e["lambdaFunctionFailedEventDetails"]["error"] for e in history if e["type"] == "LambdaFunctionFailed"
    ]
    assert failures == ["Runtime.ExitError"]


def batch_rows(cloud: LocalCloud) -> set[str]:
    items = cloud.client("dynamodb").scan(TableName="fx-local-table")["Items"]
    return {item["id"]["S"] for item in items}


def dlq_bodies(cloud: LocalCloud) -> list[str]:
    sqs = cloud.client("sqs")
    messages = sqs.receive_message(
        QueueUrl=cloud.outputs["DlqUrl"], MaxNumberOfMessages=10, VisibilityTimeout=0
    ).get("Messages", [])
    return sorted(m["Body"] for m in messages)


def test_partial_batch_failure_redelivers_only_the_failed_message_until_the_dlq(cloud):
    # Given the batch function reports "fail-*" bodies in batchItemFailures (maxReceiveCount 2)
    sqs = cloud.client("sqs")
    sqs.send_message_batch(
        QueueUrl=cloud.outputs["QueueUrl"],
        Entries=[
            {
                "Id": body,
                "MessageBody": body,
                "MessageAttributes": {"source": {"DataType": "String", "StringValue": "test"}},
            }
            for body in ("ok-1", "fail-1", "ok-2")
        ],
    )

    # Then the good ones were processed once, the failed one twice, and it ends in the DLQ
    wait_for(lambda: dlq_bodies(cloud) == ["fail-1"], timeout=40)
    rows = batch_rows(cloud)
    assert {"ok-1#1", "ok-2#1", "fail-1#1", "fail-1#2"} <= rows
    assert "ok-1#2" not in rows
    assert "fail-1#3" not in rows
    record = json.loads(
        cloud.client("dynamodb").get_item(TableName="fx-local-table", Key={"id": {"S": "fail-1#2"}})["Item"][
            "record"
        ]["S"]
    )
    assert record["attributes"]["ApproximateReceiveCount"] == "2"
    assert record["messageAttributes"]["source"]["stringValue"] == "test"
    assert record["eventSourceARN"].endswith(":fx-local-batch")
    assert record["awsRegion"] == "us-east-1"


def test_function_error_returns_the_whole_batch(cloud):
    cloud.client("sqs").send_message(QueueUrl=cloud.outputs["QueueUrl"], MessageBody="boom")

    wait_for(lambda: "boom" in dlq_bodies(cloud), timeout=40)

    assert {"boom#1", "boom#2"} <= batch_rows(cloud)


def test_sending_does_not_invoke_synchronously(cloud):
    # moto alone would run the function inside SendMessage; the poller runs it afterwards
    sqs = cloud.client("sqs")
    started = time.monotonic()
    sqs.send_message(QueueUrl=cloud.outputs["QueueUrl"], MessageBody="async-1")

    assert time.monotonic() - started < 1
    wait_for(lambda: "async-1#1" in batch_rows(cloud), timeout=20)


def test_rest_api_over_http(cloud):
    api = cloud.outputs.api_url
    body = json.dumps({"sku": "a", "quantity": 1}).encode()

    status, headers, data = http(
        "POST", f"{api}orders?x=1", body, {"Content-Type": "application/json", "Idempotency-Key": "k1"}
    )

    assert status == 201
    assert headers["x-multi"] == ["a", "b"]
    answer = json.loads(data)
    event = answer["event"]
    assert event["resource"] == "/orders"
    assert event["path"] == "/orders"
    assert event["httpMethod"] == "POST"
    assert event["headers"]["Idempotency-Key"] == "k1"
    assert event["queryStringParameters"] == {"x": "1"}
    assert json.loads(event["body"]) == {"sku": "a", "quantity": 1}
    assert event["requestContext"]["stage"] == "local"
    assert answer["function_name"] == "fx-local-api"
    assert 0 < answer["remaining_ms"] <= 10_000


def test_rest_api_validation_and_unknown_routes(cloud):
    api = cloud.outputs.api_url
    json_type = {"Content-Type": "application/json"}

    missing_header = http("POST", f"{api}orders", b'{"sku": "a", "quantity": 1}', json_type)
    bad_body = http("POST", f"{api}orders", b'{"sku": 1}', {**json_type, "Idempotency-Key": "k"})
    unknown = http("GET", f"{api}nothing-here")

    assert missing_header[0] == 400
    assert (
        json.loads(missing_header[2])["message"] == "Missing required request parameters: [Idempotency-Key]"
    )
    assert bad_body[0] == 400
    assert json.loads(bad_body[2])["message"] == "Invalid request body"
    assert unknown[0] == 403


def test_crash_points_are_configuration_for_new_workers(cloud, tmp_path):
    cloud.set_crash_points("charge.after-provider", state_dir=tmp_path)
    try:
        payload, _ = invoke(cloud, {"action": "ok"})
        assert payload["crash_points"] == "charge.after-provider"
    finally:
        cloud.set_crash_points(None)
    payload, _ = invoke(cloud, {"action": "ok"})
    assert payload["crash_points"] is None


def test_control_routes_switch_crash_points_of_a_running_cloud(cloud, tmp_path):
    endpoint = cloud.outputs.endpoint
    invoke(cloud, {"action": "ok"})
    assert "fx-local-step" in control.status(endpoint)["workers"]

    switched = control.set_crash_points(endpoint, "after:DynamoDB.PutItem@step", state_dir=str(tmp_path))

    assert switched["crash"]["RETRYSAFE_CRASH_POINTS"] == "after:DynamoDB.PutItem@step"
    assert switched["crash"]["RETRYSAFE_CRASH_STATE_DIR"] == str(tmp_path)
    assert switched["workers"] == {}  # warm workers retired
    payload, _ = invoke(cloud, {"action": "ok"})
    assert payload["crash_points"] == "after:DynamoDB.PutItem@step"
    assert control.set_crash_points(endpoint, None)["crash"] == {}
    assert len(control.status(endpoint)["mappings"]) == 1


def test_status_counts_the_cloud_process_cpu_time(cloud):
    # make load divides it by a round's orders: it must be this process's, and only grow
    endpoint = cloud.outputs.endpoint
    before = control.status(endpoint)["cpu_seconds"]
    invoke(cloud, {"action": "ok"})
    after = control.status(endpoint)["cpu_seconds"]

    # the status rounds to the millisecond, so a reading may sit half a unit above the clock
    assert 0 < before <= after <= time.process_time() + 0.0005


def test_prewarm_leaves_a_warm_worker_per_function(cloud):
    results = cloud.prewarm()

    assert results == {"fx-local-api": None, "fx-local-step": None, "fx-local-batch": None}
    assert set(cloud.workers()) == set(results)


def test_concurrent_conditional_writes_of_one_item_admit_exactly_one(cloud):
    # Given 16 clients racing to create the same item with attribute_not_exists
    outcomes: list[str] = []
    barrier = threading.Barrier(16)

    def put(n: int) -> None:
        client = cloud.client("dynamodb")
        barrier.wait()
        try:
            client.put_item(
                TableName="fx-local-table",
                Item={"id": {"S": "race"}, "writer": {"N": str(n)}},
                ConditionExpression="attribute_not_exists(id)",
            )
            outcomes.append("won")
        except ClientError as error:
            outcomes.append(error.response["Error"]["Code"])

    threads = [threading.Thread(target=put, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Then exactly one wins, as DynamoDB guarantees
    assert outcomes.count("won") == 1
    assert outcomes.count("ConditionalCheckFailedException") == 15


def test_concurrent_start_execution_with_one_name_creates_one_execution(cloud):
    arns: list[str] = []
    errors: list[str] = []
    barrier = threading.Barrier(8)

    def start() -> None:
        client = cloud.client("stepfunctions")
        barrier.wait()
        try:
            arns.append(
                client.start_execution(
                    stateMachineArn=cloud.outputs["StateMachineArn"],
                    name="same-name",
                    input='{"action": "ok"}',
                )["executionArn"]
            )
        except client.exceptions.ExecutionAlreadyExists:
            errors.append("exists")

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    executions = cloud.client("stepfunctions").list_executions(
        stateMachineArn=cloud.outputs["StateMachineArn"]
    )
    assert [e["name"] for e in executions["executions"]].count("same-name") == 1
    assert len(set(arns)) == 1
