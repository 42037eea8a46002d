"""Pure pieces of the local cloud: SQS event shape, batch failures, config, outputs, patches."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from moto.awslambda.models import LambdaFunction
from moto.cloudformation.models import CloudFormationBackend
from moto.sqs.models import Queue
from moto.ssm.models import SimpleSystemManagerBackend
from moto.stepfunctions import models as sfn_models

from emulator.shapes import failed_ids, sqs_record
from emulator.synth import stacks_of_stage, synth_inputs
from localcloud import patches
from localcloud.config import Config
from localcloud.lambdas import LambdaRuntime
from localcloud.pollers import RECEIVE_WAIT_SECONDS, Mapping, SqsPoller
from localcloud.synth import is_stale
from ops.local import outputs


def test_cli_outputs_point_execute_api_urls_at_the_local_rest_api():
    # Given the outputs file `cdk deploy` wrote and the REST API the local cloud serves
    cli = {
        "fx-local-data": {"TableName": "fx-local-table", "ExportsOutputRefTable1": "fx-local-table"},
        "fx-local-app": {"ApiUrl": "https://abc123.execute-api.us-east-1.amazonaws.com/None/"},
    }
    endpoint = outputs.Endpoint("http://localhost:4599", "us-east-1")

    # When outputs.json is derived from them
    local = outputs.from_cli_outputs(cli, endpoint=endpoint, apis={"abc123": "http://127.0.0.1:4600/local/"})

    # Then the API URL is the local one; CDK's exports stay out of the merged outputs
    assert local.api_url == "http://127.0.0.1:4600/local/"
    assert local["ApiUrl"] == "http://127.0.0.1:4600/local/"
    assert local.outputs == {"TableName": "fx-local-table", "ApiUrl": "http://127.0.0.1:4600/local/"}
    assert local.stacks["fx-local-data"]["ExportsOutputRefTable1"] == "fx-local-table"
    assert (local.endpoint, local.region) == (endpoint.url, "us-east-1")


def test_endpoint_file_round_trip(tmp_path: Path):
    outputs.write_endpoint(outputs.Endpoint("http://localhost:4599", "eu-west-1"), tmp_path)

    assert outputs.load_endpoint(tmp_path) == outputs.Endpoint("http://localhost:4599", "eu-west-1")
    with pytest.raises(FileNotFoundError):
        outputs.load_endpoint(tmp_path / "none")


def test_sqs_record_has_the_lambda_event_shape():
    message = {
        "MessageId": "m1",
        "ReceiptHandle": "rh",
        "Body": "hello",
        "MD5OfBody": "md5",
        "MD5OfMessageAttributes": "md5a",
        "Attributes": {"ApproximateReceiveCount": "2", "SentTimestamp": "1", "SenderId": "s", "Other": "x"},
        "MessageAttributes": {
            "reason": {"DataType": "String", "StringValue": "bad"},
            "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
        },
    }

    record = sqs_record(message, queue_arn="arn:aws:sqs:us-east-1:123456789012:q", region="us-east-1")

    assert record["messageId"] == "m1"
    assert record["receiptHandle"] == "rh"
    assert record["attributes"] == {"ApproximateReceiveCount": "2", "SentTimestamp": "1", "SenderId": "s"}
    assert record["messageAttributes"]["reason"]["stringValue"] == "bad"
    assert record["messageAttributes"]["blob"]["binaryValue"] == "AAE="
    assert record["md5OfMessageAttributes"] == "md5a"
    assert record["eventSource"] == "aws:sqs"
    assert record["eventSourceARN"].endswith(":q")
    assert record["awsRegion"] == "us-east-1"


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (None, set()),
        ({}, set()),
        ({"batchItemFailures": []}, set()),
        ({"batchItemFailures": [{"itemIdentifier": "a"}]}, {"a"}),
        ({"batchItemFailures": [{"itemIdentifier": "a"}, {"itemIdentifier": "b"}]}, {"a", "b"}),
        ({"batchItemFailures": [{"itemIdentifier": ""}]}, None),
        ({"batchItemFailures": [{"itemIdentifier": "zzz"}]}, None),
        ({"batchItemFailures": [{}]}, None),
        ({"batchItemFailures": "a"}, None),
    ],
)
def test_report_batch_item_failures_rules(payload, expected):
    assert failed_ids(payload, {"a", "b"}) == expected


def test_config_from_env_and_overrides(monkeypatch):
    monkeypatch.setenv("LOCALCLOUD_PORT", "4700")
    monkeypatch.setenv("RETRYSAFE_CRASH_POINTS", "p1")
    monkeypatch.delenv("LOCALCLOUD_API_PORT", raising=False)

    config = Config.from_env(region="eu-west-1")

    assert config.port == 4700
    assert config.rest_api_port == 4701
    assert config.endpoint == "http://localhost:4700"
    assert config.region == "eu-west-1"
    assert config.crash_env()["RETRYSAFE_CRASH_POINTS"] == "p1"
    assert Config.from_env(port=0).rest_api_port == 0
    monkeypatch.delenv("RETRYSAFE_CRASH_POINTS")
    assert Config.from_env().crash_env() == {}


def test_default_port_is_not_localstacks(monkeypatch):
    monkeypatch.delenv("LOCALCLOUD_PORT", raising=False)

    assert Config.from_env().port not in (4566, 4510)


def test_outputs_round_trip(tmp_path: Path):
    written = outputs.Outputs(
        endpoint="http://127.0.0.1:1",
        api_url="http://127.0.0.1:2/local/",
        region="us-east-1",
        outputs={"A": "b"},
    )
    outputs.write(written, tmp_path / "outputs.json")

    loaded = outputs.load(tmp_path / "outputs.json")

    assert loaded == written
    assert loaded["A"] == "b"
    assert loaded.client_env()["AWS_ENDPOINT_URL"] == "http://127.0.0.1:1"


def test_assembly_is_stale_when_sources_are_newer(tmp_path: Path):
    project, assembly = tmp_path / "project", tmp_path / "assembly"
    (project / "infra").mkdir(parents=True)
    assembly.mkdir()
    assert is_stale(assembly, project)
    (project / "infra" / "x.py").write_text("")
    (assembly / "manifest.json").write_text("{}")
    os.utime(project / "infra" / "x.py", (1, 1))
    assert not is_stale(assembly, project)
    os.utime(project / "infra" / "x.py", (time.time() + 10, time.time() + 10))
    assert is_stale(assembly, project)


def test_only_an_assembly_of_the_wanted_stage_is_reused(assembly, tmp_path: Path):
    assert stacks_of_stage(assembly, "local")
    assert not stacks_of_stage(assembly, "dev")
    assert not stacks_of_stage(tmp_path, "local")
    # a stage whose name starts with another's is not that one
    express = tmp_path / "express"
    express.mkdir()
    stacks = {f"fx-local-express-{kind}": {"type": "aws:cloudformation:stack"} for kind in ("data", "app")}
    (express / "manifest.json").write_text(json.dumps({"artifacts": stacks}))
    assert stacks_of_stage(express, "local-express")
    assert not stacks_of_stage(express, "local")


def test_outputs_default_path_follows_localcloud_dir(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("LOCALCLOUD_DIR", str(tmp_path))
    outputs.write(
        outputs.Outputs(endpoint="http://127.0.0.1:1", api_url=None, region="r"), tmp_path / "outputs.json"
    )

    assert outputs.load().endpoint == "http://127.0.0.1:1"


def test_patches_install_and_uninstall_restore_moto(tmp_path: Path):
    original_invoke = LambdaFunction._invoke_lambda
    original_backends = sfn_models.stepfunctions_backends
    original_execute = CloudFormationBackend.execute_change_set
    original_get_parameter = SimpleSystemManagerBackend.get_parameter
    runtime = LambdaRuntime(state_dir=tmp_path, endpoint="http://127.0.0.1:9")
    try:
        patches.install(runtime)
        assert LambdaFunction._invoke_lambda is not original_invoke
        assert isinstance(Queue.__dict__["lambda_event_source_mappings"], property)
        assert sfn_models.stepfunctions_backends is not original_backends
        assert CloudFormationBackend.execute_change_set is not original_execute
        assert SimpleSystemManagerBackend.get_parameter is not original_get_parameter
    finally:
        patches.uninstall()
        runtime.close()

    assert LambdaFunction._invoke_lambda is original_invoke
    assert "lambda_event_source_mappings" not in Queue.__dict__
    assert sfn_models.stepfunctions_backends is original_backends
    assert CloudFormationBackend.execute_change_set is original_execute
    assert SimpleSystemManagerBackend.get_parameter is original_get_parameter
    assert not patches.installed()


class _StoppingQueue:
    """An SQS client whose long poll returns a message after the poller was stopped meanwhile."""

    def __init__(self, poller: Callable[[], SqsPoller]) -> None:
        self.poller = poller
        self.waits: list[int] = []

    def get_queue_url(self, **_: Any) -> dict[str, str]:
        return {"QueueUrl": "http://localhost:4599/123456789012/q"}

    def receive_message(self, **kwargs: Any) -> dict[str, Any]:
        self.waits.append(kwargs["WaitTimeSeconds"])
        self.poller().stop()  # make local-down while the poll waits
        return {"Messages": [{"MessageId": "m-1", "ReceiptHandle": "r-1", "Body": "{}"}]}


class _NoInvokes:
    def invoke(self, **_: Any) -> dict[str, Any]:
        raise AssertionError("a stopped poller invoked a function")


def test_a_poller_long_polls_and_invokes_nothing_it_receives_after_it_was_stopped():
    arn = "arn:aws:{}:us-east-1:123456789012:{}"
    mapping = Mapping("u-1", arn.format("lambda", "function:f"), arn.format("sqs", "q"), 10, True)
    queue = _StoppingQueue(lambda: poller)
    clients = {"sqs": queue, "lambda": _NoInvokes()}
    poller = SqsPoller(mapping, clients=clients.__getitem__, region="us-east-1")

    assert poller.poll_once() == 0  # the batch is left to come back after its visibility timeout
    assert queue.waits == [RECEIVE_WAIT_SECONDS] == [20]  # SQS's longest wait, as Lambda's pollers


def test_the_local_cloud_and_the_synth_cache_go_stale_on_the_same_inputs(tmp_path: Path):
    # Given an assembly built after every source, pinned dependencies included
    project, assembly = tmp_path / "project", tmp_path / "assembly"
    (project / "infra").mkdir(parents=True)
    assembly.mkdir()
    (project / "constraints.txt").write_text("aws-cdk-lib==2.275.0\n")
    (assembly / "manifest.json").write_text("{}")
    os.utime(project / "constraints.txt", (1, 1))
    assert not is_stale(assembly, project)
    # When a pin changes (the synth cache's fingerprint covers it: emulator.synth.synth_inputs)
    os.utime(project / "constraints.txt", (time.time() + 10, time.time() + 10))
    # Then the local cloud's assembly is stale too
    assert project / "constraints.txt" in synth_inputs(project)
    assert is_stale(assembly, project)
