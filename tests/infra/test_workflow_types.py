"""The workflow type is a stage setting: each stage's template carries its type, its logging and
times that fit Express's limit; the same steps build both types."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from emulator.synth import cdk_context
from emulator.templates import resources_of_type, state_machine_definition
from infra.capacity import (
    EXPRESS_EXECUTION_TIMEOUT_SECONDS,
    EXPRESS_TIME_LIMIT_SECONDS,
    CapacityError,
    check_express_time,
    visibility_timeout_seconds,
)
from infra.config import ConfigError, WorkflowType, load_config
from orders import workflow
from reliability.cdk.windows import fence_ride_out_seconds
from tests.infra.conftest import SERVICE, STAGES, stack

LEASES = {step.name: step.timeout_seconds for step in workflow.STEPS}
HAPPY_PATH = workflow.happy_path()


def _type(stage: str) -> WorkflowType:
    return load_config(cdk_context(stage)["retrysafe"], stage).workflow


def _machine(stage: str) -> dict[str, Any]:
    (machine,) = resources_of_type(stack(stage, "app"), "AWS::StepFunctions::StateMachine").values()
    return dict(machine["Properties"])


def _definition(stage: str) -> dict[str, Any]:
    arns = {f"{SERVICE}-{stage}-{workflow.function_name(s.name)}": s.name for s in workflow.STEPS}
    return state_machine_definition(stack(stage, "app"), arns)


def _function(stage: str, name: str) -> dict[str, Any]:
    (function,) = [
        f["Properties"]
        for f in resources_of_type(stack(stage, "app"), "AWS::Lambda::Function").values()
        if f["Properties"]["FunctionName"] == f"{SERVICE}-{stage}-{name}"
    ]
    return dict(function)


def _worker_actions(stage: str) -> set[str]:
    template = stack(stage, "app")
    worker_role = _function(stage, "worker")["Role"]["Fn::GetAtt"][0]
    actions: set[str] = set()
    for policy in resources_of_type(template, "AWS::IAM::Policy").values():
        if {"Ref": worker_role} in policy["Properties"]["Roles"]:
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                found = statement["Action"]
                actions |= {found} if isinstance(found, str) else set(found)
    return {action for action in actions if action.startswith("states:")}


def test_standard_is_the_default_and_each_express_stage_says_so() -> None:
    assert {stage: _type(stage) for stage in STAGES} == {
        "dev": WorkflowType.STANDARD,
        "prod": WorkflowType.STANDARD,
        "local": WorkflowType.STANDARD,
        "dev-express": WorkflowType.EXPRESS,
        "local-express": WorkflowType.EXPRESS,
    }


def test_a_workflow_type_that_is_neither_fails_the_synth_naming_the_choices() -> None:
    context = copy.deepcopy(cdk_context("dev")["retrysafe"])
    context["stages"]["dev"]["workflow"] = "express"
    with pytest.raises(ConfigError, match=r"dev\.workflow must be STANDARD or EXPRESS, got 'express'"):
        load_config(context, "dev")


@pytest.mark.parametrize("stage", STAGES)
def test_each_stage_carries_its_type_its_logging_and_its_time_limit(stage: str) -> None:
    props = _machine(stage)
    express = _type(stage) is WorkflowType.EXPRESS
    assert props["StateMachineType"] == _type(stage).value
    # Express keeps no history: its log group logs every failure, and nothing of a run that succeeds
    assert props["LoggingConfiguration"]["Level"] == ("ERROR" if express else "ALL")
    assert props["LoggingConfiguration"]["IncludeExecutionData"] is False
    assert props["LoggingConfiguration"]["Destinations"]
    timeout = _definition(stage).get("TimeoutSeconds")
    assert timeout == (EXPRESS_EXECUTION_TIMEOUT_SECONDS if express else None)


@pytest.mark.parametrize("stage", [s for s in STAGES if _type(s) is WorkflowType.EXPRESS])
def test_on_express_the_worker_outlasts_the_execution_and_the_queue_outlasts_the_worker(stage: str) -> None:
    execution = _definition(stage)["TimeoutSeconds"]
    worker = _function(stage, "worker")
    queues = {
        q["Properties"]["QueueName"]: q["Properties"]
        for q in resources_of_type(stack(stage, "data"), "AWS::SQS::Queue").values()
    }
    visibility = queues[f"{SERVICE}-{stage}-orders"]["VisibilityTimeout"]
    assert execution <= EXPRESS_TIME_LIMIT_SECONDS < worker["Timeout"] < visibility
    assert visibility == visibility_timeout_seconds(worker["Timeout"])
    # one record per invocation: a batch, one record after the other, could outlast Lambda's maximum
    (mapping,) = [
        m["Properties"]
        for m in resources_of_type(stack(stage, "app"), "AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"]["Ref"] == _worker_logical_id(stage)
    ]
    assert mapping["BatchSize"] == 1
    assert worker["Environment"]["Variables"]["WORKFLOW_TYPE"] == "EXPRESS"


def _worker_logical_id(stage: str) -> str:
    (logical_id,) = [
        logical_id
        for logical_id, f in resources_of_type(stack(stage, "app"), "AWS::Lambda::Function").items()
        if f["Properties"]["FunctionName"] == f"{SERVICE}-{stage}-worker"
    ]
    return logical_id


@pytest.mark.parametrize("stage", STAGES)
def test_the_worker_may_do_exactly_what_its_type_needs(stage: str) -> None:
    expected = (
        {"states:StartSyncExecution"}
        if _type(stage) is WorkflowType.EXPRESS
        else {"states:StartExecution", "states:DescribeExecution"}
    )
    assert _worker_actions(stage) == expected


def test_the_same_steps_build_both_types() -> None:
    standard, express = _definition("local"), _definition("local-express")
    assert express.pop("TimeoutSeconds") == EXPRESS_EXECUTION_TIMEOUT_SECONDS
    assert standard == express


def test_the_express_times_fit_and_say_what_does_not() -> None:
    # The declared steps fit: one attempt each plus the slowest ride-out of a dead lease
    check_express_time(leases=LEASES, happy_path=HAPPY_PATH)
    assert (
        sum(LEASES[s] for s in HAPPY_PATH)
        + max(fence_ride_out_seconds(lease) + lease for lease in LEASES.values())
        <= EXPRESS_EXECUTION_TIMEOUT_SECONDS
    )
    # A step whose lease is so long that its FenceBusy waits cannot fit one execution
    with pytest.raises(CapacityError, match=r"ChargePayment's lease and FenceBusy waits \(380 s\)"):
        check_express_time(leases={**LEASES, "ChargePayment": 80}, happy_path=HAPPY_PATH)
    # A TimeoutSeconds past AWS's limit, a worker that would be killed before its execution ends
    with pytest.raises(CapacityError, match="past Express's limit of 300 s"):
        check_express_time(leases=LEASES, happy_path=HAPPY_PATH, execution_timeout=301)
    with pytest.raises(CapacityError, match="must exceed the execution's 300 s"):
        check_express_time(leases=LEASES, happy_path=HAPPY_PATH, worker_timeout=300)
