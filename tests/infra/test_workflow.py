"""The order workflow: Standard, logged and traced, the saga shape, Retry and Catch."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Template

from emulator.templates import state_machine_definition
from orders import workflow
from reliability.cdk.workflow import RETRYABLE_ERRORS

# From the one declaration (orders.workflow): the synthesized definition must say the same.
STEPS = {step.name: workflow.function_name(step.name) for step in workflow.STEPS}
NEXT = {step.name: workflow.next_of(step) or "Done" for step in workflow.STEPS}
CATCH = {
    step.name: [
        {"ErrorEquals": list(errors), "ResultPath": "$.error", "Next": target}
        for target, errors in step.catch.items()
    ]
    for step in workflow.STEPS
    if step.catch
}
ARNS = {
    f"retrysafe-dev-{name}": f"arn:aws:lambda:us-east-1:123456789012:function:retrysafe-dev-{name}"
    for name in STEPS.values()
}


@pytest.fixture(scope="module")
def definition(dev_app_json: dict[str, Any]) -> dict[str, Any]:
    return state_machine_definition(dev_app_json, ARNS)


def test_standard_logged_all_without_execution_data_and_traced(dev_app: Template) -> None:
    (machine,) = dev_app.find_resources("AWS::StepFunctions::StateMachine").values()
    props = machine["Properties"]
    assert props["StateMachineName"] == "retrysafe-dev-order-workflow"
    assert props["StateMachineType"] == "STANDARD"
    assert props["TracingConfiguration"] == {"Enabled": True}
    logging = props["LoggingConfiguration"]
    assert logging["Level"] == "ALL"
    assert logging["IncludeExecutionData"] is False
    dev_app.has_resource_properties(
        "AWS::Logs::LogGroup", {"LogGroupName": "/aws/vendedlogs/states/retrysafe-dev-order-workflow"}
    )


def test_saga_shape(definition: dict[str, Any]) -> None:
    assert definition["StartAt"] == workflow.STEPS[0].name == "ReserveInventory"
    assert definition.get("QueryLanguage", "JSONPath") == "JSONPath"
    states = definition["States"]
    assert set(states) == {*STEPS, "Done"}
    assert states["Done"] == {"Type": "Succeed"}
    for name, state in states.items():
        if name == "Done":
            continue
        assert state["Type"] == "Task"
        assert state["Resource"] == ARNS[f"retrysafe-dev-{STEPS[name]}"]
        assert state["ResultPath"] == f"$.results.{name}"
        assert "InputPath" not in state  # the whole state is the payload
        assert state["Next"] == NEXT[name]
        assert state.get("Catch", []) == CATCH.get(name, [])


def test_every_task_retries_transient_errors_only_with_full_jitter(definition: dict[str, Any]) -> None:
    for name in STEPS:
        fence_busy, retry = definition["States"][name]["Retry"]
        # A busy fence is waited out at the pace of the lease (the step timeout, 20 s), without
        # jitter: the retries run past the lease of any attempt that died holding it.
        assert fence_busy["ErrorEquals"] == ["FenceBusy", "StaleFence"]
        assert fence_busy.get("JitterStrategy", "NONE") == "NONE"
        waits = [
            fence_busy["IntervalSeconds"] * fence_busy["BackoffRate"] ** n
            for n in range(fence_busy["MaxAttempts"])
        ]
        assert sum(waits[:-1]) > 20 >= fence_busy["IntervalSeconds"]
        assert retry["ErrorEquals"] == list(RETRYABLE_ERRORS)
        assert {"OutOfStock", "PaymentDeclined", "States.ALL"}.isdisjoint(retry["ErrorEquals"])
        assert retry["BackoffRate"] == 2
        assert retry["JitterStrategy"] == "FULL"
        assert retry["MaxAttempts"] >= 3
        assert retry["MaxDelaySeconds"] >= retry["IntervalSeconds"]
    assert set(RETRYABLE_ERRORS) == {
        "Lambda.ServiceException",
        "Lambda.AWSLambdaException",
        "Lambda.SdkClientException",
        "Lambda.TooManyRequestsException",
        "Lambda.Unknown",
        "Runtime.ExitError",
        "Sandbox.Timedout",
        "TransientError",
    }


def test_every_step_that_can_lose_its_fence_retries_stale_fence(definition: dict[str, Any]) -> None:
    # Given the steps whose completion is conditional on a fencing token (run_leased): a zombie
    # attempt's completion raises StaleFence, with nothing of it committed
    leased = [step.name for step in workflow.STEPS if step.kind == "leased"]
    assert leased
    for name in leased:
        # Then the workflow retries it (the retry skips, waits or takes over), never fails on it
        retried = [r for r in definition["States"][name]["Retry"] if "StaleFence" in r["ErrorEquals"]]
        assert retried, f"{name} does not retry StaleFence"
        assert retried[0]["MaxAttempts"] >= 3


def test_state_machine_role_invokes_only_the_step_functions(dev_app_json: dict[str, Any]) -> None:
    (machine,) = [
        r for r in dev_app_json["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    role = machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    invoked = set()
    for resource in dev_app_json["Resources"].values():
        if resource["Type"] != "AWS::IAM::Policy" or {"Ref": role} not in resource["Properties"]["Roles"]:
            continue
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Action"] == "lambda:InvokeFunction":
                for arn in statement["Resource"]:
                    target = (
                        arn["Fn::GetAtt"][0]
                        if "Fn::GetAtt" in arn
                        else arn["Fn::Join"][1][0]["Fn::GetAtt"][0]
                    )
                    invoked.add(dev_app_json["Resources"][target]["Properties"]["FunctionName"])
    assert invoked == set(ARNS)


def test_failed_executions_alarm(dev_app: Template) -> None:
    (alarm,) = dev_app.find_resources(
        "AWS::CloudWatch::Alarm",
        {"Properties": {"AlarmName": "retrysafe-dev-order-workflow-executions-failed"}},
    ).values()
    metrics = {
        m["MetricStat"]["Metric"]["MetricName"] for m in alarm["Properties"]["Metrics"] if "MetricStat" in m
    }
    assert metrics == {"ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted"}
    assert alarm["Properties"]["Threshold"] == 1
