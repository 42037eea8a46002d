"""Read what other tiers need out of a synthesized template, without CDK.

`read_template` loads one stack's template from a cloud assembly (`emulator.synth` makes them);
`state_machine_definition` gives the deployable ASL with each Lambda ARN substituted (the
integration tests run it on moto); `function_specs` lists every function with its handler,
sizing and environment.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

_PHYSICAL_NAME = {
    "AWS::DynamoDB::Table": "TableName",
    "AWS::SQS::Queue": "QueueName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::StepFunctions::StateMachine": "StateMachineName",
}


class TemplateError(ValueError):
    """The template does not have the shape these helpers read."""


def read_template(assembly: Path, suffix: str) -> dict[str, Any]:
    matches = sorted(assembly.glob(f"*-{suffix}.template.json"))
    if len(matches) != 1:
        raise FileNotFoundError(f"expected one *-{suffix}.template.json in {assembly}, found {matches}")
    return json.loads(matches[0].read_text())


def resources_of_type(template: Mapping[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in template.get("Resources", {}).items()
        if resource.get("Type") == resource_type
    }


def physical_name(template: Mapping[str, Any], logical_id: str) -> str | None:
    resource = template.get("Resources", {}).get(logical_id)
    if resource is None:
        return None
    prop = _PHYSICAL_NAME.get(resource.get("Type", ""))
    value = resource.get("Properties", {}).get(prop) if prop else None
    return value if isinstance(value, str) else None


def state_machine_definition(template: Mapping[str, Any], function_arns: Mapping[str, str]) -> dict[str, Any]:
    """The parsed ASL of the template's one state machine, every `Fn::GetAtt [<Lambda>, Arn]`
    replaced by `function_arns[<that Lambda's FunctionName>]`."""
    machines = resources_of_type(template, "AWS::StepFunctions::StateMachine")
    if len(machines) != 1:
        raise TemplateError(f"expected one AWS::StepFunctions::StateMachine, found {sorted(machines)}")
    (machine,) = machines.values()
    definition = machine["Properties"].get("DefinitionString")
    if isinstance(definition, str):
        return dict(json.loads(definition))
    if not (isinstance(definition, dict) and set(definition) == {"Fn::Join"}):
        raise TemplateError(f"DefinitionString is neither a string nor an Fn::Join: {definition!r}")
    separator, parts = definition["Fn::Join"]
    text = []
    for part in parts:
        if isinstance(part, str):
            text.append(part)
            continue
        logical_id = _getatt_arn(part)
        name = physical_name(template, logical_id)
        if name is None:
            raise TemplateError(f"{logical_id} is not a Lambda function with a FunctionName")
        if name not in function_arns:
            raise KeyError(f"no ARN given for function {name!r} (known: {sorted(function_arns)})")
        text.append(function_arns[name])
    return dict(json.loads(separator.join(text)))


def _getatt_arn(part: Any) -> str:
    if isinstance(part, dict) and set(part) == {"Fn::GetAtt"}:
        target = part["Fn::GetAtt"]
        if isinstance(target, list) and len(target) == 2 and target[1] == "Arn":
            return str(target[0])
    raise TemplateError(f"unsupported part in DefinitionString: {part!r}")


class _Resolver:
    """Best-effort static resolution of Ref / Fn::ImportValue; anything else is returned as is."""

    def __init__(
        self,
        template: Mapping[str, Any],
        *,
        exports: Mapping[str, Any] | None,
        names: Mapping[str, str] | None,
        queue_url: Callable[[str], str] | None,
    ) -> None:
        self.template = template
        self.exports = exports or {}
        self.names = names or {}
        self.queue_url = queue_url

    def __call__(self, value: Any) -> Any:  # noqa: PLR0911 - one return per intrinsic
        if not isinstance(value, dict) or len(value) != 1:
            return value
        if "Fn::ImportValue" in value:
            return self.exports.get(value["Fn::ImportValue"], value)
        if "Ref" in value:
            logical_id = value["Ref"]
            name = physical_name(self.template, logical_id)
            if name is None:
                return value
            if name in self.names:
                return self.names[name]
            resource_type = self.template["Resources"][logical_id]["Type"]
            if resource_type == "AWS::DynamoDB::Table":
                return name
            if resource_type == "AWS::SQS::Queue" and self.queue_url is not None:
                return self.queue_url(name)
        return value


def exports_of(
    template: Mapping[str, Any],
    *,
    names: Mapping[str, str] | None = None,
    queue_url: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """The template's exports (`Outputs.*.Export.Name` -> value), resolved as far as possible.

    A table's Ref resolves to its TableName; a queue's Ref to `queue_url(QueueName)` when given;
    any physical name in `names` (e.g. a state machine's name -> its ARN) to that value.
    """
    resolve = _Resolver(template, exports=None, names=names, queue_url=queue_url)
    return {
        output["Export"]["Name"]: resolve(output["Value"])
        for output in template.get("Outputs", {}).values()
        if isinstance(output.get("Export", {}).get("Name"), str)
    }


def function_specs(
    template: Mapping[str, Any],
    *,
    exports: Mapping[str, Any] | None = None,
    names: Mapping[str, str] | None = None,
    queue_url: Callable[[str], str] | None = None,
) -> list[dict[str, Any]]:
    """Every AWS::Lambda::Function: FunctionName, Handler, Environment (variables, with Ref and
    Fn::ImportValue resolved best-effort: pass `exports=exports_of(data_template, ...)`),
    Timeout, MemorySize, Runtime. Sorted by FunctionName."""
    resolve = _Resolver(template, exports=exports, names=names, queue_url=queue_url)
    specs = []
    for resource in resources_of_type(template, "AWS::Lambda::Function").values():
        props = resource.get("Properties", {})
        variables = props.get("Environment", {}).get("Variables", {})
        specs.append(
            {
                "FunctionName": props.get("FunctionName"),
                "Handler": props.get("Handler"),
                "Environment": {key: resolve(value) for key, value in variables.items()},
                "Timeout": props.get("Timeout"),
                "MemorySize": props.get("MemorySize"),
                "Runtime": props.get("Runtime"),
            }
        )
    return sorted(specs, key=lambda spec: str(spec["FunctionName"]))


def workflow_tasks(template: Mapping[str, Any]) -> dict[str, str]:
    """The state machine's Lambda tasks: state name -> the FunctionName it invokes (the step
    functions, read from the synthesized definition rather than from a list)."""
    names = [physical_name(template, logical_id) for logical_id in resources_of_type(template, _LAMBDA)]
    definition = state_machine_definition(template, {name: name for name in names if name})
    return {
        state: str(spec["Resource"])
        for state, spec in definition["States"].items()
        if spec.get("Type") == "Task" and spec.get("Resource") in names
    }


def queue_consumers(data_template: Mapping[str, Any], app_template: Mapping[str, Any]) -> dict[str, str]:
    """Each queue's consumer, from the app stack's event source mappings: the queue's URL output
    key (`JournalQueueUrl`) -> the function's output prefix (`Journal`, as in `JournalFunctionName`)."""
    exported = {
        output["Export"]["Name"]: output["Value"]
        for output in data_template.get("Outputs", {}).values()
        if "Export" in output
    }
    queue_outputs = {
        output["Value"]["Ref"]: key
        for key, output in data_template.get("Outputs", {}).items()
        if "Export" not in output and set(output["Value"]) == {"Ref"}
    }
    function_outputs = {
        output["Value"].get("Ref"): key.removesuffix("FunctionName")
        for key, output in app_template.get("Outputs", {}).items()
        if key.endswith("FunctionName") and isinstance(output["Value"], dict)
    }
    consumers = {}
    for mapping in resources_of_type(app_template, "AWS::Lambda::EventSourceMapping").values():
        props = mapping["Properties"]
        queue_arn = exported[props["EventSourceArn"]["Fn::ImportValue"]]
        queue_logical_id = queue_arn["Fn::GetAtt"][0]
        consumers[queue_outputs[queue_logical_id]] = function_outputs[props["FunctionName"]["Ref"]]
    return consumers


_LAMBDA = "AWS::Lambda::Function"
