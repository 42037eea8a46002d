"""Express workflows on moto (lab/src/emulator/patches_express.py, E1-E6), one test per patch: each fails
on moto as it is and passes with the patch, as the local cloud applies it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any
from unittest import mock

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.stepfunctions import models as sfn_models
from moto.stepfunctions.parser.models import stepfunctions_parser_backends

from emulator import patches_express
from reliability.cdk.windows import EXPRESS_TIME_LIMIT_SECONDS

ACCOUNT, REGION = "123456789012", "us-east-1"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/r"
GROUP = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:g"
PASS = {"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": {"ok": True}, "End": True}}}
FAIL = {"StartAt": "F", "States": {"F": {"Type": "Fail", "Error": "Boom", "Cause": "on purpose"}}}
# Waits 3 s, but may run 1 s: stopped TIMED_OUT.
SLOW = {"StartAt": "W", "TimeoutSeconds": 1, "States": {"W": {"Type": "Wait", "Seconds": 3, "End": True}}}


@pytest.fixture
def patched() -> Iterator[dict[str, Any]]:
    """E1-E5 applied as `localcloud.patches.install` applies them (and restored)."""
    originals: dict[str, Any] = {}
    patches_express.apply(originals)
    try:
        yield originals
    finally:
        patches_express.restore(originals)


@pytest.fixture
def sfn() -> Iterator[Any]:
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        # no host prefix: the local cloud's workers send every call to its one endpoint
        yield boto3.client("stepfunctions", region_name=REGION, config=Config(inject_host_prefix=False))


def _machine(sfn: Any, definition: dict[str, Any], kind: str = "EXPRESS", name: str = "m") -> str:
    created = sfn.create_state_machine(name=name, definition=json.dumps(definition), roleArn=ROLE, type=kind)
    return str(created["stateMachineArn"])


def _code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


# --- E1 ------------------------------------------------------------------------------------------
def test_moto_has_no_start_sync_execution(sfn: Any) -> None:
    with pytest.raises(NotImplementedError, match="start_sync_execution"):
        sfn.start_sync_execution(stateMachineArn=_machine(sfn, PASS), input="{}")


def test_e1_start_sync_execution_answers_once_the_execution_has_ended(patched: Any, sfn: Any) -> None:
    ok = sfn.start_sync_execution(stateMachineArn=_machine(sfn, PASS), name="run", input='{"a": 1}')
    assert (ok["status"], json.loads(ok["output"]), ok["name"]) == ("SUCCEEDED", {"ok": True}, "run")
    assert ok["stopDate"] >= ok["startDate"]
    # a failure is an answer (HTTP 200), with its error and cause
    failed = sfn.start_sync_execution(stateMachineArn=_machine(sfn, FAIL, name="f"), input="{}")
    assert (failed["status"], failed["error"], failed["cause"]) == ("FAILED", "Boom", "on purpose")
    # a Standard state machine is refused
    with pytest.raises(ClientError) as refused:
        sfn.start_sync_execution(stateMachineArn=_machine(sfn, PASS, "STANDARD", "s"), input="{}")
    assert _code(refused) == "StateMachineTypeNotSupported"


# --- E2 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("patch", [False, True])
def test_e2_two_starts_of_one_name_are_two_executions(
    request: pytest.FixtureRequest, sfn: Any, patch: bool
) -> None:
    if patch:
        request.getfixturevalue("patched")
    arn = _machine(sfn, PASS)
    first = sfn.start_execution(stateMachineArn=arn, name="same", input="{}")["executionArn"]
    try:
        second = sfn.start_execution(stateMachineArn=arn, name="same", input="{}")["executionArn"]
    except sfn.exceptions.ExecutionAlreadyExists:
        # Standard's name dedup of a closed execution, as AWS answers it (and moto, where another
        # test of this process installed the simulator's Step Functions patches)
        second = first
    # Standard's name dedup: the first execution again, or refused; Express runs both
    assert (first != second) is patch
    if patch:
        assert first.split(":")[5] == "express"
        backend = stepfunctions_parser_backends[ACCOUNT][REGION]
        assert [e.name for e in patches_express.express_executions(backend, arn)] == ["same", "same"]


# --- E3 ------------------------------------------------------------------------------------------
def test_e3_an_express_execution_has_no_description_history_stop_or_listing(patched: Any, sfn: Any) -> None:
    arn = _machine(sfn, PASS)
    execution = sfn.start_sync_execution(stateMachineArn=arn, input="{}")["executionArn"]
    for call in (sfn.describe_execution, sfn.get_execution_history, sfn.stop_execution):
        with pytest.raises(ClientError) as refused:
            call(executionArn=execution)
        assert _code(refused) == "InvalidArn"
    with pytest.raises(ClientError) as unlisted:
        sfn.list_executions(stateMachineArn=arn)
    assert _code(unlisted) == "StateMachineTypeNotSupported"
    # while a Standard execution is described, listed and has its history, as before
    standard = _machine(sfn, PASS, "STANDARD", "s")
    started = sfn.start_execution(stateMachineArn=standard, name="x", input="{}")["executionArn"]
    assert sfn.describe_execution(executionArn=started)["name"] == "x"
    assert [e["name"] for e in sfn.list_executions(stateMachineArn=standard)["executions"]] == ["x"]


# --- E4 ------------------------------------------------------------------------------------------
def test_e4_an_express_execution_is_stopped_at_its_time_limit(patched: Any, sfn: Any) -> None:
    began = time.monotonic()
    ended = sfn.start_sync_execution(stateMachineArn=_machine(sfn, SLOW), input="{}")
    assert ended["status"] == "TIMED_OUT"
    assert time.monotonic() - began < 2.5


def test_e4_the_limit_is_timeout_seconds_and_five_minutes_at_most_on_express() -> None:
    class Program:
        def __init__(self, seconds: int | None) -> None:
            self.timeout_seconds = type("T", (), {"timeout_seconds": seconds})() if seconds else None

    class Env:
        def __init__(self, kind: str) -> None:
            self.execution_type = kind

    limit = patches_express.time_limit
    assert limit(Program(None), Env("EXPRESS")) == EXPRESS_TIME_LIMIT_SECONDS == 300
    assert limit(Program(600), Env("EXPRESS")) == 300
    assert limit(Program(60), Env("EXPRESS")) == 60
    assert limit(Program(None), Env("STANDARD")) is None
    assert limit(Program(600), Env("STANDARD")) == 600


# --- E5 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("patch", [False, True])
def test_e5_cloudformation_creates_the_type_and_logging_the_template_says(
    request: pytest.FixtureRequest, patch: bool
) -> None:
    if patch:
        request.getfixturevalue("patched")
    template = {
        "Properties": {
            "StateMachineName": "from-template",
            "DefinitionString": json.dumps(PASS),
            "RoleArn": ROLE,
            "StateMachineType": "EXPRESS",
            "LoggingConfiguration": {
                "Level": "ERROR",
                "IncludeExecutionData": False,
                "Destinations": [
                    {"CloudWatchLogsLogGroup": {"LogGroupArn": "arn:aws:logs:us-east-1:1:log-group:g"}}
                ],
            },
        }
    }
    with mock_aws():
        machine = sfn_models.StateMachine.create_from_cloudformation_json("X", template, ACCOUNT, REGION)
    assert (machine.type == "EXPRESS") is patch
    assert (machine.loggingConfiguration["level"] == "ERROR") is patch


# --- E6 ------------------------------------------------------------------------------------------
def test_e6_the_sdk_reaches_start_sync_execution_on_its_sync_host_in_process(patched: Any) -> None:
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        client = boto3.client("stepfunctions", region_name=REGION)  # the SDK's sync- host prefix
        arn = _machine(client, PASS)
        with pytest.raises(ClientError, match="Not yet implemented"):
            client.start_sync_execution(stateMachineArn=arn, input="{}")
        with ExitStack() as stack:
            for owner, name, replacement in patches_express.sync_endpoint():
                stack.enter_context(mock.patch.object(owner, name, replacement))
            assert client.start_sync_execution(stateMachineArn=arn, input="{}")["status"] == "SUCCEEDED"
