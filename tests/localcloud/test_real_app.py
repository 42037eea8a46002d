"""The real synthesized `local` stage on the local cloud: it deploys, exposes the contract's outputs
and takes one order from HTTP to COMPLETED through SQS, the worker and the workflow."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcloud import Config, LocalCloud
from ops.seed import seed_service
from ops.service import service as declared_service
from ops.stack_outputs import data_stack_outputs

pytestmark = pytest.mark.slow

FUNCTIONS = (
    "Api",
    "Worker",
    "ReserveInventory",
    "ChargePayment",
    "RecordLedger",
    "PublishEvents",
    "MarkCompleted",
    "ReleaseInventory",
    "MarkFailed",
    "Notify",
    "Analytics",
    "SweepAccepted",
)


@pytest.fixture(scope="module")
def cloud(local_assembly: Path, tmp_path_factory) -> Iterator[LocalCloud]:
    config = Config(port=0, state_dir=tmp_path_factory.mktemp("real"), assembly=local_assembly)
    with LocalCloud(config) as running:
        yield running


def test_every_contract_output_is_there(cloud):
    keys = set(cloud.outputs.outputs)

    assert data_stack_outputs(declared_service()) <= keys
    assert {"ApiUrl", "StateMachineArn"} <= keys
    assert {f"{name}FunctionName" for name in FUNCTIONS} <= keys
    assert cloud.outputs["ApiUrl"] == cloud.outputs.api_url
    assert cloud.outputs.api_url.startswith("http://127.0.0.1:")


def test_every_function_state_machine_table_and_queue_is_created(cloud):
    cfn = cloud.client("cloudformation")
    kinds = ("AWS::Lambda::Function", "AWS::StepFunctions::", "AWS::DynamoDB::", "AWS::SQS::Queue")
    created = [
        resource
        for name in ("retrysafe-local-data", "retrysafe-local-app")
        for resource in cfn.describe_stack_resources(StackName=name)["StackResources"]
        # (resources moto skipped come back without a type)
        if resource.get("ResourceType", "").startswith(kinds)
        and resource["ResourceType"] != "AWS::SQS::QueuePolicy"
    ]

    assert len([r for r in created if r["ResourceType"] == "AWS::Lambda::Function"]) == len(FUNCTIONS)
    assert all(resource.get("PhysicalResourceId") for resource in created)


def get_json(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def test_an_order_completes_end_to_end(cloud):
    seed_service(cloud.client("dynamodb"), cloud.outputs.outputs)
    body = {"customer_id": "c-1", "currency": "EUR", "items": [{"sku": "sku-1", "quantity": 1}]}
    request = urllib.request.Request(
        f"{cloud.outputs.api_url}orders",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Idempotency-Key": "real-app-1"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        accepted = json.loads(response.read())
        assert response.status in (200, 201, 202)

    deadline = time.monotonic() + 120
    status: dict = {}
    while time.monotonic() < deadline:
        _, status = get_json(f"{cloud.outputs.api_url}orders/{accepted['order_id']}")
        if status.get("status") in ("COMPLETED", "FAILED"):
            break
        time.sleep(0.5)

    assert status.get("status") == "COMPLETED", status
    sqs = cloud.client("sqs")
    for dlq in ("OrdersDlqUrl", "NotifyDlqUrl", "AnalyticsDlqUrl"):
        attributes = sqs.get_queue_attributes(QueueUrl=cloud.outputs[dlq], AttributeNames=["All"])[
            "Attributes"
        ]
        assert attributes["ApproximateNumberOfMessages"] == "0", dlq
