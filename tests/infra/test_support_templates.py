"""The template readers other tiers use (lab/src/emulator/templates.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from emulator.templates import (
    TemplateError,
    exports_of,
    function_specs,
    state_machine_definition,
)

ARN = "arn:aws:lambda:us-east-1:123456789012:function:{}"


def _template(definition: Any) -> dict[str, Any]:
    return {
        "Resources": {
            "StepOneFn": {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "FunctionName": "svc-dev-one",
                    "Handler": "pkg.one",
                    "Timeout": 20,
                    "MemorySize": 256,
                    "Environment": {
                        "Variables": {
                            "STAGE": "dev",
                            "ORDERS_TABLE": {"Fn::ImportValue": "svc-dev-data:ExportsOutputRefOrders"},
                            "LOCAL_TABLE": {"Ref": "LocalTable"},
                            "QUEUE_URL": {"Ref": "Queue"},
                            "MACHINE": {"Ref": "Machine"},
                            "OTHER": {"Fn::GetAtt": ["Queue", "Arn"]},
                        }
                    },
                },
            },
            "StepTwoFn": {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "FunctionName": "svc-dev-two",
                    "Handler": "pkg.two",
                    "Timeout": 5,
                    "MemorySize": 128,
                },
            },
            "LocalTable": {"Type": "AWS::DynamoDB::Table", "Properties": {"TableName": "svc-dev-local"}},
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "svc-dev-q"}},
            "Machine": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {"StateMachineName": "svc-dev-flow", "DefinitionString": definition},
            },
        },
        "Outputs": {
            "ExportsOutputRefLocal": {
                "Value": {"Ref": "LocalTable"},
                "Export": {"Name": "svc-dev:LocalTable"},
            },
            "ExportsOutputRefQueue": {"Value": {"Ref": "Queue"}, "Export": {"Name": "svc-dev:Queue"}},
            "Plain": {"Value": "x"},
        },
    }


JOINED = {
    "Fn::Join": [
        "",
        [
            '{"StartAt":"One","States":{"One":{"Type":"Task","Resource":"',
            {"Fn::GetAtt": ["StepOneFn", "Arn"]},
            '","Next":"Two"},"Two":{"Type":"Task","Resource":"',
            {"Fn::GetAtt": ["StepTwoFn", "Arn"]},
            '","End":true}}}',
        ],
    ]
}
ARNS = {"svc-dev-one": ARN.format("svc-dev-one"), "svc-dev-two": ARN.format("svc-dev-two")}


def test_definition_substitutes_each_lambda_arn_by_function_name() -> None:
    definition = state_machine_definition(_template(JOINED), ARNS)
    assert definition["StartAt"] == "One"
    assert definition["States"]["One"]["Resource"] == ARNS["svc-dev-one"]
    assert definition["States"]["Two"]["Resource"] == ARNS["svc-dev-two"]


def test_definition_that_is_already_a_string_is_parsed() -> None:
    asl = {"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}
    assert state_machine_definition(_template(json.dumps(asl)), {}) == asl


def test_definition_needs_every_arn() -> None:
    with pytest.raises(KeyError, match="svc-dev-two"):
        state_machine_definition(_template(JOINED), {"svc-dev-one": "arn"})


def test_definition_rejects_other_intrinsics() -> None:
    joined = {"Fn::Join": ["", ['{"a":"', {"Ref": "AWS::Region"}, '"}']]}
    with pytest.raises(TemplateError):
        state_machine_definition(_template(joined), ARNS)


def test_definition_needs_exactly_one_state_machine() -> None:
    template = _template(JOINED)
    del template["Resources"]["Machine"]
    with pytest.raises(TemplateError):
        state_machine_definition(template, ARNS)


def test_function_specs_resolve_refs_and_imports_best_effort() -> None:
    template = _template(JOINED)
    specs = function_specs(
        template,
        exports={"svc-dev-data:ExportsOutputRefOrders": "svc-dev-orders"},
        names={"svc-dev-flow": "arn:flow"},
        queue_url=lambda name: f"http://localhost:5000/123456789012/{name}",
    )
    assert [s["FunctionName"] for s in specs] == ["svc-dev-one", "svc-dev-two"]
    one, two = specs
    assert (one["Handler"], one["Timeout"], one["MemorySize"]) == ("pkg.one", 20, 256)
    assert one["Environment"] == {
        "STAGE": "dev",
        "ORDERS_TABLE": "svc-dev-orders",
        "LOCAL_TABLE": "svc-dev-local",
        "QUEUE_URL": "http://localhost:5000/123456789012/svc-dev-q",
        "MACHINE": "arn:flow",
        "OTHER": {"Fn::GetAtt": ["Queue", "Arn"]},  # left as is
    }
    assert two["Environment"] == {}


def test_function_specs_leave_unknown_values_unresolved() -> None:
    (one, _) = function_specs(_template(JOINED))
    assert one["Environment"]["ORDERS_TABLE"] == {"Fn::ImportValue": "svc-dev-data:ExportsOutputRefOrders"}
    assert one["Environment"]["QUEUE_URL"] == {"Ref": "Queue"}
    assert one["Environment"]["LOCAL_TABLE"] == "svc-dev-local"


def test_exports_of_resolves_table_names_and_queue_urls() -> None:
    exports = exports_of(_template(JOINED), queue_url=lambda name: f"url/{name}")
    assert exports == {"svc-dev:LocalTable": "svc-dev-local", "svc-dev:Queue": "url/svc-dev-q"}


def test_on_the_real_templates_every_variable_resolves(
    dev_app_json: dict[str, Any], dev_data_json: dict[str, Any]
) -> None:
    # Given the synthesized dev stage and a local endpoint for queue URLs
    exports = exports_of(dev_data_json, queue_url=lambda name: f"http://localhost:5000/000000000000/{name}")
    machine = "arn:aws:states:us-east-1:000000000000:stateMachine:retrysafe-dev-order-workflow"
    # When reading the function specs
    specs = function_specs(dev_app_json, exports=exports, names={"retrysafe-dev-order-workflow": machine})
    # Then every environment value is a plain string
    assert len(specs) == 12
    for spec in specs:
        unresolved = {k: v for k, v in spec["Environment"].items() if not isinstance(v, str)}
        assert unresolved == {}, spec["FunctionName"]
    (worker,) = [s for s in specs if s["FunctionName"] == "retrysafe-dev-worker"]
    assert worker["Environment"]["STATE_MACHINE_ARN"] == machine
    assert worker["Environment"]["ORDERS_DLQ_URL"].endswith("/retrysafe-dev-orders-dlq")
